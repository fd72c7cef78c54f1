/**
 * HTTP header values that both sides of our APIs read: the services (a webhook receiver's answer)
 * and the SDK (a service's answer).
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MON = MONTHS.join('|');
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// The three HTTP-date forms a recipient must accept (RFC 9110 §5.6.7), all in UTC:
// IMF-fixdate "Fri, 27 Nov 2026 15:00:30 GMT", obsolete RFC 850 "Friday, 27-Nov-26 15:00:30 GMT",
// obsolete asctime "Fri Nov 27 15:00:30 2026". Date.parse is not used: it takes "-3" for a year
// and reads asctime (no zone) as local time.
const IMF_FIXDATE = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) (${MON}) (\\d{4}) ${TIME} GMT$`);
const RFC850 = new RegExp(
  `^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-(${MON})-(\\d{2}) ${TIME} GMT$`,
);
const ASCTIME = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (${MON}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * An HTTP-date (RFC 9110 §5.6.7, any of its three forms) as epoch milliseconds; `undefined` if the
 * text is not one or names no real time (a 31 February).
 */
export function parseHttpDate(text: string, now = Date.now()): number | undefined {
  const parts = httpDateParts(text, new Date(now).getUTCFullYear());
  if (!parts) return undefined;
  const [year, mon, day, h, mi, s] = parts;
  const month = MONTHS.indexOf(mon);
  const at = Date.UTC(year, month, day, h, mi, s);
  const d = new Date(at);
  // Date.UTC rolls 31 Feb over to March and 24:00 to the next day: such a text is not a date.
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month || h > 23 || mi > 59 || s > 60) return undefined;
  return at;
}

type DateParts = [year: number, month: string, day: number, hour: number, minute: number, second: number];

function httpDateParts(text: string, thisYear: number): DateParts | undefined {
  const imf = IMF_FIXDATE.exec(text);
  if (imf) {
    const [, day, mon, year, h, mi, s] = imf as unknown as string[];
    return [Number(year), mon!, Number(day), Number(h), Number(mi), Number(s)];
  }
  const rfc850 = RFC850.exec(text);
  if (rfc850) {
    const [, day, mon, yy, h, mi, s] = rfc850 as unknown as string[];
    // A two-digit year more than 50 years ahead is the most recent past year with those digits.
    let year = Math.floor(thisYear / 100) * 100 + Number(yy);
    if (year > thisYear + 50) year -= 100;
    return [year, mon!, Number(day), Number(h), Number(mi), Number(s)];
  }
  const asctime = ASCTIME.exec(text);
  if (asctime) {
    const [, mon, day, h, mi, s, year] = asctime as unknown as string[];
    return [Number(year), mon!, Number(day!.trim()), Number(h), Number(mi), Number(s)];
  }
  return undefined;
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) as milliseconds from `now`: delta-seconds or an HTTP-date (a
 * date in the past is 0); `undefined` when absent or unreadable.
 *
 * @example
 * retryAfterMs('30', Date.now()); // 30_000
 * retryAfterMs('Fri, 27 Nov 2026 15:00:30 GMT', Date.parse('2026-11-27T15:00:00Z')); // 30_000
 * retryAfterMs('-3', Date.now()); // undefined
 */
export function retryAfterMs(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  // Up to 10 digits: any real delay, and exact once in milliseconds.
  if (/^\d{1,10}$/.test(v)) return Number(v) * 1000;
  const at = parseHttpDate(v, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}
