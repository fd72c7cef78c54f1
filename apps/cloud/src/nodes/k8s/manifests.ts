/**
 * The Kubernetes objects of a hosted node (docs/kubernetes-driver.md): per account a Namespace and a
 * NetworkPolicy; per node a Secret (node.toml), a PersistentVolumeClaim (the wallet data), a
 * StatefulSet (`replicas: 1`, or 0 when paused) and a Service. Pure functions: the driver applies
 * them with server-side apply, `rgbx-cloud k8s render NODE_ID` prints them. Typed with the client's
 * model types, so a misspelt field is a compile error; the tests validate every object against the
 * Kubernetes API schemas.
 */
import { createHash } from 'node:crypto';
import type {
  KubernetesObject,
  V1Namespace,
  V1NetworkPolicy,
  V1NetworkPolicyIngressRule,
  V1PersistentVolumeClaim,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from '@kubernetes/client-node';
import { writeToml } from '@rgbx/service-kit';
import type { NodeBackend } from '../driver.ts';

export const MANAGED_BY = 'rgbx-cloud';
export const LABEL_NODE = 'rgbx.cloud/node-id';
export const LABEL_ACCOUNT = 'rgbx.cloud/account-id';
export const FIELD_MANAGER = 'rgbx-cloud';
/** Where the wallet node reads its config and keeps its data, inside the container. */
export const CONFIG_DIR = '/etc/wallet-node';
export const DATA_DIR = '/data';

export interface K8sSettings {
  /** The wallet node's image (`rgbx/wallet-node:<version>`, built from apps/wallet-node/Containerfile). */
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** Namespace of the cloud's pods (the NetworkPolicy admits them, and only them). */
  cloudNamespace: string;
  /** Labels of the cloud's pods. */
  cloudPodLabels: Record<string, string>;
  namespacePrefix: string;
  /** The wallet node's API port in its container and on its Service. */
  port: number;
  /**
   * The nodes' `GET /metrics` on this container port, scraped by Prometheus pods (`scrapePodLabels`) in
   * `scrapeNamespace`; absent: the nodes' metrics are off.
   */
  metrics?: { port: number; scrapeNamespace: string; scrapePodLabels: Record<string, string> };
  storageSize: string;
  storageClass?: string;
  /** `terminationGracePeriodSeconds` of the pods: SIGTERM, then SIGKILL after this (`stop_grace_ms`). */
  stopGraceSeconds: number;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
}

export interface NodeRef {
  nodeId: string;
  accountId: string;
  network: string;
}

/** `rgbx-acc-<account>`: a DNS label (lower case, digits, `-`; at most 63 characters). */
export function namespaceOf(s: Pick<K8sSettings, 'namespacePrefix'>, accountId: string): string {
  const tail = accountId
    .toLowerCase()
    .replace(/^acc_/, '')
    .replace(/[^a-z0-9-]/g, '-');
  return `${s.namespacePrefix}${tail}`.slice(0, 63).replace(/-+$/, '');
}

export const objectName = (nodeId: string) => `wallet-node-${nodeId}`;
export const podName = (nodeId: string) => `${objectName(nodeId)}-0`;
export const claimName = (nodeId: string) => `data-${objectName(nodeId)}-0`;

const labels = (n: NodeRef) => ({
  'app.kubernetes.io/name': 'rgbx-wallet-node',
  'app.kubernetes.io/managed-by': MANAGED_BY,
  [LABEL_NODE]: n.nodeId,
  [LABEL_ACCOUNT]: n.accountId,
});

/** The wallet node's config, as the local driver writes it but with in-container paths. */
export function nodeToml(n: NodeRef, s: Pick<K8sSettings, 'port' | 'metrics'>, b: NodeBackend): string {
  return writeToml(
    {
      api: { listen_address: '0.0.0.0', port: s.port },
      // The pod's own address (the NetworkPolicy admits only the scrapers), or off: nothing counted, no port.
      metrics: s.metrics
        ? { enabled: true, listen_address: '0.0.0.0', port: s.metrics.port }
        : { enabled: false },
      wallet: {
        data_dir: `${DATA_DIR}/wallet`,
        network: n.network,
        btc_rpc_address: b.btcRpcAddress,
        btc_rpc_user: b.btcRpcUser,
        // Required by the wallet node's schema, never read by it: the password stays out.
        btc_rpc_password: '',
        indexer_address: b.indexerAddress,
        proxy_address: b.proxyAddress,
      },
    },
    [`written by the cloud service for node ${n.nodeId}`],
  );
}

export function namespaceManifest(s: K8sSettings, accountId: string): V1Namespace {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: namespaceOf(s, accountId),
      labels: { 'app.kubernetes.io/managed-by': MANAGED_BY, [LABEL_ACCOUNT]: accountId },
    },
  };
}

/** Admits the pods labelled `podLabels` in `namespace` to `port`. */
function admit(
  namespace: string,
  podLabels: Record<string, string>,
  port: number,
): V1NetworkPolicyIngressRule {
  // `from` as the API spells it (the client's model type calls it `_from`).
  return {
    from: [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        podSelector: { matchLabels: podLabels },
      },
    ],
    ports: [{ protocol: 'TCP', port }],
  } as V1NetworkPolicyIngressRule;
}

