import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHttpDate, retryAfterMs } from './http.ts';

const now = Date.parse('2026-11-27T15:00:00Z');

describe('retryAfterMs', () => {
  it('reads delta-seconds and the three HTTP-date forms, a past date as 0', () => {
    expect(retryAfterMs('7', now)).toBe(7_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Fri, 27 Nov 2026 15:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Friday, 27-Nov-26 15:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Fri Nov 27 15:00:30 2026', now)).toBe(30_000);
    expect(retryAfterMs('Fri, 27 Nov 2026 14:59:00 GMT', now)).toBe(0);
  });

  it('reads a two-digit RFC 850 year as at most 50 years ahead (RFC 9110 §5.6.7)', () => {
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
    expect(parseHttpDate('Monday, 06-Nov-76 08:49:37 GMT', now)).toBe(Date.UTC(2076, 10, 6, 8, 49, 37));
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', now)).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
  });

  it('refuses what is neither: absent, negative, fractional, other date forms', () => {
    for (const v of [
      null,
      undefined,
      '',
      '-3',
      '+3',
      '1.5',
      'soon',
      '2026-11-27T15:00:30Z',
      'Fri, 27 Nov 2026 15:00:30 UTC',
      'Fri, 31 Feb 2026 15:00:30 GMT',
      'Fri, 27 Nov 2026 24:00:00 GMT',
      'Fri, 27 Nov 26 15:00:30 GMT',
    ])
      expect(retryAfterMs(v, now), String(v)).toBeUndefined();
  });

  it('property: every delta-seconds value and every IMF-fixdate a server writes reads back exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 9_999_999_999 }), (s) => {
        expect(retryAfterMs(String(s), now)).toBe(s * 1000);
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 * 365 * 86_400 }), (s) => {
        // Date#toUTCString writes the IMF-fixdate form (what Node's http and most servers send).
        const d = new Date(now + s * 1000);
        expect(retryAfterMs(d.toUTCString(), now)).toBe(s * 1000);
        // The same instant as asctime: "Fri Nov 27 15:00:30 2026" (day padded with a space).
        const [wd, , mon, yr, hms] = d.toUTCString().split(' ') as [string, string, string, string, string];
        const asctime = `${wd.slice(0, 3)} ${mon} ${String(d.getUTCDate()).padStart(2, ' ')} ${hms} ${yr}`;
        expect(retryAfterMs(asctime, now)).toBe(s * 1000);
      }),
    );
  });
});
