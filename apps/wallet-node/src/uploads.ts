/**
 * Multipart uploads for the routes that take files (restore, CFA/UDA issuance): every request gets its own
 * scratch directory under `<data_dir>/.uploads/<area>/` (mode 0700, files 0600, on the wallets' filesystem so
 * a restored wallet can be renamed into place), files are streamed there within the configured limits, and
 * the directory is deleted when the request ends, whatever the outcome. Leftovers of a crash are deleted at
 * start-up.
 */
import { createWriteStream, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest, ServiceApp } from '@rgbx/service-kit';
import { ServiceError, Type } from '@rgbx/service-kit';
import { parse as losslessParse } from 'lossless-json';
import { E } from './errors.ts';

/** One uploaded file part, stored at `path`. */
export interface UploadedFile {
  field: string;
  /** The client's file name (informational only; never used in a path). */
  filename: string;
  mimetype: string;
  path: string;
  size: number;
}

/** A parsed multipart body: text fields (repeatable) and the stored files, in arrival order. */
export interface Upload {
  fields: Map<string, string[]>;
  files: UploadedFile[];
}

export interface MultipartSpec {
  /** File fields accepted, each with the most files it may carry; any other file part is refused (422). */
  files: Record<string, number>;
  /** Largest accepted file, bytes (larger: 413). */
  maxFileBytes: number;
}

/** Limits handed to @fastify/multipart (busboy) for a route taking at most `files` file parts. */
export function multipartLimits(maxFileBytes: number, files: number) {
  return {
    fileSize: maxFileBytes,
    files,
    fields: 64,
    fieldSize: 64 * 1024,
    fieldNameSize: 100,
    parts: files + 64,
    headerPairs: 50,
  };
}

/** Scratch directories of one kind of upload, under `<data_dir>/.uploads/<area>/`. */
export class UploadArea {
  readonly root: string;

  constructor(dataDir: string, area: string) {
    this.root = join(dataDir, '.uploads', area);
  }

  /** Deletes every leftover scratch directory (start-up only: no request is running). */
  clearLeftovers(): number {
    if (!existsSync(this.root)) return 0;
    let n = 0;
    for (const e of readdirSync(this.root)) {
      rmSync(join(this.root, e), { recursive: true, force: true });
      n++;
    }
    return n;
  }

  /** A fresh private directory for one request. */
  async newDir(): Promise<string> {
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
    return mkdtemp(join(this.root, 'req-'));
  }

  async remove(dir: string): Promise<void> {
    await rm(dir, { recursive: true, force: true });
  }
}

const LIMIT_ERRORS: Record<string, string> = {
  FST_FILES_LIMIT: 'too many file parts',
  FST_FIELDS_LIMIT: 'too many fields',
  FST_PARTS_LIMIT: 'too many parts',
};

