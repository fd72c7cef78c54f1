/** Test helper (not emitted): a plain System transfer signed by its sender alone (legacy message). */
import { SYSTEM_PROGRAM_ADDRESS } from '@rgbx/chains/sol';
import {
  AccountRole,
  type Address,
  appendTransactionMessageInstruction,
  type Blockhash,
  compileTransaction,
  createTransactionMessage,
  getTransactionEncoder,
  type KeyPairSigner,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransaction,
} from '@solana/kit';

/** The wire bytes of `from` paying `lamports` to `to`, valid while `blockhash` is recent. */
export async function signedTransfer(
  from: KeyPairSigner,
  to: string,
  lamports: bigint,
  blockhash: string,
): Promise<Uint8Array> {
  const data = new Uint8Array(12);
  new DataView(data.buffer).setUint32(0, 2, true); // System instruction 2: Transfer
  new DataView(data.buffer).setBigUint64(4, lamports, true);
  const message = pipe(
    createTransactionMessage({ version: 'legacy' }),
    (m) => setTransactionMessageFeePayer(from.address, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: blockhash as Blockhash, lastValidBlockHeight: 0n },
        m,
      ),
    (m) =>
      appendTransactionMessageInstruction(
        {
          programAddress: SYSTEM_PROGRAM_ADDRESS,
          accounts: [
            { address: from.address, role: AccountRole.WRITABLE_SIGNER },
            { address: to as Address, role: AccountRole.WRITABLE },
          ],
          data,
        },
        m,
      ),
  );
  const signed = await signTransaction([from.keyPair], compileTransaction(message));
  return Uint8Array.from(getTransactionEncoder().encode(signed));
}
