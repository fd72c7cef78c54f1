// Keeps package-lock.json complete for `npm ci`. This workplace's npm mirror serves only the linux-x64
// and linux-arm64 builds of @biomejs/cli-*, so `npm install` here writes a lock without the other
// platforms' optional packages, and `npm ci` then refuses the lock ("Missing … from lock file").
// This adds those entries (optional, for their own os/cpu, so no platform but theirs ever fetches them).
// Idempotent; run after `npm install` changes the lock: `node scripts/lock-platforms.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const biome = lock.packages['node_modules/@biomejs/biome'];
const PLATFORMS = {
  'android-arm64': [['android'], ['arm64']],
  'android-x64': [['android'], ['x64']],
  'darwin-arm64': [['darwin'], ['arm64']],
  'darwin-x64': [['darwin'], ['x64']],
  'linux-arm64': [['linux'], ['arm64'], ['glibc']],
  'linux-arm64-musl': [['linux'], ['arm64'], ['musl']],
  'linux-x64': [['linux'], ['x64'], ['glibc']],
  'linux-x64-musl': [['linux'], ['x64'], ['musl']],
  'win32-arm64': [['win32'], ['arm64']],
  'win32-x64': [['win32'], ['x64']],
};
let added = 0;
for (const [name, version] of Object.entries(biome?.optionalDependencies ?? {})) {
  const key = `node_modules/${name}`;
  if (lock.packages[key]) continue;
  const [os, cpu, libc] = PLATFORMS[name.replace('@biomejs/cli-', '')] ?? [];
  if (!os) throw new Error(`lock-platforms: unknown biome platform package ${name}`);
  lock.packages[key] = {
    version,
    cpu,
    dev: true,
    license: biome.license,
    optional: true,
    os,
    ...(libc ? { libc } : {}),
    engines: biome.engines,
  };
  added++;
}
if (added > 0) {
  const [root, ...rest] = Object.entries(lock.packages);
  lock.packages = Object.fromEntries([root, ...rest.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
}
console.info(`lock-platforms: ${added} entries added`);
