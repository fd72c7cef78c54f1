import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PERMIT2_DIGEST_PROBE, SIGNATURE_TRANSFER, SWAP_ESCROW, TEST_TOKEN } from './artifacts.ts';

interface Artifact {
  contractName: string;
  sourceSha256: string;
  compiler: string;
  abi: unknown;
  bytecode: string;
}

describe('committed EVM artifacts', () => {
  it('are exactly what the pinned solc-js compiles from the committed Solidity sources', async () => {
    // plain JS build script (not part of the TypeScript project): loaded by URL at run time
    const script = new URL('../../test/evm/compile.mjs', import.meta.url).href;
    const { compile, HEADER } = (await import(script)) as {
      compile(): Record<string, Artifact>;
      HEADER: string;
    };
    // marked generated (`// @generated …` first), so tools and reviewers skip it
    const committedText = readFileSync(new URL('./artifacts.ts', import.meta.url), 'utf8');
    expect(committedText.slice(0, HEADER.length + 1)).toBe(`${HEADER}\n`);
    const fresh = compile();
    const committedAll = [
      TEST_TOKEN,
      PERMIT2_DIGEST_PROBE,
      SIGNATURE_TRANSFER,
      SWAP_ESCROW,
    ] as readonly Artifact[];
    // every contract the script compiles is committed, and every committed one is checked
    expect(Object.keys(fresh).sort()).toEqual(committedAll.map((a) => a.contractName).sort());
    for (const committed of committedAll) {
      const f = fresh[committed.contractName]!;
      expect(f.sourceSha256).toBe(committed.sourceSha256);
      expect(f.compiler).toBe(committed.compiler);
      expect(f.bytecode).toBe(committed.bytecode);
      expect(f.abi).toEqual(committed.abi);
    }
  }, 60_000);
});
