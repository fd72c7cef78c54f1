import { describe, expect, it } from 'vitest';
import { PERMIT2_DIGEST_PROBE, TEST_TOKEN } from './artifacts.ts';

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
    const { compile } = (await import(script)) as { compile(): Record<string, Artifact> };
    const fresh = compile();
    for (const committed of [TEST_TOKEN, PERMIT2_DIGEST_PROBE] as readonly Artifact[]) {
      const f = fresh[committed.contractName]!;
      expect(f.sourceSha256).toBe(committed.sourceSha256);
      expect(f.compiler).toBe(committed.compiler);
      expect(f.bytecode).toBe(committed.bytecode);
      expect(f.abi).toEqual(committed.abi);
    }
  });
});
