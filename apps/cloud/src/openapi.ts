/**
 * `generateOpenApi()`: the cloud API's OpenAPI document, built from the route schemas without
 * listening or starting workers (an in-memory SQLite database, a throwaway data dir).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, writeToml } from '@rgbx/service-kit';
import { buildCloud } from './cloud.ts';
import { loadConfig } from './config.ts';

export async function generateOpenApi(): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'cloud-openapi-'));
  try {
    const cfg = loadConfig({
      text: writeToml({
        cloud: { data_dir: dir },
        database: { url: 'sqlite::memory:' },
        backend: { btc_rpc_address: '127.0.0.1:18443' },
        signing_keys: { encryption_key: randomBytes(32).toString('hex') },
      }),
    });
    const cloud = await buildCloud(cfg, { logger: createLogger({ name: 'openapi', level: 'silent' }) });
    try {
      await cloud.app.ready();
      return cloud.app.swagger();
    } finally {
      await cloud.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
