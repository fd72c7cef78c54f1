/** JSON with bigints: written as decimal strings (the wire and store convention for amounts). */

export function stringifyJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/** A JSON-safe deep copy: bigints become decimal strings, Uint8Arrays become hex. */
export function toJsonValue<T>(value: T): unknown {
  return JSON.parse(
    JSON.stringify(value, (_k, v) => {
      if (typeof v === 'bigint') return v.toString();
      if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
      return v;
    }),
  );
}
