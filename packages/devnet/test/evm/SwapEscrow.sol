// SPDX-License-Identifier: MIT
// Written for rgbx from the EIP-712 and Permit2 SignatureTransfer semantics; not copied.
// HTLC escrow for the EVM source leg of a swap: pulls the owner's tokens through a Permit2-compatible
// `permitWitnessTransferFrom` whose witness is the signed SwapIntent, then releases them to the intent's
// resolver against the SHA-256 preimage of `secretHash` (the hash the Bitcoin side locks with) before
// `refundAfter`, or back to the owner from `refundAfter` on. Test and devnet use only.
// Locks are keyed by lockId = keccak256(abi.encode(intentId, owner)), not by intentId alone: anyone may
// submit a deposit, so an intentId-only key would let a front-runner lock the victim's intentId first with
// their own tokens and signature and make the real deposit revert. A lock under (intentId, owner) needs
// `owner`'s signature over that intentId, which only the owner can give.
pragma solidity 0.8.37;

interface ISignatureTransfer {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}

contract SwapEscrow {
    struct SwapIntent {
        bytes32 intentId;
        address resolver;
        bytes32 secretHash;
        uint256 destChainId;
        bytes32 destToken;
        bytes32 destAddress;
        uint256 minAmountOut;
        uint256 maxAmountOut;
        uint256 deadline;
    }

    enum State {
        None,
        Locked,
        Claimed,
        Refunded
    }

    struct Lock {
        address owner;
        address token;
        uint256 amount;
        address resolver;
        bytes32 secretHash;
        uint256 refundAfter;
        State state;
    }

    /// A lock for this (intent id, owner) exists already (locked, claimed or refunded).
    error AlreadyLocked(bytes32 intentId, address owner);
    /// There is no open lock for this (intent id, owner) (never deposited, or already claimed or refunded).
    error NotLocked(bytes32 intentId, address owner);
    /// sha256(preimage) is not the lock's secretHash.
    error InvalidPreimage();
    /// Claims are accepted only before refundAfter.
    error ClaimWindowClosed(uint256 refundAfter);
    /// Refunds are accepted only from refundAfter on.
    error RefundNotYetAvailable(uint256 refundAfter);
    /// The token's transfer reverted without a reason, returned false, or the token has no code.
    error TransferFailed();

    event Deposited(
        bytes32 indexed intentId,
        address indexed owner,
        address indexed token,
        uint256 amount,
        address resolver,
        bytes32 secretHash,
        uint256 refundAfter
    );
    event Claimed(bytes32 indexed intentId, address indexed resolver, bytes32 preimage);
    event Refunded(bytes32 indexed intentId, address indexed owner);

    bytes32 public constant SWAP_INTENT_TYPEHASH = keccak256(
        "SwapIntent(bytes32 intentId,address resolver,bytes32 secretHash,uint256 destChainId,bytes32 destToken,bytes32 destAddress,uint256 minAmountOut,uint256 maxAmountOut,uint256 deadline)"
    );
    string public constant WITNESS_TYPE_STRING =
        "SwapIntent witness)SwapIntent(bytes32 intentId,address resolver,bytes32 secretHash,uint256 destChainId,bytes32 destToken,bytes32 destAddress,uint256 minAmountOut,uint256 maxAmountOut,uint256 deadline)TokenPermissions(address token,uint256 amount)";

    ISignatureTransfer public immutable PERMIT2;
    uint256 public immutable REFUND_DELAY_SECS;

    /// lockId (see `lockIdOf`) => lock.
    mapping(bytes32 => Lock) public locks;

    constructor(address permit2, uint256 refundDelaySecs) {
        PERMIT2 = ISignatureTransfer(permit2);
        REFUND_DELAY_SECS = refundDelaySecs;
    }

    /// The key of `owner`'s lock for `intentId` in `locks`.
    function lockIdOf(bytes32 intentId, address owner) public pure returns (bytes32) {
        return keccak256(abi.encode(intentId, owner));
    }

    /// EIP-712 hashStruct of the witness: what the owner's permit signature binds.
    function witnessHash(SwapIntent calldata intent) public pure returns (bytes32) {
        return keccak256(
            abi.encode(
                SWAP_INTENT_TYPEHASH,
                intent.intentId,
                intent.resolver,
                intent.secretHash,
                intent.destChainId,
                intent.destToken,
                intent.destAddress,
                intent.minAmountOut,
                intent.maxAmountOut,
                intent.deadline
            )
        );
    }

    /// Pulls `permit.permitted.amount` from `owner` into this contract with the owner's Permit2
    /// signature (spender = this contract, witness = `intent`) and locks it under
    /// `lockIdOf(intent.intentId, owner)`.
    function deposit(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        address owner,
        SwapIntent calldata intent,
        bytes calldata signature
    ) external {
        bytes32 id = intent.intentId;
        bytes32 lockId = lockIdOf(id, owner);
        if (locks[lockId].state != State.None) revert AlreadyLocked(id, owner);
        uint256 refundAfter = intent.deadline + REFUND_DELAY_SECS;
        locks[lockId] = Lock({
            owner: owner,
            token: permit.permitted.token,
            amount: permit.permitted.amount,
            resolver: intent.resolver,
            secretHash: intent.secretHash,
            refundAfter: refundAfter,
            state: State.Locked
        });
        PERMIT2.permitWitnessTransferFrom(
            permit,
            ISignatureTransfer.SignatureTransferDetails({to: address(this), requestedAmount: permit.permitted.amount}),
            owner,
            witnessHash(intent),
            WITNESS_TYPE_STRING,
            signature
        );
        emit Deposited(
            id, owner, permit.permitted.token, permit.permitted.amount, intent.resolver, intent.secretHash, refundAfter
        );
    }

    /// Pays `owner`'s lock for `intentId` to its resolver against the SHA-256 preimage, before refundAfter.
    function claim(bytes32 intentId, address owner, bytes32 preimage) external {
        Lock storage l = locks[lockIdOf(intentId, owner)];
        if (l.state != State.Locked) revert NotLocked(intentId, owner);
        if (sha256(abi.encodePacked(preimage)) != l.secretHash) revert InvalidPreimage();
        if (block.timestamp >= l.refundAfter) revert ClaimWindowClosed(l.refundAfter);
        l.state = State.Claimed;
        address resolver = l.resolver;
        _transfer(l.token, resolver, l.amount);
        emit Claimed(intentId, resolver, preimage);
    }

    /// Pays `owner`'s lock for `intentId` back to `owner`, from refundAfter on.
    function refund(bytes32 intentId, address owner) external {
        Lock storage l = locks[lockIdOf(intentId, owner)];
        if (l.state != State.Locked) revert NotLocked(intentId, owner);
        if (block.timestamp < l.refundAfter) revert RefundNotYetAvailable(l.refundAfter);
        l.state = State.Refunded;
        _transfer(l.token, owner, l.amount);
        emit Refunded(intentId, owner);
    }

    /// ERC-20 transfer that accepts tokens returning `true` or nothing at all.
    function _transfer(address token, address to, uint256 amount) private {
        (bool ok, bytes memory ret) = token.call(abi.encodeWithSelector(0xa9059cbb, to, amount));
        if (!ok) {
            // pass the token's own revert reason on
            if (ret.length == 0) revert TransferFailed();
            assembly {
                revert(add(ret, 32), mload(ret))
            }
        }
        if (ret.length == 0) {
            if (token.code.length == 0) revert TransferFailed();
        } else if (ret.length < 32 || abi.decode(ret, (uint256)) != 1) {
            revert TransferFailed();
        }
    }
}
