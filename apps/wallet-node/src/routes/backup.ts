/**
 * Backup, download and restore of a wallet, as RGB-OS rgb-sdk and the UTEXO BTCPay plugin call them:
 *
 * - `POST /wallet/backup {password}`: rgb-lib's encrypted backup of the wallet (scrypt + XChaCha20-Poly1305),
 *   kept on the node for download under a random id (see backups.ts: one per wallet, 24 h);
 * - `GET /wallet/backup/{backup_id}`: the file, only to the wallet that made it (any other identity: 404);
 *   `backup_id` may be the wallet's xpub_van for its latest backup (rgb-sdk's default);
 * - `POST /wallet/restore` (multipart: file, password, xpub_van, xpub_col, master_fingerprint): recreates a
 *   wallet that this node does not have yet, after checking the backup is the claimed wallet's.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import multipart from '@fastify/multipart';
import * as C from '@rgbx/contracts/wallet-node';
import { RgbLibError, restoreBackup } from '@rgbx/rgb';
import type { FastifyReply, FastifyRequest, ServiceApp } from '@rgbx/service-kit';
import { ServiceError, Type } from '@rgbx/service-kit';
import { BackupStore } from '../backups.ts';
import { NETWORKS } from '../config.ts';
import { E } from '../errors.ts';
import {
  HEADER_FINGERPRINT,
  HEADER_XPUB_COL,
  HEADER_XPUB_VAN,
  readIdentity,
  type WalletIdentity,
} from '../identity.ts';
import { field, fileField, multipartLimits, UploadArea, Uploads } from '../uploads.ts';
import type { WalletContext } from '../wallets.ts';
import { errorResponses, missingHeaders, type RouteDeps, routeKit, send, WalletHeaders } from './kit.ts';

/** How often expired backups are deleted (they are also skipped and deleted at every lookup). */
const SWEEP_EVERY_MS = 10 * 60 * 1000;

const fail = (code: { code: string; status: number }, message: string, details?: Record<string, unknown>) =>
  new ServiceError(code.code, code.status, message, details === undefined ? {} : { details });

/** Form field ↔ header of each identity part, for messages. */
const FORM_FIELDS: Record<string, string> = {
  [HEADER_XPUB_VAN]: 'xpub_van',
  [HEADER_XPUB_COL]: 'xpub_col',
  [HEADER_FINGERPRINT]: 'master_fingerprint',
};

/** The wallet named by the restore form's fields, or null when it names none (then the headers do). */
function formIdentity(body: C.RestoreRequestT, network: string): WalletIdentity | null {
  const parts = {
    xpub_van: body.xpub_van,
    xpub_col: body.xpub_col,
    master_fingerprint: body.master_fingerprint,
  };
  const missing = Object.entries(parts).filter(([, v]) => v === undefined);
  if (missing.length === 3) return null;
  if (missing.length > 0) throw E.BAD_INPUT.create(`missing field \`${missing[0]![0]}\``);
  try {
    return readIdentity(
      {
        [HEADER_XPUB_VAN]: parts.xpub_van,
        [HEADER_XPUB_COL]: parts.xpub_col,
        [HEADER_FINGERPRINT]: parts.master_fingerprint,
      },
      network,
    );
  } catch (err) {
    if (!E.INVALID_HEADER.is(err)) throw err;
    const m = /^invalid (\S+) header: (.*)$/s.exec(err.message);
    const name = m ? (FORM_FIELDS[m[1]!] ?? m[1]!) : 'identity';
    throw fail(E.INVALID_REQUEST, `invalid form field ${name}: ${m ? m[2] : err.message}`, { field: name });
  }
}

const sameIdentity = (a: WalletIdentity, b: WalletIdentity) =>
  a.fingerprint === b.fingerprint && a.xpubVanilla === b.xpubVanilla && a.xpubColored === b.xpubColored;

