import { ElectrumConnection, ElectrumUnavailableError } from '@rgbx/chains/btc';

/**
 * Start-up check that the Electrum indexer answers `server.version`; the error names the config key.
 * The reference starts anyway and fails every wallet call later; we refuse to start instead.
 */
export async function checkIndexer(url: string, timeoutMs = 5000): Promise<string> {
  let c: ElectrumConnection;
  try {
    c = await ElectrumConnection.connect(url, { timeoutMs, clientName: 'rgbx-wallet-node' });
  } catch (err) {
    const why = err instanceof ElectrumUnavailableError ? err.reason : String(err);
    throw new Error(`wallet.indexer_address: cannot use ${url}: ${why}`, { cause: err });
  }
  c.close();
  return `${c.serverVersion[0]} (protocol ${c.serverVersion[1]})`;
}
