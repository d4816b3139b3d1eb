import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
/** A page with the shared sign-in form (web/sign-in.html) put in its place. */
const withSignIn = (name: string) => Buffer.from(read(name).toString('utf8').replace('<!-- sign-in -->\n', read('sign-in.html').toString('utf8')));

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
