/** Test helpers for running the built cloud service (`dist/main.js`) as a real process. */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CLOUD_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

export interface CloudProcess {
  child: ChildProcess;
  url: string;
  /** `GET /metrics` on its own listener (`metrics_url` of the listening line; test configs use port 0). */
  metricsUrl: string | undefined;
  /** Everything it printed on stderr so far: its JSON log lines (the cloud logs to stderr). */
  stderr: () => string;
}

/** Starts `node dist/main.js -c FILE` and waits for its `listening` line. */
export function startCloudProcess(configFile: string, timeoutMs = 30_000): Promise<CloudProcess> {
  const child = spawn(process.execPath, [CLOUD_MAIN, '-c', configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => {
    err += c.toString();
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`cloud did not start: ${err}`)), timeoutMs);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) {
        clearTimeout(timer);
        const l = JSON.parse(line) as { url: string; metrics_url?: string };
        resolve({ child, url: l.url, metricsUrl: l.metrics_url, stderr: () => err });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`cloud exited with ${code}: ${err}`));
    });
  });
}

/** Runs an admin command (`tokens …`, `keys …`); resolves with stdout, rejects on a non-zero exit. */
export function cloudCli(configFile: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLOUD_MAIN, '-c', configFile, ...args], (error, stdout, stderr) => {
      if (error) reject(Object.assign(error, { stderr }));
      else resolve(stdout);
    });
  });
}

/** Pids of live (non-zombie) processes whose command line contains `needle`. */
export function pidsWithArg(needle: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue;
      if (cmd.split('\0').includes(needle)) out.push(Number(d));
    } catch {}
  }
  return out;
}

/** Kills process groups (test cleanup of detached node processes). */
export function killGroups(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {}
  }
}
