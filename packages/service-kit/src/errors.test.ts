import { describe, expect, it } from 'vitest';
import { classifyError, defineErrors, ErrorEnvelope, KitErrors, listErrors, ServiceError } from './errors.ts';

const E = defineErrors({
  ASSET_NOT_FOUND: {
    status: 404,
    message: (id: string) => `asset ${id} not found`,
    description: 'no such asset',
  },
  INSUFFICIENT_FUNDS: { status: 422, message: (need: number, have: number) => `need ${need}, have ${have}` },
  LOCKED: { status: 409, message: 'wallet is locked' },
});

describe('defineErrors', () => {
  it('builds coded ServiceErrors from the table', () => {
    const err = E.ASSET_NOT_FOUND.create('abc');
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toBeInstanceOf(Error);
    expect(err.code).toBe('ASSET_NOT_FOUND');
    expect(err.statusCode).toBe(404);
    expect(err.message).toBe('asset abc not found');
    expect(err.details).toBeUndefined();
    expect(E.INSUFFICIENT_FUNDS.create(5, 2).message).toBe('need 5, have 2');
    expect(E.LOCKED.create().message).toBe('wallet is locked');
  });

  it('attaches details and causes, and recognises its own codes', () => {
    const cause = new Error('low level');
    const err = E.LOCKED.createWith({ details: { wallet: 'w1' }, cause });
    expect(err.details).toEqual({ wallet: 'w1' });
    expect(err.cause).toBe(cause);
    expect(E.LOCKED.is(err)).toBe(true);
    expect(E.ASSET_NOT_FOUND.is(err)).toBe(false);
    expect(E.LOCKED.is(new Error('x'))).toBe(false);
    expect(err.toJSON()).toEqual({
      code: 'LOCKED',
      statusCode: 409,
      message: 'wallet is locked',
      details: { wallet: 'w1' },
    });
  });

  it('lists the table for docs', () => {
    expect(listErrors(E)).toEqual([
      { code: 'ASSET_NOT_FOUND', status: 404, description: 'no such asset' },
      { code: 'INSUFFICIENT_FUNDS', status: 422 },
      { code: 'LOCKED', status: 409, message: 'wallet is locked' },
    ]);
    expect(listErrors(KitErrors).map((r) => r.code)).toContain('VALIDATION_ERROR');
  });

  it('rejects malformed tables', () => {
    expect(() => defineErrors({ lower: { status: 400, message: 'x' } })).toThrow(/UPPER_SNAKE_CASE/);
    expect(() => defineErrors({ OK: { status: 200, message: 'x' } })).toThrow(/400\.\.599/);
  });
});

describe('classifyError', () => {
  it('keeps ServiceError fields', () => {
    expect(classifyError(E.LOCKED.createWith({ details: [1] }))).toEqual({
      statusCode: 409,
      code: 'LOCKED',
      message: 'wallet is locked',
      details: [1],
      internal: false,
    });
  });

  it('hides unexpected errors', () => {
    const e = classifyError(Object.assign(new Error('secret'), { statusCode: 502 }));
    expect(e).toEqual({
      statusCode: 500,
      code: 'INTERNAL_ERROR',
      message: 'Internal Server Error',
      internal: true,
    });
    expect(classifyError('a string').code).toBe('INTERNAL_ERROR');
    expect(classifyError(null).code).toBe('INTERNAL_ERROR');
  });

  it('maps client errors coming from fastify or plugins', () => {
    expect(classifyError({ code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413, message: 'x' }).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    expect(classifyError({ statusCode: 406, message: 'nope' })).toMatchObject({
      statusCode: 406,
      code: 'NOT_ACCEPTABLE',
    });
    expect(
      classifyError(
        { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415, message: 'Unsupported Media Type' },
        {
          headers: { 'content-type': 'text/csv; charset=x' },
        },
      ).message,
    ).toBe('Unsupported media type: text/csv');
  });
});

describe('ErrorEnvelope', () => {
  it('builds the common shape', () => {
    expect(ErrorEnvelope.body('X', 'y')).toEqual({ error: { code: 'X', message: 'y' } });
    expect(
      ErrorEnvelope.factory({
        statusCode: 400,
        code: 'VALIDATION_ERROR',
        message: 'bad',
        validation: { context: 'body', issues: [{ path: '/a', message: 'm', keyword: 'type' }] },
      }),
    ).toEqual({
      statusCode: 400,
      body: {
        error: {
          code: 'VALIDATION_ERROR',
          message: 'bad',
          details: { validation: [{ path: '/a', message: 'm', keyword: 'type' }] },
        },
      },
    });
    expect((ErrorEnvelope.schema as { $id?: string }).$id).toBe('ErrorEnvelope');
  });
});
