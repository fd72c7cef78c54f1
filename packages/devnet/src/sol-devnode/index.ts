export type { SolanaDevnode, SolanaDevnodeOptions } from './node.ts';
export { startSolanaDevnode } from './node.ts';
