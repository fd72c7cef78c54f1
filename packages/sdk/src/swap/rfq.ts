/**
 * Serving the swap service's request for quote (RFQ) as a remote resolver: a `node:http` request
 * listener that authenticates each request (HMAC signature, timestamp window, replay), asks the
 * resolver's own `quote` function, and answers signed. The wire schemas and helpers are
 * `@rgbx/contracts/swap`'s `Rfq` module, re-exported here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Rfq } from '@rgbx/contracts/swap';

export type RfqRequest = Rfq.RfqRequest;
export type RfqAnswer = Rfq.RfqAnswer;
export type RfqNetwork = Rfq.RfqNetwork;
export type RfqToken = Rfq.RfqToken;
export type RfqErrorCode = Rfq.RfqErrorCode;
export type RfqErrorBody = Rfq.RfqErrorBody;
export type SignedRfqMessage = Rfq.SignedRfqMessage;
export type VerifyRfqRequestOptions = Rfq.VerifyRfqRequestOptions;
export const RfqError = Rfq.RfqError;
export type RfqError = Rfq.RfqError;
export const RfqReplayCache = Rfq.RfqReplayCache;
export type RfqReplayCache = Rfq.RfqReplayCache;
export const RFQ_HEADERS = Rfq.RFQ_HEADERS;
export const signRfqRequest = Rfq.signRfqRequest;
export const verifyRfqRequest = Rfq.verifyRfqRequest;
export const signRfqAnswer = Rfq.signRfqAnswer;
export const verifyRfqAnswer = Rfq.verifyRfqAnswer;

/** Default largest request body `rfqHandler` reads, in bytes. */
export const DEFAULT_RFQ_BODY_LIMIT = 65_536;

export interface RfqHandlerOptions {
  /** The secret shared with the swap service (its `rfq_secret` / `rfq_secret_file` for this resolver). */
  secret: string;
  /**
   * The resolver's price: what it delivers for `req.amount_lots` of the source token, after its fee,
   * as a positive integer string of destination lots; `null` for no quote. Called only for requests
   * that are authentic, fresh and not replayed. A throw answers 500.
   */
  quote: (req: RfqRequest) => Promise<{ dest_amount_lots: string } | null>;
  /** Accepted clock difference with the service, in seconds (default 30). */
  toleranceSecs?: number;
  /** Largest request body read (default 65536); larger requests get 413. */
  maxBodyBytes?: number;
}

class TooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new TooLarge());
      return;
    }
    const parts: Uint8Array[] = [];
    let size = 0;
    const onData = (chunk: Uint8Array) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(new TooLarge());
        return;
      }
      parts.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      const out = new Uint8Array(size);
      let at = 0;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      resolve(out);
    });
    req.once('error', reject);
  });
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(new TextEncoder().encode(body).length),
    ...headers,
  });
  res.end(body);
}

function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  error: string,
  headers?: Record<string, string>,
) {
  sendJson(res, status, JSON.stringify({ error, code } satisfies RfqErrorBody), headers);
}

const STATUS: Record<RfqErrorCode, number> = {
  bad_signature: 401,
  stale: 401,
  replayed: 401,
  malformed: 400,
  request_id_mismatch: 400,
};

/**
 * A `node:http` request listener serving the swap service's RFQ at a resolver's `quote_url`. It
 * answers every request it gets: 405 for a method other than POST, 413 over `maxBodyBytes`, 401
 * `{error, code}` for a forged signature (`bad_signature`), a timestamp outside the window (`stale`)
 * or a request id already received (`replayed`), 400 for a malformed request, and 200 with the signed
 * {@link RfqAnswer} otherwise. `quote` is called only for authenticated, fresh, first-seen requests.
 * Replays are remembered per handler (one per process); serve it over HTTPS outside a devnet.
 *
 * @example
 * import { createServer } from 'node:http';
 * import { rfqHandler } from '@rgbx/sdk';
 *
 * createServer(
 *   rfqHandler({
 *     secret: process.env.RFQ_SECRET!,
 *     quote: async (req) =>
 *       req.source_token.symbol === 'USDC' && req.dest_token.symbol === 'BTC'
 *         ? { dest_amount_lots: String((BigInt(req.amount_lots) * 166n) / 10_000_000n) }
 *         : null,
 *   }),
 * ).listen(8080);
 */
export function rfqHandler(opts: RfqHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_RFQ_BODY_LIMIT;
  const toleranceSecs = opts.toleranceSecs ?? Rfq.RFQ_DEFAULT_TOLERANCE_SECS;
  const seen = new Rfq.RfqReplayCache({ toleranceSecs });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let rawBody: Uint8Array;
    try {
      rawBody = await readBody(req, maxBodyBytes);
    } catch (err) {
      if (err instanceof TooLarge)
        sendError(res, 413, 'too_large', `the body is over ${maxBodyBytes} bytes`, { connection: 'close' });
      else res.destroy();
      return;
    }
    let request: RfqRequest;
    try {
      request = Rfq.verifyRfqRequest({
        secret: opts.secret,
        headers: req.headers,
        rawBody,
        toleranceSecs,
        seen,
      });
    } catch (err) {
      if (err instanceof Rfq.RfqError) return sendError(res, STATUS[err.code], err.code, err.message);
      throw err;
    }
    let answer: { dest_amount_lots: string } | null;
    try {
      answer = await opts.quote(request);
    } catch {
      return sendError(res, 500, 'internal', 'the resolver could not quote');
    }
    const amount = answer?.dest_amount_lots ?? null;
    if (amount !== null && !/^[1-9][0-9]{0,77}$/.test(amount))
      return sendError(res, 500, 'internal', 'the resolver quoted an invalid amount');
    const signed = Rfq.signRfqAnswer(opts.secret, {
      request_id: request.request_id,
      dest_amount_lots: amount,
    });
    sendJson(res, 200, signed.body, signed.headers);
  }

  return (req, res) => {
    if (req.method !== 'POST') {
      req.resume();
      sendError(res, 405, 'method_not_allowed', 'use POST', { allow: 'POST' });
      return;
    }
    serve(req, res).catch(() => {
      if (!res.headersSent) sendError(res, 500, 'internal', 'internal error');
      else res.destroy();
    });
  };
}
