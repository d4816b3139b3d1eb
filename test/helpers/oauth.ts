import { createHash, randomBytes } from 'node:crypto';

/** MCP sign-in as an OAuth client does it, over HTTP against a listening server (docs/mcp.md "Signing in"). */
export const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

export async function registerClient(base: string, metadata: Record<string, unknown> = {}) {
  const response = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_name: 'Test client', redirect_uris: ['http://127.0.0.1:33418/callback'], token_endpoint_auth_method: 'none', ...metadata }),
  });
  if (response.status !== 201) throw new Error(`registration: ${response.status} ${await response.text()}`);
  return (await response.json()) as { client_id: string; redirect_uris: string[]; token_endpoint_auth_method: string };
}

/** The authorization request; answers where the server sends the browser (the consent page, with the request id). */
export async function authorize(
  base: string,
  input: { clientId: string; redirectUri: string; challenge: string; state?: string; resource?: string; scope?: string },
) {
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: input.clientId,
    redirect_uri: input.redirectUri,
    code_challenge: input.challenge,
    code_challenge_method: 'S256',
    state: input.state ?? 'state-1',
    resource: input.resource ?? `${base}/mcp`,
    ...(input.scope ? { scope: input.scope } : {}),
  });
  const response = await fetch(`${base}/oauth/authorize?${query.toString()}`, { redirect: 'manual' });
  const location = response.headers.get('location');
  return { status: response.status, location, requestId: location ? new URL(location, base).searchParams.get('request') : null };
}

export async function token(base: string, form: Record<string, string>) {
  const response = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** A sign-in request waiting for a person: a client registered for it, its PKCE pair, the request id. */
export async function pendingSignIn(base: string, resource = `${base}/mcp`) {
  const client = await registerClient(base);
  const pkce = pkcePair();
  const started = await authorize(base, { clientId: client.client_id, redirectUri: client.redirect_uris[0]!, challenge: pkce.challenge, resource });
  if (!started.requestId) throw new Error(`authorize: ${started.status} ${started.location}`);
  return { client, ...pkce, requestId: started.requestId };
}
