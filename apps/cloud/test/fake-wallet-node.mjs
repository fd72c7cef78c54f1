#!/usr/bin/env node
// A stand-in for the wallet node with the same process contract (`-c FILE`, `[api] port`,
// `GET /healthcheck` → 200, graceful SIGTERM), for cloud tests that exercise the supervisor and
// webhooks without a devnet. The real wallet node is exercised by wallet-node.e2e.test.ts.
// A file `unhealthy` in the data dir makes /healthcheck answer 503; `slow-start` delays readiness;
// `slow-stop` (ms) delays the exit after SIGTERM. Like the wallet node, it takes a pid lock in its
// wallet data dir (`.wallet-node.lock`) and refuses to run while another live process holds it; every
// start, refusal and exit is appended to `lifecycle.log` beside the config.
import { appendFileSync, existsSync, linkSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
const log = (line) => appendFileSync(join(dir, 'lifecycle.log'), `${line} ${process.pid} ${Date.now()}\n`);
const walletDir = /^data_dir = "(.*)"$/m.exec(text)?.[1];
if (walletDir) {
  const lock = join(walletDir, '.wallet-node.lock');
  const alive = (pid) => {
    try {
      process.kill(pid, 0);
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return !'ZX'.includes(stat.charAt(stat.lastIndexOf(')') + 2));
    } catch {
      return false;
    }
  };
  let taken = false;
  for (let i = 0; i < 3 && !taken; i++) {
    const tmp = `${lock}.${process.pid}.tmp`;
    writeFileSync(tmp, String(process.pid));
    try {
      linkSync(tmp, lock);
      taken = true;
    } catch {
      const holder = Number(readFileSync(lock, 'utf8'));
      if (holder !== process.pid && alive(holder)) {
        log(`refused(holder=${holder})`);
        process.stderr.write(
          `wallet.data_dir ${walletDir} is in use by another wallet node (pid ${holder})\n`,
        );
        process.exit(3);
      }
      rmSync(lock, { force: true });
    } finally {
      rmSync(tmp, { force: true });
    }
  }
  process.on('exit', () => {
    try {
      if (readFileSync(lock, 'utf8') === String(process.pid)) rmSync(lock);
    } catch {}
  });
}
log('start');
process.on('exit', () => log('exit'));
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
process.on('SIGTERM', () => {
  const stopDelay = existsSync(join(dir, 'slow-stop'))
    ? Number(readFileSync(join(dir, 'slow-stop'), 'utf8'))
    : 0;
  setTimeout(() => server.close(() => process.exit(0)), stopDelay);
});
