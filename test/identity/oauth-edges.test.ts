import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, testAdminToken, type TestApp } from '../helpers/app.ts';
import { authorize, pendingSignIn, pkcePair, registerClient, token } from '../helpers/oauth.ts';
import { holdPort } from '../helpers/server.ts';
import { limits } from '../../src/limits.ts';

/**
 * The edges of MCP sign-in an anonymous caller can reach (issue 28, docs/mcp.md "Signing in"):
 * what the authorization endpoint and registration store, where the browser may be sent, a code
 * used twice, and wrong admin tokens under the failed-credential limiter.
 */
let test: TestApp;
let server: Server;
let base: string;

beforeAll(async () => {
  const held = await holdPort();
  const port = held.port;
  base = `http://127.0.0.1:${port}`;
  test = await startTestApp({ PUBLIC_BASE_URL: base });
  server = held.server;
  held.serve(test.app);
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

const register = (metadata: Record<string, unknown>, at = base) =>
  fetch(`${at}/oauth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_name: 'Edge client', ...metadata }),
  });
const storedRequests = async (clientId: string) =>
  Number(((await test.runtime.engine.dependencies.db('oauth_requests').where({ client_id: clientId }).count('* as count')) as { count: string }[])[0]!.count);
const authorizeForm = (form: Record<string, string>, at = base) =>
  fetch(`${at}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
const listTools = (accessToken: string, at = base) =>
  fetch(`${at}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

describe('what an anonymous sign-in request may store', () => {
  it('refuses an oversized state or a code_challenge that is not an S256 challenge, storing nothing, and keeps a state of the allowed length', async () => {
    const client = await registerClient(base);
    const redirectUri = client.redirect_uris[0]!;
    const form = { response_type: 'code', client_id: client.client_id, redirect_uri: redirectUri, code_challenge_method: 'S256' };
    const huge = await authorizeForm({ ...form, state: 's'.repeat(44_000), code_challenge: 'c'.repeat(44_000) });
    // Too large to read at all: the person is told on a page of this server's, and nothing is kept.
    expect(huge.status).toBe(413);
    expect(huge.headers.get('location')).toBeNull();
    expect(await huge.text()).toContain(`larger than ${limits.oauthAuthorizationFormBytesMax} bytes`);
    const oversized = await authorizeForm({ ...form, state: 's'.repeat(limits.oauthStateLengthMax + 1), code_challenge: 'c'.repeat(2_000) });
    expect(oversized.status).toBe(302);
    const refused = new URL(oversized.headers.get('location')!);
    expect(refused.origin + refused.pathname).toBe(redirectUri);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    // A state too long to keep is not echoed either: the refusal stays a short URL.
    expect(refused.searchParams.get('state')).toBeNull();
    expect(refused.searchParams.get('iss')).toBe(base);
    const wrongLength = await authorizeForm({ ...form, state: 'ok', code_challenge: 'c'.repeat(limits.oauthCodeChallengeLength + 1) });
    expect(new URL(wrongLength.headers.get('location')!).searchParams.get('error')).toBe('invalid_request');
    expect(new URL(wrongLength.headers.get('location')!).searchParams.get('state')).toBe('ok');
    expect(await storedRequests(client.client_id)).toBe(0);

    const longestState = 's'.repeat(limits.oauthStateLengthMax);
    const kept = await authorizeForm({ ...form, state: longestState, code_challenge: pkcePair().challenge });
    expect(new URL(kept.headers.get('location')!).pathname).toBe('/oauth/consent');
    expect(await storedRequests(client.client_id)).toBe(1);
  });

  it('bounds a registered client: long or many redirect URIs are refused, and the largest accepted one stays small', async () => {
    const long = await register({ redirect_uris: [`https://app.example/${'p'.repeat(limits.oauthClientUriLengthMax)}`] });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const many = await register({ redirect_uris: Array.from({ length: limits.oauthRedirectUrisMax + 1 }, (_, index) => `https://app.example/cb${index}`) });
    expect(many.status).toBe(400);
    const uri = (index: number) => `https://app.example/${index}${'p'.repeat(limits.oauthClientUriLengthMax - 22)}`;
    const largest = await register({
      client_name: 'n'.repeat(limits.oauthClientNameLengthMax),
      client_uri: uri(0),
      logo_uri: uri(1),
      scope: 'x'.repeat(limits.oauthScopeLengthMax),
      redirect_uris: Array.from({ length: limits.oauthRedirectUrisMax }, (_, index) => uri(index + 2)),
      ignored: 'z'.repeat(50_000),
    });
    expect(largest.status).toBe(201);
    const { client_id: clientId } = (await largest.json()) as { client_id: string };
    const row = await test.runtime.engine.dependencies.db('oauth_clients').where({ client_id: clientId }).first('metadata');
    expect(JSON.stringify(row.metadata).length).toBeLessThan(8_192);
  });

  it('caps registrations and waiting sign-in requests per address', async () => {
    const held = await holdPort();
    const at = held.base;
    const capped = await startTestApp({
      PUBLIC_BASE_URL: at,
      RATE_LIMIT_OAUTH_REGISTRATIONS_PER_ADDRESS: '3/3600',
      RATE_LIMIT_OAUTH_SIGN_IN_REQUESTS_PER_ADDRESS: '2/600',
    });
    held.serve(capped.app);
    try {
      const statuses = [];
      for (let index = 0; index < 4; index++) statuses.push((await register({ redirect_uris: ['http://127.0.0.1:33418/callback'] }, at)).status);
      expect(statuses).toEqual([201, 201, 201, 429]);
      const refused = await register({ redirect_uris: ['http://127.0.0.1:33418/callback'] }, at);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { error: string }).error).toBe('too_many_requests');

      const client = await registerClient(at).catch(() => null);
      expect(client).toBeNull();
      const known = (await capped.runtime.engine.dependencies.db('oauth_clients').first('client_id')) as { client_id: string };
      const outcomes = [];
      for (let index = 0; index < 3; index++) {
        const started = await authorize(at, { clientId: known.client_id, redirectUri: 'http://127.0.0.1:33418/callback', challenge: pkcePair().challenge });
        outcomes.push(started.requestId ? 'waiting' : new URL(started.location!).searchParams.get('error'));
      }
      expect(outcomes).toEqual(['waiting', 'waiting', 'temporarily_unavailable']);
    } finally {
      await held.close();
      await capped.close();
    }
  });
});

