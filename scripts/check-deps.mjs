// Enforces the one-way dependency graph (README "Layout"): fails with the offending edge.
//  - packages/* never depend on apps/*
//  - only packages/rgb depends on (or imports) the native rgb-lib binding
//  - the sdk depends on no server-side package
//  - every workspace dependency is pinned exactly (no ^ or ~)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const problems = [];
const workspaces = ['packages', 'apps'].flatMap((d) =>
  readdirSync(join(root, d))
    .map((n) => join(d, n))
    .filter((p) => statSync(join(root, p, 'package.json'), { throwIfNoEntry: false })),
);
const names = new Map(
  workspaces.map((w) => [JSON.parse(readFileSync(join(root, w, 'package.json'), 'utf8')).name, w]),
);
const NATIVE = '@rgb-tools/rgb-lib-linux-x64';

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.name === 'node_modules' || e.name === 'dist'
      ? []
      : e.isDirectory()
        ? walk(join(dir, e.name))
        : [join(dir, e.name)],
  );
}

for (const w of workspaces) {
  const pkg = JSON.parse(readFileSync(join(root, w, 'package.json'), 'utf8'));
  const deps = { ...pkg.dependencies, ...pkg.devDependencies };
  for (const [dep, range] of Object.entries(deps)) {
    if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range)) problems.push(`${w}: ${dep}@${range} is not an exact pin`);
    const target = names.get(dep);
    if (target && w.startsWith('packages/') && target.startsWith('apps/'))
      problems.push(`${w} depends on app ${dep}`);
    if (dep === NATIVE && w !== 'packages/rgb')
      problems.push(`${w} depends on the native binding; only packages/rgb may`);
    if (w === 'packages/sdk' && target && target !== 'packages/sdk' && target !== 'packages/contracts')
      problems.push(`sdk depends on ${dep}; the sdk stays client-side`);
  }
  for (const f of walk(join(root, w, 'src')).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(f, 'utf8');
    if (w !== 'packages/rgb' && text.includes(NATIVE))
      problems.push(`${relative(root, f)} references ${NATIVE}`);
    for (const m of text.matchAll(/from '(@rgbx\/[\w-]+)/g)) {
      const target = names.get(m[1]);
      if (w.startsWith('packages/') && target?.startsWith('apps/') && !f.endsWith('.test.ts')) {
        problems.push(`${relative(root, f)} imports app ${m[1]}`);
      }
      if (target && target !== w && !(m[1] in deps) && !f.endsWith('.test.ts')) {
        problems.push(`${relative(root, f)} imports ${m[1]} without declaring it in ${w}/package.json`);
      }
    }
  }
}
const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const [dep, range] of Object.entries({ ...rootPkg.dependencies, ...rootPkg.devDependencies })) {
  if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range))
    problems.push(`package.json: ${dep}@${range} is not an exact pin`);
}
if (problems.length > 0) {
  console.error(`dependency check failed:\n  - ${problems.join('\n  - ')}`);
  process.exit(1);
}
console.info(`dependency check: ${workspaces.length} workspaces ok`);
