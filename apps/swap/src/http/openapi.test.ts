import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateOpenApi, renderOpenApi } from '../openapi.ts';

describe('OpenAPI', () => {
  it('documents both surfaces and the resolver API from the TypeBox schemas', async () => {
    const doc = (await generateOpenApi()) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
      components: { schemas: Record<string, unknown> };
    };
    const paths = Object.keys(doc.paths);
    for (const p of [
      '/healthcheck',
      '/networks',
      '/tokens',
      '/quote',
      '/intents',
      '/intents/{id}/approvals',
      '/intents/{id}/status',
      '/affiliates',
      '/swaps',
      '/swaps/{id}',
      '/affiliate/v1/quotes/best',
      '/affiliate/v1/intents',
      '/affiliate/v1/intents/{intent_id}/approvals',
      '/affiliate/v1/swaps/intents/{intent_id}',
      '/resolver/v1/intents/{intent_id}/accept',
    ]) {
      expect(paths, p).toContain(p);
    }
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining([
        'SwapError',
        'QuoteA',
        'QuoteB',
        'IntentCreatedA',
        'IntentCreatedB',
        'SwapRecordB',
      ]),
    );
  });

  it('matches the committed specs/swap.openapi.json (regenerate: node apps/swap/scripts/gen-spec.mjs)', async () => {
    const committed = readFileSync(new URL('../../../../specs/swap.openapi.json', import.meta.url), 'utf8');
    expect(renderOpenApi(await generateOpenApi()) === committed, 'specs/swap.openapi.json is stale').toBe(
      true,
    );
  });
});
