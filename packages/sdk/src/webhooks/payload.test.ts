import { describe, expect, it } from 'vitest';
import { NODE_STATUSES, parseNodeStatusEvent } from './payload.ts';

const NODE = '5d1f8b56-7f0e-4d8e-9f77-5d8c7d2f0a11';
const base = {
  eventType: 'NODE_STATUS_UPDATED',
  eventTimestamp: '2026-11-21T06:00:00.123Z',
  details: { nodeId: NODE, status: 'RUNNING' },
  nodeId: NODE,
};
const parse = (over: Record<string, unknown>) => parseNodeStatusEvent(JSON.stringify({ ...base, ...over }));

describe('parseNodeStatusEvent', () => {
  it('accepts every node status and leaves unknown keys out of the event', () => {
    for (const status of NODE_STATUSES) {
      expect(parse({ details: { nodeId: NODE, status, extra: 1 }, note: 'x' })).toEqual({
        event: { ...base, details: { nodeId: NODE, status } },
      });
    }
    expect(parse({ eventTimestamp: '2026-11-21T06:00:00Z' })).toHaveProperty('event');
  });

  it('names the first field that fails, in a fixed order', () => {
    const cases: [string, string][] = [
      ['not json', 'payload is not JSON'],
      ['[1,2]', 'payload is not an object'],
      ['null', 'payload is not an object'],
      [JSON.stringify({ ...base, eventType: 'OTHER', nodeId: '' }), 'unknown eventType'],
      [
        JSON.stringify({ ...base, eventTimestamp: '2026-11-21T06:00:00+00:00' }),
        'eventTimestamp must be an ISO 8601 UTC timestamp',
      ],
      [
        JSON.stringify({ ...base, eventTimestamp: '2026-11-21T06:00:00.1234567890Z' }),
        'eventTimestamp must be an ISO 8601 UTC timestamp',
      ],
      [JSON.stringify({ ...base, nodeId: '', details: 1 }), 'nodeId missing'],
      [JSON.stringify({ ...base, details: [] }), 'details.nodeId missing'],
      [JSON.stringify({ ...base, details: { status: 'RUNNING' } }), 'details.nodeId missing'],
      [
        JSON.stringify({ ...base, nodeId: 'x', details: { nodeId: NODE, status: 'X' } }),
        'details.nodeId differs from nodeId',
      ],
      [
        JSON.stringify({ ...base, details: { nodeId: NODE, status: 'DESTROYED' } }),
        'details.status is not a node status',
      ],
    ];
    for (const [text, error] of cases) expect(parseNodeStatusEvent(text)).toEqual({ error });
  });
});
