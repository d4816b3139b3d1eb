import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';

/**
 * Serves the device verification page (web/device.html, .css, .js) at /device, the
 * verification_url, and the MCP sign-in consent page (web/oauth.html, .js) at /oauth/consent. The files are read once at start. The Content-Security-Policy allows only
 * this origin's own script, style and API calls: no inline script, no external assets, no
 * framing (an approve button inside someone else's frame is a clickjacking target), no forms
 * posting elsewhere.
 */
export const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const directory = path.dirname(fileURLToPath(import.meta.url));
const read = (name: string) => readFileSync(path.join(directory, name));
/** A page with the shared sign-in form (web/sign-in.html) and agent budget fields (web/budget.html) put in their places. */
const withSignIn = (name: string) =>
  Buffer.from(
    read(name)
      .toString('utf8')
      .replace('<!-- sign-in -->\n', read('sign-in.html').toString('utf8'))
      .replace('<!-- budget -->\n', read('budget.html').toString('utf8')),
  );

type PageFiles = Record<string, { body: Buffer; type: string }>;

/** A page of web/ and its own assets, read once, served with the headers above. */
function staticPage(files: PageFiles) {
  return (request: Request, response: Response, next: NextFunction) => {
    const file = files[request.path];
    if (!file || (request.method !== 'GET' && request.method !== 'HEAD')) return next();
    response.setHeader('Content-Type', file.type);
    response.setHeader('Content-Security-Policy', contentSecurityPolicy);
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('X-Frame-Options', 'DENY');
    response.setHeader('Referrer-Policy', 'no-referrer');
    // The page is small and changes with releases; a stale copy must never pair with a new API.
    response.setHeader('Cache-Control', 'no-cache');
    response.status(200).end(request.method === 'HEAD' ? undefined : file.body);
  };
}

const html = 'text/html; charset=utf-8';
const script = 'text/javascript; charset=utf-8';

export const verificationPage = () =>
  staticPage({
    '/': { body: withSignIn('device.html'), type: html },
    '/device.css': { body: read('device.css'), type: 'text/css; charset=utf-8' },
    '/session.js': { body: read('session.js'), type: script },
    '/device.js': { body: read('device.js'), type: script },
  });

/** The MCP sign-in consent page (docs/mcp.md "Signing in"), styled by the device page's sheet. */
export const consentPage = () =>
  staticPage({
    '/': { body: withSignIn('oauth.html'), type: html },
    '/oauth.js': { body: read('oauth.js'), type: script },
  });

const consoleTypes: Record<string, string> = {
  '.html': html,
  '.js': script,
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json; charset=utf-8',
};

interface ConsoleFile {
  type: string;
  etag: string;
  identity: Buffer;
  br: Buffer;
  gzip: Buffer;
}

/** Every file under web/console/, by its path below it, compressed once at start (brotli and gzip). */
function readConsoleFiles(): Map<string, ConsoleFile> {
  const root = path.join(directory, 'console');
  const files = new Map<string, ConsoleFile>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const type = consoleTypes[path.extname(entry.name)];
    if (!entry.isFile() || !type) continue;
    const full = path.join(entry.parentPath, entry.name);
    const identity = readFileSync(full);
    files.set(path.relative(root, full).split(path.sep).join('/'), {
      type,
      etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`,
      identity,
      br: brotliCompressSync(identity, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11 } }),
      gzip: gzipSync(identity, { level: 9 }),
    });
  }
  return files;
}

/** The encoding to send: brotli, else gzip, when the client says it takes it (q=0 refuses). */
function encodingFor(accepted: string | undefined): 'br' | 'gzip' | null {
  const offered = new Map<string, number>();
  for (const part of (accepted ?? '').split(',')) {
    const [name, ...parameters] = part.trim().toLowerCase().split(';');
    const quality = parameters.map((parameter) => /^\s*q=([\d.]+)\s*$/.exec(parameter)?.[1]).find((value) => value !== undefined);
    if (name) offered.set(name, quality === undefined ? 1 : Number(quality));
  }
  const takes = (name: string) => (offered.get(name) ?? offered.get('*') ?? 0) > 0;
  return takes('br') ? 'br' : takes('gzip') ? 'gzip' : null;
}

/**
 * The web console (docs/decisions/web-console.md): its page at `/` and its modules, styles and
 * language files at /console/..., with the same headers as the pages above. No build step: the
 * files are served as they are in the repository, compressed once at start.
 */
export function consoleSite() {
  const files = readConsoleFiles();
  return (request: Request, response: Response, next: NextFunction) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return next();
    const name = request.path === '/' ? 'index.html' : request.path.startsWith('/console/') ? request.path.slice('/console/'.length) : null;
    const file = name === null ? undefined : files.get(name);
    if (!file) return next();
    const encoding = encodingFor(request.get('accept-encoding'));
    const body = encoding ? file[encoding] : file.identity;
    response.setHeader('Content-Type', file.type);
    if (encoding) response.setHeader('Content-Encoding', encoding);
    response.setHeader('Vary', 'Accept-Encoding');
    response.setHeader('Content-Length', String(body.length));
    response.setHeader('Content-Security-Policy', contentSecurityPolicy);
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('X-Frame-Options', 'DENY');
    response.setHeader('Referrer-Policy', 'no-referrer');
    // Revalidated on every load (a stale module must never pair with a new API), answered 304 when unchanged.
    response.setHeader('Cache-Control', 'no-cache');
    response.setHeader('ETag', file.etag);
    if (request.get('if-none-match') === file.etag) return void response.status(304).end();
    response.status(200).end(request.method === 'HEAD' ? undefined : body);
  };
}
