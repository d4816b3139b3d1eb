import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { generateApiKey } from '../../auth/api-keys.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type AgentBudgetInput, type AgentBudgetLimits, agentBudgetLimits } from '../../domain/agent-budgets.ts';
import { saveAgentBudget } from '../../store/agent-budgets.ts';
import * as store from '../../store/identity.ts';
import type { Admission } from './admission.ts';
import { noteKeyUse } from './key-usage.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { isMetadataDocumentId, type OAuthClient, type OAuthClients, redirectUriProblem } from './oauth-clients.ts';

/**
 * MCP sign-in (docs/mcp.md "Signing in"): this server as the OAuth 2.1 authorization server of its
 * own MCP endpoint. A client's authorization request waits for a person to sign in and decide on
 * the consent page; an approval gives a one-time code; the code (with its PKCE verifier, checked
 * by the adapter) gives an access token and a refresh token for the MCP resource only.
 *
 * An approved grant is an API key of the person, made when the code is exchanged: it is listed
 * with the person's device-flow keys, and revoking it there ends every token of the grant at once
 * (each token is checked against its key on every request). The grant acts as the person in the
 * agent space (caller type agent, UT), as a device-flow key does.
 */
export type OAuthErrorCode = 'invalid_request' | 'invalid_grant' | 'invalid_target' | 'invalid_scope' | 'temporarily_unavailable';

