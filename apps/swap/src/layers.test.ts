/**
 * The swap's layers, checked on the source: storage only in `store/` (no query builder outside it),
 * and no switch on the network type outside `kinds/` (every network-specific decision goes through
 * `kindOf(network)`). ARCHITECTURE.md's "add a network kind" recipe holds only while both do.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('.', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.startsWith('test-') ? [p] : [];
  });
}

/** `file:line: text` of every line outside `allowed` matching `pattern`. */
function offenders(pattern: RegExp, allowed: (file: string) => boolean): string[] {
  return sources(SRC).flatMap((file) => {
    const rel = relative(SRC, file);
    if (allowed(rel)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) ? [`${rel}:${i + 1}: ${line.trim()}`] : []));
  });
}

const QUERY = /\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\.transaction\(\)|\bsql`|\.with\('/;
const TYPES = "'(BITCOIN|EVM|TRON|SOLANA)'";
const NETWORK_SWITCH = new RegExp(`case ${TYPES}|[!=]==\\s*${TYPES}|${TYPES}\\s*[!=]==`);

describe('swap layers', () => {
  it('no query builder call outside store/', () => {
    expect(offenders(QUERY, (f) => f.startsWith('store/'))).toEqual([]);
  });

  it('no switch on the network type outside kinds/', () => {
    expect(offenders(NETWORK_SWITCH, (f) => f.startsWith('kinds/'))).toEqual([]);
  });

  it('the checks see what they look for (a query in store/, a network switch in kinds/)', () => {
    expect(offenders(QUERY, (f) => !f.startsWith('store/')).length).toBeGreaterThan(10);
    const inKinds = sources(join(SRC, 'kinds')).map((f) => readFileSync(f, 'utf8'));
    expect(inKinds.some((t) => /type: 'BITCOIN'/.test(t))).toBe(true);
    expect(NETWORK_SWITCH.test("if (network.type === 'TRON')")).toBe(true);
    expect(NETWORK_SWITCH.test("    case 'SOLANA':")).toBe(true);
  });
});
