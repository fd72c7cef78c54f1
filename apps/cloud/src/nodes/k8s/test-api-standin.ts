/**
 * A Kubernetes API STAND-IN for tests (no API server can run on these machines): an HTTPS server
 * that answers the requests the Kubernetes driver makes as the documented API does, and records
 * them. It is not Kubernetes; what it implements, after the API reference:
 *
 * - discovery (`/api/v1`, `/apis/<group>/<version>`: APIResourceList), bearer-token auth (401);
 * - server-side apply (`PATCH`, `Content-Type: application/apply-patch+yaml`, `fieldManager`
 *   required): creates (201) or merges (200) — fields the manager applied before and leaves out
 *   now are removed, fields set by others are kept, maps merge, lists and scalars are replaced; an
 *   apply that changes nothing keeps the resourceVersion; `metadata.generation` counts spec
 *   changes; a namespaced object in a missing namespace is 404; Secret `stringData` is stored as
 *   base64 `data`; a conflict with another manager without `force=true` is 409;
 * - GET / DELETE (404 Status when absent); `propagationPolicy: Foreground` of a StatefulSet
 *   deletes its pods first;
 * - pods: list with a label selector (a list resourceVersion), watch from a resourceVersion with
 *   ADDED / MODIFIED / DELETED, BOOKMARK on request, and `410 Gone` for a resourceVersion older than
 *   the retained history — as an HTTP 410 or as an ERROR event in the stream (both happen in
 *   Kubernetes) — after which a client must relist;
 * - a StatefulSet "controller": `replicas: 1` creates pod `<name>-0` (Pending, then Running and
 *   Ready, or a crash loop, or never Ready, as the test says per node); `replicas: 0` terminates it
 *   (deletionTimestamp, then DELETED after a delay).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Tls } from '../../test-support.ts';

type Obj = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: Record<string, unknown> & { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
};

/**
 * `ready`: Running and Ready; `crash`: the container exits at once, over and over (CrashLoopBackOff,
 * never Ready); `ready-then-crash`: Ready, then the container exits and is restarted by the kubelet;
 * `never-ready`: Running, readiness probe failing.
 */
export type PodBehaviour = 'ready' | 'crash' | 'ready-then-crash' | 'never-ready';

interface Resource {
  group: string; // '' for core
  version: string;
  name: string; // plural
  kind: string;
  namespaced: boolean;
}

const RESOURCES: Resource[] = [
  { group: '', version: 'v1', name: 'namespaces', kind: 'Namespace', namespaced: false },
  { group: '', version: 'v1', name: 'pods', kind: 'Pod', namespaced: true },
  { group: '', version: 'v1', name: 'secrets', kind: 'Secret', namespaced: true },
  { group: '', version: 'v1', name: 'services', kind: 'Service', namespaced: true },
  {
    group: '',
    version: 'v1',
    name: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
  },
  { group: 'apps', version: 'v1', name: 'statefulsets', kind: 'StatefulSet', namespaced: true },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    name: 'networkpolicies',
    kind: 'NetworkPolicy',
    namespaced: true,
  },
];

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  body: unknown;
}

const clone = <T>(v: T): T => structuredClone(v);

/** A pod whose container exited and is waiting to be restarted by the kubelet. */
const crashed = () => ({
  phase: 'Running',
  conditions: [{ type: 'Ready', status: 'False' }],
  containerStatuses: [
    {
      name: 'wallet-node',
      ready: false,
      restartCount: 1,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode: 1, reason: 'Error' } },
    },
  ],
});
const isMap = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Removes from `target` what `before` set and `after` no longer sets (maps recursively). */
function prune(
  target: Record<string, unknown>,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
) {
  for (const [k, v] of Object.entries(before)) {
    if (!(k in after)) delete target[k];
    else if (isMap(v) && isMap(after[k]) && isMap(target[k]))
      prune(target[k] as Record<string, unknown>, v, after[k] as Record<string, unknown>);
  }
}

/** Maps merge, everything else is replaced by the applied value. */
function merge(target: Record<string, unknown>, applied: Record<string, unknown>) {
  for (const [k, v] of Object.entries(applied)) {
    if (isMap(v) && isMap(target[k])) merge(target[k] as Record<string, unknown>, v);
    else target[k] = clone(v);
  }
}

