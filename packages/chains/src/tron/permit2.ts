import { type Hex, recoverPublicKey } from 'viem';
import { VerificationError } from '../errors.ts';
import {
  buildPermit2Message,
  buildPermit2TypedData,
  buildSwapIntentWitness,
  type Permit2Params,
  type Permit2Signable,
  type Permit2TypedData,
  permit2Digest,
  type SwapIntentInput,
} from '../evm/permit2.ts';
import { parseRecoverableSignature, serializeRecoverableSignature } from '../evm/signature.ts';
import { requireTronAddress, tronAddressFromPublicKey, tronAddressToEvm } from './address.ts';

/** Tron mainnet chain id as TIP-712 uses it: the genesis-derived id masked to 32 bits (0x2b6653dc). */
export const TRON_MAINNET_CHAIN_ID = 728126428n;

/**
 * TIP-712 chain id: Tron's chain id is `& 0xffffffff`-masked before it goes into the domain.
 *
 * @example
 * maskTronChainId(0xcd8690dc2b6653dcn) // 728126428n
 */
export function maskTronChainId(chainId: bigint): bigint {
  return chainId & 0xffffffffn;
}

/** Inputs of {@link buildTronPermit2TypedData}; addresses are Tron base58 (`T…`). */
export interface TronPermit2Params {
  /** Tron chain id; masked with `& 0xffffffff` here, so either form may be passed. */
  chainId: bigint;
  /** Permit2 deployment on Tron (base58). */
  permit2Address: string;
  /** Source TRC-20 token (base58). */
  token: string;
  amount: bigint;
  /** Escrow contract (base58). */
  spender: string;
  nonce: bigint;
  deadline: bigint;
  /** The witness input with the resolver as a Tron base58 address. */
  witness: Omit<SwapIntentInput, 'resolver'> & { resolver: string };
}

/**
 * TIP-712 variant of the Permit2 typed data: identical to EIP-712 except that every Tron address is
 * its 20-byte hex (0x41 dropped) and the domain chain id is masked to 32 bits.
 *
 * @example
 * const td = buildTronPermit2TypedData({ chainId: TRON_MAINNET_CHAIN_ID, permit2Address: 'T…',
 *   token: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', amount: 5_000_000n, spender: 'T…', nonce: 1n,
 *   deadline, witness: { ...intent, resolver: 'T…' } });
 */
export function buildTronPermit2TypedData(p: TronPermit2Params): Permit2TypedData {
  return buildPermit2TypedData(evmParams(p));
}

/** {@link buildTronPermit2TypedData}'s domain and message without the hashes: what a verifier needs. */
export function buildTronPermit2Message(p: TronPermit2Params): Permit2Signable {
  return buildPermit2Message(evmParams(p));
}

/** Tron addresses as their 20-byte hex, the chain id masked. */
function evmParams(p: TronPermit2Params): Permit2Params {
  return {
    chainId: maskTronChainId(p.chainId),
    permit2Address: tronAddressToEvm(p.permit2Address),
    token: tronAddressToEvm(p.token),
    amount: p.amount,
    spender: tronAddressToEvm(p.spender),
    nonce: p.nonce,
    deadline: p.deadline,
    witness: buildSwapIntentWitness({ ...p.witness, resolver: tronAddressToEvm(p.witness.resolver) }),
  };
}

/** Result of a successful TIP-712 Permit2 verification. */
export interface VerifiedTronPermit2 {
  /** Tron base58 address derived from the recovered public key. */
  signer: string;
  /** 65 bytes, low-s, v ∈ {27, 28}. */
  canonicalSignature: Hex;
}

/** v bytes Tron wallets produce: 27/28 (TronLink local key), 0/1 (Ledger), 29/30 (reduced mod 2). */
const TRON_ACCEPTED_V = [0, 1, 27, 28, 29, 30] as const;

/**
 * Recovers the public key from a TIP-712 Permit2 signature, derives its Tron address and checks it
 * equals `expectedOwner` (base58, exact).
 *
 * @throws VerificationError `malformed_signature` | `signer_mismatch`
 * @throws ChainInputError when `expectedOwner` is not a Tron address
 * @example
 * const { canonicalSignature } = await verifyTronPermit2Signature(td, body.permit2, intent.sourceAddress);
 */
export async function verifyTronPermit2Signature(
  td: Permit2Signable,
  signature: string,
  expectedOwner: string,
): Promise<VerifiedTronPermit2> {
  const owner = requireTronAddress(expectedOwner, 'expectedOwner');
  const canonicalSignature = serializeRecoverableSignature(
    parseRecoverableSignature(signature, TRON_ACCEPTED_V),
  );
  const digest = permit2Digest(td.domain, td.message);
  let signer: string;
  try {
    signer = tronAddressFromPublicKey(
      await recoverPublicKey({ hash: digest, signature: canonicalSignature }),
    );
  } catch (e) {
    // r not an x coordinate on the curve: no key signed this.
    throw new VerificationError(
      'malformed_signature',
      `no public key recovers from this signature (${(e as Error).message})`,
    );
  }
  if (signer !== owner)
    throw new VerificationError('signer_mismatch', 'TIP-712 signature is not by the source address', {
      expected: owner,
      received: signer,
    });
  return { signer, canonicalSignature };
}
