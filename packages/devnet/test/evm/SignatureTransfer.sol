// SPDX-License-Identifier: MIT
// Written for rgbx from the EIP-712 and Permit2 SignatureTransfer semantics; not copied.
// A Permit2-compatible subset: the `permitWitnessTransferFrom` signature transfer with unordered nonces,
// ABI-identical to Permit2 for the functions, structs and events it has (its errors are its own).
// Differences: no AllowanceTransfer, no batch or witness-less transfers, no EIP-1271 contract owners,
// and signatures with s in the upper half of the curve order are rejected. Test and devnet use only.
pragma solidity 0.8.37;

contract SignatureTransfer {
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

    /// The permit's deadline has passed (`block.timestamp > deadline`).
    error SignatureExpired(uint256 deadline);
    /// `requestedAmount` is more than the permitted amount.
    error InvalidAmount(uint256 maxAmount);
    /// The owner has already used (or invalidated) this nonce.
    error InvalidNonce();
    /// The signature is neither 65 bytes (r, s, v) nor 64 bytes (EIP-2098 r, vs).
    error InvalidSignatureLength();
    /// v is not 27/28, s is in the upper half of the curve order, or nothing recovers.
    error InvalidSignature();
    /// The recovered signer is not the owner.
    error InvalidSigner();
    /// The token's transferFrom reverted without a reason, returned false, or the token has no code.
    error TransferFailed();

    event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask);

    bytes32 private constant DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("Permit2");
    bytes32 private constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    string private constant PERMIT_WITNESS_TRANSFER_FROM_STUB =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";
    /// secp256k1 order n / 2: a valid s is at most this (EIP-2).
    uint256 private constant HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0;

    /// owner => word position (nonce >> 8) => bitmap of used nonces (bit = nonce & 0xff).
    mapping(address => mapping(uint256 => uint256)) public nonceBitmap;

    /// The EIP-712 domain separator (name "Permit2", no version), computed for the current chain id.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, block.chainid, address(this)));
    }

    /// Transfers `transferDetails.requestedAmount` of `permit.permitted.token` from `owner` to
    /// `transferDetails.to`, authorised by `owner`'s EIP-712 signature over the permit, the spender
    /// (`msg.sender`) and the witness hash typed by `witnessTypeString`.
    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external {
        if (block.timestamp > permit.deadline) revert SignatureExpired(permit.deadline);
        if (transferDetails.requestedAmount > permit.permitted.amount) revert InvalidAmount(permit.permitted.amount);
        _useUnorderedNonce(owner, permit.nonce);

        bytes32 typeHash = keccak256(abi.encodePacked(PERMIT_WITNESS_TRANSFER_FROM_STUB, witnessTypeString));
        bytes32 permittedHash =
            keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, permit.permitted.token, permit.permitted.amount));
        bytes32 structHash =
            keccak256(abi.encode(typeHash, permittedHash, msg.sender, permit.nonce, permit.deadline, witness));
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        _verify(digest, signature, owner);

        _transferFrom(permit.permitted.token, owner, transferDetails.to, transferDetails.requestedAmount);
    }

    /// Marks the nonces set in `mask` at word `wordPos` as used for `msg.sender`.
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external {
        nonceBitmap[msg.sender][wordPos] |= mask;
        emit UnorderedNonceInvalidation(msg.sender, wordPos, mask);
    }

    function _useUnorderedNonce(address owner, uint256 nonce) private {
        uint256 wordPos = nonce >> 8;
        uint256 bit = uint256(1) << (nonce & 0xff);
        uint256 word = nonceBitmap[owner][wordPos];
        if (word & bit != 0) revert InvalidNonce();
        nonceBitmap[owner][wordPos] = word | bit;
    }

    function _verify(bytes32 digest, bytes calldata signature, address owner) private pure {
        bytes32 r;
        bytes32 s;
        uint8 v;
        if (signature.length == 65) {
            r = bytes32(signature[0:32]);
            s = bytes32(signature[32:64]);
            v = uint8(signature[64]);
        } else if (signature.length == 64) {
            // EIP-2098: the top bit of the second word is y parity, the rest is s.
            r = bytes32(signature[0:32]);
            bytes32 vs = bytes32(signature[32:64]);
            s = vs & bytes32(uint256(type(uint256).max >> 1));
            v = uint8(uint256(vs) >> 255) + 27;
        } else {
            revert InvalidSignatureLength();
        }
        if (uint256(s) > HALF_ORDER || (v != 27 && v != 28)) revert InvalidSignature();
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidSignature();
        if (signer != owner) revert InvalidSigner();
    }

    /// ERC-20 transferFrom that accepts tokens returning `true` or nothing at all.
    function _transferFrom(address token, address from, address to, uint256 amount) private {
        (bool ok, bytes memory ret) = token.call(abi.encodeWithSelector(0x23b872dd, from, to, amount));
        if (!ok) {
            // pass the token's own revert reason on (e.g. an allowance or balance error)
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