describe('where the browser may be sent', () => {
  it('registers https, loopback http and reverse-domain private-use schemes only', async () => {
    for (const redirect of [
      'search-ms:query=x',
      'ms-msdt:/id',
      'myapp:/callback',
      'http://10.0.0.1/cb',
      'data:text/html,x',
      'cursor://anysphere.cursor-mcp/elsewhere',
    ]) {
      const response = await register({ redirect_uris: [redirect] });
      expect(response.status, redirect).toBe(400);
      expect(((await response.json()) as { error: string }).error, redirect).toBe('invalid_client_metadata');
    }
    for (const redirect of [
      'https://app.example/cb',
      'http://127.0.0.1:5000/cb',
      'http://[::1]/cb',
      'http://localhost:8/cb',
      'com.example.app:/oauth2redirect',
      'cursor://anysphere.cursor-mcp/oauth/callback',
    ]) {
      expect((await register({ redirect_uris: [redirect] })).status, redirect).toBe(201);
    }
  });

  it("answers a NUL in a client id or in client metadata as the client's error, never a 500", async () => {
    const named = await register({ client_name: 'a\u0000b', redirect_uris: ['https://client.example/callback'] });
    expect(named.status).toBe(400);
    expect(((await named.json()) as { error: string }).error).toBe('invalid_client_metadata');
    const page = await fetch(`${base}/oauth/authorize?client_id=%00&response_type=code`);
    expect(page.status).toBe(400);
    const exchanged = await token(base, { grant_type: 'authorization_code', code: 'x', client_id: '\u0000', code_verifier: 'v'.repeat(43) });
    expect(exchanged.status).toBeGreaterThanOrEqual(400);
    expect(exchanged.status).toBeLessThan(500);
  });

  it('shows an error page, never a redirect, for an unknown client, a redirect_uri it did not register, or one no longer allowed', async () => {
    const client = await registerClient(base);
    // A client stored before the scheme rule: its redirect is not followed either.
    await test.runtime.engine.dependencies.db('oauth_clients').insert({
      client_id: 'old-client',
      source: 'registered',
      created_at: new Date(),
      metadata: JSON.stringify({
        client_id: 'old-client',
        redirect_uris: ['search-ms:query=x'],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      }),
    });
    const cases = [
      { clientId: 'no-such-client', redirectUri: 'http://127.0.0.1:33418/callback' },
      { clientId: client.client_id, redirectUri: 'https://elsewhere.example/callback' },
      { clientId: 'old-client', redirectUri: 'search-ms:query=x' },
    ];
    for (const { clientId, redirectUri } of cases) {
      const response = await fetch(
        `${base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirectUri, code_challenge: 'x', code_challenge_method: 'plain' }).toString()}`,
        { redirect: 'manual' },
      );
      expect(response.status, clientId).toBe(400);
      expect(response.headers.get('location'), clientId).toBeNull();
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('content-security-policy')).toContain("script-src 'self'");
      const page = await response.text();
      expect(page).toMatch(/<html lang="en">/);
      expect(page).toMatch(/<main>[\s\S]*<h1>[^<]+<\/h1>/);
      expect(page).not.toMatch(/<script|search-ms|\son\w+=/i);
    }
  });
});

