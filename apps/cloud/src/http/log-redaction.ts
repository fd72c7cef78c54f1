/**
 * What the request log may show of a URL. The API takes its token from the `Authorization` header
 * only (redacted by the kit), but clients do paste tokens into query strings (`?token=…`,
 * `?access_token=…`); those must never reach a log line. So the logged URL keeps the path and the
 * query parameter names, and the values only of the parameters the API defines (`limit`); every
 * other value, a parameter without `=` unless the API defines it, and any path segment or value holding
 * a cloud token (`rgbxc_…`, percent-encoded or not) become `[redacted]`.
 */
import type { FastifyRequest } from '@rgbx/service-kit';

/** Query parameters of the API whose values are logged as sent. */
const LOGGED_QUERY_VALUES = new Set(['limit']);
const HAS_TOKEN = /rgbxc_/i;
const REDACTED = '[redacted]';

function decoded(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = (q < 0 ? url : url.slice(0, q))
    .split('/')
    .map((segment) => (HAS_TOKEN.test(decoded(segment)) ? REDACTED : segment))
    .join('/');
  if (q < 0) return path;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      if (pair === '') return pair;
      const eq = pair.indexOf('=');
      const rawName = eq < 0 ? pair : pair.slice(0, eq);
      const name = decoded(rawName);
      // A bare `?xyz` may be the secret itself: only known names are logged without a value.
      if (HAS_TOKEN.test(name) || (eq < 0 && !LOGGED_QUERY_VALUES.has(name))) return REDACTED;
      if (eq < 0) return rawName;
      const value = pair.slice(eq + 1);
      const keep = LOGGED_QUERY_VALUES.has(name) && !HAS_TOKEN.test(decoded(value));
      return `${rawName}=${keep ? value : REDACTED}`;
    })
    .join('&');
  return `${path}?${query}`;
}

/** A cloud token written plainly or percent-encoded inside free text. */
const TOKEN_IN_TEXT = /(?:r|%72)(?:g|%67)(?:b|%62)(?:x|%78)(?:c|%63)(?:_|%5f)[A-Za-z0-9_%-]*/gi;

/** `text` with every cloud token in it replaced by `[redacted]`. */
export function scrubTokens(text: string): string {
  return text.replace(TOKEN_IN_TEXT, REDACTED);
}

/**
 * pino `formatters.log`: scrubs tokens out of the top-level string fields of every line (e.g. the
 * kit's `reason` of a 404, which names the requested path). Objects are left to their serializers.
 */
export function scrubLogFields(fields: object): object {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(fields)) {
    if (typeof v !== 'string') continue;
    const clean = scrubTokens(v);
    if (clean !== v) {
      out ??= { ...fields };
      out[k] = clean;
    }
  }
  return out ?? fields;
}

/** Replaces Fastify's `req` log serializer: the same fields, with the URL redacted. */
export function requestLogSerializer(req: FastifyRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: redactUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}
