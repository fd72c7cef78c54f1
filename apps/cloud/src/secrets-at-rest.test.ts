/**
 * Secrets at rest, on SQLite and PostgreSQL: the signing keys' private parts are stored only sealed
 * (AES-256-GCM under the configured encryption key), a database written before that (plain PEM in
 * the old column) is migrated and sealed at start, and a wrong key stops the start. SQLite files
 * (database, WAL, shared memory) are 0600 whatever the umask. The service process refuses to start
 * without an encryption key and names the config key.
 */
import { execFile } from 'node:child_process';
import { generateKeyPair } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { verifyWebhook } from '@rgbx/sdk';
import { createLogger } from '@rgbx/service-kit';
import { createTestPgDatabase, migrateToLatest, openDatabase } from '@rgbx/store';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from './auth/tokens.ts';
import { buildCloud } from './cloud.ts';
import { loadConfig } from './config.ts';
import { cloudMigrations } from './db/migrations.ts';
import { openCloudDatabase } from './db/open.ts';
import { CLOUD_MAIN } from './process-helpers.ts';
import { selfSignedCert, TestReceiver, testConfig, testConfigText, until } from './test-support.ts';
import { SigningKeyVault } from './webhooks/key-vault.ts';
import { KeyRingError, keyIdOf } from './webhooks/keys.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-at-rest-'));
const tls = selfSignedCert(join(root, 'tls'));
let pg: Awaited<ReturnType<typeof createTestPgDatabase>>;
beforeAll(async () => {
  pg = await createTestPgDatabase('cloud_at_rest');
});
afterAll(async () => {
  await pg?.drop();
  rmSync(root, { recursive: true, force: true });
});

const silent = () => createLogger({ name: 'at-rest', level: 'silent' });
const mode = (f: string) => statSync(f).mode & 0o777;
/** A 40-character run of the PEM's base64 body: what would give a plain key away in raw bytes. */
const pemFingerprint = (pem: string) => pem.split('\n')[5]!.slice(0, 40);

