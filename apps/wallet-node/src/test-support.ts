/**
 * Shared by this app's process-level tests: a synthetic wallet identity (no key generation needed) and the
 * built wallet node started on a config file. Not part of the service.
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { type ServiceProcess, spawnService } from '@rgbx/devnet';
import { createBase58check } from '@scure/base';

/** The built entry point the tests run (`npx tsc -b` first). */
export const WALLET_NODE_MAIN = resolve(import.meta.dirname, '../dist/main.js');

/** A regtest tpub (BIP-32 serialization) around a compressed public key, with a fixed chain code. */
export function tpub(compressedKeyHex: string, chainCodeByte = 7): string {
  const b = new Uint8Array(78);
  new DataView(b.buffer).setUint32(0, 0x043587cf);
  b.set(new Uint8Array(32).fill(chainCodeByte), 13);
  b.set(Buffer.from(compressedKeyHex, 'hex'), 45);
  return createBase58check((d: Uint8Array) => createHash('sha256').update(d).digest()).encode(b);
}

/**
 * The three identity headers of a synthetic wallet: G and 2G of secp256k1 (real points, so nothing about the
 * keys is suspicious) under `fingerprint`.
 */
export function syntheticIdentity(
  fingerprint: string,
  chainCodeByte = 7,
): { 'xpub-van': string; 'xpub-col': string; 'master-fingerprint': string } {
  return {
    'xpub-van': tpub('0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', chainCodeByte),
    'xpub-col': tpub('02c6047f9441ed7d6d3045406e95c07cd85c778e4b8cef3ca7abac09b95c709ee5', chainCodeByte),
    'master-fingerprint': fingerprint,
  };
}

/** Starts the built wallet node on `configFile`; resolves with its URL once it listens. */
export function startWalletNode(configFile: string): Promise<ServiceProcess<string>> {
  return spawnService('wallet node', [WALLET_NODE_MAIN, '-c', configFile]);
}

/**
 * Registers a wallet on a node whose indexer is unreachable (the offline tests): rgb-lib creates the wallet
 * (register is the only route that may), then going online fails, so the answer is 503 `indexer_unavailable`
 * (code 1018, with Retry-After). Throws on any other answer.
 */
export async function registerOffline(url: string, headers: Record<string, string>): Promise<void> {
  const r = await fetch(`${url}/wallet/register`, { method: 'POST', headers });
  const text = await r.text();
  const code = (() => {
    try {
      return (JSON.parse(text) as { error?: { code?: number } }).error?.code;
    } catch {
      return undefined;
    }
  })();
  if (r.status !== 503 || code !== 1018 || !r.headers.get('retry-after'))
    throw new Error(
      `expected register to create the wallet and fail to go online (503, code 1018, Retry-After), got ${r.status} ${text}`,
    );
}
