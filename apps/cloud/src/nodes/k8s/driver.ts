/**
 * The Kubernetes `NodeDriver` (docs/kubernetes-driver.md): a node is a StatefulSet of one pod in its
 * account's namespace, applied with server-side apply (idempotent: applying what runs changes
 * nothing); pods are followed by one watch over every namespace (label
 * `app.kubernetes.io/managed-by=rgbx-cloud`): list, then watch from the list's resourceVersion
 * with bookmarks; a `410 Gone` (as an HTTP status or an ERROR event) relists. Probes read that
 * cache; a pod that stops running calls the `onExit` listeners, like a child's `exit` event with
 * the local driver. The supervisor, its status machine and restart policy are unchanged:
 *
 * - `start`: apply Namespace, NetworkPolicy, Secret, PVC, StatefulSet (`replicas: 1`), Service;
 *   the runtime is `{pid: <StatefulSet generation>, port: <API port>}`.
 * - `probe`: Ready → healthy; scheduled, pulling, starting, not Ready → unhealthy (the supervisor's
 *   `start_timeout_ms` bounds it); pod deleted or terminating, phase Failed/Succeeded, a container
 *   terminated, waiting in CrashLoopBackOff / ImagePullBackOff / ErrImagePull /
 *   CreateContainerConfigError…, or restarted by the kubelet → gone (FAILED, and the cloud's restart
 *   policy decides).
 * - `stop`: `replicas: 0` (SIGTERM, SIGKILL after `terminationGracePeriodSeconds`), then wait until
 *   the pod is gone; the claim stays (PAUSED).
 * - `destroy`: delete StatefulSet, Service, Secret and claim (`propagationPolicy: Foreground`).
 */
import {
  ApiException,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Pod,
  type V1StatefulSet,
  Watch,
} from '@kubernetes/client-node';
import type { Logger } from '@rgbx/service-kit';
import type { NodeBackend, NodeDriver, NodeRuntime, NodeSpec, Probe } from '../driver.ts';
import {
  claimName,
  FIELD_MANAGER,
  type K8sSettings,
  LABEL_NODE,
  MANAGED_BY,
  type NodeRef,
  namespaceOf,
  nodeManifests,
  nodeToml,
  objectName,
  serviceUrl,
  statefulSetManifest,
} from './manifests.ts';

export interface KubernetesDriverOptions {
  kubeConfig: KubeConfig;
  settings: K8sSettings;
  /** Where nodes point, resolved at every start. */
  backend: () => NodeBackend;
  logger: Logger;
  /** Wait before re-watching after a watch ended with an error (not a 410); default 1000 ms. */
  rewatchDelayMs?: number;
}

/** Container waiting reasons that mean the node will not come up by itself. */
const BROKEN_WAITING = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);

/** What a pod says about its node. */
export function classifyPod(pod: V1Pod | undefined): Probe {
  if (!pod || pod.metadata?.deletionTimestamp) return 'gone';
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded') return 'gone';
  for (const c of pod.status?.containerStatuses ?? []) {
    if (c.state?.terminated) return 'gone';
    if (c.state?.waiting?.reason && BROKEN_WAITING.has(c.state.waiting.reason)) return 'gone';
    // The kubelet restarted it: an exit, which the cloud's restart policy must see.
    if ((c.restartCount ?? 0) > 0) return 'gone';
  }
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  return ready?.status === 'True' ? 'healthy' : 'unhealthy';
}

const isStatus = (code: number) => (err: unknown) =>
  (err instanceof ApiException && err.code === code) ||
  (err as { statusCode?: number } | undefined)?.statusCode === code ||
  (err as { code?: number } | undefined)?.code === code;
const notFound = isStatus(404);
const gone = isStatus(410);

/**
 * The client serializes known kinds through its model classes, which spell a few fields
 * differently from the API (`from` is `_from`) and drop what they do not know: a manifest written
 * as the API spells it is renamed here so that what is sent is the manifest (the stand-in tests
 * compare the two).
 */
export function toClientModel<T extends KubernetesObject>(obj: T): T {
  if (obj.kind !== 'NetworkPolicy') return obj;
  const np = structuredClone(obj) as T & { spec?: { ingress?: Record<string, unknown>[] } };
  for (const rule of np.spec?.ingress ?? [])
    if ('from' in rule) {
      rule._from = rule.from;
      delete rule.from;
    }
  return np;
}

