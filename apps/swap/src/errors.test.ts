import { KitErrors } from '@rgbx/service-kit';
import { describe, expect, it } from 'vitest';
import { E, ERROR_CODES, errorTable, swapEnvelope } from './errors.ts';

describe('error table', () => {
  it('gives every error a unique integer code; 25 is the Permit2 allowance', () => {
    const rows = errorTable();
    expect(rows.map((r) => r.type).sort()).toEqual(Object.keys(E).sort());
    expect(new Set(rows.map((r) => r.code)).size).toBe(rows.length);
    expect(ERROR_CODES.PERMIT2_ALLOWANCE_INSUFFICIENT).toBe(25);
    expect(rows.every((r) => r.description.length > 0)).toBe(true);
  });

  it('maps the kit codes onto the table with its statuses', () => {
    const env = (code: string, statusCode: number) => swapEnvelope({ code, statusCode, message: 'm' });
    expect(env('NOT_FOUND', 404)).toEqual({
      statusCode: 404,
      body: { code: 4, type: 'ROUTE_NOT_FOUND', message: 'm' },
    });
    expect(env('CONFLICT', 409).statusCode).toBe(400);
    expect(env('SOMETHING', 502)).toEqual({
      statusCode: 500,
      body: { code: 36, type: 'INTERNAL_ERROR', message: 'm' },
    });
    for (const k of Object.keys(KitErrors)) {
      const out = swapEnvelope({
        code: k,
        statusCode: KitErrors[k as keyof typeof KitErrors].status,
        message: 'x',
      });
      expect(ERROR_CODES[(out.body as { type: keyof typeof ERROR_CODES }).type]).toBe(
        (out.body as { code: number }).code,
      );
    }
  });

  it('puts validation issues into details', () => {
    const out = swapEnvelope({
      code: 'VALIDATION_ERROR',
      statusCode: 400,
      message: 'body/x must be integer',
      validation: { context: 'body', issues: [{ path: '/x', message: 'must be integer', keyword: 'type' }] },
    });
    expect(out.body).toEqual({
      code: 2,
      type: 'VALIDATION_ERROR',
      message: 'body/x must be integer',
      details: { context: 'body', validation: [{ path: '/x', message: 'must be integer', keyword: 'type' }] },
    });
  });
});
