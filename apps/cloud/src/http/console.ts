/**
 * The web console: plain HTML/CSS/JS files from `apps/cloud/console/`, read once at start and
 * served with a strict Content-Security-Policy. The page talks to the same `/api` with the token
 * the user pastes (kept in sessionStorage only).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ServiceApp } from '@rgbx/service-kit';

export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function registerConsole(app: ServiceApp, dir = CONSOLE_DIR): void {
  const assets = new Map(
    Object.entries(FILES).map(([name, type]) => [
      name,
      { type, body: readFileSync(new URL(name, `file://${dir}`)) },
    ]),
  );
  const send = (name: string) => async (_req: unknown, reply: import('@rgbx/service-kit').FastifyReply) => {
    const a = assets.get(name)!;
    return reply
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', 'no-cache')
      .type(a.type)
      .send(a.body);
  };
  const hidden = { schema: { hide: true } };
  app.get('/', hidden, async (_req, reply) => reply.redirect('/console/'));
  app.get('/console', hidden, async (_req, reply) => reply.redirect('/console/'));
  app.get('/console/', hidden, send('index.html'));
  for (const name of Object.keys(FILES)) app.get(`/console/${name}`, hidden, send(name));
}
