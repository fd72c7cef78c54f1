/**
 * Counting TCP connections to an indexer from /proc (Linux): the wallet node's own (its process and its rgb-lib
 * children), and the indexer's sessions (server side). Used by e2e/wallet-node.scale.test.ts.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { DevnetInfo } from '@rgbx/devnet';
import { type ServiceProcess, spawnService } from '@rgbx/devnet';

export const ELECTRUM_MAIN = resolve(import.meta.dirname, '../../apps/electrum/dist/main.js');

interface TcpRow {
  localPort: number;
  remotePort: number;
  established: boolean;
}

/** Socket inode → its TCP row, from /proc/net/tcp and tcp6 (this network namespace). */
function tcpTable(): Map<string, TcpRow> {
  const rows = new Map<string, TcpRow>();
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const p = line.trim().split(/\s+/);
      if (p.length < 10) continue;
      rows.set(p[9]!, {
        localPort: Number.parseInt(p[1]!.split(':')[1]!, 16),
        remotePort: Number.parseInt(p[2]!.split(':')[1]!, 16),
        established: p[3] === '01',
      });
    }
  }
  return rows;
}

/** Direct children of a process. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Established connections from `pids` to `port`. */
export function connectionsTo(pids: number[], port: number): number {
  const tcp = tcpTable();
  let n = 0;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(join(`/proc/${pid}/fd`, fd));
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(link);
      const row = m ? tcp.get(m[1]!) : undefined;
      if (row?.established && row.remotePort === port) n++;
    }
  }
  return n;
}

/** Established connections of the wallet node (`pid`) and its rgb-lib children to `port`. */
export function nodeConnectionsTo(pid: number, port: number): number {
  return connectionsTo([pid, ...childPids(pid)], port);
}

/** Sessions a server listening on `port` holds (server-side ends of established connections). */
export function serverSessions(port: number): number {
  let n = 0;
  for (const row of tcpTable().values()) if (row.established && row.localPort === port) n++;
  return n;
}

/** Our Electrum server against the devnet's bitcoind, with its own `max_connections`, on `port` (0: any). */
export async function startElectrum(
  dir: string,
  info: DevnetInfo,
  opts: { maxConnections: number; port?: number },
): Promise<ServiceProcess<string> & { port: number }> {
  const b = info.bitcoind;
  const conf = join(dir, `electrum-${opts.maxConnections}.toml`);
  writeFileSync(
    conf,
    [
      '[server]',
      'host = "127.0.0.1"',
      `port = ${opts.port ?? 0}`,
      `max_connections = ${opts.maxConnections}`,
      '[bitcoind]',
      `rpc_url = "${b.rpc_url}"`,
      `rpc_user = "${b.rpc_user}"`,
      `rpc_password = "${b.rpc_password}"`,
      '[fees]',
      'fallback_btc_per_kvb = "0.00001"',
      '[metrics]',
      'port = 0',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  const s = await spawnService('electrum', [ELECTRUM_MAIN, '-c', conf]);
  return Object.assign(s, { port: Number(s.value.split(':').pop()) });
}