/** Leaf paths a manager sets (`a.b.c` → its value as JSON), for conflicts. */
function leaves(v: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (!isMap(v)) out.set(prefix, JSON.stringify(v));
  else for (const [k, x] of Object.entries(v)) leaves(x, prefix ? `${prefix}.${k}` : k, out);
  return out;
}

const matches = (labels: Record<string, string> | undefined, selector: string | undefined) =>
  !selector ||
  selector.split(',').every((term) => {
    const [k, v] = term.split('=');
    return labels?.[k!] === v;
  });

export class KubernetesApiStandIn {
  readonly requests: RecordedRequest[] = [];
  readonly token = `standin-${randomUUID()}`;
  /** What the pod of a node does once created. */
  behaviour: (nodeId: string) => PodBehaviour = () => 'ready';
  /** How long a pod takes from Pending to Ready, and from terminating to deleted. */
  readyAfterMs = 60;
  terminateAfterMs = 60;
  /** How a too-old watch resourceVersion is answered. */
  goneAs: 'http' | 'event' = 'http';
  private rv = 1;
  private readonly objects = new Map<string, Obj>();
  /** object key → manager → its last applied configuration. */
  private readonly applied = new Map<string, Map<string, Record<string, unknown>>>();
  private readonly history: { rv: number; type: string; object: Obj }[] = [];
  /** Watches from a resourceVersion below this get 410 Gone. */
  private oldestRv = 0;
  private readonly watchers = new Set<{ res: ServerResponse; selector: string | undefined }>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server: Server | undefined;
  port = 0;
  private readonly tls: Tls;

  constructor(tls: Tls) {
    this.tls = tls;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** A kubeconfig (YAML) for this server: its CA, a bearer token. */
  kubeconfig(): string {
    const ca = Buffer.from(this.tls.cert).toString('base64');
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      `- name: standin\n  cluster:\n    server: ${this.url}\n    certificate-authority-data: ${ca}`,
      'users:',
      `- name: cloud\n  user:\n    token: ${this.token}`,
      'contexts:',
      '- name: standin\n  context:\n    cluster: standin\n    user: cloud',
      'current-context: standin',
      '',
    ].join('\n');
  }

