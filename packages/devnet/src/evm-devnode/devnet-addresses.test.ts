/**
 * The contract addresses `apps/swap/config/devnet.toml` falls back to (`${EVM_USDC:-…}` and the others)
 * are the ones `npm start` gets: deploySwapDevnet on a fresh devnode from account 0, as scripts/start.mjs
 * runs it. CREATE addresses follow from deployer and nonce, so a new deployment before these, a changed
 * order or an edited fallback fails here.
 */
import { readFileSync } from 'node:fs';
import { tronAddressFromHex } from '@rgbx/chains/tron';
import { getAddress, getContractAddress } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploySwapDevnet, type EvmDevnode, startEvmDevnode } from './index.ts';

const DEVNET_TOML = new URL('../../../../apps/swap/config/devnet.toml', import.meta.url);

/** Every `${NAME:-default}` of the config: NAME → the defaults it is written with (one, if consistent). */
function fallbacks(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [, name, dflt] of text.matchAll(/\$\{([A-Z0-9_]+):-([^}]*)\}/g))
    out.set(name!, (out.get(name!) ?? new Set()).add(dflt!));
  return out;
}

let node: EvmDevnode;
let deployed: { usdc: string; permit2: string; escrow: string };

beforeAll(async () => {
  // as npm start: the devnode process's defaults (scripts/start.mjs runs evm-devnode/main.js without options)
  node = await startEvmDevnode();
  deployed = await deploySwapDevnet(node.rpcUrl, node.chainId, node.accounts[0]!.privateKey, {
    refundDelaySecs: 3_600n,
  });
});

afterAll(async () => {
  await node?.stop();
});

describe('apps/swap/config/devnet.toml falls back to the contracts npm start deploys on a fresh devnode', () => {
  const text = readFileSync(DEVNET_TOML, 'utf8');
  const all = fallbacks(text);
  const toml = new Map([...all].map(([name, values]) => [name, [...values].join(' | ')]));

  it('each variable falls back to one value wherever it is used', () => {
    expect([...all].filter(([, values]) => values.size > 1)).toEqual([]);
    expect(all.get('EVM_USDC')?.size).toBe(1);
  });

  it('EVM_USDC, EVM_PERMIT2, EVM_ESCROW: the deployed addresses (checksummed)', () => {
    expect({
      EVM_USDC: toml.get('EVM_USDC'),
      EVM_PERMIT2: toml.get('EVM_PERMIT2'),
      EVM_ESCROW: toml.get('EVM_ESCROW'),
    }).toEqual({
      EVM_USDC: getAddress(deployed.usdc),
      EVM_PERMIT2: getAddress(deployed.permit2),
      EVM_ESCROW: getAddress(deployed.escrow),
    });
  });

  it('TRON_USDT, TRON_PERMIT2, TRON_ESCROW: the same contracts in Tron form; the chain ids are the devnode’s', () => {
    expect({
      TRON_USDT: toml.get('TRON_USDT'),
      TRON_PERMIT2: toml.get('TRON_PERMIT2'),
      TRON_ESCROW: toml.get('TRON_ESCROW'),
      TRON_CHAIN_ID: toml.get('TRON_CHAIN_ID'),
    }).toEqual({
      TRON_USDT: tronAddressFromHex(deployed.usdc),
      TRON_PERMIT2: tronAddressFromHex(deployed.permit2),
      TRON_ESCROW: tronAddressFromHex(deployed.escrow),
      TRON_CHAIN_ID: node.chainId.toString(),
    });
    expect(text).toMatch(new RegExp(`type = "EVM"\\nchain_id = ${node.chainId}\\n`));
  });

  it('deterministic: account 0’s contract addresses at nonces 0, 1, 2', () => {
    const from = node.accounts[0]!.address;
    expect([deployed.usdc, deployed.permit2, deployed.escrow].map((a) => getAddress(a))).toEqual(
      [0n, 1n, 2n].map((nonce) => getContractAddress({ from, nonce })),
    );
  });
});
