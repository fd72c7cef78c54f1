import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** PostgreSQL server used by tests (trust auth on loopback here); override with RGBX_TEST_PG_URL. */
export const TEST_PG_URL = process.env.RGBX_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Creates a throwaway PostgreSQL database for one test file and returns its URL and a drop function,
 * so test files never share state and can run in parallel.
 */
export async function createTestPgDatabase(
  prefix = 'rgbx_test',
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(TEST_PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: TEST_PG_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}
