#!/usr/bin/env node
// A stand-in for the wallet node with the same process contract (`-c FILE`, `[api] port`,
// `GET /healthcheck` → 200, graceful SIGTERM), for cloud tests that exercise the supervisor and
// webhooks without a devnet. The real wallet node is exercised by wallet-node.e2e.test.ts.
// A file `unhealthy` in the data dir makes /healthcheck answer 503; `slow-start` delays readiness.
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';

const i = process.argv.indexOf('-c');
if (i < 0) {
  process.stderr.write('usage: fake-wallet-node -c FILE\n');
  process.exit(2);
}
const file = process.argv[i + 1];
const text = readFileSync(file, 'utf8');
const port = Number(/^port = (\d+)$/m.exec(text)?.[1]);
const dir = dirname(file);
if (!/^indexer_address = "tcp:\/\//m.test(text)) {
  process.stderr.write('config: indexer_address missing\n');
  process.exit(1);
}
const delay = existsSync(join(dir, 'slow-start'))
  ? Number(readFileSync(join(dir, 'slow-start'), 'utf8'))
  : 150;
const started = Date.now();
const server = createServer((req, res) => {
  if (req.url === '/healthcheck') {
    const ok = Date.now() - started >= delay && !existsSync(join(dir, 'unhealthy'));
    res.writeHead(ok ? 200 : 503).end();
    return;
  }
  res.writeHead(404).end();
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
