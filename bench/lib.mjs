// Shared helpers for benchmarks: medians and percentiles over interleaved runs (machines are noisy).
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
