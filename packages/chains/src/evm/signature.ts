import { type Hex, recoverAddress } from 'viem';
import { preview } from '../bytes.ts';
import { VerificationError } from '../errors.ts';
import { type EvmAddress, type Permit2Signable, permit2Digest, requireEvmAddress } from './permit2.ts';

/** secp256k1 group order. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = N >> 1n;
const SIG_RE = /^0x([0-9a-fA-F]{128}|[0-9a-fA-F]{130})$/;

/** A parsed recoverable signature: low-s, parity 0/1. */
export interface RecoverableSignature {
  r: bigint;
  s: bigint;
  yParity: 0 | 1;
}

/**
 * Parses a 65-byte `r‖s‖v` or 64-byte EIP-2098 `r‖yParityAndS` signature into low-s form.
 * `acceptedV` lists the v bytes taken for a 65-byte signature; v ≥ 27 is reduced by 27, then parity
 * is the low bit (27/28 → 0/1, 0/1 as is, Tron's 29/30 → 0/1). A high-s signature is flipped to low-s
 * (same signer; Permit2's `ecrecover` accepts both forms, so both are honoured and canonicalized).
 */
export function parseRecoverableSignature(
  signature: unknown,
  acceptedV: readonly number[] = [0, 1, 27, 28],
): RecoverableSignature {
  if (typeof signature !== 'string' || !SIG_RE.test(signature))
    throw new VerificationError('malformed_signature', 'signature is not 64 or 65 bytes of 0x-hex', {
      expected: '0x + 130 hex (r‖s‖v) or 0x + 128 hex (EIP-2098)',
      received: preview(signature),
    });
  const body = signature.slice(2);
  const r = BigInt(`0x${body.slice(0, 64)}`);
  let s = BigInt(`0x${body.slice(64, 128)}`);
  let parity: number;
  if (body.length === 128) {
    parity = Number(s >> 255n);
    s &= (1n << 255n) - 1n;
  } else {
    const v = Number.parseInt(body.slice(128, 130), 16);
    if (!acceptedV.includes(v))
      throw new VerificationError('malformed_signature', 'unsupported recovery byte v', {
        expected: `one of ${acceptedV.join(', ')}`,
        received: String(v),
      });
    parity = (v >= 27 ? v - 27 : v) & 1;
  }
  if (r === 0n || r >= N || s === 0n || s >= N)
    throw new VerificationError('malformed_signature', 'signature r or s is out of range', {
      expected: '0 < r, s < secp256k1 order',
      received: `r=0x${r.toString(16)}, s=0x${s.toString(16)}`,
    });
  if (s > HALF_N) {
    s = N - s;
    parity ^= 1;
  }
  return { r, s, yParity: parity as 0 | 1 };
}

/** Serializes to the canonical 65-byte `r‖s‖v` form with v ∈ {27, 28}. */
export function serializeRecoverableSignature(sig: RecoverableSignature): Hex {
  const h = (x: bigint) => x.toString(16).padStart(64, '0');
  return `0x${h(sig.r)}${h(sig.s)}${(27 + sig.yParity).toString(16)}`;
}

/**
 * Canonical form of an EVM signature: 65 bytes, low-s, v ∈ {27, 28}. Two signatures that authorize
 * the same thing (high/low-s twins, v=0/1 vs 27/28, EIP-2098 compact) normalize to the same string,
 * so the service can compare approvals for idempotency.
 *
 * @example
 * normalizeEvmSignature(sigWithV0) === normalizeEvmSignature(sameSigWithV27) // true
 */
export function normalizeEvmSignature(signature: string): Hex {
  return serializeRecoverableSignature(parseRecoverableSignature(signature));
}

/** Result of a successful Permit2 verification. */
export interface VerifiedPermit2 {
  /** Recovered signer (checksummed). */
  signer: EvmAddress;
  /** 65 bytes, low-s, v ∈ {27, 28}: submit this to Permit2 and compare it for idempotency. */
  canonicalSignature: Hex;
}

/**
 * Recovers the signer of the Permit2 typed data's digest (recomputed from its domain and message, not
 * read from `td.digest`) and checks it equals
 * `expectedOwner`, case-insensitively. Accepts v ∈ {0, 1, 27, 28} and EIP-2098 compact signatures;
 * high-s is normalized.
 *
 * @throws VerificationError `malformed_signature` | `signer_mismatch`
 * @throws ChainInputError when `expectedOwner` is not an address
 * @example
 * const { canonicalSignature } = await verifyPermit2Signature(td, body.permit2, intent.sourceAddress);
 */
export async function verifyPermit2Signature(
  td: Permit2Signable,
  signature: string,
  expectedOwner: string,
): Promise<VerifiedPermit2> {
  const owner = requireEvmAddress(expectedOwner, 'expectedOwner');
  const canonicalSignature = normalizeEvmSignature(signature);
  const digest = permit2Digest(td.domain, td.message);
  let signer: EvmAddress;
  try {
    signer = await recoverAddress({ hash: digest, signature: canonicalSignature });
  } catch (e) {
    // r is not the x coordinate of a curve point: no key produced this signature.
    throw new VerificationError(
      'malformed_signature',
      `no public key recovers from this signature (${(e as Error).message})`,
    );
  }
  if (signer.toLowerCase() !== owner.toLowerCase())
    throw new VerificationError('signer_mismatch', 'Permit2 signature is not by the source address', {
      expected: owner,
      received: signer,
    });
  return { signer, canonicalSignature };
}
