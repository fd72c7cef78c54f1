// SPDX-License-Identifier: MIT
// Test probe written for rgbx: recomputes, on chain, the EIP-712 digest that the Permit2 contract's
// SignatureTransfer.permitWitnessTransferFrom checks, from Permit2's published constants (the
// PermitWitnessTransferFrom type stub, the TokenPermissions type and the name/chainId/verifyingContract
// domain), then recovers the signer with ecrecover. Not Permit2 itself; not copied from it. Test use only.
pragma solidity 0.8.37;

contract Permit2DigestProbe {
    struct Permit {
        address token;
        uint256 amount;
        address spender;
        uint256 nonce;
        uint256 deadline;
    }

    bytes32 private constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    bytes32 private constant DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    string private constant STUB =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";

    function digest(address verifyingContract, Permit calldata p, bytes32 witness, string calldata witnessTypeString)
        public
        view
        returns (bytes32)
    {
        bytes32 typeHash = keccak256(abi.encodePacked(STUB, witnessTypeString));
        bytes32 permitted = keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, p.token, p.amount));
        bytes32 dataHash = keccak256(abi.encode(typeHash, permitted, p.spender, p.nonce, p.deadline, witness));
        bytes32 domainSeparator =
            keccak256(abi.encode(DOMAIN_TYPEHASH, keccak256("Permit2"), block.chainid, verifyingContract));
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator, dataHash));
    }

    function signer(
        address verifyingContract,
        Permit calldata p,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external view returns (address) {
        require(signature.length == 65, "Permit2DigestProbe: 65-byte signature");
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        return ecrecover(digest(verifyingContract, p, witness, witnessTypeString), v, r, s);
    }
}
