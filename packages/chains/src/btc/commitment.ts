/**
 * The commitment a Bitcoin fulfilment carries: an `OP_RETURN` output whose one push is
 * SHA-256(`rgbx:fulfil:<intent id>`). Bitcoin shows no sender, so a payment to the user's address
 * proves nothing by itself (the user's salary, an exchange withdrawal, another party's payment all
 * look the same); the commitment makes the payment one that was made for this intent, by someone
 * who knew its id (the accepting resolver), and for no other intent. The id is hashed so the chain
 * does not publish it.
 */
import { sha256 } from './hash.ts';

const TAG = 'rgbx:fulfil:';

/**
 * The 32 committed bytes for `intentId` (a UUID, compared in lower case).
 * @example fulfilCommitment('7f1c…').toString('hex')
 */
export function fulfilCommitment(intentId: string): Buffer {
  return sha256(Buffer.from(`${TAG}${intentId.toLowerCase()}`, 'utf8'));
}

/**
 * The whole output script the fulfilment must contain (value 0 by convention):
 * `OP_RETURN OP_PUSHBYTES_32 <commitment>`, hex.
 * @example fulfilCommitmentScript(intentId) // '6a20' + 64 hex characters
 */
export function fulfilCommitmentScript(intentId: string): string {
  return `6a20${fulfilCommitment(intentId).toString('hex')}`;
}
