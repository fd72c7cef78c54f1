/**
 * The Kubernetes driver against a Kubernetes API STAND-IN (test-api-standin.ts: an HTTPS server
 * answering as the documented API does; no real API server can run here). Every test using it says
 * so in its name. What is proven here is the driver's side of the protocol: server-side apply
 * requests and their idempotence, the pod watch (bookmarks, 410 Gone → relist), the status mapping,
 * stop/destroy, and the supervisor's whole lifecycle through the driver with the supervisor
 * unchanged. What a real cluster does beyond the stand-in (scheduling, image pulls, probes run by
 * the kubelet, volume binding, NetworkPolicy enforcement, RBAC) is not.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '@rgbx/service-kit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createToken } from '../../auth/tokens.ts';
import { buildCloud, type Cloud } from '../../cloud.ts';
import { loadConfig } from '../../config.ts';
import { selfSignedCert, testConfigText, until } from '../../test-support.ts';
import type { NodeBackend, NodeSpec } from '../driver.ts';
import { KubernetesDriver } from './driver.ts';
import { claimName, type K8sSettings, namespaceOf, objectName, podName } from './manifests.ts';
import { KubernetesApiStandIn } from './test-api-standin.ts';
import { validateManifest } from './test-validate.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-k8s-'));
const tls = selfSignedCert(join(root, 'tls'));
const logger = createLogger({ name: 'k8s-test', level: 'silent' });
afterAll(() => rmSync(root, { recursive: true, force: true }));

const backend: NodeBackend = {
  btcRpcAddress: 'bitcoind.rgbx-backend.svc:18443',
  btcRpcUser: 'rpc',
  indexerAddress: 'tcp://electrum.rgbx-backend.svc:50001',
  proxyAddress: ['rpc://rgb-proxy.rgbx-backend.svc:3000/json-rpc'],
};
const settings: K8sSettings = {
  image: 'rgbx/wallet-node:0.1.0',
  imagePullPolicy: 'IfNotPresent',
  cloudNamespace: 'rgbx-cloud',
  cloudPodLabels: { 'app.kubernetes.io/name': 'rgbx-cloud' },
  namespacePrefix: 'rgbx-acc-',
  port: 3001,
  storageSize: '1Gi',
  stopGraceSeconds: 15,
  resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '1', memory: '1Gi' } },
};
const spec = (n: number): NodeSpec => ({
  nodeId: `0b9f3c2e-0000-4000-8000-00000000000${n}`,
  accountId: 'acc_0123456789abcdef',
  network: 'regtest',
  dataDir: '/unused',
});

let standin: KubernetesApiStandIn;
let driver: KubernetesDriver;
const drivers: KubernetesDriver[] = [];
const newDriver = () => {
  const kc = new KubeConfig();
  kc.loadFromString(standin.kubeconfig());
  const d = new KubernetesDriver({
    kubeConfig: kc,
    settings,
    backend: () => backend,
    logger,
    rewatchDelayMs: 50,
  });
  drivers.push(d);
  return d;
};
beforeAll(async () => {
  standin = await new KubernetesApiStandIn(tls).start();
});
afterAll(async () => {
  await standin?.stop();
});
afterEach(async () => {
  await Promise.all(drivers.splice(0).map((d) => d.close()));
});

const ns = namespaceOf(settings, spec(1).accountId);

describe('Kubernetes driver (stand-in API server)', () => {
  it('(stand-in) start applies every object with server-side apply, namespace first; a second start changes nothing', async () => {
    driver = newDriver();
    const s = spec(1);
    const rt = await driver.start(s);
    expect(rt).toEqual({ pid: 1, port: 3001 });
    const applies = standin.requests.filter((r) => r.method === 'PATCH');
    expect(applies.map((r) => (r.body as { kind: string }).kind)).toEqual([
      'Namespace',
      'NetworkPolicy',
      'Secret',
      'PersistentVolumeClaim',
      'StatefulSet',
      'Service',
    ]);
    for (const r of applies) {
      expect(r.contentType).toBe('application/apply-patch+yaml');
      expect(r.query).toMatchObject({ fieldManager: 'rgbx-cloud', force: 'true' });
    }
    // What was sent is what the API expects (the client's model renames, e.g. `_from`, do not leak).
    const np = applies.find((r) => (r.body as { kind: string }).kind === 'NetworkPolicy')!.body as {
      spec: { ingress: { from: unknown[] }[] };
    };
    expect(np.spec.ingress[0]!.from).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'rgbx-cloud' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'rgbx-cloud' } },
      },
    ]);
    // Exactly the rendered manifests, each valid against the Kubernetes API schemas.
    expect(applies.map((r) => r.body)).toEqual(JSON.parse(JSON.stringify(driver.render(s))));
    for (const r of applies) validateManifest(r.body);
    const secret = standin.get('Secret', ns, objectName(s.nodeId))!;
    const toml = Buffer.from((secret.data as Record<string, string>)['node.toml']!, 'base64').toString();
    expect(toml).toContain('indexer_address = "tcp://electrum.rgbx-backend.svc:50001"');
    expect(toml).toMatch(/^btc_rpc_password = ""$/m);
    await until('pod ready', async () => (await driver.probe(s, rt)) === 'healthy', 5000);

    const rv = standin.resourceVersion;
    const before = standin.snapshot();
    expect(await driver.start(s)).toEqual(rt);
    // Idempotent: nothing changed, not even a resourceVersion; still one pod.
    expect(standin.resourceVersion).toBe(rv);
    expect(standin.snapshot()).toEqual(before);
    expect([...standin.snapshot().keys()].filter((k) => k.startsWith('Pod/'))).toEqual([
      `Pod/${ns}/${podName(s.nodeId)}`,
    ]);

    // Merge semantics: what another field manager set (an operator's annotation) survives the
    // driver's applies; a field the driver owns cannot be changed by another without force (409).
    const name = objectName(s.nodeId);
    const ops = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, namespace: ns, annotations: { 'ops/on-call': 'alice' } },
    };
    expect(standin.applyAs('ops', ops).code).toBe(200);
    expect(standin.applyAs('ops', { ...ops, spec: { replicas: 3 } } as typeof ops).code).toBe(409);
    await driver.start(s);
    const sts = standin.get('StatefulSet', ns, name)!;
    expect(sts.metadata.annotations).toEqual({ 'ops/on-call': 'alice' });
    expect((sts.spec as { replicas: number }).replicas).toBe(1);
  });

  it('(stand-in) maps pod states: pending → unhealthy, Ready → healthy, crash loop → gone with an exit event', async () => {
    driver = newDriver();
    const s = spec(2);
    standin.behaviour = (id) => (id === s.nodeId ? 'ready-then-crash' : 'ready');
    const exits: string[] = [];
    driver.onExit((id) => exits.push(id));
    const rt = await driver.start(s);
    // Before the controller made the pod (or while it is Pending): still starting.
    expect(await driver.probe(s, rt)).toBe('unhealthy');
    await until('ready', async () => (await driver.probe(s, rt)) === 'healthy', 5000, 5);
    await until('crashed', async () => (await driver.probe(s, rt)) === 'gone', 5000, 5);
    expect(exits).toEqual([s.nodeId]);
    standin.behaviour = () => 'ready';
  });

  it('(stand-in) follows the watch: bookmarks, a server-side close, and 410 Gone (HTTP and ERROR event) force a relist that finds changes made meanwhile', async () => {
    driver = newDriver();
    const s = spec(3);
    const rt = await driver.start(s);
    await until('ready', async () => (await driver.probe(s, rt)) === 'healthy', 5000);
    standin.bookmark();
    // The server closes the watch: the driver watches on from its resourceVersion, no relist.
    standin.endWatches();
    await new Promise((r) => setTimeout(r, 150));
    expect(driver.relists).toBe(0);
    const exits: string[] = [];
    driver.onExit((id) => exits.push(id));
    for (const goneAs of ['http', 'event'] as const) {
      exits.length = 0;
      standin.goneAs = goneAs;
      // Events happen while the driver is not watching, then the history is compacted.
      standin.endWatches();
      standin.deletePod(ns, podName(s.nodeId));
      standin.compact();
      const relists = driver.relists;
      await until(`relisted after 410 (${goneAs})`, () => driver.relists > relists, 5000);
      // The relist found the pod replaced: the old one is reported as an exit, the new one comes up.
      await until('the replaced pod reported', () => exits.length === 1, 5000);
      expect(exits).toEqual([s.nodeId]);
      await until('healthy again', async () => (await driver.probe(s, rt)) === 'healthy', 5000);
      const watches = standin.requests.filter((r) => r.query.watch && r.path === '/api/v1/pods');
      expect(watches.at(-1)!.query).toMatchObject({
        allowWatchBookmarks: 'true',
        labelSelector: 'app.kubernetes.io/managed-by=rgbx-cloud',
      });
    }
  });

  it('(stand-in) stop scales to zero and waits until the pod is gone, keeping the claim; destroy deletes the node’s objects', async () => {
    driver = newDriver();
    const s = spec(4);
    const rt = await driver.start(s);
    await until('ready', async () => (await driver.probe(s, rt)) === 'healthy', 5000);
    standin.terminateAfterMs = 300;
    const t0 = Date.now();
    await driver.stop(s, rt, 15_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    standin.terminateAfterMs = 60;
    const sts = standin.get('StatefulSet', ns, objectName(s.nodeId))!;
    expect((sts.spec as { replicas: number }).replicas).toBe(0);
    expect(standin.get('Pod', ns, podName(s.nodeId))).toBeUndefined();
    expect(standin.get('PersistentVolumeClaim', ns, claimName(s.nodeId))).toBeDefined();
    expect(await driver.probe(s, rt)).toBe('gone');
    // Stopping again: nothing to do.
    await driver.stop(s, rt, 15_000);
    await driver.destroy(s);
    for (const kind of ['StatefulSet', 'Service', 'Secret'])
      expect(standin.get(kind, ns, objectName(s.nodeId)), kind).toBeUndefined();
    expect(standin.get('PersistentVolumeClaim', ns, claimName(s.nodeId))).toBeUndefined();
    const deletes = standin.requests.filter((r) => r.method === 'DELETE' && r.path.includes(s.nodeId));
    expect(
      deletes.map(
        (d) =>
          (d.body as { propagationPolicy?: string } | undefined)?.propagationPolicy ??
          d.query.propagationPolicy,
      ),
    ).toEqual(['Foreground', 'Foreground', 'Foreground', 'Foreground']);
    // Destroying what is gone is fine.
    await driver.destroy(s);
  });
});

describe('the supervisor through the Kubernetes driver, unchanged (stand-in API server)', () => {
  let cloud: Cloud;
  let token: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(root, 'cloud-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, standin.kubeconfig(), { mode: 0o600 });
    const text = testConfigText({
      dir,
      databaseUrl: `sqlite:${join(dir, 'cloud.db')}`,
      nodes:
        'health_interval_ms = 100\nstart_timeout_ms = 3000\nrestart_backoff_ms = [200]\nmax_restarts = 2\nstop_grace_ms = 2000',
    }).replace('[backend]\n', '[backend]\ndriver = "kubernetes"\n');
    cloud = await buildCloud(
      loadConfig({ text: `${text}[kubernetes]\nkubeconfig = ${JSON.stringify(kubeconfig)}\n` }),
      {
        logger,
      },
    );
    cloud.startWorkers();
    token = (await createToken(cloud.db, 'k8s', 't')).token;
  });
  afterAll(async () => {
    await cloud?.close();
  });

  it('(stand-in) create, crash loop → FAILED and the restart policy, start, pause, resume, restart, delete', async () => {
    const call = async (method: string, url: string, payload?: unknown) => {
      const r = await cloud.app.inject({
        method: method as 'GET',
        url: `/api${url}`,
        headers: { authorization: `Bearer ${token}` },
        ...(payload ? { payload: payload as object } : {}),
      });
      return { status: r.statusCode, body: r.body ? r.json() : undefined };
    };
    // A webhook URL nobody answers: the events are written all the same, and they are the status trail.
    const created = await call('POST', '/nodes', {
      name: 'k1',
      network: 'regtest',
      settings: { webhookUrl: 'https://127.0.0.1:9/hook' },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.nodeId as string;
    const account = (
      await cloud.db.selectFrom('nodes').select('account_id').where('id', '=', id).executeTakeFirstOrThrow()
    ).account_id;
    const nsOf = namespaceOf(settings, account);
    const status = async () => (await call('GET', `/nodes/${id}`)).body.data;
    await until('RUNNING', async () => (await status()).status === 'RUNNING', 10_000);
    expect((await status()).apiUrl).toBe(`http://${objectName(id)}.${nsOf}.svc:3001`);

    // Crash loop: FAILED, restarted by the cloud's policy (2 restarts), then FAILED for good.
    standin.behaviour = (n) => (n === id ? 'crash' : 'ready');
    standin.deletePod(nsOf, podName(id));
    await until(
      'FAILED for good',
      async () => {
        const n = await status();
        return n.status === 'FAILED' && n.nextRestartAt === null;
      },
      20_000,
    );
    expect((await status()).restartCount).toBe(2);
    // Start resets the policy; the pod comes up.
    standin.behaviour = () => 'ready';
    expect((await call('POST', `/nodes/${id}/start`)).status).toBe(202);
    await until('RUNNING again', async () => (await status()).status === 'RUNNING', 10_000);

    expect((await call('POST', `/nodes/${id}/stop`)).status).toBe(202);
    await until('PAUSED', async () => (await status()).status === 'PAUSED', 10_000);
    expect(standin.get('Pod', nsOf, podName(id))).toBeUndefined();
    expect((standin.get('StatefulSet', nsOf, objectName(id))!.spec as { replicas: number }).replicas).toBe(0);
    expect(standin.get('PersistentVolumeClaim', nsOf, claimName(id))).toBeDefined();

    expect((await call('POST', `/nodes/${id}/start`)).status).toBe(202);
    await until('RUNNING after resume', async () => (await status()).status === 'RUNNING', 10_000);
    expect((await call('POST', `/nodes/${id}/restart`)).status).toBe(202);
    await until(
      'RUNNING after restart',
      async () => {
        const n = await status();
        return n.status === 'RUNNING';
      },
      10_000,
    );

    expect((await call('DELETE', `/nodes/${id}`)).status).toBe(202);
    await until('deleted', async () => (await call('GET', `/nodes/${id}`)).status === 404, 10_000);
    for (const kind of ['StatefulSet', 'Service', 'Secret', 'Pod'])
      expect(standin.get(kind, nsOf, kind === 'Pod' ? podName(id) : objectName(id)), kind).toBeUndefined();
    expect(standin.get('PersistentVolumeClaim', nsOf, claimName(id))).toBeUndefined();

    // The status trail the supervisor wrote: the one the local driver produces for the same story.
    const trail = (
      await cloud.db
        .selectFrom('webhook_events')
        .select('node_status')
        .where('node_id', '=', id)
        .orderBy('seq')
        .execute()
    ).map((e) => e.node_status);
    expect(trail).toEqual([
      'STARTING',
      'RUNNING',
      'FAILED', // the pod crash-loops
      'STARTING',
      'FAILED', // restart 1 of 2
      'STARTING',
      'FAILED', // restart 2 of 2: no more
      'STARTING', // POST start
      'RUNNING',
      'IN_PROGRESS', // POST stop
      'PAUSED',
      'STARTING', // POST start
      'RUNNING',
      'IN_PROGRESS', // POST restart
      'STARTING',
      'RUNNING',
      'IN_PROGRESS', // DELETE
    ]);
  });
});