describe.each([
  ['sqlite', (dir: string) => `sqlite:${join(dir, 'cloud.db')}`],
  ['postgres', () => pg.url],
])('signing keys at rest on %s', (name, dbUrl) => {
  it('stores the generated key only sealed, and signs with it', async () => {
    const dir = mkdtempSync(join(root, 'new-'));
    const receiver = await new TestReceiver(tls).start();
    const cloud = await buildCloud(testConfig({ dir, databaseUrl: dbUrl(dir), caFile: tls.certFile }), {
      logger: silent(),
    });
    try {
      cloud.dispatcher.start();
      const rows = await cloud.db
        .selectFrom('signing_keys')
        .selectAll()
        .where('status', '=', 'current')
        .execute();
      expect(rows).toHaveLength(1);
      const row = rows[0]!;
      expect(row.private_key_sealed).toMatch(
        new RegExp(
          `^rgbxc-sk1\\.${cloud.vault.keyId}\\.[A-Za-z0-9_-]{16}\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{22}$`,
        ),
      );
      expect(row.private_key_sealed).not.toContain('PRIVATE KEY');
      const pem = cloud.vault.open(row.private_key_sealed, row.kid);
      expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      // Sealed for this key id only: the same ciphertext on another row does not open.
      expect(() => cloud.vault.open(row.private_key_sealed, 'another-kid')).toThrow(/failed authentication/);
      if (name === 'sqlite') {
        const raw = Buffer.concat(
          [join(dir, 'cloud.db'), join(dir, 'cloud.db-wal')].filter(existsSync).map((f) => readFileSync(f)),
        ).toString('latin1');
        expect(raw).toContain(row.private_key_sealed.slice(0, 60));
        expect(raw).not.toContain(pemFingerprint(pem));
      }
      const { info } = await createToken(cloud.db, 'rest', 't');
      const n = await cloud.manager.create(info.accountId, {
        name: 'signed',
        network: 'regtest',
        webhookUrl: receiver.url('/signed'),
      });
      await until('delivered', () => receiver.requests.length === 1);
      const req = receiver.requests[0]!;
      expect(req.headers['x-service-signature-key-id']).toBe(row.kid);
      expect(
        verifyWebhook(req.body, req.headers['x-service-signature'] as string, row.public_pem, n.id).ok,
      ).toBe(true);
    } finally {
      await cloud.close();
      await receiver.stop();
    }
  });

  it('seals plain PEM keys of an older database at start, keeps their ids, and purges the plain text', async () => {
    const dir = mkdtempSync(join(root, 'old-'));
    const url = dbUrl(dir);
    if (name === 'postgres') {
      const { db } = openDatabase(url);
      await sql`drop table if exists webhook_attempts, webhook_events, node_status_changes, nodes, cloud_instances, signing_keys, api_tokens, accounts, kysely_migration, kysely_migration_lock cascade`.execute(
        db,
      );
      await db.destroy();
    }
    // The database as the previous version left it: schema 0001, the private key as plain PKCS#8 PEM.
    const { privateKey, publicKey } = await promisify(generateKeyPair)('rsa', {
      modulusLength: 3072,
      publicExponent: 0x10001,
    });
    const kid = keyIdOf(publicKey);
    const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const old = openDatabase(url);
    await migrateToLatest(old.db, old.dialect, (d) => ({ '0001_cloud': cloudMigrations(d)['0001_cloud']! }));
    await sql`insert into signing_keys (kid, private_pem, public_pem, status, created_at, activated_at)
              values (${kid}, ${privatePem}, ${publicPem}, 'current', ${Date.now()}, ${Date.now()})`.execute(
      old.db,
    );
    await old.close();

    const lines: string[] = [];
    const logger = createLogger({
      name: 'at-rest',
      level: 'info',
      destination: { write: (l: string) => lines.push(l) },
    });
    const cfg = testConfig({ dir, databaseUrl: url, caFile: tls.certFile });
    const cloud = await buildCloud(cfg, { logger });
    let sealed: string;
    try {
      const rows = await cloud.db.selectFrom('signing_keys').selectAll().execute();
      expect(rows.map((r) => [r.kid, r.status])).toEqual([[kid, 'current']]);
      sealed = rows[0]!.private_key_sealed;
      expect(SigningKeyVault.isSealed(sealed)).toBe(true);
      expect(cloud.vault.open(sealed, kid)).toBe(privatePem);
      expect(lines.map((l) => JSON.parse(l)).filter((l) => l.msg.includes('plain PEM'))).toEqual([
        expect.objectContaining({
          level: 40,
          sealed: 1,
          msg: 'signing keys stored as plain PEM were encrypted with the configured key',
        }),
      ]);
      const { token } = await createToken(cloud.db, 'rest', 't');
      const published = await cloud.app.inject({
        method: 'GET',
        url: '/api/webhook-public-key',
        headers: { authorization: `Bearer ${token}` },
      });
      expect(published.json()).toMatchObject({ keyId: kid, data: publicPem });
    } finally {
      await cloud.close();
    }
    if (name === 'sqlite') {
      const raw = Buffer.concat(
        [join(dir, 'cloud.db'), join(dir, 'cloud.db-wal')].filter(existsSync).map((f) => readFileSync(f)),
      ).toString('latin1');
      expect(raw).toContain(sealed.slice(0, 60));
      expect(raw).not.toContain(pemFingerprint(privatePem));
    }
    // A second start finds nothing to seal and opens the key as it is.
    const again = await buildCloud(cfg, { logger: silent() });
    try {
      const row = await again.db.selectFrom('signing_keys').selectAll().executeTakeFirstOrThrow();
      expect(row.private_key_sealed).toBe(sealed);
    } finally {
      await again.close();
    }

    // Another encryption key: the start stops, naming both key ids, and nothing is changed.
    const other = loadConfig({
      text: testConfigText({ dir, databaseUrl: url, signingKeys: `encryption_key = "${'c3'.repeat(32)}"` }),
    });
    const otherId = new SigningKeyVault(Buffer.from('c3'.repeat(32), 'hex')).keyId;
    const expected = `signing key ${kid} is encrypted with encryption key ${new SigningKeyVault(Buffer.from('5a'.repeat(32), 'hex')).keyId}, but the configured encryption key is ${otherId}`;
    const err = await buildCloud(other, { logger: silent() }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(KeyRingError);
    expect((err as Error).message).toBe(expected);
    const { db, close } = await openCloudDatabase(url, dir);
    try {
      expect(
        (await db.selectFrom('signing_keys').select('private_key_sealed').executeTakeFirstOrThrow())
          .private_key_sealed,
      ).toBe(sealed);
    } finally {
      await close();
    }
  });
});

describe('SQLite file modes', () => {
  it('creates the database, WAL and shared-memory files 0600 in a 0700 dir even with umask 000, and narrows an old 0644 file', async () => {
    const previous = process.umask(0o000);
    try {
      const dir = join(mkdtempSync(join(root, 'modes-')), 'data');
      const file = join(dir, 'cloud.db');
      const { db, close } = await openCloudDatabase(`sqlite:${file}`, dir);
      try {
        await createToken(db, 'modes', 't'); // a write: the WAL is in use
        expect(mode(dir)).toBe(0o700);
        for (const f of [file, `${file}-wal`, `${file}-shm`]) {
          expect(existsSync(f), f).toBe(true);
          expect(mode(f), f).toBe(0o600);
        }
      } finally {
        await close();
      }
      // A database left 0644 by an older version (its WAL/SHM gone at clean close).
      chmodSync(file, 0o644);
      expect(existsSync(`${file}-wal`)).toBe(false);
      const reopened = await openCloudDatabase(`sqlite:${file}`, dir);
      try {
        await createToken(reopened.db, 'modes', 't2');
        for (const f of [file, `${file}-wal`, `${file}-shm`]) expect(mode(f), f).toBe(0o600);
      } finally {
        await reopened.close();
      }
    } finally {
      process.umask(previous);
    }
  });
});

describe('encryption key configuration (the built service)', () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [CLOUD_MAIN, ...args],
        { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } },
        (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
      );
    });

  it('refuses to start without a key, naming the config key; tokens work without it; env and file keys work', async () => {
    const dir = mkdtempSync(join(root, 'cli-'));
    const conf = join(dir, 'cloud.toml');
    writeFileSync(
      conf,
      testConfigText({ dir, databaseUrl: `sqlite:${join(dir, 'cloud.db')}`, signingKeys: '' }).replace(
        '[api]\nport = 0',
        '[api]\nport = 0\nlisten_address = "127.0.0.1"',
      ),
    );
    const missing = await run(['-c', conf]);
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain(
      'no encryption key for the webhook signing keys: set "signing_keys.encryption_key"',
    );
    expect(missing.stderr).toContain('RGBX_CLOUD_ENCRYPTION_KEY');
    expect(existsSync(join(dir, 'cloud.db'))).toBe(false); // stopped before opening anything
    const keysList = await run(['-c', conf, 'keys', 'list']);
    expect(keysList.code).toBe(2);
    expect(keysList.stderr).toContain('"signing_keys.encryption_key"');

    const tokens = await run(['-c', conf, 'tokens', 'create', '--account', 'ops']);
    expect(tokens.code).toBe(0);
    expect(JSON.parse(tokens.stdout).token).toMatch(/^rgbxc_/);

    const generated = await run(['encryption-key']);
    expect(generated.code).toBe(0);
    expect(generated.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    const key = generated.stdout.trim();

    const viaEnv = await run(['-c', conf, 'keys', 'list'], { RGBX_CLOUD_ENCRYPTION_KEY: key });
    expect(viaEnv.code).toBe(0);
    const listed = JSON.parse(viaEnv.stdout) as { keyId: string; status: string }[];
    expect(listed.map((k) => k.status)).toEqual(['current']);
    expect(viaEnv.stderr).toBe('');
    const bad = await run(['-c', conf, 'keys', 'list'], { RGBX_CLOUD_ENCRYPTION_KEY: 'ab'.repeat(31) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('environment variable RGBX_CLOUD_ENCRYPTION_KEY must be 64 hex characters');

    // A key file: it must not be readable by group or others.
    const keyFile = join(dir, 'cloud.key');
    writeFileSync(keyFile, `${key}\n`, { mode: 0o644 });
    chmodSync(keyFile, 0o644);
    const fileConf = join(dir, 'file.toml');
    writeFileSync(
      fileConf,
      readFileSync(conf, 'utf8').replace(
        '[signing_keys]\n',
        `[signing_keys]\nencryption_key_file = ${JSON.stringify(keyFile)}\n`,
      ),
    );
    const open = await run(['-c', fileConf, 'keys', 'list']);
    expect(open.code).toBe(2);
    expect(open.stderr).toContain(
      `"signing_keys.encryption_key_file" ${keyFile}: readable by group or others (chmod 600 it)`,
    );
    chmodSync(keyFile, 0o600);
    const viaFile = await run(['-c', fileConf, 'keys', 'list']);
    expect(viaFile.code).toBe(0);
    expect((JSON.parse(viaFile.stdout) as { keyId: string }[]).map((k) => k.keyId)).toEqual(
      listed.map((k) => k.keyId),
    );

    // The same database under another key: the keys commands and the service stop with exit 2.
    const wrong = await run(['-c', conf, 'keys', 'list'], { RGBX_CLOUD_ENCRYPTION_KEY: '0f'.repeat(32) });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(
      /^rgbx-cloud: signing key \S+ is encrypted with encryption key [0-9a-f]{8}, but the configured encryption key is [0-9a-f]{8}\n$/,
    );
    const serveWrong = await run(['-c', conf], { RGBX_CLOUD_ENCRYPTION_KEY: '0f'.repeat(32) });
    expect(serveWrong.code).toBe(2);
    expect(serveWrong.stdout).toBe('');
    expect(serveWrong.stderr).toContain('is encrypted with encryption key');
  });
});