/** A refusal the OAuth adapter answers in the protocol's own terms (RFC 6749 section 5.2). */
export class OAuthProblem extends Error {
  constructor(
    readonly code: OAuthErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** The one scope: everything the person may do in the agent space, as a device-flow key may. */
export const oauthScope = 'marketplace';

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');
const secretOf = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`;
export const accessTokenPrefix = 'mcp_at_';

interface RequestRow {
  id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  state: string | null;
  scope: string;
  resource: string;
  status: 'pending' | 'approved' | 'denied';
  user_id: string | null;
  expires_at: Date;
  /** The agent budget the person chose on the consent page, given to the grant's key (migration 040). */
  agent_budget: AgentBudgetLimits | null;
}

interface TokenRow {
  token_hash: string;
  kind: 'access' | 'refresh';
  family_id: string;
  client_id: string;
  api_key_id: string;
  user_id: string;
  scope: string;
  resource: string;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

export interface AuthorizationInput {
  redirectUri: string;
  codeChallenge: string;
  state?: string;
  scopes?: string[];
  resource?: URL;
}

export interface IssuedTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/**
 * The MCP endpoint is the one resource tokens are for (RFC 8707), and the issuer is this server,
 * both at the base URL a request reached it by (config.ts requestBaseUrl: PUBLIC_BASE_URL, or the
 * loopback name used when it is unset). A token keeps the resource it was issued for.
 */
export const resourceAt = (base: string) => new URL('/mcp', base).href;
export const issuerAt = (base: string) => new URL(base).origin;
const sameResource = (given: string, resource: string) => given.replace(/\/$/, '') === resource;
const wrongTarget = (resource: string) => new OAuthProblem('invalid_target', `tokens are issued for ${resource} only`);

/** Where a sign-in request was made: the base URL it reached and the client's address (for the per-address cap). */
export interface RequestContext {
  base: string;
  address: string;
}

export function createOAuth(dependencies: EngineDependencies, clients: OAuthClients, admission: Admission) {
  const { db, now, config } = dependencies;
  const resource = resourceAt(config.publicBaseUrl);
  const issuer = issuerAt(config.publicBaseUrl);

  function scopeOf(scopes: string[]): string {
    const unknown = scopes.filter((scope) => scope !== '' && scope !== oauthScope);
    if (unknown.length > 0) throw new OAuthProblem('invalid_scope', `unknown scope ${unknown.join(' ')}; the one scope is "${oauthScope}"`);
    return oauthScope;
  }

  /**
   * An authorization request of a known client, kept until the person decides or it expires; its
   * id goes to the consent page. Every stored field is bounded (issue 28 point 9), and an address
   * may store only so many (limits.ts oauthSignInRequestsPerAddress).
   */
  async function startRequest(client: OAuthClient, input: AuthorizationInput, context: RequestContext): Promise<string> {
    const target = resourceAt(context.base);
    if (input.resource && !sameResource(input.resource.href, target)) throw wrongTarget(target);
    if (!/^[A-Za-z0-9_-]+$/.test(input.codeChallenge) || input.codeChallenge.length !== limits.oauthCodeChallengeLength) {
      throw new OAuthProblem('invalid_request', `code_challenge must be the ${limits.oauthCodeChallengeLength}-character base64url S256 challenge (RFC 7636)`);
    }
    if ((input.state?.length ?? 0) > limits.oauthStateLengthMax)
      throw new OAuthProblem('invalid_request', `state is longer than ${limits.oauthStateLengthMax} characters`);
    if (input.redirectUri.length > limits.oauthClientUriLengthMax || redirectUriProblem(input.redirectUri))
      throw new OAuthProblem('invalid_request', 'the redirect_uri is not allowed');
    const scope = scopeOf(input.scopes ?? []);
    await admission.consume(['oauthSignInRequestsPerAddress'], { address: context.address, principal: null }).catch((error: unknown) => {
      if (!(error instanceof AppError) || error.errorName !== 'rate_limited') throw error;
      throw new OAuthProblem('temporarily_unavailable', 'too many sign-in requests from this address; try again later');
    });
    const id = randomUUID();
    const at = now();
    await db('oauth_requests').insert({
      id,
      client_id: client.client_id,
      redirect_uri: input.redirectUri,
      code_challenge: input.codeChallenge,
      state: input.state ?? null,
      scope,
      resource: target,
      status: 'pending',
      created_at: at,
      expires_at: new Date(at.getTime() + limits.oauthRequestLifetimeMs),
    });
    return id;
  }

  async function pendingRequest(id: string): Promise<RequestRow> {
    const row = (await db('oauth_requests').where({ id, status: 'pending' }).where('expires_at', '>', now()).first()) as RequestRow | undefined;
    if (!row) throw notFound('sign-in request');
    return row;
  }

  /** What the consent page shows a signed-in person: which application asks, where it will be sent, what it may do. */
  async function describe(id: string) {
    const row = await pendingRequest(id);
    const client = await clients.find(row.client_id);
    if (!client) throw notFound('sign-in request');
    return {
      id: row.id,
      client_id: client.client_id,
      client_name: client.client_name ?? null,
      client_uri: client.client_uri ?? null,
      // The one part of a client that someone answers for: the host serving its metadata document.
      client_host: isMetadataDocumentId(client.client_id) ? new URL(client.client_id).host : null,
      redirect_uri: row.redirect_uri,
      redirect_origin: redirectOrigin(row.redirect_uri),
      scope: row.scope,
      resource: row.resource,
      expires_at: new Date(row.expires_at).toISOString(),
    };
  }

  /**
   * The person's answer, once (a compare-and-set on the pending request): approve gives a code,
   * deny an access_denied error; either way the answer is where the browser goes next.
   */
  async function decide(principal: Principal, id: string, decision: 'approve' | 'deny', budget?: AgentBudgetInput) {
    const chosen = decision === 'approve' && budget ? agentBudgetLimits(budget, 'body.budget') : null;
    const row = await pendingRequest(id);
    const status = decision === 'approve' ? 'approved' : 'denied';
    const at = now();
    const target = new URL(row.redirect_uri);
    const moved = await withTransaction(db, async ({ trx }) => {
      const changed = await trx('oauth_requests')
        .where({ id, status: 'pending' })
        .where('expires_at', '>', at)
        .update({ status, user_id: principal.user_id, agent_budget: chosen === null ? null : JSON.stringify(chosen) });
      if (changed === 0) return false;
      if (decision === 'approve') {
        const code = secretOf('');
        await trx('oauth_codes').insert({ code_hash: hashOf(code), request_id: id, expires_at: new Date(at.getTime() + limits.oauthCodeLifetimeMs) });
        target.searchParams.set('code', code);
      } else {
        target.searchParams.set('error', 'access_denied');
        target.searchParams.set('error_description', 'the person denied the request');
      }
      return true;
    });
    if (!moved) throw notFound('sign-in request');
    if (row.state !== null) target.searchParams.set('state', row.state);
    target.searchParams.set('iss', new URL(row.resource).origin);
    return { status, redirect_to: target.href };
  }

  /** The request of a code this client was given and may still present; used_at says whether it was exchanged already. */
  async function codeRequest(knex: Knex, clientId: string, code: string): Promise<RequestRow & { used_at: Date | null; code_expires_at: Date }> {
    const row = await knex('oauth_codes as c')
      .join('oauth_requests as r', 'r.id', 'c.request_id')
      .where('c.code_hash', hashOf(code))
      .first('r.*', 'c.used_at', 'c.expires_at as code_expires_at');
    if (!row || row.client_id !== clientId || (row.used_at === null && new Date(row.code_expires_at) <= now()))
      throw new OAuthProblem('invalid_grant', "the code is unknown, expired or another client's");
    return row;
  }

  /**
   * A code presented again was intercepted or replayed: the request is refused and the tokens its
   * first use gave end, with their grant's key (RFC 6749 section 4.1.2). A grant's family is its
   * request's id, so the code leads to it.
   */
  async function refuseReusedCode(requestId: string): Promise<never> {
    await withTransaction(db, async ({ trx }) => {
      const first = (await trx('oauth_tokens').where({ family_id: requestId }).first('api_key_id')) as { api_key_id: string } | undefined;
      if (first) await endFamily(trx, requestId, first.api_key_id);
    });
    throw new OAuthProblem('invalid_grant', 'the code was used already: the tokens it gave are revoked; sign in again');
  }

  /** The PKCE challenge the code was asked with (the adapter checks the verifier against it). */
  async function challengeFor(clientId: string, code: string): Promise<string> {
    const row = await codeRequest(db, clientId, code);
    return row.used_at === null ? row.code_challenge : refuseReusedCode(row.id);
  }

  /** A code, once: the grant's API key and its first tokens, in one database transaction. */
  async function exchangeCode(client: OAuthClient, code: string, redirectUri: string | undefined, resourceGiven: URL | undefined): Promise<IssuedTokens> {
    const outcome = await withTransaction(db, async ({ trx }) => {
      const row = await codeRequest(trx, client.client_id, code);
      if (row.used_at !== null) return { reused: row.id };
      if (redirectUri !== undefined && redirectUri !== row.redirect_uri)
        throw new OAuthProblem('invalid_grant', "redirect_uri differs from the authorization request's");
      if (resourceGiven && !sameResource(resourceGiven.href, row.resource)) throw wrongTarget(row.resource);
      // A concurrent exchange of the same code that got there first is a reuse like any other.
      const used = await trx('oauth_codes')
        .where({ code_hash: hashOf(code) })
        .whereNull('used_at')
        .update({ used_at: now() });
      if (used === 0) return { reused: row.id };
      const apiKeyId = await grantKey(trx, row.user_id!, client);
      // The budget the person chose on the consent page bounds the grant from its first call.
      if (row.agent_budget) await saveAgentBudget(trx, { api_key_id: apiKeyId, ...row.agent_budget, updated_at: now() });
      return {
        tokens: await issue(trx, {
          family_id: row.id,
          client_id: client.client_id,
          api_key_id: apiKeyId,
          user_id: row.user_id!,
          scope: row.scope,
          resource: row.resource,
        }),
      };
    });
    // Ending the first use's grant commits on its own, after this transaction gave up.
    return 'tokens' in outcome ? outcome.tokens! : refuseReusedCode(outcome.reused);
  }

  /** The grant as one of the person's keys (its secret is never shown: the tokens are the credential). */
  async function grantKey(trx: Knex, userId: string, client: OAuthClient): Promise<string> {
    const generated = generateApiKey();
    const name = `${(client.client_name ?? new URL(client.redirect_uris[0]!).host).slice(0, limits.oauthClientNameLengthMax)} (MCP sign-in)`;
    const [key] = await store.insertApiKey(trx, {
      id: randomUUID(),
      agent_platform_type: 'custom_mcp',
      name,
      key_prefix: generated.prefix,
      key_hash: generated.hash,
      auto_provision: false,
      owner_user_id: userId,
      origin: 'mcp',
    });
    await store.insertLink(trx, key!.id, userId);
    return key!.id;
  }

  async function issue(trx: Knex, grant: Omit<TokenRow, 'token_hash' | 'kind' | 'expires_at' | 'used_at' | 'revoked_at'>): Promise<IssuedTokens> {
    const at = now();
    const access = secretOf(accessTokenPrefix);
    const refresh = secretOf('mcp_rt_');
    await trx('oauth_tokens').insert([
      { ...grant, token_hash: hashOf(access), kind: 'access', created_at: at, expires_at: new Date(at.getTime() + limits.oauthAccessTokenLifetimeMs) },
      { ...grant, token_hash: hashOf(refresh), kind: 'refresh', created_at: at, expires_at: new Date(at.getTime() + limits.oauthRefreshTokenLifetimeMs) },
    ]);
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: Math.floor(limits.oauthAccessTokenLifetimeMs / 1000),
      refresh_token: refresh,
      scope: grant.scope,
    };
  }

  /** Ends a grant: every token of its family, and its key (which leaves the person's active keys). */
  async function endFamily(trx: Knex, familyId: string, apiKeyId: string) {
    const at = now();
    await trx('oauth_tokens').where({ family_id: familyId }).whereNull('revoked_at').update({ revoked_at: at });
    await trx('api_keys').where({ id: apiKeyId }).whereNull('revoked_at').update({ revoked_at: at });
  }

  /**
   * Refresh with rotation: each refresh token works once and gives a new pair. One presented again
   * was stolen or replayed, so the whole grant ends (RFC 9700 section 4.14.2).
   */
  async function refresh(client: OAuthClient, token: string, resourceGiven: URL | undefined): Promise<IssuedTokens> {
    const outcome = await withTransaction(db, async ({ trx }) => {
      const row = (await trx('oauth_tokens')
        .where({ token_hash: hashOf(token), kind: 'refresh' })
        .forUpdate()
        .first()) as TokenRow | undefined;
      if (!row || row.client_id !== client.client_id || row.revoked_at !== null || new Date(row.expires_at) <= now())
        return { problem: "the refresh token is unknown, revoked, expired or another client's" };
      if (resourceGiven && !sameResource(resourceGiven.href, row.resource)) throw wrongTarget(row.resource);
      if (row.used_at !== null) {
        await endFamily(trx, row.family_id, row.api_key_id);
        return { problem: 'the refresh token was used already: the grant has ended; sign in again' };
      }
      const key = await trx('api_keys').where({ id: row.api_key_id }).first('revoked_at');
      if (!key || key.revoked_at !== null) return { problem: 'the grant was revoked; sign in again' };
      await trx('oauth_tokens').where({ token_hash: row.token_hash }).update({ used_at: now() });
      return {
        tokens: await issue(trx, {
          family_id: row.family_id,
          client_id: row.client_id,
          api_key_id: row.api_key_id,
          user_id: row.user_id,
          scope: row.scope,
          resource: row.resource,
        }),
      };
    });
    // Ending a replayed grant commits before the refusal is answered.
    if ('problem' in outcome) throw new OAuthProblem('invalid_grant', outcome.problem!);
    return outcome.tokens;
  }

  /** RFC 7009: an unknown token is not an error. A refresh token ends its grant; an access token only itself. */
  async function revoke(client: OAuthClient, token: string) {
    await withTransaction(db, async ({ trx }) => {
      const row = (await trx('oauth_tokens')
        .where({ token_hash: hashOf(token) })
        .first()) as TokenRow | undefined;
      if (!row || row.client_id !== client.client_id) return;
      if (row.kind === 'refresh') await endFamily(trx, row.family_id, row.api_key_id);
      else await trx('oauth_tokens').where({ token_hash: row.token_hash }).whereNull('revoked_at').update({ revoked_at: now() });
    });
  }

  /**
   * An access token presented to /mcp at `base`: valid, issued for the resource there, and its
   * grant's key not revoked; null otherwise. A failure counts against the address like a wrong API key.
   */
  async function authenticate(token: string, address: string, base: string): Promise<Principal | null> {
    admission.authenticationFailures.refuseIfBlocked(address);
    const row = (await db('oauth_tokens as t')
      .join('api_keys as k', 'k.id', 't.api_key_id')
      .where({ 't.token_hash': hashOf(token), 't.kind': 'access' })
      .whereNull('t.revoked_at')
      .whereNull('k.revoked_at')
      .where('t.expires_at', '>', now())
      .first('t.user_id', 't.api_key_id', 't.resource', 't.expires_at')) as Pick<TokenRow, 'user_id' | 'api_key_id' | 'resource' | 'expires_at'> | undefined;
    if (!row || !sameResource(row.resource, resourceAt(base))) {
      await admission.authenticationFailures.recordFailure(address);
      return null;
    }
    noteKeyUse(dependencies, row.api_key_id);
    return {
      user_id: row.user_id,
      caller_type: 'agent',
      platform: 'custom_mcp',
      api_key_id: row.api_key_id,
      // A grant is always the person's own key: its budget bounds what the tokens spend.
      budget_key_id: row.api_key_id,
      expires_at_ms: new Date(row.expires_at).getTime(),
    };
  }

  return { resource, issuer, startRequest, describe, decide, challengeFor, exchangeCode, refresh, revoke, authenticate, clients };
}

/** Where a redirect URI sends the browser, as a person can judge it: its origin, or its scheme for an app's own. */
function redirectOrigin(uri: string): string {
  const url = new URL(uri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : `${url.protocol}//${url.host}`;
}

export type OAuthEngine = ReturnType<typeof createOAuth>;
