#!/usr/bin/env node
// Writes the swap service's OpenAPI document (both surfaces + the resolver API, exactly what
// `/_swagger/json` serves) to specs/swap.openapi.json. Uses the built dist: run `npx tsc -b` first.
//
//   node apps/swap/scripts/gen-spec.mjs           # regenerate
//   node apps/swap/scripts/gen-spec.mjs --check   # exit 1 when the committed file is stale (CI)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dist = new URL('../dist/index.js', import.meta.url);
if (!existsSync(fileURLToPath(dist))) {
  console.error('gen-spec: apps/swap/dist is missing; run `npx tsc -b` first');
  process.exit(2);
}
const { generateOpenApi, renderOpenApi } = await import(dist.href);
const target = fileURLToPath(new URL('../../../specs/swap.openapi.json', import.meta.url));
const text = renderOpenApi(await generateOpenApi());
if (process.argv.includes('--check')) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (current !== text) {
    console.error(
      'gen-spec: specs/swap.openapi.json is stale; run `node apps/swap/scripts/gen-spec.mjs` and commit it',
    );
    process.exit(1);
  }
  console.info('gen-spec: specs/swap.openapi.json is up to date');
} else {
  writeFileSync(target, text);
  console.info(`gen-spec: wrote ${target} (${text.length} bytes)`);
}
