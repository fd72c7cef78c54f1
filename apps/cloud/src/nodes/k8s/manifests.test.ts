/**
 * The Kubernetes manifests (no API server involved): everything the driver would apply for a node —
 * running and paused, with and without a storage class, for account ids of any shape — validates
 * against the Kubernetes API schemas (kubernetes-models 4.5.1); names fit Kubernetes' limits; and
 * `rgbx-cloud k8s render NODE_ID` (the built CLI) prints those same manifests as YAML.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readToml as parseToml } from '@rgbx/service-kit';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../config.ts';
import { openCloudDatabase } from '../../db/open.ts';
import { cloudCli } from '../../process-helpers.ts';
import { testConfigText } from '../../test-support.ts';
import type { NodeBackend } from '../driver.ts';
import { k8sSettings } from './index.ts';
import { namespaceOf, nodeManifests, objectName, podName } from './manifests.ts';
import { validateManifest } from './test-validate.ts';

const root = mkdtempSync(join(tmpdir(), 'cloud-k8s-manifests-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const backend: NodeBackend = {
  btcRpcAddress: 'bitcoind.backend.svc:18443',
  btcRpcUser: 'rpc',
  indexerAddress: 'tcp://electrum.backend.svc:50001',
  proxyAddress: ['rpc://rgb-proxy.backend.svc:3000/json-rpc'],
};
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('Kubernetes manifests', () => {
  const base = loadConfig({ text: testConfigText({ dir: root, databaseUrl: 'sqlite::memory:' }) });
  const variants = [
    ['defaults', k8sSettings(base)],
    [
      'storage class, other image and port',
      {
        ...k8sSettings(base),
        storageClass: 'fast-ssd',
        image: 'registry.example/rgbx/wallet-node:1.2.3',
        imagePullPolicy: 'Always' as const,
        port: 8080,
      },
    ],
  ] as const;
  it.each(variants)('validate against the Kubernetes API schemas (%s), running and paused', (_name, s) => {
    for (const accountId of ['acc_0123456789abcdef', 'ACC_Weird.Name_With_Dots', 'x'.repeat(80)])
      for (const replicas of [1, 0] as const) {
        const n = { nodeId: '5d1f0c4e-8a7b-4c3d-9e2f-0a1b2c3d4e5f', accountId, network: 'regtest' };
        const objects = nodeManifests(s, n, backend, replicas);
        expect(objects.map((o) => o.kind)).toEqual([
          'Namespace',
          'NetworkPolicy',
          'Secret',
          'PersistentVolumeClaim',
          'StatefulSet',
          'Service',
        ]);
        for (const o of objects) validateManifest(JSON.parse(JSON.stringify(o)));
        const ns = namespaceOf(s, accountId);
        expect(ns.length).toBeLessThanOrEqual(63);
        expect(ns).toMatch(DNS_LABEL);
        // StatefulSet names leave room for the controller's revision-hash label (≤ 52 characters).
        expect(objectName(n.nodeId).length).toBeLessThanOrEqual(52);
        expect(podName(n.nodeId)).toMatch(DNS_LABEL);
        const sts = objects[4] as { spec: { replicas: number; template: { spec: Record<string, unknown> } } };
        expect(sts.spec.replicas).toBe(replicas);
        // Non-root, no service-account token, read-only root file system.
        expect(sts.spec.template.spec).toMatchObject({
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true },
        });
      }
  });

  it('hosted nodes serve metrics only when metrics_port is set: node.toml, the named port, the scrape annotations, and the NetworkPolicy admitting the Prometheus pods to that port alone', () => {
    const n = { nodeId: '5d1f0c4e-8a7b-4c3d-9e2f-0a1b2c3d4e5f', accountId: 'acc_1', network: 'regtest' };
    type Rule = { from: unknown[]; ports: { port: number }[] };
    type Sts = {
      spec: {
        template: {
          metadata: { annotations: Record<string, string> };
          spec: { containers: { ports: { name: string; containerPort: number }[] }[] };
        };
      };
    };
    const read = (s: ReturnType<typeof k8sSettings>) => {
      const objects = nodeManifests(s, n, backend, 1);
      for (const o of objects) validateManifest(JSON.parse(JSON.stringify(o)));
      const toml = parseToml((objects[2] as { stringData: Record<string, string> }).stringData['node.toml']!);
      const sts = objects[4] as Sts;
      return {
        metrics: toml.metrics,
        ports: sts.spec.template.spec.containers[0]!.ports.map((p) => `${p.name}:${p.containerPort}`),
        annotations: Object.keys(sts.spec.template.metadata.annotations).filter((k) =>
          k.startsWith('prometheus'),
        ),
        rules: (objects[1] as { spec: { ingress: Rule[] } }).spec.ingress,
      };
    };
    // Default: off (no Prometheus is assumed in the cluster).
    const off = read(k8sSettings(base));
    expect(off.metrics).toEqual({ enabled: false });
    expect(off.ports).toEqual(['api:3001']);
    expect(off.annotations).toEqual([]);
    expect(off.rules.map((r) => r.ports.map((p) => p.port))).toEqual([[3001]]);

    const on = read(
      k8sSettings(
        loadConfig({
          text: `${testConfigText({ dir: root, databaseUrl: 'sqlite::memory:' })}[kubernetes]\nmetrics_port = 9401\nmetrics_scrape_namespace = "observability"\n`,
        }),
      ),
    );
    expect(on.metrics).toEqual({ enabled: true, listen_address: '0.0.0.0', port: 9401 });
    expect(on.ports).toEqual(['api:3001', 'metrics:9401']);
    expect(on.annotations.sort()).toEqual([
      'prometheus.io/path',
      'prometheus.io/port',
      'prometheus.io/scrape',
    ]);
    expect(on.rules.map((r) => r.ports.map((p) => p.port))).toEqual([[3001], [9401]]);
    expect(on.rules[1]!.from).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
    ]);
  });

  it('a broken manifest is refused by the validator (the check has teeth)', () => {
    const [, , , , sts] = nodeManifests(
      variants[0][1],
      { nodeId: 'n', accountId: 'a', network: 'regtest' },
      backend,
    );
    const bad = JSON.parse(JSON.stringify(sts));
    bad.spec.template.spec.containers[0].ports[0].containerPort = 'api';
    expect(() => validateManifest(bad)).toThrow(/containerPort must be integer/);
    delete bad.spec.selector;
    expect(() => validateManifest(bad)).toThrow(/selector/);
  });

  it('rgbx-cloud k8s render NODE_ID prints the manifests of a node as YAML', async () => {
    const dir = mkdtempSync(join(root, 'cli-'));
    const conf = join(dir, 'cloud.toml');
    writeFileSync(
      conf,
      `${testConfigText({ dir, databaseUrl: `sqlite:${join(dir, 'cloud.db')}` }).replace('[backend]\n', '[backend]\ndriver = "kubernetes"\n')}[kubernetes]\nimage = "rgbx/wallet-node:9.9.9"\n`,
    );
    const { db, close } = await openCloudDatabase(`sqlite:${join(dir, 'cloud.db')}`, dir);
    try {
      await db.insertInto('accounts').values({ id: 'acc_00ff', name: 'ops', created_at: 1 }).execute();
      await db
        .insertInto('nodes')
        .values({
          id: '5d1f0c4e-8a7b-4c3d-9e2f-0a1b2c3d4e5f',
          account_id: 'acc_00ff',
          name: 'n1',
          network: 'regtest',
          webhook_url: null,
          status: 'PAUSED',
          desired: 'paused',
          pending_op: null,
          port: null,
          pid: null,
          started_at: null,
          data_dir: join(dir, 'n1'),
          restart_count: 0,
          restart_window_start: null,
          next_restart_at: null,
          last_error: null,
          webhook_failing_since: null,
          created_at: 1,
          updated_at: 1,
          deleted_at: null,
          owner_id: null,
        })
        .execute();
    } finally {
      await close();
    }
    const yaml = await cloudCli(conf, 'k8s', 'render', '5d1f0c4e-8a7b-4c3d-9e2f-0a1b2c3d4e5f');
    const docs = parseAllDocuments(yaml).map((d) => d.toJS()) as { kind: string }[];
    expect(docs.map((d) => d.kind)).toEqual([
      'Namespace',
      'NetworkPolicy',
      'Secret',
      'PersistentVolumeClaim',
      'StatefulSet',
      'Service',
    ]);
    for (const d of docs) validateManifest(d);
    const cfg = loadConfig({ file: conf });
    expect(docs).toEqual(
      JSON.parse(
        JSON.stringify(
          nodeManifests(
            k8sSettings(cfg),
            { nodeId: '5d1f0c4e-8a7b-4c3d-9e2f-0a1b2c3d4e5f', accountId: 'acc_00ff', network: 'regtest' },
            {
              btcRpcAddress: '127.0.0.1:18443',
              btcRpcUser: 'user',
              indexerAddress: 'tcp://127.0.0.1:50001',
              proxyAddress: ['rpc://127.0.0.1:3000/json-rpc'],
            },
            0,
          ),
        ),
      ),
    );
    expect(yaml).toContain('image: rgbx/wallet-node:9.9.9');
    expect(yaml).not.toContain('test-password');
    await expect(cloudCli(conf, 'k8s', 'render', 'nope')).rejects.toMatchObject({
      stderr: 'rgbx-cloud: no node "nope"\n',
    });
  });
});
