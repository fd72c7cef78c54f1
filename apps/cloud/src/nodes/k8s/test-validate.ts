/**
 * Validates Kubernetes objects against the Kubernetes API's OpenAPI schemas as shipped (compiled to
 * validators) by `kubernetes-models` 4.5.1, a devDependency. Its validators check types, required
 * fields, enums and formats; they do not reject unknown fields, so the driver's manifests are also
 * typed with the client's model types (an unknown field is a compile error there).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `apps/v1` + `StatefulSet` → the model module `kubernetes-models/apps/v1/StatefulSet`. */
function modelOf(apiVersion: string, kind: string): { new (data: unknown): { validate(): void } } {
  const path = apiVersion.includes('/') ? apiVersion : `v1`;
  const mod = require(`kubernetes-models/${path}/${kind}`) as Record<string, unknown>;
  const model = mod[kind] as { new (data: unknown): { validate(): void } } | undefined;
  if (!model) throw new Error(`kubernetes-models has no ${apiVersion} ${kind}`);
  return model;
}

/** Throws with the schema's messages when `obj` is not a valid object of its `apiVersion`/`kind`. */
export function validateManifest(obj: unknown): void {
  const o = obj as { apiVersion?: string; kind?: string; metadata?: { name?: string } };
  if (!o?.apiVersion || !o.kind)
    throw new Error(`not a Kubernetes object: ${JSON.stringify(obj).slice(0, 200)}`);
  const Model = modelOf(o.apiVersion, o.kind);
  try {
    new Model(obj).validate();
  } catch (err) {
    throw new Error(`${o.kind} ${o.metadata?.name ?? '?'}: ${(err as Error).message}`);
  }
}
