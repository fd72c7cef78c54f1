import { connect, type Socket } from 'node:net';

/** The ZMQ peer broke the protocol (bad greeting, unknown mechanism, ERROR command). */
export class ZmqProtocolError extends Error {
  override readonly name = 'ZmqProtocolError';
}

/** Where a `getzmqnotifications` address points: a Unix socket path or a TCP endpoint. */
export type ZmqEndpoint = { path: string } | { host: string; port: number };

/**
 * Parses bitcoind's ZMQ address (`ipc:///path`, `unix:/path`, `tcp://host:port`). A wildcard bind host
 * (`0.0.0.0`, `*`) is reached at `fallbackHost` (bitcoind's RPC host). Null for anything else.
 */
export function parseZmqAddress(address: string, fallbackHost: string): ZmqEndpoint | null {
  if (address.startsWith('ipc://')) return { path: address.slice(6) };
  if (address.startsWith('unix:')) return { path: address.slice(5) };
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:]+):(\d+)$/.exec(address);
  if (!m) return null;
  let host = m[1]!.replace(/^\[|\]$/g, '');
  if (host === '*' || host === '0.0.0.0' || host === '::') host = fallbackHost;
  return { host, port: Number(m[2]) };
}

const GREETING_LEN = 64;
const FLAG_MORE = 0x01;
const FLAG_LONG = 0x02;
const FLAG_COMMAND = 0x04;

function greeting(): Buffer {
  const g = Buffer.alloc(GREETING_LEN);
  g[0] = 0xff;
  g[9] = 0x7f;
  g[10] = 3; // ZMTP 3.0: subscriptions are sent as messages (0x01 + topic), which every 3.x peer accepts
  g[11] = 0;
  g.write('NULL', 12, 'ascii');
  return g;
}

function frame(flags: number, body: Buffer): Buffer {
  if (body.length <= 255) return Buffer.concat([Buffer.from([flags, body.length]), body]);
  const head = Buffer.alloc(9);
  head[0] = flags | FLAG_LONG;
  head.writeBigUInt64BE(BigInt(body.length), 1);
  return Buffer.concat([head, body]);
}

function readyCommand(socketType: string): Buffer {
  const name = Buffer.from('Socket-Type', 'ascii');
  const value = Buffer.from(socketType, 'ascii');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(value.length);
  return frame(
    FLAG_COMMAND,
    Buffer.concat([Buffer.from([5]), Buffer.from('READY'), Buffer.from([name.length]), name, len, value]),
  );
}

/** Longest frame accepted; bitcoind's `sequence` frames are at most 41 bytes. */
const MAX_FRAME = 16 * 1024 * 1024;

/**
 * A minimal ZMTP 3.0 SUB socket (NULL security) for bitcoind's ZMQ notifications, so no native ZMQ
 * library is needed. One connection, no reconnect of its own: `onClose` tells the owner, which decides.
 * `ready` resolves once the handshake is done and the subscription sent; messages published before
 * that are not seen (ZMQ's slow-joiner rule), so the owner syncs once after `ready`.
 */
export class ZmqSubscriber {
  readonly ready: Promise<void>;
  readonly #socket: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #greeted = false;
  #handshaken = false;
  #parts: Buffer[] = [];
  #closed = false;
  readonly #rejectReady: (err: Error) => void;
  readonly #onMessage: (frames: Buffer[]) => void;
  readonly #onClose: (err: Error) => void;

  constructor(
    endpoint: ZmqEndpoint,
    topic: string,
    onMessage: (frames: Buffer[]) => void,
    onClose: (err: Error) => void,
  ) {
    this.#onMessage = onMessage;
    this.#onClose = onClose;
    this.#socket = 'path' in endpoint ? connect(endpoint.path) : connect(endpoint.port, endpoint.host);
    let resolveReady!: () => void;
    let rejectReady!: (err: Error) => void;
    this.ready = new Promise<void>((res, rej) => {
      resolveReady = res;
      rejectReady = rej;
    });
    this.ready.catch(() => {}); // the failure is also reported through onClose
    this.#socket.setNoDelay?.(true);
    this.#socket.on('connect', () => this.#socket.write(greeting()));
    this.#socket.on('data', (chunk: Buffer) => {
      try {
        this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
        if (this.#read(topic)) resolveReady();
      } catch (err) {
        this.#fail(err as Error);
      }
    });
    this.#socket.on('error', (err) => this.#fail(err));
    this.#socket.on('close', () => this.#fail(new Error('ZMQ connection closed')));
    this.#rejectReady = rejectReady;
  }

  close(): void {
    this.#closed = true;
    this.#socket.destroy();
  }

  #fail(err: Error): void {
    const first = !this.#closed;
    this.#closed = true;
    this.#socket.destroy();
    this.#rejectReady(err);
    if (first) this.#onClose(err);
  }

  /** Consumes what is buffered; true once the handshake completed (in this call or before). */
  #read(topic: string): boolean {
    if (!this.#greeted) {
      if (this.#buf.length < GREETING_LEN) return false;
      const g = this.#buf.subarray(0, GREETING_LEN);
      if (g[0] !== 0xff || g[9] !== 0x7f) throw new ZmqProtocolError('not a ZMTP peer');
      if (g[10]! < 3) throw new ZmqProtocolError(`ZMTP ${g[10]}.x peer; 3.x needed`);
      const mech = g.subarray(12, 32).toString('ascii').replace(/\0+$/, '');
      if (mech !== 'NULL') throw new ZmqProtocolError(`ZMQ mechanism ${mech} is not supported`);
      this.#buf = this.#buf.subarray(GREETING_LEN);
      this.#greeted = true;
      this.#socket.write(readyCommand('SUB'));
    }
    for (;;) {
      if (this.#buf.length < 2) break;
      const flags = this.#buf[0]!;
      const long = (flags & FLAG_LONG) !== 0;
      const headLen = long ? 9 : 2;
      if (this.#buf.length < headLen) break;
      const size = long ? Number(this.#buf.readBigUInt64BE(1)) : this.#buf[1]!;
      if (size > MAX_FRAME) throw new ZmqProtocolError(`ZMQ frame of ${size} bytes`);
      if (this.#buf.length < headLen + size) break;
      const body = this.#buf.subarray(headLen, headLen + size);
      this.#buf = this.#buf.subarray(headLen + size);
      if (flags & FLAG_COMMAND) {
        const name = body.subarray(1, 1 + body[0]!).toString('ascii');
        if (name === 'ERROR') throw new ZmqProtocolError(`ZMQ peer refused: ${body.subarray(7).toString()}`);
        if (name === 'READY' && !this.#handshaken) {
          this.#handshaken = true;
          this.#socket.write(frame(0, Buffer.concat([Buffer.from([1]), Buffer.from(topic, 'ascii')])));
        }
        continue;
      }
      this.#parts.push(Buffer.from(body));
      if (!(flags & FLAG_MORE)) {
        const msg = this.#parts;
        this.#parts = [];
        this.#onMessage(msg);
      }
    }
    return this.#handshaken;
  }
}
