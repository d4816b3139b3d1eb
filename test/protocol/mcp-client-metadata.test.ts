import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { type Server as HttpsServer, createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { authorize, pkcePair, token } from '../helpers/oauth.ts';
import { holdPort } from '../helpers/server.ts';
import { limits } from '../../src/limits.ts';

/**
 * Client ID metadata documents (docs/mcp.md "Signing in"): a client that names itself by the https
 * URL of a JSON document, which the server fetches through the outbound guard, instead of
 * registering. The document is served here over TLS with a certificate made for the test; the
 * test's resolver points client.example at loopback, and its certificate is accepted by turning
 * off verification for this test process only.
 */
let test: TestApp;
let server: Server;
let base: string;
let documents: HttpsServer;
let documentBase: string;
let certificates: string;
/** The paths the document server was asked for, in order. */
const fetched: string[] = [];
const previousTlsSetting = process.env.NODE_TLS_REJECT_UNAUTHORIZED;

beforeAll(async () => {
  certificates = mkdtempSync(path.join(tmpdir(), 'cimd-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=client.example',
      '-addext',
      'subjectAltName=DNS:client.example',
      '-keyout',
      path.join(certificates, 'key.pem'),
      '-out',
      path.join(certificates, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
  documents = createHttpsServer(
    { key: readFileSync(path.join(certificates, 'key.pem')), cert: readFileSync(path.join(certificates, 'cert.pem')) },
    (request, response) => {
      const own = `${documentBase}${request.url}`;
      fetched.push(request.url ?? '');
      // A redirect to a document that names the first URL: a client id must be its document's own address.
      if (request.url === '/redirect.json') return void response.writeHead(307, { Location: '/target.json' }).end();
      const bodies: Record<string, unknown> = {
        '/client.json': {
          client_id: own,
          client_name: 'Document client',
          client_uri: 'https://client.example',
          redirect_uris: ['http://127.0.0.1:33418/callback'],
        },
        '/borrowed.json': { client_id: `${documentBase}/client.json`, client_name: 'Borrower', redirect_uris: ['http://127.0.0.1:33418/callback'] },
        '/target.json': { client_id: `${documentBase}/redirect.json`, client_name: 'Redirected', redirect_uris: ['http://127.0.0.1:33418/callback'] },
        '/userinfo.json': {
          client_id: `https://trusted.example@${documentBase.slice('https://'.length)}/userinfo.json`,
          client_name: 'Trusted',
          redirect_uris: ['http://127.0.0.1:33418/callback'],
        },
      };
      const body = bodies[request.url ?? ''];
      response.writeHead(body ? 200 : 404, { 'Content-Type': 'application/json' }).end(JSON.stringify(body ?? {}));
    },
  );
  await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
  documentBase = `https://client.example:${(documents.address() as AddressInfo).port}`;
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

  const held = await holdPort();

  const port = held.port;
  base = `http://127.0.0.1:${port}`;
  test = await startTestApp(
    { PUBLIC_BASE_URL: base },
    {
      callbackNetwork: { allowAddress: () => true, resolve: async (host) => (host === 'client.example' ? [{ address: '127.0.0.1', family: 4 }] : []) },
    },
  );
  server = held.server;
  held.serve(test.app);
});
afterAll(async () => {
  if (previousTlsSetting === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  else process.env.NODE_TLS_REJECT_UNAUTHORIZED = previousTlsSetting;
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await new Promise((resolve) => documents?.close(resolve));
  await test?.close();
  rmSync(certificates, { recursive: true, force: true });
});

describe('a client named by its metadata document', () => {
  it('signs in without registering: the document is read, its name shown, its redirect URIs enforced, and tokens issued to it', async () => {
    const clientId = `${documentBase}/client.json`;
    const pkce = pkcePair();
    const started = await authorize(base, { clientId, redirectUri: 'http://127.0.0.1:33418/callback', challenge: pkce.challenge });
    expect(started.requestId).toBeTruthy();
    const human = await signUpHuman(test);
    const described = (await test.http.get(`/api/v1/auth/oauth/requests/${started.requestId}`).set(human.headers).expect(200)).body.data;
    expect(described).toMatchObject({
      client_id: clientId,
      client_name: 'Document client',
      client_uri: 'https://client.example',
      client_host: new URL(documentBase).host,
    });
    const decided = await test.http
      .post(`/api/v1/auth/oauth/requests/${started.requestId}/decision`)
      .set(human.headers)
      .send({ decision: 'approve' })
      .expect(200);
    const code = new URL(decided.body.data.redirect_to).searchParams.get('code')!;
    const tokens = await token(base, { grant_type: 'authorization_code', code, client_id: clientId, code_verifier: pkce.verifier });
    expect(tokens).toMatchObject({ status: 200, body: { token_type: 'Bearer' } });

    const elsewhere = await authorize(base, { clientId, redirectUri: 'http://127.0.0.1:1/not-in-the-document', challenge: pkce.challenge });
    expect(elsewhere.status).toBe(400);
  });

  it('refuses a document that names another client, and one that is not there', async () => {
    for (const clientId of [`${documentBase}/borrowed.json`, `${documentBase}/missing.json`]) {
      const started = await authorize(base, { clientId, redirectUri: 'http://127.0.0.1:33418/callback', challenge: pkcePair().challenge });
      expect(started.status, clientId).toBe(400);
      expect(started.requestId).toBeNull();
    }
  });

  it('follows no redirect and refuses a client id with userinfo or a fragment, fetching nothing for those', async () => {
    const host = documentBase.slice('https://'.length);
    for (const clientId of [`${documentBase}/redirect.json`, `https://trusted.example@${host}/userinfo.json`, `${documentBase}/client.json#fragment`]) {
      fetched.length = 0;
      const started = await authorize(base, { clientId, redirectUri: 'http://127.0.0.1:33418/callback', challenge: pkcePair().challenge });
      expect(started.status, clientId).toBe(400);
      expect(started.location, clientId).toBeNull();
      expect(fetched, clientId).not.toContain('/target.json');
      if (!clientId.endsWith('redirect.json')) expect(fetched, clientId).toEqual([]);
    }
  });

  it('remembers a document that could not be read for a short while, not fetching it on every call', async () => {
    const clientId = `${documentBase}/missing-for-a-while.json`;
    fetched.length = 0;
    for (let attempt = 0; attempt < 3; attempt++)
      await authorize(base, { clientId, redirectUri: 'http://127.0.0.1:33418/callback', challenge: pkcePair().challenge });
    expect(fetched).toEqual(['/missing-for-a-while.json']);
    test.clock.advanceMs(limits.oauthMetadataDocumentFailureTtlMs + 1);
    await authorize(base, { clientId, redirectUri: 'http://127.0.0.1:33418/callback', challenge: pkcePair().challenge });
    expect(fetched).toEqual(['/missing-for-a-while.json', '/missing-for-a-while.json']);
  });
});