/**
 * Ingress to the account's pods only from the cloud's pods, on the node API port (and, with metrics, from the
 * Prometheus pods on the metrics port); egress stays open (backends).
 */
export function networkPolicyManifest(s: K8sSettings, accountId: string): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: 'rgbx-cloud-only',
      namespace: namespaceOf(s, accountId),
      labels: { 'app.kubernetes.io/managed-by': MANAGED_BY, [LABEL_ACCOUNT]: accountId },
    },
    spec: {
      podSelector: {},
      policyTypes: ['Ingress'],
      ingress: [
        admit(s.cloudNamespace, s.cloudPodLabels, s.port),
        ...(s.metrics ? [admit(s.metrics.scrapeNamespace, s.metrics.scrapePodLabels, s.metrics.port)] : []),
      ],
    },
  };
}

export function secretManifest(s: K8sSettings, n: NodeRef, toml: string): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: objectName(n.nodeId), namespace: namespaceOf(s, n.accountId), labels: labels(n) },
    type: 'Opaque',
    stringData: { 'node.toml': toml },
  };
}

export function claimManifest(s: K8sSettings, n: NodeRef): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claimName(n.nodeId), namespace: namespaceOf(s, n.accountId), labels: labels(n) },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: s.storageSize } },
      ...(s.storageClass ? { storageClassName: s.storageClass } : {}),
    },
  };
}

/**
 * `replicas: 1` runs the node, 0 pauses it (the claim stays). At most one pod per ordinal: the
 * "never two copies of a node" rule. The pod restarts its container itself (`restartPolicy:
 * Always`, the only one a StatefulSet allows), but the driver reports any container restart as an
 * exit, so the cloud's restart policy stays the one that counts.
 */
export function statefulSetManifest(
  s: K8sSettings,
  n: NodeRef,
  toml: string,
  replicas: 0 | 1,
): V1StatefulSet {
  const name = objectName(n.nodeId);
  const health = { httpGet: { path: '/healthcheck', port: 'api' } };
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: namespaceOf(s, n.accountId), labels: labels(n) },
    spec: {
      replicas,
      serviceName: name,
      podManagementPolicy: 'OrderedReady',
      selector: { matchLabels: { [LABEL_NODE]: n.nodeId } },
      template: {
        metadata: {
          labels: labels(n),
          // A changed node.toml (another backend) rolls the pod.
          annotations: {
            'rgbx.cloud/config-sha256': createHash('sha256').update(toml).digest('hex'),
            // The common Prometheus pod discovery convention (kubernetes_sd_configs + these annotations).
            ...(s.metrics
              ? {
                  'prometheus.io/scrape': 'true',
                  'prometheus.io/port': String(s.metrics.port),
                  'prometheus.io/path': '/metrics',
                }
              : {}),
          },
        },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          restartPolicy: 'Always',
          terminationGracePeriodSeconds: s.stopGraceSeconds,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 10001,
            runAsGroup: 10001,
            fsGroup: 10001,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'wallet-node',
              image: s.image,
              imagePullPolicy: s.imagePullPolicy,
              args: ['-c', `${CONFIG_DIR}/node.toml`],
              ports: [
                { name: 'api', containerPort: s.port, protocol: 'TCP' },
                ...(s.metrics ? [{ name: 'metrics', containerPort: s.metrics.port, protocol: 'TCP' }] : []),
              ],
              readinessProbe: { ...health, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 1 },
              livenessProbe: {
                ...health,
                initialDelaySeconds: 30,
                periodSeconds: 10,
                timeoutSeconds: 2,
                failureThreshold: 6,
              },
              resources: s.resources,
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [
                { name: 'config', mountPath: CONFIG_DIR, readOnly: true },
                { name: 'data', mountPath: DATA_DIR },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'config', secret: { secretName: name, defaultMode: 0o400 } },
            { name: 'data', persistentVolumeClaim: { claimName: claimName(n.nodeId) } },
            { name: 'tmp', emptyDir: {} },
          ],
        },
      },
    },
  };
}

export function serviceManifest(s: K8sSettings, n: NodeRef): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: objectName(n.nodeId), namespace: namespaceOf(s, n.accountId), labels: labels(n) },
    spec: {
      type: 'ClusterIP',
      selector: { [LABEL_NODE]: n.nodeId },
      ports: [{ name: 'api', port: s.port, targetPort: 'api', protocol: 'TCP' }],
    },
  };
}

/** Everything `start` applies, in apply order (the namespace first, the workload after what it mounts). */
export function nodeManifests(
  s: K8sSettings,
  n: NodeRef,
  backend: NodeBackend,
  replicas: 0 | 1 = 1,
): KubernetesObject[] {
  const toml = nodeToml(n, s, backend);
  return [
    namespaceManifest(s, n.accountId),
    networkPolicyManifest(s, n.accountId),
    secretManifest(s, n, toml),
    claimManifest(s, n),
    statefulSetManifest(s, n, toml, replicas),
    serviceManifest(s, n),
  ];
}

/** `http://wallet-node-<id>.<namespace>.svc:<port>`: the node's API inside the cluster. */
export function serviceUrl(s: K8sSettings, n: Pick<NodeRef, 'nodeId' | 'accountId'>): string {
  return `http://${objectName(n.nodeId)}.${namespaceOf(s, n.accountId)}.svc:${s.port}`;
}
