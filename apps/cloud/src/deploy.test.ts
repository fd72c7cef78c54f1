/**
 * What can be checked here of the deployment files without a container runtime or a cluster:
 *
 * - every object under `deploy/k8s/` validates against the Kubernetes API schemas
 *   (kubernetes-models 4.5.1), and the workloads follow the rules they claim (images pinned, non-root,
 *   no privilege escalation, resources, probes, no Secret objects: secrets are the operator's);
 * - the configuration files they carry load with the services' own loaders (cloud.toml with the
 *   cloud's, node.toml with the wallet node's schema), as does the node.toml the Kubernetes driver
 *   writes into each hosted node's Secret;
 * - every `apps/<service>/Containerfile` has the structure it must: a build stage and a runtime stage
 *   from the same Node image (the native addons are built for that Node), `npm ci` then
 *   `npm ci --omit=dev` (production dependencies only), no compiler installed in the runtime stage,
 *   a non-root numeric USER after the last RUN, an entry point that is the service's bin, and nothing
 *   secret (no credentials in ENV/ARG, no key files, no .env copied).
 *
 * The images are not built and the manifests are not applied here: see apps/cloud/README "Deployment".
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTomlConfig } from '@rgbx/service-kit';
import { WalletNodeConfig } from '@rgbx/wallet-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from './config.ts';
import { k8sSettings } from './nodes/k8s/index.ts';
import { nodeManifests } from './nodes/k8s/manifests.ts';
import { validateManifest } from './nodes/k8s/test-validate.ts';

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const deployDir = join(repo, 'deploy/k8s');

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
};

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? yamlFiles(join(dir, e.name))
      : e.name.endsWith('.yaml') || e.name.endsWith('.yml')
        ? [join(dir, e.name)]
        : [],
  );
}

const objects: { file: string; obj: K8sObject }[] = yamlFiles(deployDir).flatMap((file) =>
  parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return { file: file.slice(repo.length), obj: d.toJS() as K8sObject };
  }),
);

interface Container {
  name: string;
  image: string;
  args?: string[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  readinessProbe?: unknown;
  livenessProbe?: unknown;
  securityContext?: { allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  volumes?: { name: string; configMap?: { name: string } }[];
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
}
const podSpec = (o: K8sObject) => (o.spec as { template: { spec: PodSpec } }).template.spec;
const workloads = objects.filter((o) => ['Deployment', 'StatefulSet'].includes(o.obj.kind));

describe('deploy/k8s manifests', () => {
  it('are there: the wallet node, the swap service, the cloud service with PostgreSQL and its RBAC', () => {
    expect(
      workloads.map((w) => `${w.obj.metadata.namespace}/${w.obj.kind}/${w.obj.metadata.name}`).sort(),
    ).toEqual([
      'rgbx-cloud/Deployment/rgbx-cloud',
      'rgbx-cloud/StatefulSet/postgres',
      'rgbx-swap/StatefulSet/rgbx-swap',
      'rgbx-wallet/StatefulSet/rgbx-wallet-node',
    ]);
    expect(objects.map((o) => o.obj.kind)).toEqual(
      expect.arrayContaining(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'PodDisruptionBudget']),
    );
  });

  it.each(objects.map((o) => [`${o.file}: ${o.obj.kind} ${o.obj.metadata?.name}`, o.obj]))(
    'validates against the Kubernetes API schemas: %s',
    (_name, obj) => {
      validateManifest(obj);
    },
  );

  it('workloads: pinned images, non-root, no privilege escalation, resources, probes; secrets only referenced', () => {
    expect(objects.filter((o) => o.obj.kind === 'Secret')).toEqual([]);
    for (const w of workloads) {
      const spec = podSpec(w.obj);
      const where = `${w.file} ${w.obj.metadata.name}`;
      expect(spec.securityContext?.runAsNonRoot, where).toBe(true);
      expect(spec.securityContext?.runAsUser, where).toBeGreaterThan(0);
      // Only the cloud talks to the Kubernetes API.
      if (w.obj.metadata.name === 'rgbx-cloud') expect(spec.serviceAccountName).toBe('rgbx-cloud');
      else expect(spec.automountServiceAccountToken, where).toBe(false);
      for (const c of spec.containers) {
        expect(c.image, where).toMatch(/^[\w./-]+:[\w.-]+$/);
        expect(c.image, where).not.toMatch(/:latest$/);
        expect(c.securityContext?.allowPrivilegeEscalation, where).toBe(false);
        expect(c.securityContext?.capabilities?.drop, where).toEqual(['ALL']);
        expect(c.resources?.requests && c.resources.limits, where).toBeTruthy();
        expect(c.readinessProbe && c.livenessProbe, where).toBeTruthy();
        // A mounted ConfigMap exists here or is documented as the operator's.
        for (const v of spec.volumes ?? [])
          if (v.configMap) {
            const here = objects.some(
              (o) => o.obj.kind === 'ConfigMap' && o.obj.metadata.name === v.configMap!.name,
            );
            if (!here)
              expect(readFileSync(join(repo, w.file), 'utf8'), where).toContain(
                `create configmap ${v.configMap.name}`,
              );
          }
      }
    }
    // The NetworkPolicy the cloud writes admits the cloud's pods: their labels match.
    const cloud = workloads.find((w) => w.obj.metadata.name === 'rgbx-cloud')!;
    const labels = (cloud.obj.spec as { template: { metadata: { labels: Record<string, string> } } }).template
      .metadata.labels;
    expect(labels).toMatchObject({ 'app.kubernetes.io/name': 'rgbx-cloud' });
  });

  it('the configuration files load with the services’ own loaders', () => {
    const cm = (name: string) =>
      objects.find((o) => o.obj.kind === 'ConfigMap' && o.obj.metadata.name === name)!.obj;
    const cloudToml = cm('rgbx-cloud-config').data!['cloud.toml']!;
    const cfg = loadConfig(
      { text: cloudToml },
      {
        RGBX_DATABASE_URL: 'postgres://rgbx:pw@postgres.rgbx-cloud.svc:5432/rgbx_cloud',
        RGBX_CLOUD_ENCRYPTION_KEY: 'ab'.repeat(32),
      },
    );
    expect(cfg.backend.driver).toBe('kubernetes');
    expect(cfg.databaseUrl).toMatch(/^postgres:\/\//);
    expect(cfg.kubernetes.kubeconfig).toBeUndefined(); // in-cluster credentials
    // The cloud pod runs with the config where the Deployment mounts it.
    const cloud = podSpec(workloads.find((w) => w.obj.metadata.name === 'rgbx-cloud')!.obj);
    expect(cloud.containers[0]!.args).toEqual(['-c', '/etc/rgbx/cloud.toml']);
    expect(cloud.containers[0]!.volumeMounts).toContainEqual(
      expect.objectContaining({ mountPath: '/etc/rgbx' }),
    );

    const nodeToml = cm('rgbx-wallet-node-config').data!['node.toml']!;
    const wn = loadTomlConfig(WalletNodeConfig, { text: nodeToml });
    expect(wn.wallet.network).toBe('mainnet');

    // And what the Kubernetes driver writes for every hosted node, with this very config.
    const [, , secret] = nodeManifests(
      k8sSettings(cfg),
      { nodeId: '5d1f0c4e-8a7b-4c3d-9e2f-0a1b2c3d4e5f', accountId: 'acc_00ff', network: 'mainnet' },
      {
        btcRpcAddress: cfg.backend.btc_rpc_address!,
        btcRpcUser: cfg.backend.btc_rpc_user ?? '',
        indexerAddress: cfg.backend.indexer_address!,
        proxyAddress: cfg.backend.proxy_address!,
      },
    );
    const hosted = loadTomlConfig(WalletNodeConfig, {
      text: (secret as { stringData: Record<string, string> }).stringData['node.toml']!,
    });
    expect(hosted.api.port).toBe(cfg.kubernetes.port);
    expect(hosted.wallet.data_dir).toBe('/data/wallet');
  });
});

const SERVICES = ['wallet-node', 'swap', 'cloud', 'resolver', 'electrum', 'rgb-proxy'];

/** Instructions of a Containerfile, continuation lines joined, comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

describe.each(SERVICES)('apps/%s/Containerfile', (service) => {
  const file = join(repo, 'apps', service, 'Containerfile');
  const text = readFileSync(file, 'utf8');
  const ins = instructions(text);
  const froms = ins.map((x, i) => ({ ...x, i })).filter((x) => x.op === 'FROM');
  const stages = froms.map((f, k) => ({
    from: f.args,
    body: ins.slice(f.i + 1, froms[k + 1]?.i ?? ins.length),
  }));
  const runtime = stages.at(-1)!;
  const pkg = JSON.parse(readFileSync(join(repo, 'apps', service, 'package.json'), 'utf8')) as {
    name: string;
    bin: Record<string, string>;
  };

  it('builds in one stage and runs in another, on the same Node image (the addons match its ABI)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const image = '$' + '{NODE_IMAGE}'; // the Containerfile's own variable, not a template here
    expect(froms.map((f) => f.args)).toEqual([`${image} AS build`, `${image} AS runtime`]);
    const arg = ins.find((x) => x.op === 'ARG' && x.args.startsWith('NODE_IMAGE='))!;
    expect(arg.args).toMatch(/^NODE_IMAGE=node:20\.\d+-bookworm-slim$/);
    expect(runtime.body.some((x) => x.op === 'COPY' && x.args.startsWith('--from=build'))).toBe(true);
  });

  it('installs everything to build, then production dependencies only', () => {
    const build = stages[0]!.body.filter((x) => x.op === 'RUN').map((x) => x.args);
    const full = build.findIndex((r) => /\bnpm ci\b/.test(r) && !r.includes('--omit=dev'));
    const prod = build.findIndex((r) => /\bnpm ci\b.*--omit=dev/.test(r));
    expect(full).toBeGreaterThanOrEqual(0);
    expect(prod).toBeGreaterThan(full);
    expect(build[prod]).toContain(`--workspace ${pkg.name}`);
    expect(build.some((r) => r.includes('tsc -b'))).toBe(true);
    // No compiler or package installation in the runtime stage.
    for (const r of runtime.body.filter((x) => x.op === 'RUN'))
      expect(r.args).not.toMatch(/apt-get install|npm (ci|install)|g\+\+|make /);
  });

  it('runs as a non-root numeric user, set after the last RUN', () => {
    const users = runtime.body.map((x, i) => ({ ...x, i })).filter((x) => x.op === 'USER');
    expect(users).toHaveLength(1);
    expect(users[0]!.args).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
    const lastRun = Math.max(...runtime.body.map((x, i) => (x.op === 'RUN' ? i : -1)));
    expect(users[0]!.i).toBeGreaterThan(lastRun);
  });

  it('starts the service’s own bin', () => {
    const entry = JSON.parse(runtime.body.find((x) => x.op === 'ENTRYPOINT')!.args) as string[];
    const bin = Object.values(pkg.bin)[0]!.replace(/^\.\//, '');
    expect(entry).toEqual(['node', `/app/apps/${service}/${bin}`]);
  });

  it('carries no secret', () => {
    for (const x of ins.filter((y) => y.op === 'ENV' || y.op === 'ARG'))
      expect(x.args, x.args).not.toMatch(/(PASSWORD|SECRET|TOKEN|PRIVATE|_KEY)\s*=/i);
    for (const x of ins.filter((y) => y.op === 'COPY' || y.op === 'ADD'))
      expect(x.args).not.toMatch(/\.env\b|\.pem\b|\.key\b|id_rsa|\.npmrc\s+\S*\/(root|home)/);
    expect(ins.some((x) => x.op === 'ADD')).toBe(false);
  });
});

describe('.dockerignore', () => {
  it('keeps local state and secrets out of the build context', () => {
    const lines = readFileSync(join(repo, '.dockerignore'), 'utf8').split('\n');
    for (const p of [
      '**/node_modules',
      '**/dist',
      '.git',
      '.devnet',
      '.cloud',
      '**/.env',
      '**/*.pem',
      '**/*.key',
      '**/*.db',
    ])
      expect(lines).toContain(p);
  });
});