/** rgb-lib's restore errors a client can fix: a wrong password or a file that is no (readable) backup. */
function restoreError(err: unknown): unknown {
  if (!(err instanceof RgbLibError)) return err;
  if (err.variant === 'WrongPassword') {
    return fail(E.INVALID_REQUEST, 'wrong password: the backup cannot be decrypted with it', {
      kind: 'WrongPassword',
    });
  }
  if (err.variant === 'InvalidFilePath' || err.variant === 'UnsupportedBackupVersion') {
    return fail(E.INVALID_REQUEST, 'the file is not an rgb-lib wallet backup, or it is damaged', {
      kind: err.variant,
    });
  }
  return err;
}

interface Manifest {
  bitcoin_network?: unknown;
  account_xpub_vanilla?: unknown;
  account_xpub_colored?: unknown;
  master_fingerprint?: unknown;
  witness_version?: unknown;
}

export function registerBackupRoutes(app: ServiceApp, deps: RouteDeps): void {
  const { cfg, registry } = deps;
  const dataDir = cfg.wallet.data_dir;
  const network = cfg.wallet.network;
  const store = new BackupStore(dataDir);
  const area = new UploadArea(dataDir, 'restore');
  app.addHook('onReady', async () => {
    store.open(SWEEP_EVERY_MS);
    area.clearLeftovers();
  });
  app.addHook('onClose', async () => store.close());

  const { walletRoute } = routeKit(app, deps);

  walletRoute<C.BackupRequestT>(
    '/wallet/backup',
    {
      summary: 'Encrypted backup of the wallet, kept on the node for download',
      description:
        "rgb-lib's own backup format: the wallet directory zipped, encrypted with a key scrypt-derived from " +
        '`password` (XChaCha20-Poly1305); the node never stores the password. The file is kept under a random ' +
        '`backup_id` for 24 hours and served by `GET /wallet/backup/{backup_id}` only to this wallet; a new ' +
        'backup replaces the previous one. Takes about a second (scrypt).',
      body: C.BackupRequest,
      response: Type.Ref('WalletBackupResponse'),
      online: false,
    },
    async (ctx, w, b) => {
      const rec = await store.create(ctx.id, (path) => w.backup(path, b.password));
      return {
        message: 'Backup created successfully',
        backup_id: rec.id,
        download_url: `/wallet/backup/${rec.id}`,
        expires_at: Math.floor(rec.expiresAt / 1000),
        size: rec.size,
      };
    },
  );

  const download = async (req: FastifyRequest, reply: FastifyReply, idOrXpub: string) => {
    const rec = store.find(req.walletIdentity!, idOrXpub);
    if (!rec) throw E.NOT_FOUND.create('backup');
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      // Opened before replying: a backup replaced or expiring meanwhile is still streamed whole.
      fh = await open(store.pathOf(rec), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw E.NOT_FOUND.create('backup');
      throw err;
    }
    const { size } = await fh.stat();
    return reply
      .type('application/octet-stream')
      .header('content-disposition', `attachment; filename="wallet-${rec.fingerprint}.backup"`)
      .header('content-length', size)
      .send(fh.createReadStream());
  };
  const downloadSchema = {
    summary: 'Download a backup made by this wallet',
    description:
      'The encrypted file (application/octet-stream, as an attachment). Only the wallet that made the ' +
      'backup gets it: the three headers must name it; for any other wallet, or an unknown or expired id, 404. ' +
      "`backup_id` may be the wallet's xpub_van: its latest backup. It can be downloaded again until it expires.",
    tags: ['wallet'],
    headers: WalletHeaders,
    response: {
      200: {
        description: 'the backup file',
        content: { 'application/octet-stream': { schema: Type.String({ format: 'binary' }) } },
      } as never,
      400: errorResponses[400],
      401: errorResponses[401],
      404: Type.Ref('WalletErrorEnvelope', { description: 'no such backup for this wallet (code 1000)' }),
      500: errorResponses[500],
    },
  };
  // The app's identity hook serves POST routes only: these GETs check the headers themselves, before the
  // schema would answer a missing header with 422.
  const identity = async (req: FastifyRequest, reply: FastifyReply) => {
    const id = readIdentity(req.headers, network);
    if (!id) return missingHeaders(reply);
    req.walletIdentity = id;
  };
  app.get<{ Params: { backup_id: string } }>(
    '/wallet/backup/:backup_id',
    {
      schema: {
        ...downloadSchema,
        params: Type.Object({
          backup_id: Type.String({
            description:
              "the backup_id from POST /wallet/backup, or the wallet's xpub_van for its latest backup",
          }),
        }),
      },
      onRequest: identity,
    },
    (req, reply) => download(req, reply, req.params.backup_id),
  );
  // The router refuses a path parameter over 100 characters (414) before trying other routes; an xpub is
  // ~111: a wildcard route, which has no such limit, takes those (same handler, not documented twice).
  app.get<{ Params: { '*': string } }>(
    '/wallet/backup/*',
    { schema: { ...downloadSchema, hide: true } as never, onRequest: identity },
    (req, reply) => download(req, reply, req.params['*']),
  );

  app.register(async (scope) => {
    await scope.register(multipart, {
      limits: multipartLimits(cfg.api.body_limit_bytes, 1),
      throwFileSizeLimit: true,
    });
    const uploads = new Uploads(area, cfg.api.body_limit_bytes, {
      '/wallet/restore': {
        files: { file: 1 },
        toBody: (u) => ({
          file: fileField(u, 'file'),
          password: field(u, 'password'),
          xpub_van: field(u, 'xpub_van'),
          xpub_col: field(u, 'xpub_col'),
          master_fingerprint: field(u, 'master_fingerprint'),
        }),
      },
    });
    uploads.install(scope);

    scope.post(
      '/wallet/restore',
      {
        schema: {
          summary: 'Restore a wallet from a backup file (multipart/form-data)',
          description:
            'Form fields `file` (the backup), `password`, `xpub_van`, `xpub_col`, `master_fingerprint`, as ' +
            'rgb-sdk sends them; with the identity headers as well, both must name the same wallet (else 409). ' +
            'The wallet must not exist on this node (409). The backup is decrypted into a scratch directory ' +
            "first; its wallet must be the claimed one (fingerprint, both xpubs) and on this node's network, " +
            'else 409 and nothing is created; then it is moved into place at once. A wrong password is a 400 ' +
            `(code 1010, details.kind "WrongPassword"). The file may be at most api.body_limit_bytes (413).`,
          tags: ['wallet'],
          headers: WalletHeaders,
          consumes: ['multipart/form-data'],
          body: { content: { 'multipart/form-data': { schema: Type.Ref('RestoreRequest') } } } as never,
          response: { 200: Type.Ref('WalletRestoreResponse'), ...errorResponses },
        },
      },
      async (req, reply) => {
        const upload = uploads.claim(req);
        let result: Awaited<ReturnType<typeof restore>>;
        try {
          result = await restore(req, upload?.files.find((f) => f.field === 'file')?.path);
        } finally {
          await uploads.release(req);
        }
        return send(reply, result);
      },
    );

    async function restore(req: FastifyRequest, file: string | undefined) {
      const body = req.body as C.RestoreRequestT;
      if (file === undefined) throw E.BAD_INPUT.create('`file` must be a file part (the backup)');
      const fromForm = formIdentity(body, network);
      const fromHeaders = req.walletIdentity ?? null;
      if (fromForm && fromHeaders && !sameIdentity(fromForm, fromHeaders)) {
        throw fail(
          E.WALLET_MISMATCH,
          'the form fields and the xpub-van/xpub-col/master-fingerprint headers name different wallets',
          {
            form_master_fingerprint: fromForm.fingerprint,
            header_master_fingerprint: fromHeaders.fingerprint,
          },
        );
      }
      const id = fromForm ?? fromHeaders;
      if (!id) throw E.BAD_INPUT.create('missing field `xpub_van`');
      const fp = id.fingerprint;
      const target = join(dataDir, fp);
      const exists = () =>
        fail(E.WALLET_MISMATCH, `a wallet with master fingerprint ${fp} already exists on this node`, {
          master_fingerprint: fp,
        });
      // 409 as well when the fingerprint is known with other xpubs (in memory or on disk).
      const known = registry.size;
      const ctx = registry.resolve(id, { create: true });
      const made = registry.size > known;
      try {
        if (existsSync(target)) throw exists();
        await restoreInto(ctx, id, target, file, body.password, exists);
      } catch (err) {
        // A context made for a restore that failed must not keep the fingerprint claimed by these xpubs.
        if (made && !ctx.wallet) await registry.drop(ctx).catch(() => {});
        throw err;
      }
      // Its transfers may be in flight: the background refresh looks at it (also after a restart).
      registry.markInFlight(ctx);
      req.log.info({ wallet: fp }, 'wallet restored from backup');
      return { message: 'Wallet restored successfully', master_fingerprint: fp };
    }

    async function restoreInto(
      ctx: WalletContext,
      id: WalletIdentity,
      target: string,
      file: string,
      password: string,
      exists: () => ServiceError,
    ): Promise<void> {
      const fp = id.fingerprint;
      // In the wallet's child queue: every open of this fingerprint goes through it, so nothing can create
      // the wallet between the check and the rename.
      await ctx.slot.run('foreground', async () => {
        if (existsSync(target)) throw exists();
        const out = join(dirname(file), 'restored');
        mkdirSync(out, { mode: 0o700 });
        try {
          await restoreBackup(file, password, out, ctx.slot.host);
        } catch (err) {
          throw restoreError(err);
        }
        // rgb-lib writes `<out>/<its fingerprint>/` plus a restore log file.
        const dirs = readdirSync(out, { withFileTypes: true }).filter((e) => e.isDirectory());
        if (dirs.length !== 1 || !existsSync(join(out, dirs[0]!.name, 'wallet_manifest.json'))) {
          throw fail(E.INVALID_REQUEST, 'the file is not an rgb-lib wallet backup, or it is damaged');
        }
        const got = dirs[0]!.name;
        let manifest: Manifest;
        try {
          manifest = JSON.parse(readFileSync(join(out, got, 'wallet_manifest.json'), 'utf8')) as Manifest;
        } catch {
          throw fail(E.INVALID_REQUEST, 'the backup holds an unreadable wallet manifest');
        }
        const mismatch = (what: string, details: Record<string, unknown>) =>
          fail(E.WALLET_MISMATCH, `the backup is not the claimed wallet's: ${what}`, details);
        if (got !== fp || (manifest.master_fingerprint !== undefined && manifest.master_fingerprint !== fp)) {
          throw mismatch(`it holds wallet ${got}, not ${fp}`, {
            backup_master_fingerprint: got,
            master_fingerprint: fp,
          });
        }
        if (
          manifest.account_xpub_vanilla !== id.xpubVanilla ||
          manifest.account_xpub_colored !== id.xpubColored
        ) {
          throw mismatch('its xpubs differ', { master_fingerprint: fp });
        }
        if (manifest.bitcoin_network !== NETWORKS[network]) {
          throw mismatch(`it is a ${String(manifest.bitcoin_network)} wallet, this node serves ${network}`, {
            wallet_network: manifest.bitcoin_network,
            service_network: network,
          });
        }
        // A lock captured in the backup would make every RGB operation wait for an hour.
        rmSync(join(out, got, 'rgb_runtime.lock'), { force: true });
        renameSync(join(out, got), target);
        // The context was made before the manifest existed: take the witness version the wallet pins.
        if (manifest.witness_version === 'Taproot' || manifest.witness_version === 'SegWitV0') {
          ctx.witnessVersion = manifest.witness_version;
        }
      });
    }
  });
}