const ref = (spec: NodeSpec): NodeRef => ({
  nodeId: spec.nodeId,
  accountId: spec.accountId,
  network: spec.network,
});

export class KubernetesDriver implements NodeDriver {
  private readonly api: KubernetesObjectApi;
  private readonly watcher: Watch;
  private readonly o: KubernetesDriverOptions;
  private readonly exitListeners: ((nodeId: string, pid: number) => void)[] = [];
  /** nodeId → its pod, from the watch. */
  private readonly pods = new Map<string, V1Pod>();
  /** Nodes whose pod of the current start has been seen (a missing pod is then gone, not pending). */
  private readonly seen = new Set<string>();
  private readonly generation = new Map<string, number>();
  private resourceVersion: string | undefined;
  private abort: AbortController | undefined;
  private synced: Promise<void> | undefined;
  private closed = false;
  private rewatchTimer: NodeJS.Timeout | undefined;
  /** Relists after a 410 (tests read it). */
  relists = 0;

  constructor(o: KubernetesDriverOptions) {
    this.o = o;
    this.api = KubernetesObjectApi.makeApiClient(o.kubeConfig);
    this.watcher = new Watch(o.kubeConfig);
  }

  onExit(listener: (nodeId: string, pid: number) => void): void {
    this.exitListeners.push(listener);
  }

  apiUrl(spec: NodeSpec): string {
    return serviceUrl(this.o.settings, spec);
  }

  /** The manifests `start` applies (what `rgbx-cloud k8s render` prints). */
  render(spec: NodeSpec): KubernetesObject[] {
    return nodeManifests(this.o.settings, ref(spec), this.o.backend());
  }

  // ---- the pod cache ------------------------------------------------------------------------

  /** Lists and starts watching once; every probe waits for the first list. */
  private ensureWatching(): Promise<void> {
    this.synced ??= this.relist();
    return this.synced;
  }

  private nodeOf(pod: V1Pod): string | undefined {
    return pod.metadata?.labels?.[LABEL_NODE];
  }

  private update(pod: V1Pod | undefined, nodeId: string): void {
    const prev = this.pods.get(nodeId);
    const before = prev ? classifyPod(prev) : undefined;
    // Replaced by another pod (deleted and recreated while we were not watching): the old one exited.
    const replaced = prev !== undefined && pod !== undefined && prev.metadata?.uid !== pod.metadata?.uid;
    if (pod) {
      this.pods.set(nodeId, pod);
      this.seen.add(nodeId);
    } else this.pods.delete(nodeId);
    const after = pod ? classifyPod(pod) : 'gone';
    if (before !== undefined && before !== 'gone' && (after === 'gone' || replaced))
      for (const l of this.exitListeners) l(nodeId, this.generation.get(nodeId) ?? 0);
  }

  private async relist(): Promise<void> {
    const list = (await this.api.list(
      'v1',
      'Pod',
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      `app.kubernetes.io/managed-by=${MANAGED_BY}`,
    )) as KubernetesListObject<V1Pod>;
    const present = new Set<string>();
    for (const pod of list.items) {
      const id = this.nodeOf(pod);
      if (!id) continue;
      present.add(id);
      this.update(pod, id);
    }
    // Pods deleted while we were not watching.
    for (const id of [...this.pods.keys()]) if (!present.has(id)) this.update(undefined, id);
    this.resourceVersion = list.metadata?.resourceVersion;
    await this.watch();
  }

