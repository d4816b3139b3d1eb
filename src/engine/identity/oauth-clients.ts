import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { type CallbackNetwork, getGuarded } from '../../callbacks/client.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { assertSafeJson } from '../../schemas/json-safety.ts';
import { type EngineDependencies, TtlCache } from '../common/index.ts';

/**
 * The OAuth clients of MCP sign-in (docs/mcp.md "Signing in"): registered dynamically (RFC 7591),
 * or named by the https URL of their client metadata document, which is fetched through the
 * outbound guard and kept for a day. Every client is public: PKCE (S256) is its proof, and no
 * client secret is ever issued or stored (a registration asking for another token endpoint
 * authentication method is answered with "none").
 */
export interface OAuthClient {
  client_id: string;
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  scope?: string;
  client_id_issued_at?: number;
}

const loopbackNames = ['localhost', '127.0.0.1', '[::1]'];

/**
 * App callbacks in a scheme that is not reverse-domain, allowed by their exact address only: a
 * client documented in docs/mcp.md registers them, and PKCE binds the code to that client either
 * way. Cursor registers this one beside its https and loopback callbacks (docs/decisions/mcp.md
 * "Sign-in: bounds, redirect schemes, metadata documents").
 */
const knownAppCallbacks = new Set(['cursor://anysphere.cursor-mcp/oauth/callback']);

/**
 * Where a browser may be sent with a code or an error (issue 28 point 10): https; http on a
 * loopback address only (RFC 8252 section 7.3); or a native app's private-use scheme in
 * reverse-domain form such as com.example.app: (RFC 8252 section 7.1). Any other scheme is an
 * application of the person's system (search-ms:, ms-msdt:, file: ...) that an anonymous
 * registration must not make the browser open.
 */
export function redirectUriProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'is not a URL';
  }
  if (url.hash !== '' || uri.includes('#')) return 'must not have a fragment';
  if (url.protocol === 'https:' || knownAppCallbacks.has(uri)) return null;
  if (url.protocol === 'http:') return loopbackNames.includes(url.hostname) ? null : 'may use http only on a loopback address (localhost, 127.0.0.1, [::1])';
  return /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+:$/.test(url.protocol)
    ? null
    : 'must use https, http on a loopback address, or a private-use scheme in reverse-domain form (com.example.app:/callback)';
}

const redirectUri = z
  .string()
  .max(limits.oauthClientUriLengthMax)
  .superRefine((uri, context) => {
    const problem = redirectUriProblem(uri);
    if (problem) context.addIssue({ code: 'custom', message: `redirect_uri ${problem}` });
  });
const webUri = z.url({ protocol: /^https?$/ }).max(limits.oauthClientUriLengthMax);

/** What a client says of itself, registered or in its metadata document; other fields are ignored. */
export const clientMetadata = z.object({
  redirect_uris: z.array(redirectUri).min(1).max(limits.oauthRedirectUrisMax),
  client_name: z.string().trim().min(1).max(limits.oauthClientNameLengthMax).optional(),
  client_uri: webUri.optional(),
  logo_uri: webUri.optional(),
  scope: z.string().max(limits.oauthScopeLengthMax).optional(),
  // Any method asked for is replaced by "none" (RFC 7591 section 3.2.1 lets the server substitute):
  // every client is public, proved by PKCE, and the answer tells the client so.
  token_endpoint_auth_method: z.string().max(64).optional(),
  grant_types: z
    .array(z.enum(['authorization_code', 'refresh_token']))
    .max(2)
    .optional(),
  response_types: z.array(z.literal('code')).max(1).optional(),
});

const asClient = (clientId: string, metadata: z.output<typeof clientMetadata>, issuedAt?: number): OAuthClient => ({
  ...metadata,
  client_id: clientId,
  token_endpoint_auth_method: 'none',
  grant_types: metadata.grant_types ?? ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  ...(issuedAt === undefined ? {} : { client_id_issued_at: issuedAt }),
});

/**
 * A client_id that names a metadata document (draft-ietf-oauth-client-id-metadata-document
 * section 3): an https URL with a path, and no fragment, query, username or password. It must be
 * in the URL's own canonical form, so that one document has one name (no dot segments, no
 * upper-case host, no default port spelled out).
 */
