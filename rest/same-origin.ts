import type { Request } from 'express';
import { forbidden } from '../src/errors.ts';

/**
 * Cross-site request forgery guard for the calls the verification page makes with a person's
 * token (docs/decisions/identity-and-access.md, "Device authorization"). The token itself is the main protection: the
 * page holds it and sends it in the Authorization header, which a browser never adds by itself
 * and a cross-site form cannot set (and a cross-site script could only with CORS, which this
 * server never grants). This check refuses, in addition, any request a browser marks as coming
 * from another site: `Sec-Fetch-Site` other than same-origin (or none, typed by the user), or an
 * `Origin` that is neither the public base URL's nor the one the request was addressed to.
 * Clients that are not browsers send neither header and are not affected.
 */
export function assertSameOrigin(request: Request, publicBaseUrl: string) {
  const site = request.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw forbidden('cross-site request refused');
  const origin = request.get('origin');
  if (origin === undefined) return;
  const own = [new URL(publicBaseUrl).origin, `${request.protocol}://${request.get('host')}`];
  if (!own.includes(origin)) throw forbidden('cross-site request refused');
}
