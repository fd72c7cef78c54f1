/**
 * The OpenAPI document of both surfaces and the resolver API, as `/_swagger/json` serves it.
 * `apps/swap/scripts/gen-spec.mjs` writes it to `specs/swap.openapi.json` (`--check` fails on drift).
 */
import { writeToml } from '@rgbx/service-kit';
import { buildSwapApp } from './app.ts';
import { loadConfig } from './config.ts';
import { openSwapDatabase } from './store/database.ts';

export async function generateOpenApi(): Promise<Record<string, unknown>> {
  const config = loadConfig(
    { text: writeToml({ preimage_key: '00'.repeat(32), database_url: 'sqlite::memory:' }) },
    {},
  );
  const { db, dialect, close } = await openSwapDatabase(config.databaseUrl);
  const { app } = buildSwapApp({ config, db, dialect });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await close();
  }
}

/** The document as committed: 2-space JSON with a trailing newline. */
export function renderOpenApi(doc: Record<string, unknown>): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
