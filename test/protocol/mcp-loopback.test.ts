import type { Server } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { holdPort } from '../helpers/server.ts';

/**
 * A server started without PUBLIC_BASE_URL, reached by a loopback name (issue 28 point 15, docs/mcp.md
 * "Troubleshooting"): MCP clients check that the protected resource is the URL they were given,
 * so the server answers for whichever loopback name it was reached by; a token stays bound to the
 * one resource it was issued for.
 */
let test: TestApp;
let server: Server;
let port: number;

beforeAll(async () => {
  const held = await holdPort();
  port = held.port;
  test = await startTestApp({ PUBLIC_BASE_URL: '', PORT: String(port) });
  server = held.server;
  held.serve(test.app);
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

/** An MCP client's memory: its registration, tokens and PKCE verifier. */
function memoryProvider() {
  const redirectUrl = 'http://127.0.0.1:33418/callback';
  const kept: { client?: OAuthClientInformationMixed; tokens?: OAuthTokens; verifier?: string; authorizationUrl?: URL } = {};
  const provider: OAuthClientProvider = {
    redirectUrl,
    clientMetadata: {
      client_name: 'Loopback client',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    clientInformation: () => kept.client,
    saveClientInformation: (client) => void (kept.client = client),
    tokens: () => kept.tokens,
    saveTokens: (tokens) => void (kept.tokens = tokens),
    redirectToAuthorization: (url) => void (kept.authorizationUrl = url),
    saveCodeVerifier: (verifier) => void (kept.verifier = verifier),
    codeVerifier: () => kept.verifier!,
  };
  return { provider, kept };
}

/** Signs in through the MCP SDK at `base`, the person approving on the consent page's API; answers the tokens and a tool list. */
async function signInAt(base: string) {
  const human = await signUpHuman(test);
  const { provider, kept } = memoryProvider();
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
  await expect(new Client({ name: 'loopback-test', version: '1' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(kept.authorizationUrl!.origin).toBe(base);
  const consent = await fetch(kept.authorizationUrl!, { redirect: 'manual' });
  const location = new URL(consent.headers.get('location')!);
  expect(location.origin).toBe(base);
  const decided = await test.http
    .post(`/api/v1/auth/oauth/requests/${location.searchParams.get('request')}/decision`)
    .set(human.headers)
    .send({ decision: 'approve' })
    .expect(200);
  const answer = new URL(decided.body.data.redirect_to).searchParams;
  expect(answer.get('iss')).toBe(base);
  await transport.finishAuth(answer.get('code')!);
  const client = new Client({ name: 'loopback-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
  const tools = await client.listTools();
  await client.close();
  return { tokens: kept.tokens!, toolCount: tools.tools.length };
}

const listTools = (base: string, accessToken: string) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${accessToken}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

describe('a server without PUBLIC_BASE_URL, reached by a loopback name', () => {
  it('signs an MCP SDK client in at 127.0.0.1 and at localhost, each token good for its own resource only', async () => {
    const numeric = `http://127.0.0.1:${port}`;
    const named = `http://localhost:${port}`;
    const atNumeric = await signInAt(numeric);
    expect(atNumeric.toolCount).toBeGreaterThan(0);
    const atName = await signInAt(named);
    expect(atName.toolCount).toBeGreaterThan(0);

    expect((await listTools(numeric, atNumeric.tokens.access_token)).status).toBe(200);
    const elsewhere = await listTools(named, atNumeric.tokens.access_token);
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get('www-authenticate')).toContain(`resource_metadata="${named}/.well-known/oauth-protected-resource/mcp"`);
    expect((await listTools(numeric, atName.tokens.access_token)).status).toBe(401);
  });

  it('describes itself by the name it was reached by, and by its default for any other name', async () => {
    for (const base of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) {
      const resource = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as {
        resource: string;
        authorization_servers: string[];
      };
      expect(resource).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
      const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as { issuer: string; token_endpoint: string };
      expect(metadata).toMatchObject({ issuer: base, token_endpoint: `${base}/oauth/token` });
    }
    const foreign = await test.http.get('/.well-known/oauth-protected-resource/mcp').set('Host', `lan-name.example:${port}`).expect(200);
    expect(foreign.body.resource).toBe(`http://localhost:${port}/mcp`);
  });
});

describe('a server with PUBLIC_BASE_URL', () => {
  it('describes itself by PUBLIC_BASE_URL whatever name it was reached by', async () => {
    const fixed = await startTestApp({ PUBLIC_BASE_URL: 'https://market.example' });
    try {
      const answered = await fixed.http.get('/.well-known/oauth-protected-resource/mcp').set('Host', '127.0.0.1:9').expect(200);
      expect(answered.body.resource).toBe('https://market.example/mcp');
    } finally {
      await fixed.close();
    }
  });
});
