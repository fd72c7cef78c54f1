#!/usr/bin/env node
/**
 * rgbx-cloud: the cloud hosting service (`npm run cloud -- -c FILE`) and its admin commands
 * (`tokens …`, `keys …`). Admin commands work on the same database, with or without the service
 * running.
 */
import { randomBytes } from 'node:crypto';
import { dumpYaml } from '@kubernetes/client-node';
import { announceListening, createLogger, runMain, runService, serveMetrics } from '@rgbx/service-kit';
import { createToken, listTokens, revokeToken } from './auth/tokens.ts';
import { type Command, parseCli, USAGE } from './cli.ts';
import { buildCloud } from './cloud.ts';
import { type CloudConfig, loadConfig, requireEncryptionKey } from './config.ts';
import { openCloudDatabase } from './db/open.ts';
import { backendResolver } from './nodes/backend.ts';
import { ClusterError } from './nodes/cluster.ts';
import { k8sSettings, nodeManifests, toClientModel } from './nodes/k8s/index.ts';
import { KeyVaultError, SigningKeyVault } from './webhooks/key-vault.ts';
import { activateKey, addKey, KeyRingError, listKeys, prepareKeyRing, retireKey } from './webhooks/keys.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);

async function admin(cfg: CloudConfig, command: Command): Promise<number> {
  // Token commands do not touch the signing keys and work without the encryption key.
  const vault = command.kind.startsWith('keys-') ? new SigningKeyVault(requireEncryptionKey(cfg)) : undefined;
  const { db, dialect, close } = await openCloudDatabase(cfg.databaseUrl, cfg.dataDir);
  try {
    if (vault) {
      try {
        await prepareKeyRing(db, vault, dialect);
      } catch (err) {
        // A stored key that does not open with the configured encryption key: a configuration error.
        if (!(err instanceof KeyRingError || err instanceof KeyVaultError)) throw err;
        process.stderr.write(`rgbx-cloud: ${err.message}\n`);
        return 2;
      }
    }
    switch (command.kind) {
      case 'tokens-create': {
        const { token, info } = await createToken(db, command.account, command.name);
        out(JSON.stringify({ token, id: info.id, account: info.account, name: info.name }));
        process.stderr.write('Store this token now: it is not shown again.\n');
        return 0;
      }
      case 'tokens-list': {
        const rows = await listTokens(db, command.account);
        if (command.json) out(JSON.stringify(rows));
        else
          for (const t of rows)
            out(
              `${t.id}  ${t.account}  ${t.name}  created ${t.createdAt}${t.revokedAt ? `  REVOKED ${t.revokedAt}` : ''}`,
            );
        return 0;
      }
      case 'tokens-revoke': {
        if (await revokeToken(db, command.id)) {
          out(`revoked ${command.id.length > 16 ? 'token' : command.id}`);
          return 0;
        }
        process.stderr.write(`rgbx-cloud: no active token ${JSON.stringify(command.id.slice(0, 16))}\n`);
        return 1;
      }
      case 'keys-list':
        out(JSON.stringify(await listKeys(db), null, 2));
        return 0;
      case 'keys-add':
        out(JSON.stringify({ keyId: await addKey(db, vault!), status: 'published' }));
        return 0;
      case 'keys-activate':
        await activateKey(db, command.kid);
        out(JSON.stringify({ keyId: command.kid, status: 'current' }));
        return 0;
      case 'k8s-render': {
        const n = await db
          .selectFrom('nodes')
          .selectAll()
          .where('id', '=', command.nodeId)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (!n) {
          process.stderr.write(`rgbx-cloud: no node ${JSON.stringify(command.nodeId.slice(0, 64))}\n`);
          return 1;
        }
        let backend: ReturnType<Awaited<ReturnType<typeof backendResolver>>>;
        try {
          backend = (await backendResolver(cfg))();
        } catch (err) {
          process.stderr.write(`rgbx-cloud: ${(err as Error).message}\n`);
          return 2;
        }
        const objects = nodeManifests(
          k8sSettings(cfg),
          { nodeId: n.id, accountId: n.account_id, network: n.network },
          backend,
          n.desired === 'paused' ? 0 : 1,
        );
        // Through the client's model names (`_from`), which its YAML dump turns back into the API's.
        out(objects.map((o) => dumpYaml(toClientModel(o)).trimEnd()).join('\n---\n'));
        return 0;
      }
      case 'keys-retire':
        await retireKey(db, command.kid);
        out(JSON.stringify({ keyId: command.kid, status: 'retired' }));
        return 0;
      default:
        return 2;
    }
  } catch (err) {
    if (err instanceof KeyRingError || err instanceof KeyVaultError) {
      process.stderr.write(`rgbx-cloud: ${err.message}\n`);
      return 1;
    }
    throw err;
  } finally {
    await close();
  }
}

async function main(): Promise<number | undefined> {
  const cli = parseCli(process.argv.slice(2));
  if (cli.command.kind === 'help') {
    out(USAGE);
    return 0;
  }
  if (cli.command.kind === 'encryption-key') {
    out(randomBytes(32).toString('hex'));
    return 0;
  }
  const cfg: CloudConfig = loadConfig(cli.config === undefined ? {} : { file: cli.config });
  if (cli.command.kind === 'serve' || cli.command.kind.startsWith('keys-')) requireEncryptionKey(cfg);
  if (cli.command.kind !== 'serve') return admin(cfg, cli.command);

  const logger = createLogger({ name: 'cloud', level: cfg.cloud.log_level, destination: 2 });
  let cloud: Awaited<ReturnType<typeof buildCloud>>;
  try {
    cloud = await buildCloud(cfg, { logger });
  } catch (err) {
    // A key that does not open (wrong or changed encryption key) stops the start with its reason.
    if (err instanceof KeyRingError || err instanceof KeyVaultError || err instanceof ClusterError) {
      process.stderr.write(`rgbx-cloud: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  // Its own listener (default 127.0.0.1:9403), before the API: a taken port fails the start.
  let metricsServer: Awaited<ReturnType<typeof serveMetrics>>;
  try {
    metricsServer = await serveMetrics(cloud.metrics, cfg.metrics);
  } catch (err) {
    await cloud.close();
    process.stderr.write(`rgbx-cloud: ${(err as Error).message}\n`);
    return 2;
  }
  const svc = await runService({
    app: cloud.app,
    host: cfg.api.listen_address,
    port: cfg.api.port,
    logger,
    onShutdown: async () => {
      await cloud.close();
      await metricsServer?.close();
    },
  });
  cloud.startWorkers();
  const b = cfg.backend;
  const backend = b.btc_rpc_address ? 'fixed' : (b.plugin ?? 'none');
  logger.info(
    {
      dialect: cloud.dialect,
      instance: cloud.cluster.id,
      dataDir: cfg.dataDir,
      walletNodeMain: cfg.walletNodeMain,
      backend,
    },
    'cloud started',
  );
  if (backend === 'none')
    logger.warn(
      'no [backend] configured: hosted nodes cannot start until btc_rpc_address (or a plugin) is set',
    );
  if (metricsServer) logger.info({ url: metricsServer.url }, 'metrics listening');
  announceListening(svc.address.url, metricsServer ? { metrics_url: metricsServer.url } : {});
  return undefined;
}

runMain('rgbx-cloud', main, { usage: USAGE });
