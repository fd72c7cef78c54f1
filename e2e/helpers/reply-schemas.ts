/**
 * Every wallet node reply checked against its route's response schema. The node sends pre-serialised JSON, so
 * Fastify never checks a reply against the schema it documents; these tests do, with Ajv over the committed
 * OpenAPI document (`specs/wallet-node.openapi.json`, which CI keeps equal to the code's schemas).
 *
 * - `checkReply(method, url, status, text)`: the problems of one reply (empty = it matches).
 * - `watchReplies(isNode)`: wraps `fetch` so every reply of the node (the SDK's calls) is checked; `problems()`
 *   lists what did not match, `count()` how many replies were checked.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';

const SPEC = join(import.meta.dirname, '../../specs/wallet-node.openapi.json');

interface OpenApi {
  paths: Record<string, Record<string, { responses?: Record<string, OpenApiResponse> }>>;
}
interface OpenApiResponse {
  content?: Record<string, { schema?: unknown }>;
}

let spec: OpenApi | undefined;
let ajv: Ajv | undefined;
const compiled = new Map<string, ValidateFunction | null>();

function load(): { spec: OpenApi; ajv: Ajv } {
  if (!spec || !ajv) {
    spec = JSON.parse(readFileSync(SPEC, 'utf8')) as OpenApi;
    // strict off: the document holds OpenAPI keywords (and our x-u64, x-aliases) that are not JSON Schema.
    // Formats are not checked (`binary` names a download, not a string rule).
    ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema(spec as object, 'openapi');
  }
  return { spec, ajv };
}

const pointer = (...parts: string[]) =>
  parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** The JSON schema of `status` on `method path` (null: the route documents no JSON body for it). */
function validatorFor(method: string, path: string, status: number): ValidateFunction | null {
  const key = `${method} ${path} ${status}`;
  const hit = compiled.get(key);
  if (hit !== undefined) return hit;
  const { spec, ajv } = load();
  // A concrete path names its template (`/wallet/backup/abc` is `/wallet/backup/{backup_id}`).
  const template =
    path in spec.paths
      ? path
      : Object.keys(spec.paths).find((t) =>
          new RegExp(`^${t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path),
        );
  const op = template === undefined ? undefined : spec.paths[template]?.[method.toLowerCase()];
  if (!op) throw new Error(`${method} ${path} is not in the wallet node's OpenAPI document`);
  const code = String(status);
  const response = op.responses?.[code];
  if (!response) throw new Error(`${method} ${path} documents no ${status} reply`);
  const json = response.content?.['application/json'];
  const v = json?.schema
    ? ajv.compile({
        $ref: `openapi#/${pointer('paths', template!, method.toLowerCase(), 'responses', code, 'content', 'application/json', 'schema')}`,
      })
    : null;
  compiled.set(key, v);
  return v;
}

/** Problems of one reply against the schema its route documents for its status (empty = it matches). */
export function checkReply(method: string, url: string, status: number, text: string): string[] {
  const path = new URL(url, 'http://node').pathname;
  let v: ValidateFunction | null;
  try {
    v = validatorFor(method, path, status);
  } catch (err) {
    return [(err as Error).message];
  }
  if (v === null || text.length === 0) return [];
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return [`${method} ${path} ${status}: the reply is not JSON: ${text.slice(0, 100)}`];
  }
  if (v(json)) return [];
  return (v.errors ?? []).map(
    (e) => `${method} ${path} ${status}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
  );
}

/**
 * Wraps the global `fetch`: each reply from a URL `isNode` accepts is checked against its route's schema.
 * Returns the problems found so far, the number of replies checked, and `restore()`.
 */
export function watchReplies(isNode: (url: URL) => boolean) {
  const original = globalThis.fetch;
  const problems: string[] = [];
  let count = 0;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await original(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    if (isNode(url) && (res.headers.get('content-type') ?? '').startsWith('application/json')) {
      count++;
      problems.push(...checkReply(method, url.pathname, res.status, await res.clone().text()));
    }
    return res;
  };
  return {
    problems: () => problems,
    count: () => count,
    restore: () => {
      globalThis.fetch = original;
    },
  };
}
