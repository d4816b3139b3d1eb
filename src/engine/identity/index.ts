/**
 * The identity room: who is calling and what they may hold. Users and sessions, API keys and their
 * revocation fanned out through the bus, admission (rate limits and connection caps per credential),
 * device authorization, and OAuth for MCP clients (registrations, codes, tokens). It stands on
 * common only; no money or market code imports from inside it.
 */
export { createAdmission, createConnectionCap, type RateLimitName, type Requester } from './admission.ts';
export { createApiKeyEngine } from './api-keys.ts';
export { createDeviceAuthorizationEngine } from './device-authorization.ts';
export { createIdentityEngine } from './identity.ts';
export { apiKeyRevokedChannel } from './key-revocations.ts';
export { createOAuthClients, redirectUriProblem, type OAuthClient } from './oauth-clients.ts';
export { OAuthProblem, accessTokenPrefix, createOAuth, issuerAt, oauthScope, resourceAt, type OAuthEngine } from './oauth.ts';
export { createReconciler } from './reconciled-buckets.ts';
