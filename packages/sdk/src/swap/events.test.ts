import { describe, expect, it } from 'vitest';
import { SseParser } from './events.ts';

describe('SseParser', () => {
  it('parses events split anywhere, with CR, LF or CRLF line ends, comments and multi-line data', () => {
    const text =
      'retry: 1000\r\nid: 7\r\n\r\n: heartbeat\nid: 8\n\nid: 9\revent: status\rdata: {"a":1}\r\r' +
      'event: reset\ndata: line1\ndata: line2\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const out = [...p.push(text.slice(0, cut)), ...p.push(text.slice(cut))];
      expect(out, `cut at ${cut}`).toEqual([
        { event: 'status', data: '{"a":1}', id: '9' },
        { event: 'reset', data: 'line1\nline2', id: '9' },
      ]);
      expect(p.retryMs).toBe(1000);
      expect(p.lastEventId).toBe('9');
    }
  });

  it('keeps the id an event-less block set (the position a heartbeat carries)', () => {
    const p = new SseParser();
    expect(p.push(': heartbeat\nid: 42\n\n')).toEqual([]);
    expect(p.lastEventId).toBe('42');
    expect(p.push('data: x\n\n')).toEqual([{ event: 'message', data: 'x', id: '42' }]);
  });
});
