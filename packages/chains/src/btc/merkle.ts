import { fromReversedHex, reversedHex, sha256d } from './hash.ts';

/**
 * Merkle branch for the transaction at `pos`, deepest sibling first, in RPC byte order: the
 * `merkle` array of Electrum's `blockchain.transaction.get_merkle`.
 */
export function merkleBranch(txids: readonly string[], pos: number): string[] {
  if (!Number.isInteger(pos) || pos < 0 || pos >= txids.length) {
    throw new RangeError(`merkleBranch: position ${pos} not in 0..${txids.length - 1}`);
  }
  let level = txids.map(fromReversedHex);
  let index = pos;
  const branch: string[] = [];
  while (level.length > 1) {
    // An odd level pairs its last node with itself (Bitcoin's CVE-2012-2459 quirk, kept for compatibility).
    if (level.length % 2 === 1) level.push(level[level.length - 1]!);
    branch.push(reversedHex(level[index ^ 1]!));
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(sha256d(Buffer.concat([level[i]!, level[i + 1]!])));
    level = next;
    index >>= 1;
  }
  return branch;
}

/** Folds a branch back up to the root (RPC byte order); used to verify proofs independently. */
export function merkleRootFromBranch(txid: string, branch: readonly string[], pos: number): string {
  let node = fromReversedHex(txid);
  let index = pos;
  for (const sibling of branch) {
    const s = fromReversedHex(sibling);
    node = index & 1 ? sha256d(Buffer.concat([s, node])) : sha256d(Buffer.concat([node, s]));
    index >>= 1;
  }
  return reversedHex(node);
}

/** Merkle root of a full list of txids (RPC byte order). */
export function merkleRoot(txids: readonly string[]): string {
  if (txids.length === 0) throw new RangeError('merkleRoot: empty transaction list');
  return merkleRootFromBranch(txids[0]!, merkleBranch(txids, 0), 0);
}
