import { execFile } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { pendingSignIn, token } from '../helpers/oauth.ts';
import { holdPort } from '../helpers/server.ts';

/**
 * The official MCP conformance suite (@modelcontextprotocol/conformance, its `server` command)
 * against /mcp, with a token from a real sign-in (docs/mcp.md "Conformance"). The suite's client
 * sends no credentials of its own, so a pass-through proxy adds the token to each request and
 * changes nothing else (the DNS-rebinding scenario's Host and Origin reach the server as sent).
 *
 * Only the scenarios that apply to this server run here; docs/mcp.md lists the others and why
 * (they call the suite's reference tools, prompts and resources, or need server-sent streams,
 * logging or completions, which a stateless marketplace server does not offer).
 */
export const applicableScenarios = ['server-initialize', 'ping', 'tools-list', 'resources-list', 'prompts-list', 'dns-rebinding-protection'];

const run = promisify(execFile);
const conformanceCli = path.join(path.dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json')), 'dist/index.js');

let test: TestApp;
let server: Server;
let proxy: Server;
let proxyUrl: string;

/** Forwards every request to the app as it came, with the access token added. */
function tokenProxy(target: string, accessToken: string) {
  return createServer((incoming, outgoing) => {
    const forwarded = httpRequest(
      new URL(incoming.url!, target),
      { method: incoming.method, headers: { ...incoming.headers, authorization: `Bearer ${accessToken}` } },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.writeHead(502).end());
    incoming.pipe(forwarded);
  });
}

beforeAll(async () => {
  const held = await holdPort();
  const port = held.port;
  const base = `http://localhost:${port}`;
  test = await startTestApp({ PUBLIC_BASE_URL: base });
  server = held.server;
  held.serve(test.app);
  const human = await signUpHuman(test);
  const signIn = await pendingSignIn(base);
  const decided = await test.http.post(`/api/v1/auth/oauth/requests/${signIn.requestId}/decision`).set(human.headers).send({ decision: 'approve' }).expect(200);
  const code = new URL(decided.body.data.redirect_to).searchParams.get('code')!;
  const issued = await token(base, { grant_type: 'authorization_code', code, client_id: signIn.client.client_id, code_verifier: signIn.verifier });
  proxy = tokenProxy(`http://127.0.0.1:${port}`, issued.body.access_token as string);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://localhost:${(proxy.address() as AddressInfo).port}/mcp`;
});
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((resolve) => proxy?.close(resolve));
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}

describe('the MCP conformance suite', () => {
  it.each(applicableScenarios)(
    'passes %s',
    async (scenario) => {
      const { stdout } = await run(process.execPath, [conformanceCli, 'server', '--url', proxyUrl, '--scenario', scenario, '--verbose'], { timeout: 120_000 });
      const checks = JSON.parse(stdout.slice(stdout.indexOf('['), stdout.lastIndexOf(']') + 1)) as Check[];
      expect(checks.length).toBeGreaterThan(0);
      expect(
        checks.filter((check) => check.status !== 'SUCCESS' && check.status !== 'INFO').map(({ id, status, errorMessage }) => ({ id, status, errorMessage })),
      ).toEqual([]);
    },
    180_000,
  );
});
