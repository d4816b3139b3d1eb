import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { launchChromium } from '../helpers/browser.ts';
import { authorize, pendingSignIn, registerClient, token } from '../helpers/oauth.ts';
import { holdPort } from '../helpers/server.ts';
import { credit } from '../helpers/market.ts';
import { limits } from '../../src/limits.ts';

/**
 * MCP sign-in end to end (docs/mcp.md "Signing in"), the way mcp-remote and the other MCP clients
 * do it: the MCP SDK's own OAuth client discovers the server from a 401, registers, sends the
 * person's browser (a real headless Chromium) to sign in and consent, exchanges the code with
 * PKCE, calls tools with the token, refreshes it, and is refused once the person revoked the
 * grant in their key list.
 */
let test: TestApp;
let server: Server;
let base: string;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let sockets: { close(): Promise<void> };
let callback: { url: string; codes: URLSearchParams[]; close(): Promise<void> };

/** The client's loopback redirect target, as a native MCP client opens one. */
async function startCallback() {
  const codes: URLSearchParams[] = [];
  const listener = createServer((request, response) => {
    // Only the redirect counts: a browser also asks the page's origin for /favicon.ico after it lands.
    const url = new URL(request.url!, 'http://127.0.0.1');
    if (url.pathname === '/callback') codes.push(url.searchParams);
    response.writeHead(200, { 'Content-Type': 'text/plain' }).end('You can close this window.');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`,
    codes,
    close: () => new Promise<void>((resolve) => listener.close(() => resolve())),
  };
}

beforeAll(async () => {
  const held = await holdPort();
  const port = held.port;
  base = `http://127.0.0.1:${port}`;
  test = await startTestApp({ PUBLIC_BASE_URL: base });
  server = held.server;
  held.serve(test.app);
  sockets = attachRpcWebSocket(server, test.runtime.engine);
  callback = await startCallback();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await callback?.close();
  await sockets?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

/** What an MCP client keeps between runs: its registration, its tokens, the PKCE verifier of the sign-in under way. */
function memoryProvider(redirectUrl: string) {
  const kept: { client?: OAuthClientInformationMixed; tokens?: OAuthTokens; verifier?: string; authorizationUrl?: URL } = {};
  const provider: OAuthClientProvider = {
    redirectUrl,
    clientMetadata: {
      client_name: 'Sign-in test client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    clientInformation: () => kept.client,
    saveClientInformation: (client) => {
      kept.client = client;
    },
    tokens: () => kept.tokens,
    saveTokens: (tokens) => {
      kept.tokens = tokens;
    },
    redirectToAuthorization: (url) => {
      kept.authorizationUrl = url;
    },
    saveCodeVerifier: (verifier) => {
      kept.verifier = verifier;
    },
    codeVerifier: () => kept.verifier!,
  };
  return { provider, kept };
}

async function connect(provider: OAuthClientProvider) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  const client = new Client({ name: 'sign-in-test', version: '1' });
  await client.connect(transport);
  return { client, transport };
}

const eventually = <T>(read: () => Promise<T> | T) => expect.poll(read, { timeout: 20_000 });

describe('signing in from an MCP client', () => {
  it('discovers, registers, signs in and consents in a browser, calls tools, refreshes, and is refused after the person revokes the grant', async () => {
    const human = await signUpHuman(test);
    const { provider, kept } = memoryProvider(callback.url);

    // 1. The first call is refused with the challenge; the SDK discovers, registers and asks for the browser.
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    await expect(new Client({ name: 'sign-in-test', version: '1' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(kept.client?.client_id).toBeTruthy();
    expect(kept.authorizationUrl?.href).toContain(`${base}/oauth/authorize?`);
    expect(kept.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    expect(kept.authorizationUrl?.searchParams.get('resource')).toBe(`${base}/mcp`);

    // 2. The person signs in and allows it; the browser lands on the client's callback with a code.
    const page = await browser.context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(kept.authorizationUrl!.href);
    await page.getByLabel('Email').fill(human.email);
    await page.getByLabel('Password').fill(human.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.getByText('Sign-in test client').isVisible()).toBe(true);
    // The redirect as a person reads a URL: whole, as sent, on one line (not in the user-code style).
    const redirect = page.locator('#request-redirect');
    expect(await redirect.innerText()).toBe(callback.url);
    // The lines the text is laid out on (the test's TypeScript has no DOM types, so the page's objects are described here).
    type Rectangle = { top: number };
    type PageElement = { ownerDocument: { createRange(): { selectNodeContents(node: unknown): void; getClientRects(): Iterable<Rectangle> } } };
    expect(
      await redirect.evaluate((element: PageElement) => {
        const range = element.ownerDocument.createRange();
        range.selectNodeContents(element);
        return new Set([...range.getClientRects()].map((rectangle) => Math.round(rectangle.top))).size;
      }),
    ).toBe(1);
    // Beside the name it gives itself: that the application is registered here, vouched for by no address.
    expect(await page.locator('#request-client-host').innerText()).toMatch(/registered directly/i);
    await page.getByRole('button', { name: 'Allow' }).click();
    await eventually(() => callback.codes.length).toBe(1);
    const answer = callback.codes[0]!;
    expect(answer.get('iss')).toBe(base);
    expect(answer.get('state')).toBe(kept.authorizationUrl!.searchParams.get('state'));
    expect(problems).toEqual([]);

    // 3. The code and the PKCE verifier give tokens; tools answer as the person in the agent space.
    await transport.finishAuth(answer.get('code')!);
    expect(kept.tokens?.access_token).toMatch(/^mcp_at_/);
    const { client } = await connect(provider);
    await credit(test, human.userId, '7.00');
    const wallet = await client.callTool({ name: 'get_wallet', arguments: {} });
    expect(wallet.isError).toBeFalsy();
    // The person's own UT account: the grant acts for them, in the agent space.
    expect((wallet.structuredContent as { ut: { available: string } }).ut.available).toBe('7.00');
    await client.close();

    // 4. A refresh rotates both tokens; the new access token works.
    const refreshed = await token(base, { grant_type: 'refresh_token', refresh_token: kept.tokens!.refresh_token!, client_id: kept.client!.client_id });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(kept.tokens!.refresh_token);
    kept.tokens = refreshed.body as OAuthTokens;
    const again = await connect(provider);
    expect((await again.client.callTool({ name: 'get_wallet', arguments: {} })).isError).toBeFalsy();
    await again.client.close();

    // 5. The grant is one of the person's keys; revoking it on the key list ends its tokens at once.
    await page.goto(`${base}/device`);
    await eventually(() => page.getByText('Sign-in test client (MCP sign-in)').isVisible()).toBe(true);
    await page.getByRole('button', { name: /^Revoke Sign-in test client/ }).click();
    await eventually(() => page.locator('.tag', { hasText: 'Revoked' }).count()).toBe(1);
    const refused = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${kept.tokens.access_token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    const noRefresh = await token(base, { grant_type: 'refresh_token', refresh_token: kept.tokens.refresh_token!, client_id: kept.client!.client_id });
    expect(noRefresh).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    await page.close();
  });
});

/** A grant approved through the consent page's API, as the page would (for the protocol's edge cases). */
async function approvedCode(decision: 'approve' | 'deny' = 'approve') {
  const human = await signUpHuman(test);
  const signIn = await pendingSignIn(base);
  const decided = await test.http.post(`/api/v1/auth/oauth/requests/${signIn.requestId}/decision`).set(human.headers).send({ decision }).expect(200);
  const target = new URL(decided.body.data.redirect_to);
  return { ...signIn, human, code: target.searchParams.get('code'), target };
}

describe('the authorization server', () => {
  it('answers a request without credentials with the challenge and serves both metadata documents', async () => {
    const refused = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp", scope="marketplace"`);
    const resource = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(resource).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base], bearer_methods_supported: ['header'] });
    const metadata = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
    expect(metadata).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
    });
  });

  it('registers every client as public, refuses unsafe redirect URIs, and checks redirect URIs on authorize', async () => {
    const client = await registerClient(base, { token_endpoint_auth_method: 'client_secret_post' });
    expect(client.token_endpoint_auth_method).toBe('none');
    expect(client).not.toHaveProperty('client_secret');
    for (const redirect of ['javascript:alert(1)', 'http://evil.example/callback', 'https://app.example/cb#fragment']) {
      const response = await fetch(`${base}/oauth/register`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [redirect] }),
      });
      expect(response.status, redirect).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe('invalid_client_metadata');
    }
    const elsewhere = await authorize(base, { clientId: client.client_id, redirectUri: 'http://127.0.0.1:1/elsewhere', challenge: 'x'.repeat(43) });
    expect(elsewhere.status).toBe(400);
    const unknown = await authorize(base, { clientId: 'no-such-client', redirectUri: client.redirect_uris[0]!, challenge: 'x'.repeat(43) });
    expect(unknown.status).toBe(400);
    const foreignResource = await authorize(base, {
      clientId: client.client_id,
      redirectUri: client.redirect_uris[0]!,
      challenge: 'x'.repeat(43),
      resource: 'https://other.example/mcp',
    });
    expect(new URL(foreignResource.location!).searchParams.get('error')).toBe('invalid_target');
  });

  it('gives a code once, only with its PKCE verifier, and a denial sends access_denied back', async () => {
    const granted = await approvedCode();
    const form = { grant_type: 'authorization_code', code: granted.code!, client_id: granted.client.client_id, redirect_uri: granted.client.redirect_uris[0]! };
    expect(await token(base, { ...form, code_verifier: 'wrong-verifier-'.repeat(4) })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const exchanged = await token(base, { ...form, code_verifier: granted.verifier });
    expect(exchanged).toMatchObject({ status: 200, body: { token_type: 'Bearer', expires_in: 3600, scope: 'marketplace' } });
    expect(await token(base, { ...form, code_verifier: granted.verifier })).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const denied = await approvedCode('deny');
    expect(denied.code).toBeNull();
    expect(denied.target.searchParams.get('error')).toBe('access_denied');
    // Answered once: the request is gone for a second decision.
    await test.http.post(`/api/v1/auth/oauth/requests/${denied.requestId}/decision`).set(denied.human.headers).send({ decision: 'approve' }).expect(404);
  });

  it('ends the whole grant when a refresh token is used twice (a stolen token replayed)', async () => {
    const granted = await approvedCode();
    const first = await token(base, {
      grant_type: 'authorization_code',
      code: granted.code!,
      client_id: granted.client.client_id,
      code_verifier: granted.verifier,
    });
    const rotated = await token(base, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: granted.client.client_id });
    expect(rotated.status).toBe(200);
    expect(await token(base, { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: granted.client.client_id })).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant' },
    });
    const call = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${rotated.body.access_token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(call.status).toBe(401);
    const keys = (await test.http.get('/api/v1/auth/api-keys').set(granted.human.headers).expect(200)).body.data.items;
    expect(keys).toEqual([expect.objectContaining({ name: 'Test client (MCP sign-in)', revoked_at: expect.any(String) })]);
  });

  it('revokes a refresh token over RFC 7009, ending its grant; an unknown token is no error', async () => {
    const granted = await approvedCode();
    const tokens = await token(base, {
      grant_type: 'authorization_code',
      code: granted.code!,
      client_id: granted.client.client_id,
      code_verifier: granted.verifier,
    });
    // The scheme's name is case-insensitive (RFC 9110 section 11.1): a client sending `bearer` is served.
    const lowerCase = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { Authorization: `bearer ${tokens.body.access_token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(lowerCase.status).toBe(200);
    const revoke = (value: string) =>
      fetch(`${base}/oauth/revoke`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: value, client_id: granted.client.client_id }),
      });
    expect((await revoke('not-a-token')).status).toBe(200);
    expect((await revoke(tokens.body.refresh_token)).status).toBe(200);
    const call = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${tokens.body.access_token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(call.status).toBe(401);
  });

  it('answers an expired access token with 401 invalid_token and the pointer to sign in, and a refresh still works', async () => {
    const granted = await approvedCode();
    const tokens = await token(base, {
      grant_type: 'authorization_code',
      code: granted.code!,
      client_id: granted.client.client_id,
      code_verifier: granted.verifier,
    });
    const list = (accessToken: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    expect((await list(tokens.body.access_token)).status).toBe(200);
    test.clock.advanceMs(limits.oauthAccessTokenLifetimeMs + 1);
    const expired = await list(tokens.body.access_token);
    expect(expired.status).toBe(401);
    expect(expired.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", error_description="the access token is invalid, expired or revoked", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`,
    );
    // A JSON-RPC error response, the marketplace envelope in its data (mcp/index.ts refuse()).
    expect(await expired.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32110, message: expect.stringContaining('expired'), data: { code: 4010 } } });
    const refreshed = await token(base, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: granted.client.client_id });
    expect((await list(refreshed.body.access_token)).status).toBe(200);
  });

  it('lets only a signed-in person read or answer a sign-in request, never an agent', async () => {
    const signIn = await pendingSignIn(base);
    await test.http.get(`/api/v1/auth/oauth/requests/${signIn.requestId}`).expect(401);
    const human = await signUpHuman(test);
    const described = (await test.http.get(`/api/v1/auth/oauth/requests/${signIn.requestId}`).set(human.headers).expect(200)).body.data;
    expect(described).toMatchObject({
      client_name: 'Test client',
      client_host: null,
      redirect_uri: 'http://127.0.0.1:33418/callback',
      redirect_origin: 'http://127.0.0.1:33418',
      scope: 'marketplace',
      resource: `${base}/mcp`,
    });
    await test.http
      .post(`/api/v1/auth/oauth/requests/${signIn.requestId}/decision`)
      .set(human.headers)
      .set('Origin', 'https://evil.example')
      .send({ decision: 'approve' })
      .expect(403);
  });
});

