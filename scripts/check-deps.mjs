// Enforces the one-way dependency graph (README "Layout"): fails with the offending edge.
//  - packages/* never depend on apps/*
//  - only packages/rgb depends on (or imports) the native rgb-lib binding
//  - the sdk depends on no server-side package (only the client-safe @rgbx/contracts and @rgbx/codecs)
//  - packages/codecs stays pure: no workspace dependency, no Node built-in import (it runs in browsers)
//  - every workspace dependency is pinned exactly (no ^ or ~)
//  - runtime code (what `tsc -b` emits: not tests, not test helpers) imports only packages in its
//    workspace's `dependencies`, so `npm ci --omit=dev` installs everything a service loads; a dynamic
//    `import()` or an `import type` of a devDependency is allowed (optional, or erased at build)
//  - tests import what their workspace or the root declares; bench/, e2e/, scripts/ and .ci/ import only
//    Node built-ins, workspaces and the root's own dependencies, and build output (`…/dist/….js`) that exists
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

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
    if (
      w === 'packages/sdk' &&
      target &&
      !['packages/sdk', 'packages/contracts', 'packages/codecs'].includes(target)
    )
      problems.push(`sdk depends on ${dep}; the sdk stays client-side`);
    if (w === 'packages/codecs' && target && target !== 'packages/codecs')
      problems.push(`codecs depends on ${dep}; the codecs stay pure (no workspace dependency)`);
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
const rootDeps = { ...rootPkg.dependencies, ...rootPkg.devDependencies };

/** The npm package an import specifier names (`@scope/name/sub` → `@scope/name`), or undefined for node:/relative. */
function packageOf(spec) {
  if (spec.startsWith('.') || spec.startsWith('/') || spec.startsWith('node:')) return undefined;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}
/** Static imports/re-exports (`from '…'`, without `import type`), and dynamic `import('…')`, of a source text. */
function importsOf(text) {
  const statics = [...text.matchAll(/^(?:import|export)(?!\s+type\b)[^'"]*?from\s+'([^']+)'/gms)].map(
    (m) => m[1],
  );
  const bare = [...text.matchAll(/^import\s+'([^']+)'/gm)].map((m) => m[1]);
  const dynamic = [...text.matchAll(/\bimport\(\s*'([@\w][^']*)'\s*\)/g)].map((m) => m[1]);
  return { statics: [...statics, ...bare], dynamic };
}
// Files `tsc -b` does not emit: tests and test helpers, by name. Every workspace's tsconfig.json excludes exactly
// these (`src/**/*.test.ts`, `src/**/test-*.ts`, `src/**/process-helpers.ts`); checked below.
const isTestFile = (f) => /\.test\.ts$|(^|\/)(test-[^/]+|process-helpers)\.ts$/.test(f);
const EMIT_EXCLUDE = ['src/**/*.test.ts', 'src/**/test-*.ts', 'src/**/process-helpers.ts'];
for (const w of workspaces) {
  const tsconfig = JSON.parse(readFileSync(join(root, w, 'tsconfig.json'), 'utf8'));
  if (JSON.stringify(tsconfig.exclude) !== JSON.stringify(EMIT_EXCLUDE))
    problems.push(
      `${w}/tsconfig.json: "exclude" must be ${JSON.stringify(EMIT_EXCLUDE)} (what check-deps treats as test code)`,
    );
}
const builtins = new Set((await import('node:module')).builtinModules);

for (const w of workspaces) {
  const pkg = JSON.parse(readFileSync(join(root, w, 'package.json'), 'utf8'));
  const runtime = new Set([...Object.keys(pkg.dependencies ?? {}), pkg.name]);
  const any = new Set([...runtime, ...Object.keys(pkg.devDependencies ?? {}), ...Object.keys(rootDeps)]);
  for (const f of walk(join(root, w, 'src')).filter((f) => f.endsWith('.ts'))) {
    const { statics, dynamic } = importsOf(readFileSync(f, 'utf8'));
    const test = isTestFile(relative(join(root, w), f));
    for (const spec of [...statics, ...dynamic]) {
      if (w === 'packages/codecs' && !test && (spec.startsWith('node:') || builtins.has(spec)))
        problems.push(`${relative(root, f)} imports ${spec}; the codecs use no Node built-in`);
      const dep = packageOf(spec);
      if (!dep || builtins.has(dep)) continue;
      if (!test && statics.includes(spec) && !runtime.has(dep))
        problems.push(
          `${relative(root, f)} imports ${spec} at run time, but ${dep} is not in ${w}'s dependencies`,
        );
      else if (!any.has(dep))
        problems.push(`${relative(root, f)} imports ${spec}, declared nowhere it can see`);
    }
  }
}
for (const dir of ['bench', 'e2e', 'scripts', '.ci']) {
  for (const f of walk(join(root, dir)).filter((f) => /\.(m?js|ts)$/.test(f))) {
    const text = readFileSync(f, 'utf8');
    const { statics, dynamic } = importsOf(text);
    // Relative imports of build output (`../apps/swap/dist/…`) must name a file `tsc -b` emits: a module
    // moved in src/ leaves the benchmark importing the old path. Checked once that workspace is built.
    for (const m of text.matchAll(/'(\.\.?\/[^']*\/dist\/[^']+\.js)'/g)) {
      const target = join(dirname(f), m[1]);
      const dist = target.slice(0, target.indexOf('/dist/') + 5);
      if (existsSync(dist) && !existsSync(target))
        problems.push(`${relative(root, f)} imports ${m[1]}, which the build does not emit`);
    }
    for (const spec of [...statics, ...dynamic]) {
      const dep = packageOf(spec);
      if (!dep || builtins.has(dep) || names.has(dep) || dep in rootDeps) continue;
      problems.push(
        `${relative(root, f)} imports ${spec}; add ${dep} to the root package.json's devDependencies`,
      );
    }
  }
}
for (const [dep, range] of Object.entries(rootDeps)) {
  if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(range))
    problems.push(`package.json: ${dep}@${range} is not an exact pin`);
}
if (problems.length > 0) {
  console.error(`dependency check failed:\n  - ${problems.join('\n  - ')}`);
  process.exit(1);
}
console.info(`dependency check: ${workspaces.length} workspaces ok`);
