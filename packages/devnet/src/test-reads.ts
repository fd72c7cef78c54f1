/** Test helper (not emitted): the chain-read tests' check that a read failed with a given RpcReadError code. */
import { RpcReadError } from '@rgbx/chains/evm';
import { expect } from 'vitest';

/** Awaits `p`, expects it to reject with an {@link RpcReadError} of `code`, and returns the error. */
export async function expectReadError(
  p: Promise<unknown>,
  code: RpcReadError['code'],
): Promise<RpcReadError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(RpcReadError);
  expect((e as RpcReadError).code).toBe(code);
  return e as RpcReadError;
}
