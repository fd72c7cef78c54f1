import { describe, expect, it } from 'vitest';
import { redactUrl, scrubLogFields, scrubTokens } from './log-redaction.ts';

const TOKEN = 'rgbxc_0123456789abcdef_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde';

describe('redactUrl', () => {
  it.each([
    ['/api/nodes', '/api/nodes'],
    ['/api/nodes?limit=5', '/api/nodes?limit=5'],
    [`/api/nodes?token=${TOKEN}`, '/api/nodes?token=[redacted]'],
    [
      `/api/nodes?limit=5&access_token=${TOKEN}&x=1`,
      '/api/nodes?limit=5&access_token=[redacted]&x=[redacted]',
    ],
    ['/api/nodes?api_key=not-a-cloud-token', '/api/nodes?api_key=[redacted]'],
    [`/api/nodes?limit=${TOKEN}`, '/api/nodes?limit=[redacted]'],
    [`/api/nodes?limit=${encodeURIComponent(TOKEN).replace('r', '%72')}`, '/api/nodes?limit=[redacted]'],
    [`/console/?${TOKEN}`, '/console/?[redacted]'],
    ['/console/?secretvalue', '/console/?[redacted]'],
    [`/console/?${TOKEN}=1`, '/console/?[redacted]'],
    [`/api/${TOKEN}/nodes`, '/api/[redacted]/nodes'],
    [`/api/%72gbxc_${TOKEN.slice(6)}`, '/api/[redacted]'],
    ['/api/nodes?', '/api/nodes?'],
    ['/api/nodes?limit=5&&limit', '/api/nodes?limit=5&&limit'],
  ])('%s → %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });
});

describe('scrubTokens / scrubLogFields', () => {
  it('replaces tokens in free text, plain or percent-encoded, and only copies a line that changes', () => {
    expect(scrubTokens(`Route GET /api/${TOKEN} not found`)).toBe('Route GET /api/[redacted] not found');
    expect(scrubTokens(`x %72%67bxc_${TOKEN.slice(6)} y`)).toBe('x [redacted] y');
    expect(scrubTokens('no secrets here: rgbx cloud')).toBe('no secrets here: rgbx cloud');
    const clean = { reason: 'fine', code: 404 };
    expect(scrubLogFields(clean)).toBe(clean);
    const req = { url: 'kept for its serializer' };
    const dirty = { reason: `Route GET /${TOKEN} not found`, code: 404, req };
    expect(scrubLogFields(dirty)).toEqual({ reason: 'Route GET /[redacted] not found', code: 404, req });
    expect(dirty.reason).toContain(TOKEN);
  });
});
