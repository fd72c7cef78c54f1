import { Socket } from 'node:net';

/**
 * Start-up check that the Electrum indexer answers `server.version`; the error names the config key.
 * The reference starts anyway and fails every wallet call later; we refuse to start instead.
 */
export function checkIndexer(url: string, timeoutMs = 5000): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = new Socket();
    let buf = '';
    const fail = (why: string) => {
      s.destroy();
      reject(new Error(`wallet.indexer_address: cannot use ${url}: ${why}`));
    };
    s.setTimeout(timeoutMs, () => fail(`no answer within ${timeoutMs} ms`));
    s.once('error', (err: NodeJS.ErrnoException) => fail(err.code ?? err.message));
    s.connect(Number(u.port), u.hostname, () => {
      s.write(
        `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server.version', params: ['rgbx-wallet-node', ['1.4', '1.6']] })}\n`,
      );
    });
    s.on('data', (d) => {
      buf += d.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      s.destroy();
      try {
        const r = JSON.parse(buf.slice(0, nl)) as { result?: [string, string] };
        if (!Array.isArray(r.result)) return fail('not an Electrum server (no server.version result)');
        resolve(`${r.result[0]} (protocol ${r.result[1]})`);
      } catch {
        fail('not an Electrum server (garbled reply)');
      }
    });
  });
}
