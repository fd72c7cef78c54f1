// Writes each service's OpenAPI document to specs/<service>.openapi.json from its built app (the TypeBox
// route schemas are the source), and the other generated files that are committed (the swap's devnet
// configuration, the services' Containerfiles). `--check` fails when a committed file differs from the code (CI drift check).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { containerfile, IMAGES } from './containerfiles.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');

/** Each entry builds an app without starting anything (no listeners, no children) and returns its document. */
const services = {
  cloud: async () => (await import('@rgbx/cloud')).generateOpenApi(),
  swap: async () => (await import('@rgbx/swap')).generateOpenApi(),
  'swap-rfq': swapRfqDocument,
  'wallet-node': async () => {
    const { buildWalletNode } = await import('@rgbx/wallet-node');
    const { createLogger } = await import('@rgbx/service-kit');
    const cfg = {
      api: { listen_address: '127.0.0.1', port: 3000, body_limit_bytes: 5242880 },
      wallet: {
        data_dir: '/nonexistent',
        network: 'regtest',
        btc_rpc_address: '127.0.0.1:18443',
        btc_rpc_user: 'u',
        btc_rpc_password: 'p',
        indexer_address: 'tcp://127.0.0.1:50001',
        proxy_address: ['rpc://127.0.0.1:3000/json-rpc'],
        witness_version: 'Taproot',
        workers: 1,
        idle_timeout_secs: 0,
        refresh_interval_secs: 0,
        call_timeout_secs: 300,
        check_indexer_at_start: false,
      },
    };
    const node = buildWalletNode(cfg, createLogger({ name: 'specs', level: 'silent' }));
    await node.app.ready();
    const doc = node.app.swagger();
    await node.app.close();
    return doc;
  },
};

/**
 * The resolver side of the swap's request for quote: what a remote resolver serves at its `quote_url`
 * (no app: the document is built from the contracts' `Rfq` schemas).
 */
async function swapRfqDocument() {
  const { Rfq } = await import('@rgbx/contracts/swap');
  const json = (schema) => JSON.parse(JSON.stringify(schema));
  const ref = (name) => ({ $ref: `#/components/schemas/${name}` });
  const errorReply = (description) => ({
    description,
    content: { 'application/json': { schema: ref('RfqError') } },
  });
  const signature = (over) => ({
    description: `\`${Rfq.RFQ_SIGNATURE_VERSION}=<hex HMAC-SHA256(secret, "${over}")>\` with the secret shared by the service and the resolver`,
    schema: { type: 'string', pattern: '^v1=[0-9a-f]{64}$' },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'rgbx swap: remote resolver RFQ',
      version: '1',
      description: [
        'What a remote resolver serves at its `quote_url` (`[[resolvers]] quote_url` in the swap configuration). The swap service POSTs one signed request per quote to every enabled resolver at once and keeps the largest `dest_amount_lots`; an answer that is late, unsigned, for another request or not an answer is skipped.',
        '',
        `Requests are signed over \`"<timestamp>.<raw body>"\`, answers over \`"<request_id>.<raw answer body>"\`. A resolver refuses a request whose \`${Rfq.RFQ_HEADERS.timestamp}\` is more than ${Rfq.RFQ_DEFAULT_TOLERANCE_SECS} s from its clock (\`stale\`) or whose \`request_id\` it has already received within twice that window (\`replayed\`). \`rfqHandler\` of \`@rgbx/sdk\` implements this side.`,
      ].join('\n'),
    },
    paths: {
      '/': {
        post: {
          operationId: 'requestForQuote',
          summary: 'Quote a swap',
          parameters: [
            {
              name: Rfq.RFQ_HEADERS.timestamp,
              in: 'header',
              required: true,
              description: 'Unix seconds; equal to the body’s `timestamp`',
              schema: { type: 'string', pattern: '^[0-9]+$' },
            },
            {
              name: Rfq.RFQ_HEADERS.signature,
              in: 'header',
              required: true,
              ...signature('<timestamp>.<raw body>'),
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('RfqRequest') } } },
          responses: {
            200: {
              description: 'The answer (`dest_amount_lots` null: no quote)',
              headers: {
                [Rfq.RFQ_HEADERS.signature]: {
                  required: true,
                  ...signature('<request_id>.<raw answer body>'),
                },
              },
              content: { 'application/json': { schema: ref('RfqAnswer') } },
            },
            400: errorReply('`malformed`: not JSON, not a request, or its timestamp differs from the header'),
            401: errorReply('`bad_signature`, `stale` or `replayed`'),
            405: errorReply('Not a POST'),
            413: errorReply('`too_large`: the body is over the resolver’s limit'),
          },
        },
      },
    },
    components: {
      schemas: {
        RfqRequest: json(Rfq.RfqRequest),
        RfqAnswer: json(Rfq.RfqAnswer),
        RfqError: json(Rfq.RfqErrorBody),
      },
    },
  };
}

/** Other generated files, committed: path → its text. */
const generated = {
  'apps/swap/config/devnet.toml': async () => (await import('@rgbx/devnet')).swapDevnetTemplateToml(),
  ...Object.fromEntries(
    Object.keys(IMAGES).map((service) => [
      `apps/${service}/Containerfile`,
      async () => containerfile(service),
    ]),
  ),
};

let drift = false;
const outputs = [
  ...Object.entries(services).map(([name, build]) => [
    `specs/${name}.openapi.json`,
    async () => `${JSON.stringify(await build(), null, 2)}\n`,
  ]),
  ...Object.entries(generated),
];
for (const [path, build] of outputs) {
  const doc = await build();
  const file = join(root, path);
  if (check) {
    let committed = '';
    try {
      committed = readFileSync(file, 'utf8');
    } catch {}
    if (committed !== doc) {
      drift = true;
      console.error(`${path} is out of date: run "npm run specs" and commit it`);
    }
  } else {
    writeFileSync(file, doc);
    console.info(`wrote ${path}`);
  }
}
process.exit(drift ? 1 : 0);
