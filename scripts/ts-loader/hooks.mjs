// Module-customization hooks (registered by `register.mjs`): a `file:` URL ending in `.ts` is loaded as
// an ES module transpiled by TypeScript's `transpileModule` (types erased, one file at a time, no type
// check: `tsc` does that). Import specifiers are left as written: the sources import `./x.ts`, which
// this hook loads in turn. The output is cached by content under node_modules/.cache, so a worker whose
// sources did not change starts without loading the compiler (about a second of CPU on this machine).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const TS_VERSION = require('typescript/package.json').version;
const CACHE = new URL('../../node_modules/.cache/rgbx/ts-loader/', import.meta.url);
// tsconfig.base.json's emit settings that matter for one file; no `rewriteRelativeImportExtensions`.
const OPTIONS = {
  module: 'esnext',
  target: 'es2023',
  verbatimModuleSyntax: true,
  inlineSourceMap: true,
  inlineSources: true,
};
let ts;

function transpile(url, text) {
  const key = createHash('sha256')
    .update(`${TS_VERSION}\0${JSON.stringify(OPTIONS)}\0${url}\0${text}`)
    .digest('hex');
  const file = new URL(`${key}.js`, CACHE);
  try {
    return readFileSync(file, 'utf8');
  } catch {}
  ts ??= require('typescript');
  const out = ts.transpileModule(text, { fileName: url, compilerOptions: OPTIONS }).outputText;
  try {
    mkdirSync(CACHE, { recursive: true });
    const tmp = new URL(`${key}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`, CACHE);
    writeFileSync(tmp, out);
    renameSync(tmp, file);
  } catch {}
  return out;
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  const text = await readFile(new URL(url), 'utf8');
  return { format: 'module', source: transpile(url, text), shortCircuit: true };
}
