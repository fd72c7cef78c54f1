/**
 * The local process driver: every node is its own `node apps/wallet-node/dist/main.js -c node.toml`
 * process, started detached (its own process group) so it survives a restart of the cloud service,
 * with its own data dir, port, 0600 config and log file under `<data_dir>/nodes/<nodeId>/`.
 * A process counts as ours only while it is alive, not a zombie, and its command line names the
 * node's config file, so a recycled pid is never mistaken for a node.
 */
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { freePort, isListening, pidAlive, readToml, writeToml } from '@rgbx/service-kit';
import type { NodeBackend, NodeDriver, NodeRuntime, NodeSpec, Probe } from './driver.ts';

export interface LocalDriverOptions {
  /** Path of the wallet node's `main.js`. */
  walletNodeMain: string;
  /** Resolved at every start (so a devnet started after the cloud is picked up). */
  backend: () => NodeBackend;
  healthTimeoutMs: number;
  /** Node binary; default the one running the cloud. */
  nodeBinary?: string;
}

/** Longest a start waits for the spawned process to show the node's command line. */
const EXEC_WAIT_MS = 5_000;

function configPath(spec: NodeSpec): string {
  return join(spec.dataDir, 'node.toml');
}

function isOurs(pid: number, spec: NodeSpec): boolean {
  if (!pidAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(configPath(spec));
  } catch {
    return false;
  }
}

/** A live process already running this node's config (e.g. launched just before a crash of the cloud). */
function findRunning(spec: NodeSpec): NodeRuntime | undefined {
  const conf = configPath(spec);
  if (!existsSync(conf)) return undefined;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const pid = Number(d);
    if (pid === process.pid || !isOurs(pid, spec)) continue;
    const port = Number((readToml(readFileSync(conf, 'utf8')).api as { port?: unknown } | undefined)?.port);
    if (Number.isInteger(port) && port > 0) return { pid, port };
  }
  return undefined;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {}
  }
}

/** Any process of the group still running (the wallet node may have children). */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

export class LocalProcessDriver implements NodeDriver {
  private readonly exitListeners: ((nodeId: string, pid: number) => void)[] = [];
  private readonly o: LocalDriverOptions;

  constructor(o: LocalDriverOptions) {
    this.o = o;
  }

  onExit(listener: (nodeId: string, pid: number) => void): void {
    this.exitListeners.push(listener);
  }

  async start(spec: NodeSpec): Promise<NodeRuntime> {
    if (!existsSync(this.o.walletNodeMain)) {
      throw new Error(
        `wallet node entry point ${this.o.walletNodeMain} is missing ([nodes] wallet_node_main; in the repository: \`npx tsc -b\`)`,
      );
    }
    // Never a second copy: a process already running this node is adopted.
    const running = findRunning(spec);
    if (running) return running;
    const b = this.o.backend();
    mkdirSync(join(spec.dataDir, 'wallet'), { recursive: true, mode: 0o700 });
    const port =
      spec.preferredPort !== undefined && !(await isListening(spec.preferredPort))
        ? spec.preferredPort
        : await freePort();
    const conf = configPath(spec);
    writeFileSync(
      conf,
      writeToml(
        {
          api: { listen_address: '127.0.0.1', port },
          wallet: {
            data_dir: join(spec.dataDir, 'wallet'),
            network: spec.network,
            btc_rpc_address: b.btcRpcAddress,
            btc_rpc_user: b.btcRpcUser,
            // Required by the wallet node's config schema but never read by it: the password stays out.
            btc_rpc_password: '',
            indexer_address: b.indexerAddress,
            proxy_address: b.proxyAddress,
          },
          // Many nodes on one host: the default metrics port (9401) would stop the second one, and nothing
          // scrapes hosted nodes, so their metrics are off (no hook, nothing counted).
          metrics: { enabled: false },
        },
        [`written by the cloud service for node ${spec.nodeId}; rewritten at every start`],
      ),
      { mode: 0o600 },
    );
    const log = openSync(join(spec.dataDir, 'node.log'), 'a', 0o600);
    const child = spawn(this.o.nodeBinary ?? process.execPath, [this.o.walletNodeMain, '-c', conf], {
      cwd: spec.dataDir,
      detached: true,
      stdio: ['ignore', log, log],
      // Only what a node needs: never the cloud's own secrets (database URL, tokens).
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? spec.dataDir,
        ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
        ...(process.env.LANG ? { LANG: process.env.LANG } : {}),
      },
    });
    closeSync(log);
    const pid = child.pid;
    if (pid === undefined) throw new Error('could not spawn the wallet node');
    child.once('exit', () => {
      for (const l of this.exitListeners) l(spec.nodeId, pid);
    });
    child.unref();
    // Until the child has exec'd, /proc/<pid>/cmdline is still the cloud's own: a probe or a stop in
    // that window would not recognise the node (a stop then left it running, and the next start
    // adopted it: one STARTING without a new process). Return once it is recognisable, or gone.
    const deadline = Date.now() + EXEC_WAIT_MS;
    while (!isOurs(pid, spec) && pidAlive(pid) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    return { pid, port };
  }

  async probe(spec: NodeSpec, runtime: NodeRuntime): Promise<Probe> {
    if (!isOurs(runtime.pid, spec)) return 'gone';
    try {
      const res = await fetch(`http://127.0.0.1:${runtime.port}/healthcheck`, {
        signal: AbortSignal.timeout(this.o.healthTimeoutMs),
      });
      await res.arrayBuffer().catch(() => undefined);
      return res.status === 200 ? 'healthy' : 'unhealthy';
    } catch {
      return 'unhealthy';
    }
  }

  async stop(spec: NodeSpec, runtime: NodeRuntime | undefined, graceMs: number): Promise<void> {
    if (!runtime) return;
    const pid = runtime.pid;
    // A pid that is not ours (recycled) is left alone; our group's leftovers are cleaned up.
    if (isOurs(pid, spec)) {
      signalGroup(pid, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while (isOurs(pid, spec) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    }
    if (groupAlive(pid) && (isOurs(pid, spec) || !pidAlive(pid))) signalGroup(pid, 'SIGKILL');
    const deadline = Date.now() + 5_000;
    while (isOurs(pid, spec) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  async destroy(spec: NodeSpec): Promise<void> {
    rmSync(spec.dataDir, { recursive: true, force: true });
  }
}