  private async watch(): Promise<void> {
    if (this.closed) return;
    const rv = this.resourceVersion;
    let restarted = false;
    const again = (relist: boolean, delayMs: number) => {
      if (restarted || this.closed) return;
      restarted = true;
      this.abort?.abort();
      if (relist) this.relists++;
      this.rewatchTimer = setTimeout(() => {
        const next = relist ? this.relist() : this.watch();
        next.catch((err: unknown) => {
          this.o.logger.warn({ err: { message: (err as Error).message } }, 'kubernetes watch: retrying');
          again(relist, this.o.rewatchDelayMs ?? 1000);
        });
      }, delayMs);
    };
    this.abort = await this.watcher.watch(
      '/api/v1/pods',
      {
        labelSelector: `app.kubernetes.io/managed-by=${MANAGED_BY}`,
        allowWatchBookmarks: true,
        ...(rv ? { resourceVersion: rv } : {}),
      },
      (type: string, obj: V1Pod & { code?: number }) => {
        if (type === 'BOOKMARK') {
          this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion;
          return;
        }
        if (type === 'ERROR') {
          // {kind: Status, code: 410}: our resourceVersion is too old: list again.
          this.o.logger.info({ code: obj.code }, 'kubernetes watch: error event; relisting');
          again(true, 0);
          return;
        }
        const id = this.nodeOf(obj);
        if (!id) return;
        this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion;
        this.update(type === 'DELETED' ? undefined : obj, id);
      },
      (err: unknown) => {
        // The server ends watches now and then: carry on from the last resourceVersion.
        if (this.closed) return;
        if (err && gone(err)) again(true, 0);
        else again(false, err ? (this.o.rewatchDelayMs ?? 1000) : 0);
      },
    );
  }

  // ---- NodeDriver -----------------------------------------------------------------------------

  private async apply<T extends KubernetesObject>(obj: T): Promise<T> {
    return this.api.patch(
      toClientModel(obj),
      undefined,
      undefined,
      FIELD_MANAGER,
      true,
      PatchStrategy.ServerSideApply,
    );
  }

  async start(spec: NodeSpec): Promise<NodeRuntime> {
    await this.ensureWatching();
    // A new start: until its pod shows up, a missing pod is pending rather than gone.
    if (!this.pods.has(spec.nodeId)) this.seen.delete(spec.nodeId);
    let generation = 0;
    for (const m of this.render(spec)) {
      const applied = await this.apply(m);
      if (m.kind === 'StatefulSet') generation = Number(applied.metadata?.generation ?? 0);
    }
    this.generation.set(spec.nodeId, generation);
    return { pid: generation, port: this.o.settings.port };
  }

  private async readStatefulSet(spec: NodeSpec): Promise<V1StatefulSet | undefined> {
    try {
      return await this.api.read<V1StatefulSet>({
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: objectName(spec.nodeId), namespace: namespaceOf(this.o.settings, spec.accountId) },
      });
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async probe(spec: NodeSpec, _runtime: NodeRuntime): Promise<Probe> {
    await this.ensureWatching();
    const pod = this.pods.get(spec.nodeId);
    if (pod) return classifyPod(pod);
    if (this.seen.has(spec.nodeId)) return 'gone';
    // Not created yet (or the cloud just restarted and it never existed): pending while the
    // StatefulSet asks for it.
    const sts = await this.readStatefulSet(spec);
    return sts?.spec?.replicas === 1 ? 'unhealthy' : 'gone';
  }

  async stop(spec: NodeSpec, _runtime: NodeRuntime | undefined, graceMs: number): Promise<void> {
    await this.ensureWatching();
    const sts = await this.readStatefulSet(spec);
    if (sts && sts.spec?.replicas !== 0) {
      const n = ref(spec);
      await this.apply(
        statefulSetManifest(this.o.settings, n, nodeToml(n, this.o.settings, this.o.backend()), 0),
      );
    }
    // The pod terminates (SIGTERM, then SIGKILL after the grace period): wait until it is gone.
    const deadline = Date.now() + graceMs + 10_000;
    while (this.pods.has(spec.nodeId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    if (this.pods.has(spec.nodeId))
      this.o.logger.warn({ nodeId: spec.nodeId }, 'kubernetes: pod still present after the grace period');
    this.seen.delete(spec.nodeId);
  }

  async destroy(spec: NodeSpec): Promise<void> {
    const namespace = namespaceOf(this.o.settings, spec.accountId);
    const name = objectName(spec.nodeId);
    const objects: KubernetesObject[] = [
      { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name, namespace } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace } },
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: claimName(spec.nodeId), namespace },
      },
    ];
    for (const o of objects) {
      try {
        await this.api.delete(o, undefined, undefined, undefined, undefined, 'Foreground');
      } catch (err) {
        if (!notFound(err)) throw err;
      }
    }
    this.seen.delete(spec.nodeId);
    this.generation.delete(spec.nodeId);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.rewatchTimer);
    this.abort?.abort();
    await this.synced?.catch(() => undefined);
  }
}
