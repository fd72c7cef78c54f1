import { defineConfig } from 'vitest/config';

// Tests import workspace packages through their "source" export condition, so they run against
// TypeScript sources; spawned service processes run the `tsc -b` output (npm test builds first).
export default defineConfig({
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'e2e/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each integration file starts its own devnet processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});
