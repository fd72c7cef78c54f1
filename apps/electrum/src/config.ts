import { MetricsConfigSchema, type Static, Type } from '@rgbx/service-kit';

/**
 * Electrum server configuration (TOML). Every key is optional; unknown or mistyped keys are rejected
 * at start with a message naming the key.
 *
 * ```toml
 * [server]
 * host = "127.0.0.1"
 * port = 50001
 * [bitcoind]
 * rpc_url = "http://127.0.0.1:18443"
 * rpc_user = "user"
 * rpc_password = "pass"
 * ```
 */
export const ElectrumConfig = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ default: '127.0.0.1', minLength: 1 }),
        port: Type.Integer({ default: 50001, minimum: 0, maximum: 65535 }),
        max_line_bytes: Type.Integer({ default: 8 * 1024 * 1024, minimum: 1024 }),
        max_connections: Type.Integer({ default: 1024, minimum: 1 }),
        banner: Type.String({ default: 'Welcome to rgbx-electrum' }),
        protocol_max: Type.Union([Type.Literal('1.4'), Type.Literal('1.6')], { default: '1.6' }),
      },
      { default: {}, additionalProperties: false },
    ),
    bitcoind: Type.Object(
      {
        rpc_url: Type.String({ default: 'http://127.0.0.1:18443', pattern: '^https?://' }),
        rpc_user: Type.String({ default: '' }),
        rpc_password: Type.String({ default: '' }),
        /** A bitcoind `.cookie` file; used when rpc_user is empty. */
        cookie_file: Type.String({ default: '' }),
        timeout_ms: Type.Integer({ default: 30_000, minimum: 100 }),
      },
      { default: {}, additionalProperties: false },
    ),
    index: Type.Object(
      {
        /**
         * "events": blocks by a waitfornewblock long-poll, the mempool by bitcoind's ZMQ feed if it has one
         * (else polled only while a client is subscribed to a scripthash); "poll": poll everything.
         */
        follow: Type.Union([Type.Literal('events'), Type.Literal('poll')], { default: 'events' }),
        /** waitfornewblock timeout; it holds one bitcoind RPC thread while it waits (also after we stop). */
        long_poll_ms: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
        /** In "events" mode, use bitcoind's ZMQ `sequence`/`hashtx` feed when getzmqnotifications lists one. */
        zmq: Type.Boolean({ default: true }),
        poll_interval_ms: Type.Integer({ default: 100, minimum: 10 }),
        freshness_ms: Type.Integer({ default: 0, minimum: 0 }),
      },
      { default: {}, additionalProperties: false },
    ),
    fees: Type.Object(
      {
        /** BTC/kvB answered by blockchain.estimatefee when bitcoind has no estimate; "" answers -1. */
        fallback_btc_per_kvb: Type.String({ default: '0.00001', pattern: '^(|\\d+(\\.\\d{1,8})?)$' }),
      },
      { default: {}, additionalProperties: false },
    ),
    /** `GET /metrics` (Prometheus) on a listen address of its own (default 127.0.0.1:9404). */
    metrics: MetricsConfigSchema(9404),
    log: Type.Object(
      {
        level: Type.Union(
          ['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map((l) => Type.Literal(l)),
          { default: 'info' },
        ),
      },
      { default: {}, additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type ElectrumConfig = Static<typeof ElectrumConfig>;