  async start(): Promise<this> {
    const server = createServer({ key: this.tls.key, cert: this.tls.cert }, (req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        try {
          this.handle(req, res, Buffer.concat(parts).toString('utf8'));
        } catch (err) {
          this.status(res, 500, 'InternalError', (err as Error).message);
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.endWatches();
    const s = this.server;
    this.server = undefined;
    s?.closeAllConnections();
    await new Promise<void>((r) => (s ? s.close(() => r()) : r()));
  }

  // ---- test controls ----------------------------------------------------------------------------

  get resourceVersion(): number {
    return this.rv;
  }

  /** Every live object, keyed `<kind>/<namespace>/<name>`. */
  snapshot(): Map<string, Obj> {
    return new Map([...this.objects].map(([k, o]) => [k, clone(o)]));
  }

  get(kind: string, namespace: string | undefined, name: string): Obj | undefined {
    const o = this.objects.get(`${kind}/${namespace ?? ''}/${name}`);
    return o ? clone(o) : undefined;
  }

  /** Forgets the event history: watches from an older resourceVersion get 410 Gone. */
  compact(): void {
    this.oldestRv = this.rv + 1;
    this.history.length = 0;
  }

  /** Ends every open watch (the API server does so now and then). */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  /** Sends a BOOKMARK with the current resourceVersion to every watch. */
  bookmark(): void {
    for (const w of this.watchers)
      this.send(w.res, 'BOOKMARK', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: '', resourceVersion: String(this.rv) },
      });
  }

  /** Changes a pod as the kubelet would (e.g. a crash); emits MODIFIED. */
  patchPod(namespace: string, name: string, change: (pod: Obj) => void): void {
    const key = `Pod/${namespace}/${name}`;
    const pod = this.objects.get(key);
    if (!pod) throw new Error(`no pod ${key}`);
    change(pod);
    this.write(key, pod, 'MODIFIED');
  }

  /** Deletes a pod as an eviction would (the controller recreates it while replicas is 1). */
  deletePod(namespace: string, name: string): void {
    this.remove(`Pod/${namespace}/${name}`);
    this.podGone(namespace, name);
  }

  /** The controller replaces a pod that went while its StatefulSet still wants one. */
  private podGone(namespace: string, podName: string): void {
    const sts = this.objects.get(`StatefulSet/${namespace}/${podName.replace(/-0$/, '')}`);
    if (sts && Number((sts.spec as { replicas?: number }).replicas ?? 1) >= 1) this.createPod(sts);
  }

  // ---- the API ----------------------------------------------------------------------------------

  private status(res: ServerResponse, code: number, reason: string, message: string): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message,
        reason,
        code,
      }),
    );
  }

  private json(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private handle(req: IncomingMessage, res: ServerResponse, text: string) {
    const url = new URL(req.url ?? '/', this.url);
    const query = Object.fromEntries(url.searchParams);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    this.requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query,
      contentType: req.headers['content-type'],
      body,
    });
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return this.status(res, 401, 'Unauthorized', 'Unauthorized');
    const p = url.pathname.split('/').filter(Boolean);
    // Discovery.
    const gv =
      p[0] === 'api'
        ? { group: '', version: p[1], rest: p.slice(2) }
        : { group: p[1], version: p[2], rest: p.slice(3) };
    if (gv.rest.length === 0 && req.method === 'GET') {
      const resources = RESOURCES.filter((r) => r.group === gv.group && r.version === gv.version);
      if (resources.length === 0)
        return this.status(res, 404, 'NotFound', 'the server could not find the requested resource');
      return this.json(res, 200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: gv.group ? `${gv.group}/${gv.version}` : gv.version,
        resources: resources.map((r) => ({
          name: r.name,
          singularName: r.kind.toLowerCase(),
          namespaced: r.namespaced,
          kind: r.kind,
          verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
        })),
      });
    }
    let namespace: string | undefined;
    let rest = gv.rest;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const resource = RESOURCES.find(
      (r) => r.group === gv.group && r.version === gv.version && r.name === rest[0],
    );
    if (!resource)
      return this.status(res, 404, 'NotFound', 'the server could not find the requested resource');
    const name = rest[1];
    if (!name) {
      if (req.method !== 'GET') return this.status(res, 405, 'MethodNotAllowed', 'method not allowed');
      return query.watch === 'true' || query.watch === '1'
        ? this.watch(res, resource, query)
        : this.list(res, resource, namespace, query.labelSelector);
    }
    const key = `${resource.kind}/${namespace ?? ''}/${name}`;
    if (req.method === 'GET') {
      const o = this.objects.get(key);
      return o
        ? this.json(res, 200, o)
        : this.status(res, 404, 'NotFound', `${resource.name} "${name}" not found`);
    }
    if (req.method === 'DELETE') {
      if (!this.objects.has(key))
        return this.status(res, 404, 'NotFound', `${resource.name} "${name}" not found`);
      const o = clone(this.objects.get(key)!);
      if (resource.kind === 'StatefulSet')
        for (const [k, pod] of this.objects)
          if (pod.kind === 'Pod' && pod.metadata.namespace === namespace && pod.metadata.name === `${name}-0`)
            this.remove(k);
      if (resource.kind === 'Namespace')
        for (const [k, x] of this.objects) if (x.metadata.namespace === name) this.remove(k);
      this.remove(key);
      return this.json(res, 200, o);
    }
    if (req.method === 'PATCH') {
      if (req.headers['content-type'] !== 'application/apply-patch+yaml')
        return this.status(
          res,
          415,
          'UnsupportedMediaType',
          `the stand-in only implements server-side apply, not ${req.headers['content-type']}`,
        );
      if (!query.fieldManager)
        return this.status(res, 400, 'BadRequest', 'fieldManager is required for apply requests');
      const r = this.apply(
        resource,
        namespace,
        name,
        body as Obj,
        query.fieldManager,
        query.force === 'true',
      );
      return 'reason' in r ? this.status(res, r.code, r.reason, r.message) : this.json(res, r.code, r.body);
    }
    return this.status(res, 405, 'MethodNotAllowed', 'method not allowed');
  }

  private list(
    res: ServerResponse,
    r: Resource,
    namespace: string | undefined,
    selector: string | undefined,
  ) {
    const items = [...this.objects.values()].filter(
      (o) =>
        o.kind === r.kind &&
        (namespace === undefined || o.metadata.namespace === namespace) &&
        matches(o.metadata.labels, selector),
    );
    this.json(res, 200, {
      kind: `${r.kind}List`,
      apiVersion: r.group ? `${r.group}/${r.version}` : r.version,
      metadata: { resourceVersion: String(this.rv) },
      items,
    });
  }

  private send(res: ServerResponse, type: string, object: unknown): void {
    res.write(`${JSON.stringify({ type, object })}\n`);
  }

  private watch(res: ServerResponse, r: Resource, query: Record<string, string>) {
    if (r.kind !== 'Pod') return this.status(res, 405, 'MethodNotAllowed', 'the stand-in watches pods only');
    const from = query.resourceVersion ? Number(query.resourceVersion) : this.rv;
    if (from < this.oldestRv - 1) {
      const message = `too old resource version: ${from} (${this.oldestRv})`;
      if (this.goneAs === 'http') return this.status(res, 410, 'Expired', message);
      res.writeHead(200, { 'content-type': 'application/json' });
      this.send(res, 'ERROR', {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message,
        reason: 'Expired',
        code: 410,
      });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    const selector = query.labelSelector;
    for (const e of this.history)
      if (e.rv > from && matches(e.object.metadata.labels, selector)) this.send(res, e.type, e.object);
    const w = { res, selector };
    this.watchers.add(w);
    // The response's close is the connection's (a request's 'close' only means its body was read).
    res.on('close', () => this.watchers.delete(w));
  }

  private emit(type: string, o: Obj): void {
    if (o.kind !== 'Pod') return;
    const e = { rv: this.rv, type, object: clone(o) };
    this.history.push(e);
    for (const w of this.watchers)
      if (matches(o.metadata.labels, w.selector)) this.send(w.res, type, e.object);
  }

  private write(key: string, o: Obj, type: 'ADDED' | 'MODIFIED'): Obj {
    this.rv++;
    o.metadata.resourceVersion = String(this.rv);
    this.objects.set(key, o);
    this.emit(type, o);
    return o;
  }

  private remove(key: string): void {
    const o = this.objects.get(key);
    if (!o) return;
    this.objects.delete(key);
    this.applied.delete(key);
    this.rv++;
    o.metadata.resourceVersion = String(this.rv);
    this.emit('DELETED', o);
  }

  /** A server-side apply by another field manager (an operator's `kubectl apply --server-side`). */
  applyAs(manager: string, cfg: Obj, force = false): { code: number; reason?: string; message?: string } {
    const r = RESOURCES.find(
      (x) => x.kind === cfg.kind && (x.group ? `${x.group}/${x.version}` : x.version) === cfg.apiVersion,
    );
    if (!r) throw new Error(`unknown kind ${cfg.kind}`);
    return this.apply(r, cfg.metadata.namespace, cfg.metadata.name, cfg, manager, force);
  }

  private apply(
    r: Resource,
    namespace: string | undefined,
    name: string,
    cfg: Obj,
    manager: string,
    force: boolean,
  ): { code: number; body: Obj } | { code: number; reason: string; message: string } {
    if (cfg?.kind !== r.kind || cfg.metadata?.name !== name)
      return {
        code: 400,
        reason: 'BadRequest',
        message: `the applied object (${cfg?.kind} ${cfg?.metadata?.name}) does not match the URL`,
      };
    if (r.namespaced && !this.objects.has(`Namespace//${namespace}`))
      return { code: 404, reason: 'NotFound', message: `namespaces "${namespace}" not found` };
    const key = `${r.kind}/${namespace ?? ''}/${name}`;
    const existing = this.objects.get(key);
    const managers = this.applied.get(key) ?? new Map<string, Record<string, unknown>>();
    // Fields another manager applied with another value: a conflict unless forced.
    if (!force)
      for (const [m, other] of managers) {
        if (m === manager) continue;
        // A field both set to different values (the same value is shared ownership, no conflict).
        const mine = leaves(cfg);
        const clash = [...leaves(other)].filter(([l, v]) => mine.has(l) && mine.get(l) !== v).map(([l]) => l);
        if (clash.length > 0)
          return {
            code: 409,
            reason: 'Conflict',
            message: `Apply failed with conflicts: ${clash.join(', ')} (manager ${m})`,
          };
      }
    const next: Obj = existing
      ? clone(existing)
      : ({ apiVersion: cfg.apiVersion, kind: cfg.kind, metadata: { name } } as Obj);
    const before = managers.get(manager);
    if (before) prune(next, before, cfg);
    merge(next, cfg);
    if (r.namespaced) next.metadata.namespace = namespace;
    if (r.kind === 'Secret' && isMap(next.stringData)) {
      const data = (isMap(next.data) ? next.data : {}) as Record<string, string>;
      for (const [k, v] of Object.entries(next.stringData))
        data[k] = Buffer.from(String(v)).toString('base64');
      next.data = data;
      delete next.stringData;
    }
    managers.set(manager, clone(cfg));
    this.applied.set(key, managers);
    const comparable = (o: Obj | undefined) => {
      if (!o) return undefined;
      const {
        resourceVersion: _rv,
        generation: _g,
        managedFields: _mf,
        uid: _u,
        creationTimestamp: _c,
        ...meta
      } = o.metadata;
      return JSON.stringify({ ...o, metadata: meta, status: undefined });
    };
    if (existing && comparable(existing) === comparable(next)) return { code: 200, body: clone(existing) }; // no-op: same resourceVersion
    const specChanged = !existing || JSON.stringify(existing.spec) !== JSON.stringify(next.spec);
    next.metadata.uid = existing?.metadata.uid ?? randomUUID();
    next.metadata.creationTimestamp = existing?.metadata.creationTimestamp ?? new Date().toISOString();
    next.metadata.generation = Number(existing?.metadata.generation ?? 0) + (specChanged ? 1 : 0);
    next.metadata.managedFields = [...managers.keys()].map((m) => ({
      manager: m,
      operation: 'Apply',
      apiVersion: cfg.apiVersion,
      fieldsType: 'FieldsV1',
    }));
    const saved = this.write(key, next, existing ? 'MODIFIED' : 'ADDED');
    if (r.kind === 'StatefulSet') queueMicrotask(() => this.reconcileStatefulSet(saved));
    return { code: existing ? 200 : 201, body: clone(saved) };
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  /** The StatefulSet controller and the kubelet, as far as the driver can tell. */
  private reconcileStatefulSet(sts: Obj): void {
    const namespace = sts.metadata.namespace!;
    const podName = `${sts.metadata.name}-0`;
    const key = `Pod/${namespace}/${podName}`;
    const replicas = Number((sts.spec as { replicas?: number }).replicas ?? 1);
    const pod = this.objects.get(key);
    if (replicas === 0 && pod && !pod.metadata.deletionTimestamp) {
      pod.metadata.deletionTimestamp = new Date().toISOString();
      this.write(key, pod, 'MODIFIED');
      this.later(this.terminateAfterMs, () => {
        this.remove(key);
        this.podGone(namespace, podName);
      });
    }
    if (replicas >= 1 && !pod) this.createPod(sts);
  }

  private createPod(sts: Obj): void {
    const namespace = sts.metadata.namespace!;
    const name = `${sts.metadata.name}-0`;
    const key = `Pod/${namespace}/${name}`;
    const template = (sts.spec as { template: { metadata: { labels: Record<string, string> } } }).template;
    const nodeId = template.metadata.labels['rgbx.cloud/node-id'] ?? '';
    const pod: Obj = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace, labels: { ...template.metadata.labels }, uid: randomUUID() },
      spec: clone((template as { spec?: Record<string, unknown> }).spec ?? {}),
      status: {
        phase: 'Pending',
        conditions: [{ type: 'Ready', status: 'False' }],
        containerStatuses: [
          {
            name: 'wallet-node',
            ready: false,
            restartCount: 0,
            state: { waiting: { reason: 'ContainerCreating' } },
          },
        ],
      },
    };
    this.write(key, pod, 'ADDED');
    const behaviour = this.behaviour(nodeId);
    this.later(this.readyAfterMs, () => {
      const p = this.objects.get(key);
      if (!p || p.metadata.uid !== pod.metadata.uid || p.metadata.deletionTimestamp) return;
      if (behaviour === 'crash') {
        p.status = crashed();
        this.write(key, p, 'MODIFIED');
        return;
      }
      const ready = behaviour !== 'never-ready';
      p.status = {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
        containerStatuses: [
          {
            name: 'wallet-node',
            ready,
            restartCount: 0,
            state: { running: { startedAt: new Date().toISOString() } },
          },
        ],
      };
      this.write(key, p, 'MODIFIED');
      if (behaviour === 'ready-then-crash')
        this.later(this.readyAfterMs, () => {
          const q = this.objects.get(key);
          if (!q || q.metadata.uid !== pod.metadata.uid || q.metadata.deletionTimestamp) return;
          q.status = crashed();
          this.write(key, q, 'MODIFIED');
        });
    });
  }
}
