import { timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import type { Engine } from '../src/engine/index.ts';
import { forbidden, unauthenticated } from '../src/errors.ts';
import { type AuthRequirement, clientAddress } from './route.ts';

/** Turns request headers into a principal for the route's requirement. */
export function createAuthenticator(engine: Engine, adminToken: string) {
  const expectedAdminToken = Buffer.from(adminToken);
  return async (request: Request, requirement: AuthRequirement) => {
    if (requirement === 'none') return null;
    if (requirement === 'admin') {
      const header = request.get('x-admin-token');
      // A token presented is a credential like a key or a bearer token: wrong ones count against
      // the address's failed authentications, and once those are spent none is looked at.
      const failures = header === undefined ? null : engine.admission.authenticationFailures;
      failures?.refuseIfBlocked(clientAddress(request));
      const given = Buffer.from(header ?? '');
      const valid = given.length === expectedAdminToken.length && timingSafeEqual(given, expectedAdminToken);
      if (!valid) {
        await failures?.recordFailure(clientAddress(request));
        throw unauthenticated('a valid X-Admin-Token is required');
      }
      return null;
    }
    const principal = await engine.identity.authenticate(
      {
        apiKey: request.get('x-api-key'),
        platformUserId: request.get('x-platform-user-id'),
        authorization: request.get('authorization'),
      },
      clientAddress(request),
    );
    if (requirement === 'agent' && principal.caller_type !== 'agent') throw forbidden('only agent callers (API key) may call this');
    if (requirement === 'human' && principal.caller_type !== 'human') throw forbidden('only human callers (bearer token) may call this');
    return principal;
  };
}
