import { readFileSync } from 'node:fs';
import { Status } from '@rgbx/contracts/swap';
import { describe, expect, it } from 'vitest';
import { E } from '../errors.ts';
import {
  canTransition,
  EXPIRABLE,
  STATUSES,
  TERMINAL,
  TRANSITIONS,
  transition,
  transitionTableMarkdown,
} from './lifecycle.ts';

describe('lifecycle table', () => {
  it('reaches every status and leaves only Fulfilled and Refunded terminal (Declined and Expired keep the refund path)', () => {
    const reached = new Set(TRANSITIONS.flatMap((t) => (t.to === 'unchanged' ? [] : [t.to])));
    expect([...reached].sort()).toEqual([...STATUSES].sort());
    expect([...TERMINAL].sort()).toEqual(['Fulfilled', 'Refunded']);
    expect(EXPIRABLE).toEqual(['Initiated', 'ApprovalAdded', 'Accepted', 'UserDeposited']);
  });

  it('answers exactly the transitions of the table, everything else INVALID_TRANSITION', () => {
    for (const t of TRANSITIONS) {
      for (const from of [null, ...STATUSES]) {
        const allowed = t.from.includes(from);
        if (allowed) expect(transition(from, t.trigger)).toBe(t.to === 'unchanged' ? from : t.to);
        else
          expect(() => transition(from, t.trigger)).toThrow(
            expect.objectContaining({ code: 'INVALID_TRANSITION' }),
          );
        if (from !== null) expect(canTransition(from, t.trigger)).toBe(allowed);
      }
    }
    expect(
      E.INVALID_TRANSITION.is(
        (() => {
          try {
            transition('Refunded', 'refund');
          } catch (e) {
            return e;
          }
        })(),
      ),
    ).toBe(true);
  });

  it('is the table the README documents, and the statuses the schemas accept', () => {
    // Markdown tables compared cell by cell (the formatter pads them).
    const cells = (text: string) =>
      text
        .split('\n')
        .filter((l) => l.trim().startsWith('|'))
        .map((l) =>
          l
            .split('|')
            .map((c) => (/^\s*-+\s*$/.test(c) ? '---' : c.trim()))
            .join('|'),
        );
    const readme = cells(readFileSync(new URL('../../README.md', import.meta.url), 'utf8')).join('\n');
    expect(readme).toContain(cells(transitionTableMarkdown()).join('\n'));
    expect((Status as unknown as { anyOf: { const: string }[] }).anyOf.map((s) => s.const)).toEqual([
      ...STATUSES,
    ]);
  });
});
