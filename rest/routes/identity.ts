import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/identity.ts';
import { clientAddress, route } from '../route.ts';

export const identityRoutes = (engine: Engine) => [
  route({
    method: 'post', path: '/api/v1/auth/signup', tag: 'auth', auth: 'none', successStatus: 201, errors: [4092], rateLimits: ['signupPerAddress'],
    summary: 'Create a human account and receive an access token',
    body: schemas.signupBody, response: schemas.accessTokenResponse,
    handler: ({ body }) => engine.identity.signup(body),
  }),
  route({
    method: 'post', path: '/api/v1/auth/login', tag: 'auth', auth: 'none', errors: [4010], rateLimits: ['requestsPerAddress'],
    summary: 'Sign in with email and password and receive an access token',
    body: schemas.loginBody, response: schemas.accessTokenResponse,
    // The login failure buckets are taken by the engine: only a wrong password counts.
    handler: ({ body, request }) => engine.identity.login(body, clientAddress(request)),
  }),
  route({
    method: 'get', path: '/api/v1/auth/me', tag: 'auth', auth: 'user',
    summary: 'What the presented credentials resolve to',
    response: schemas.meResponse,
    handler: async ({ principal }) => engine.identity.me(principal!),
  }),
  route({
    method: 'post', path: '/api/v1/admin/api-keys', tag: 'admin', auth: 'admin', successStatus: 201,
    summary: 'Create a platform API key (the key is shown only in this response)',
    body: schemas.createApiKeyBody, response: schemas.apiKeyCreatedResponse,
    handler: ({ body }) => engine.identity.createApiKey(body),
  }),
  route({
    method: 'post', path: '/api/v1/admin/api-keys/:id/links', tag: 'admin', auth: 'admin', successStatus: 201, errors: [4040],
    summary: 'Link a user to an API key so the key may act for that user',
    params: schemas.apiKeyIdParams, body: schemas.linkUserBody, response: schemas.linkResponse,
    handler: ({ params, body }) => engine.identity.linkUser(params.id, body.user_id),
  }),
];