describe('the error page of an authorization request that cannot be sent back', () => {
  it('is a readable page under the site CSP: a heading, the reason, no script and no redirect', async () => {
    const page = await browser.context.newPage();
    const problems: string[] = [];
    // The browser's own note of the 400 status is expected; anything else (a CSP violation, a script error) is a problem.
    page.on('console', (message) => void (/Failed to load resource: .* 400/.test(message.text()) || problems.push(message.text())));
    page.on('pageerror', (error) => problems.push(error.message));
    const response = await page.goto(
      `${base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'no-such-client', redirect_uri: 'ms-msdt:/id', code_challenge: 'x', code_challenge_method: 'S256' }).toString()}`,
    );
    expect(response?.status()).toBe(400);
    expect(page.url()).toContain(`${base}/oauth/authorize`);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).innerText()).toMatch(/cannot continue/i);
    expect(await page.getByRole('alert').innerText()).toMatch(/not known/i);
    expect(await page.title()).toMatch(/Agent Marketplace/);
    expect(await page.locator('main').count()).toBe(1);
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('Origin and Host on /mcp and JSON-RPC', () => {
  it('refuses a browser page of another origin and a foreign host name with 403; a client without Origin passes', async () => {
    const human = await signUpHuman(test);
    for (const path of ['/mcp', '/api/v1/rpc']) {
      const foreign = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...human.headers, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
        body: '{}',
      });
      expect(foreign.status, path).toBe(403);
      // Refused in the endpoint's protocol: a JSON-RPC error response, the envelope in its data.
      expect(await foreign.json(), path).toMatchObject({ id: null, error: { code: -32130, data: { code: 4030, message: 'forbidden' } } });
      const own = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...human.headers, Origin: base, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(own.status, path).not.toBe(403);
    }
    const rebound = await test.http.post('/mcp').set('Host', 'evil.example').set(human.headers).send({});
    expect(rebound.status).toBe(403);
    expect(rebound.body).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 4030 } } });
    // The JSON-RPC WebSocket too: the upgrade is refused before any socket exists.
    const socket = new WebSocket(`${base.replace('http', 'ws')}/api/v1/rpc/ws`, { headers: { ...human.headers, Origin: 'http://evil.example' } });
    const status = await new Promise<number>((resolve) => {
      socket.on('unexpected-response', (request, response) => {
        request.destroy();
        resolve(response.statusCode ?? 0);
      });
      socket.on('open', () => resolve(101));
    });
    // Refused before it opened: closing it now only reports that it never connected.
    socket.on('error', () => {});
    socket.terminate();
    expect(status).toBe(403);
  });
});

describe('retention', () => {
  it('forgets expired sign-in requests, expired tokens and idle clients', async () => {
    const { db } = test.runtime.engine.dependencies;
    const pending = await pendingSignIn(base);
    const granted = await approvedCode();
    await token(base, { grant_type: 'authorization_code', code: granted.code!, client_id: granted.client.client_id, code_verifier: granted.verifier });
    const count = async (table: string, where: Record<string, string>) =>
      Number(((await db(table).where(where).count('* as count')) as { count: string }[])[0]!.count);
    test.clock.advanceMs(limits.oauthRefreshTokenLifetimeMs + limits.oauthIdleClientRetentionMs + 1);
    expect((await test.runtime.engine.retention.runOnce()).oauth).toBeGreaterThan(0);
    expect(await count('oauth_requests', { id: pending.requestId })).toBe(0);
    expect(await count('oauth_tokens', { client_id: granted.client.client_id })).toBe(0);
    // The sign-in request is gone, and with it the client that never finished signing in.
    expect(await count('oauth_clients', { client_id: pending.client.client_id })).toBe(0);
    await test.http.get(`/api/v1/auth/oauth/requests/${pending.requestId}`).set(granted.human.headers).expect(404);
  });
});