export function isMetadataDocumentId(clientId: string): boolean {
  if (clientId.length > limits.oauthUriLengthMax || clientId.includes('#') || !URL.canParse(clientId)) return false;
  const url = new URL(clientId);
  return url.protocol === 'https:' && url.username === '' && url.password === '' && url.search === '' && url.pathname !== '/' && url.href === clientId;
}

export function createOAuthClients({ db, now, log }: EngineDependencies, network: CallbackNetwork) {
  /** Documents that could not be read lately: an unknown URL is not fetched again on every call. */
  const unreadable = new TtlCache<true>(limits.oauthMetadataDocumentFailureTtlMs, limits.oauthMetadataDocumentFailuresCachedMax, () => now().getTime());

  /** RFC 7591: the metadata is checked (4000 names the field), the client is public, its id is new. */
  async function register(input: unknown): Promise<OAuthClient> {
    // Text PostgreSQL cannot store (the metadata is kept as jsonb) is the client's error, not a 500.
    try {
      assertSafeJson(input, 'metadata');
    } catch {
      throw new AppError('validation_error', 'the client metadata must not contain the NUL character, invalid Unicode or prototype keys');
    }
    const parsed = clientMetadata.safeParse(input);
    if (!parsed.success) throw new AppError('validation_error', parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
    const at = now();
    const client = asClient(randomUUID(), parsed.data, Math.floor(at.getTime() / 1000));
    await db('oauth_clients').insert({ client_id: client.client_id, source: 'registered', metadata: JSON.stringify(client), created_at: at });
    return client;
  }

  /** A registered client, or a metadata document's (fetched when unknown or older than a day); undefined when neither. */
  async function find(clientId: string): Promise<OAuthClient | undefined> {
    // A NUL cannot be in any stored id, and PostgreSQL would refuse the statement that looked.
    if (clientId.length > limits.oauthUriLengthMax || clientId.includes('\u0000')) return undefined;
    const row = (await db('oauth_clients').where({ client_id: clientId }).first()) as
      { source: string; metadata: OAuthClient; fetched_at: Date | null } | undefined;
    const fresh =
      row &&
      (row.source === 'registered' || (row.fetched_at !== null && now().getTime() - new Date(row.fetched_at).getTime() < limits.oauthMetadataDocumentTtlMs));
    if (fresh) return row.metadata;
    if (!isMetadataDocumentId(clientId) || unreadable.get(clientId)) return undefined;
    const client = await fetchDocument(clientId);
    if (!client) unreadable.set(clientId, true);
    return client;
  }

  async function fetchDocument(clientId: string): Promise<OAuthClient | undefined> {
    // No redirect is followed: the document at the client_id's own address is the client's, and
    // one it redirects to could describe anything (draft section 4).
    const answer = await getGuarded(
      { url: clientId, headers: { Accept: 'application/json' }, timeoutMs: limits.oauthMetadataDocumentTimeoutMs, redirectsMax: 0 },
      network,
    );
    if (answer.kind !== 'answered' || answer.status !== 200) {
      log.info('an OAuth client metadata document could not be read', {
        client_id: clientId,
        outcome: answer.kind === 'answered' ? `HTTP ${answer.status}` : answer.kind === 'failed' ? answer.reason : answer.kind,
      });
      return undefined;
    }
    let document: unknown;
    try {
      document = JSON.parse(answer.body.toString('utf8'));
    } catch {
      return undefined;
    }
    const parsed = clientMetadata.safeParse(document);
    // The document must name itself: a client cannot borrow another's redirect URIs.
    if (!parsed.success || (document as { client_id?: unknown }).client_id !== clientId) return undefined;
    const client = asClient(clientId, parsed.data);
    const at = now();
    await db('oauth_clients')
      .insert({ client_id: clientId, source: 'metadata_document', metadata: JSON.stringify(client), created_at: at, fetched_at: at })
      .onConflict('client_id')
      .merge(['metadata', 'fetched_at']);
    return client;
  }

  return { register, find };
}

export type OAuthClients = ReturnType<typeof createOAuthClients>;