describe('an authorization code used twice', () => {
  it('is refused, and ends the tokens the first use gave (RFC 6749 section 4.1.2)', async () => {
    const human = await signUpHuman(test);
    const signIn = await pendingSignIn(base);
    const decided = await test.http
      .post(`/api/v1/auth/oauth/requests/${signIn.requestId}/decision`)
      .set(human.headers)
      .send({ decision: 'approve' })
      .expect(200);
    const code = new URL(decided.body.data.redirect_to).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, client_id: signIn.client.client_id, code_verifier: signIn.verifier };
    const first = await token(base, form);
    expect(first.status).toBe(200);
    expect((await listTools(first.body.access_token)).status).toBe(200);
    expect(await token(base, form)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await listTools(first.body.access_token)).status).toBe(401);
    expect(await token(base, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: signIn.client.client_id })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    const keys = (await test.http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data.items;
    expect(keys).toEqual([expect.objectContaining({ revoked_at: expect.any(String) })]);
  });
});

describe('an authorization code exchanged twice at once', () => {
  it(raceTest('gives tokens to one exchange only, and the other ends them'), async () => {
    const human = await signUpHuman(test);
    const signIn = await pendingSignIn(base);
    const decided = await test.http
      .post(`/api/v1/auth/oauth/requests/${signIn.requestId}/decision`)
      .set(human.headers)
      .send({ decision: 'approve' })
      .expect(200);
    const code = new URL(decided.body.data.redirect_to).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, client_id: signIn.client.client_id, code_verifier: signIn.verifier };
    const answers = await Promise.all([token(base, form), token(base, form)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
    const issued = answers.find((answer) => answer.status === 200)!;
    expect((await listTools(issued.body.access_token)).status).toBe(401);
  });
});

describe('wrong admin tokens', () => {
  it('count against the failed-credential limiter as bad bearer tokens do', async () => {
    const fresh = await startTestApp();
    try {
      const threshold = limits.rateLimits.authenticationFailuresPerAddress.requests;
      const statuses: number[] = [];
      for (let index = 0; index < threshold + 10; index++) {
        statuses.push(
          (
            await fresh.http
              .post('/api/v1/admin/api-keys')
              .set('X-Admin-Token', `wrong-admin-token-${index}`)
              .send({ name: 'x', agent_platform_type: 'custom_mcp' })
          ).status,
        );
      }
      expect(statuses.slice(0, threshold)).toEqual(Array(threshold).fill(401));
      expect(statuses.slice(threshold)).toEqual(Array(10).fill(429));
      // Refused before the token is looked at: the right one waits for the window too.
      expect(
        (await fresh.http.post('/api/v1/admin/api-keys').set('X-Admin-Token', testAdminToken).send({ name: 'x', agent_platform_type: 'custom_mcp' })).status,
      ).toBe(429);
    } finally {
      await fresh.close();
    }
  });
});