/** A multipart/busboy error as our envelope's error (413 for limits, 422 for a malformed body). */
function multipartError(err: unknown, spec: MultipartSpec): unknown {
  if (err instanceof ServiceError) return err;
  const code = (err as { code?: unknown }).code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(spec);
  if (typeof code === 'string' && LIMIT_ERRORS[code]) {
    return new ServiceError(
      E.PAYLOAD_TOO_LARGE.code,
      E.PAYLOAD_TOO_LARGE.status,
      `multipart: ${LIMIT_ERRORS[code]}`,
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  return E.BAD_INPUT.createWith({ cause: err }, `multipart: ${message}`);
}

function fileTooLarge(spec: MultipartSpec): ServiceError {
  return new ServiceError(
    E.PAYLOAD_TOO_LARGE.code,
    E.PAYLOAD_TOO_LARGE.status,
    `file larger than ${spec.maxFileBytes} bytes (api.body_limit_bytes)`,
    { details: { max_bytes: spec.maxFileBytes } },
  );
}

/**
 * Reads a multipart body: text fields into `fields`, file parts streamed to `dir` (0600). Throws our errors:
 * 413 for a file over `maxFileBytes` or too many parts, 422 for an unexpected file field, a truncated field
 * or a malformed body. On a throw the caller still owns `dir` (and deletes it).
 */
export async function readMultipart(req: FastifyRequest, dir: string, spec: MultipartSpec): Promise<Upload> {
  const upload: Upload = { fields: new Map(), files: [] };
  const perField = new Map<string, number>();
  try {
    for await (const part of req.parts()) {
      if (part.type === 'field') {
        if (part.fieldnameTruncated) throw E.BAD_INPUT.create('multipart: a field name is too long');
        if (part.valueTruncated)
          throw E.BAD_INPUT.create(`multipart: field \`${part.fieldname}\` is too long`);
        const list = upload.fields.get(part.fieldname) ?? [];
        list.push(String(part.value));
        upload.fields.set(part.fieldname, list);
        continue;
      }
      const max = Object.hasOwn(spec.files, part.fieldname) ? spec.files[part.fieldname]! : 0;
      const count = (perField.get(part.fieldname) ?? 0) + 1;
      if (count > max) {
        part.file.resume(); // drain it: busboy only moves on once the part is consumed
        throw E.BAD_INPUT.create(
          max === 0
            ? `multipart: unexpected file part \`${part.fieldname}\``
            : `multipart: at most ${max} file part(s) \`${part.fieldname}\``,
        );
      }
      perField.set(part.fieldname, count);
      const path = join(dir, `part-${upload.files.length}`);
      const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
      await pipeline(part.file, out);
      if (part.file.truncated) throw fileTooLarge(spec);
      upload.files.push({
        field: part.fieldname,
        filename: part.filename,
        mimetype: part.mimetype,
        path,
        size: out.bytesWritten,
      });
    }
  } catch (err) {
    throw multipartError(err, spec);
  }
  return upload;
}

/** What an upload route declares: its file fields and how a parsed form becomes the body its schema checks. */
export interface UploadRoute {
  /** File fields, each with the most files it may carry. */
  files: Record<string, number>;
  /** The body the route's multipart schema validates (undefined values are dropped). */
  toBody(upload: Upload): Record<string, unknown>;
  /** `$id` of the route's JSON body schema when it also takes JSON (then nothing is uploaded). */
  jsonSchema?: string;
}

interface UploadState {
  dir: string;
  upload: Upload | undefined;
  /** A handler is using the files: only it deletes them (in `release`). */
  busy: boolean;
}

/**
 * Upload handling for the routes of one encapsulated scope (where @fastify/multipart is registered): a
 * preValidation hook reads a multipart body into a scratch directory and sets `req.body` from its fields, so
 * Fastify validates it against the route's `multipart/form-data` schema; handlers `claim` the files and
 * `release` them before replying; whatever no handler claimed is deleted before the reply is sent, or when the
 * connection closes.
 */
export class Uploads {
  readonly #area: UploadArea;
  readonly #maxFileBytes: number;
  readonly #routes: Record<string, UploadRoute>;
  readonly #state = new WeakMap<FastifyRequest, UploadState>();

  constructor(area: UploadArea, maxFileBytes: number, routes: Record<string, UploadRoute>) {
    this.#area = area;
    this.#maxFileBytes = maxFileBytes;
    this.#routes = routes;
  }

  /** Installs the hooks on `scope` (the scope of these routes). */
  install(scope: ServiceApp): void {
    scope.addHook('preValidation', async (req, reply) => {
      const route = req.routeOptions.url === undefined ? undefined : this.#routes[req.routeOptions.url];
      if (!route) return;
      if (!req.isMultipart()) {
        if (route.jsonSchema === undefined) {
          const type = req.headers['content-type'] ?? '(none)';
          throw E.BAD_INPUT.create(`Content type error: expected multipart/form-data, got ${type}`);
        }
        // JSON is validated by Fastify against the route's application/json schema. Any other type arrives
        // here only with an empty body (the app's parser refuses the rest) and has no schema of its own: it
        // is the JSON body `{}`, checked like one, so its required fields fail by name.
        if (req.mediaType !== 'application/json') {
          req.body ??= {};
          const validate = req.compileValidationSchema(Type.Ref(route.jsonSchema), 'body');
          if (!validate(req.body)) {
            throw Object.assign(new Error('body validation failed'), {
              validation: validate.errors ?? [],
              validationContext: 'body',
            });
          }
        }
        return;
      }
      const st: UploadState = { dir: await this.#area.newDir(), upload: undefined, busy: false };
      this.#state.set(req, st);
      // A client gone before any handler took the files: nobody will; delete them now.
      reply.raw.once('close', () => {
        if (!st.busy) void this.#area.remove(st.dir);
      });
      try {
        st.upload = await readMultipart(req, st.dir, {
          files: route.files,
          maxFileBytes: this.#maxFileBytes,
        });
      } catch (err) {
        await this.#area.remove(st.dir);
        throw err;
      }
      const body = route.toBody(st.upload);
      for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
      req.body = body;
    });
    // Before any reply goes out (an error one included): files no handler took are deleted by then.
    scope.addHook('onSend', async (req, _reply, payload) => {
      const st = this.#state.get(req);
      if (st && !st.busy) await this.#area.remove(st.dir);
      return payload;
    });
  }

  /** The request's uploaded files (undefined for a JSON request); from now on the caller must `release`. */
  claim(req: FastifyRequest): Upload | undefined {
    const st = this.#state.get(req);
    if (!st) return undefined;
    st.busy = true;
    return st.upload;
  }

  /** The scratch directory of the request's upload, if any. */
  dirOf(req: FastifyRequest): string | undefined {
    return this.#state.get(req)?.dir;
  }

  /** Deletes the request's files. */
  async release(req: FastifyRequest): Promise<void> {
    const st = this.#state.get(req);
    if (st) await this.#area.remove(st.dir);
  }
}

/** A text field given once (the last value if repeated), or undefined. */
export function field(upload: Upload, name: string): string | undefined {
  const v = upload.fields.get(name);
  return v === undefined ? undefined : v[v.length - 1];
}

/** An optional text field: absent when missing or empty (forms send empty inputs as ""). */
export function optionalField(upload: Upload, name: string): string | undefined {
  const v = field(upload, name);
  return v === undefined || v === '' ? undefined : v;
}

/** The client file name of the first file part `name` (what the form schema sees), or undefined. */
export function fileField(upload: Upload, name: string): string | undefined {
  const f = upload.files.find((x) => x.field === name);
  return f === undefined ? undefined : f.filename || name;
}

/** The client file names of every file part `name`, or undefined when there is none. */
export function fileFields(upload: Upload, name: string): string[] | undefined {
  const fs = upload.files.filter((x) => x.field === name);
  return fs.length === 0 ? undefined : fs.map((f) => f.filename || name);
}

/**
 * Values of a u64 array field: each occurrence is one integer, a JSON array of integers, or a comma-separated
 * list. Integers stay decimal strings (the contracts' U64 accepts them); anything else is left as it is for the
 * schema to refuse.
 */
export function u64List(upload: Upload, name: string): unknown[] | undefined {
  const values = upload.fields.get(name);
  if (values === undefined) return undefined;
  const out: unknown[] = [];
  for (const raw of values) {
    const text = raw.trim();
    if (text.startsWith('[')) {
      try {
        // numbers kept as their digits (exact u64; a fraction or a sign then fails the schema's pattern)
        const parsed = losslessParse(text, undefined, (digits) => digits) as unknown;
        if (Array.isArray(parsed)) {
          out.push(...parsed);
          continue;
        }
      } catch {
        // left as text: the schema names the field
      }
      out.push(text);
    } else {
      out.push(...text.split(',').map((s) => s.trim()));
    }
  }
  return out;
}

/** A small non-negative integer field as a number when it is one (else left as text for the schema to refuse). */
export function intField(upload: Upload, name: string): unknown {
  const v = optionalField(upload, name);
  if (v === undefined) return undefined;
  return /^\d{1,9}$/.test(v.trim()) ? Number(v.trim()) : v;
}
