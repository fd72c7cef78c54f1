/**
 * Errors shared by every swap-crypto subpath (`@rgbx/chains/evm`, `/tron`, `/btc`, `/sol`): one class
 * identity, re-exported from each, so `instanceof VerificationError` works whichever subpath threw.
 */

/**
 * A user-supplied approval (signature, signed PSBT, signed transaction) was rejected. `code` is stable
 * and machine-readable (listed per function in SWAP-INTERFACE.md); `expected`/`received` say what.
 *
 * @example
 * try { verifyPermit2Signature(td, sig, owner) } catch (e) {
 *   if (e instanceof VerificationError) reply(422, { code: e.code, message: e.message });
 * }
 */
export class VerificationError extends Error {
  override readonly name = 'VerificationError';
  readonly code: string;
  readonly expected: string | undefined;
  readonly received: string | undefined;
  constructor(code: string, message: string, detail?: { expected?: string; received?: string }) {
    const parts = [message];
    if (detail?.expected !== undefined) parts.push(`expected ${detail.expected}`);
    if (detail?.received !== undefined) parts.push(`received ${detail.received}`);
    super(parts.join('; '));
    this.code = code;
    this.expected = detail?.expected;
    this.received = detail?.received;
  }
}

/**
 * The caller (the service) passed invalid input to a builder or converter: a malformed address, a
 * wrong key length, insufficient funds for a funding PSBT. Not a verdict on a user's signature.
 *
 * @example
 * try { tronAddressToHex(body.sourceAddress) } catch (e) { if (e instanceof ChainInputError) reply(400, …) }
 */
export class ChainInputError extends Error {
  override readonly name = 'ChainInputError';
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}
