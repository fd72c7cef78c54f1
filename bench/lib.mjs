// Shared helpers for benchmarks: medians and percentiles over interleaved runs (machines are noisy), and
// the CPU a process has used.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The median of a non-empty list of numbers (the mean of the two middle ones for an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ; 100 on Linux). */
export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * CPU ms (user + system, all threads) a process has used so far, from `/proc/<pid>/stat`.
 * @throws when the process is gone
 */
export function procCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 on (comm may hold spaces)
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLK_TCK; // utime #14, stime #15
}

export function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, p50: round(q(0.5)), p90: round(q(0.9)), p99: round(q(0.99)), min: round(s[0]) };
}
export const round = (x) => Math.round(x * 1000) / 1000;

/** Runs each named case `n` times, interleaved, after `warmup` rounds; returns stats per case in ms. */
export async function interleave(cases, { n = 50, warmup = 5 } = {}) {
  const names = Object.keys(cases);
  const samples = Object.fromEntries(names.map((k) => [k, []]));
  for (let i = 0; i < warmup + n; i++) {
    for (const k of names) {
      const t0 = performance.now();
      await cases[k]();
      const dt = performance.now() - t0;
      if (i >= warmup) samples[k].push(dt);
    }
  }
  return Object.fromEntries(names.map((k) => [k, stats(samples[k])]));
}
