import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { limits } from '../limits.ts';
import type { AddressPolicy } from './addresses.ts';
import { signatureHeader, signatureHeaderValue } from './signing.ts';

/**
 * The outbound call of invoke (decisions section 7), on node:http and node:https rather than
 * fetch, so that this code decides which address a name resolves to. The address is judged twice:
 * every address DNS returns (one forbidden answer refuses the name, which defeats a rebinding
 * answer mixing a public and an internal address), and the socket's remote address once it has
 * connected. Redirects are followed by hand (307 and 308 only, which keep the POST and its signed
 * body; at most limits.callbackRedirectsMax; never from https to http), each hop judged again.
 * No proxy from the environment is used: the request goes to the address judged, or nowhere.
 */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export interface CallbackNetwork {
  allowAddress: AddressPolicy;
  resolve: Resolver;
}

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export interface CallbackCall {
  url: string;
  secret: string;
  payload: unknown;
  timeoutMs: number;
}

/** `result` is the callback's answer: an object or null (the specification's "object or null"). */
export type CallbackOutcome = { kind: 'answered'; result: Record<string, unknown> | null } | { kind: 'failed'; reason: string } | { kind: 'timeout' };

/** A problem of the call itself; `permanent` when no retry can change it (the guard refused the address). */
class CallbackProblem extends Error {
  constructor(
    message: string,
    readonly permanent = false,
  ) {
    super(message);
  }
}
/** The reason a callback to an internal address fails; the operator's setting that allows it is named beside it. */
export const privateAddressRefusal =
  'the callback address resolves to a private or reserved address, which is refused (a server operator may allow private addresses with CALLBACK_ALLOW_PRIVATE=true)';
export const privateAddressSetting = 'CALLBACK_ALLOW_PRIVATE';
const refusedAddress = () => new CallbackProblem(privateAddressRefusal, true);

interface HopAnswer {
  status: number;
  location: string | undefined;
  body: Buffer;
}

/**
 * What a guarded POST came to: the receiver's answer (any status), or why there was none;
 * `permanent` when sending again cannot help (the address guard refused, a header cannot be sent).
 */
export type PostOutcome = { kind: 'answered'; status: number; body: Buffer } | { kind: 'failed'; reason: string; permanent?: boolean } | { kind: 'timeout' };

/** The first header no HTTP request can carry (a line break, a character outside Latin-1), or null; its value is never named, it may be a secret. */
function unsendableHeader(headers: Record<string, string>): string | null {
  for (const [name, value] of Object.entries(headers)) {
    try {
      http.validateHeaderName(name);
      http.validateHeaderValue(name, value);
    } catch {
      return name;
    }
  }
  return null;
}

/**
 * POSTs `body` to `url` through the address guard, the timeout and the size limit on the answer,
 * following 307/308 redirects by the rules above: the one outbound path of the product, used by
 * invoke's callbacks and by webhook and push deliveries alike.
 */
export async function postGuarded(
  target: { url: string; body: string; headers: Record<string, string>; timeoutMs: number; method?: 'POST' | 'GET'; redirectsMax?: number },
  network: CallbackNetwork,
): Promise<PostOutcome> {
  const redirectsMax = target.redirectsMax ?? limits.callbackRedirectsMax;
  const unsendable = unsendableHeader(target.headers);
  if (unsendable !== null)
    return { kind: 'failed', reason: `the header ${unsendable} cannot be sent: its value has a line break or a character outside Latin-1`, permanent: true };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, target.timeoutMs);
  try {
    let url = new URL(target.url);
    for (let hop = 0; ; hop++) {
      const answer = await sendHop(url, target.method ?? 'POST', target.body, target.headers, network, controller.signal);
      if ((answer.status === 307 || answer.status === 308) && answer.location !== undefined) {
        const next = new URL(answer.location, url);
        if (hop >= redirectsMax)
          return { kind: 'failed', reason: redirectsMax === 0 ? 'a redirect, which this address may not answer' : `more than ${redirectsMax} redirects` };
        if (next.protocol !== 'http:' && next.protocol !== 'https:') return { kind: 'failed', reason: 'a redirect to a scheme other than http or https' };
        if (url.protocol === 'https:' && next.protocol === 'http:') return { kind: 'failed', reason: 'a redirect from https to http' };
        url = next;
        continue;
      }
      return { kind: 'answered', status: answer.status, body: answer.body };
    }
  } catch (error) {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- timedOut is set by the timer callback
    if (timedOut) return { kind: 'timeout' };
    if (error instanceof CallbackProblem) return { kind: 'failed', reason: error.message, ...(error.permanent ? { permanent: true } : {}) };
    const code = (error as { code?: string }).code;
    return { kind: 'failed', reason: `the receiver could not be reached${code ? ` (${code})` : ''}` };
  } finally {
    clearTimeout(timer);
  }
}

export async function callCallback(call: CallbackCall, network: CallbackNetwork, nowSeconds: number): Promise<CallbackOutcome> {
  const body = JSON.stringify(call.payload);
  const headers = {
    'Content-Type': 'application/json',
    'User-Agent': 'marketplace-callback/1',
    [signatureHeader]: signatureHeaderValue(call.secret, nowSeconds, body),
  };
  const posted = await postGuarded({ url: call.url, body, headers, timeoutMs: call.timeoutMs }, network);
  if (posted.kind !== 'answered')
    return posted.kind === 'failed' ? { kind: 'failed', reason: posted.reason.replace('the receiver could not', 'the callback could not') } : posted;
  return outcomeOf(posted);
}

/** A 2xx answer whose body is a JSON object with `result` an object or null; anything else fails. */
function outcomeOf(answer: { status: number; body: Buffer }): CallbackOutcome {
  if (answer.status < 200 || answer.status > 299) return { kind: 'failed', reason: `the callback answered HTTP ${answer.status}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body.toString('utf8'));
  } catch {
    return { kind: 'failed', reason: 'the callback answered something that is not JSON' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || !Object.hasOwn(parsed, 'result')) {
    return { kind: 'failed', reason: 'the callback answer must be a JSON object with a `result` member' };
  }
  const result = (parsed as { result: unknown }).result;
  if (result !== null && (typeof result !== 'object' || Array.isArray(result))) return { kind: 'failed', reason: '`result` must be an object or null' };
  if (Buffer.byteLength(JSON.stringify(result)) > limits.resultPayloadBytesMax)
    return { kind: 'failed', reason: `\`result\` is larger than ${limits.resultPayloadBytesMax} bytes` };
  return { kind: 'answered', result: result as Record<string, unknown> | null };
}

/** Resolves with the resolver, refusing the name when any address it resolves to is refused. */
function guardedLookup(network: CallbackNetwork): LookupFunction {
  return ((hostname: string, options: { all?: boolean; family?: number }, callback: (...args: unknown[]) => void) => {
    network.resolve(hostname).then(
      (found) => {
        if (found.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }));
        if (found.some(({ address }) => !network.allowAddress(address))) return callback(refusedAddress());
        const wanted = options.family === 4 || options.family === 6 ? found.filter((entry) => entry.family === options.family) : found;
        if (wanted.length === 0) return callback(Object.assign(new Error(`no IPv${options.family} address for ${hostname}`), { code: 'ENOTFOUND' }));
        if (options.all) return callback(null, wanted);
        return callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;
}

/** A GET through the same guard, timeout and size limit (an OAuth client's metadata document, say); `redirectsMax: 0` follows none. */
export const getGuarded = (target: { url: string; headers: Record<string, string>; timeoutMs: number; redirectsMax?: number }, network: CallbackNetwork) =>
  postGuarded({ ...target, body: '', method: 'GET' }, network);

function sendHop(
  url: URL,
  method: 'POST' | 'GET',
  body: string,
  headers: Record<string, string>,
  network: CallbackNetwork,
  signal: AbortSignal,
): Promise<HopAnswer> {
  return new Promise((resolve, reject) => {
    const hostname = url.hostname.replace(/^\[|\]$/g, '');
    // A literal address is never looked up, so it is judged here, before any connection.
    if (isIP(hostname) !== 0 && !network.allowAddress(hostname)) return reject(refusedAddress());
    const transport = url.protocol === 'https:' ? https : http;
    const request = transport.request(
      {
        protocol: url.protocol,
        hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method,
        headers: method === 'POST' ? { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } : headers,
        agent: false,
        signal,
        lookup: guardedLookup(network),
      },
      (response) => readBounded(response, request, resolve, reject),
    );
    request.on('socket', (socket) => {
      socket.once('connect', () => {
        // The address actually connected to, whatever resolved it: the last word.
        if (!socket.remoteAddress || !network.allowAddress(socket.remoteAddress)) request.destroy(refusedAddress());
      });
    });
    request.on('error', reject);
    // Whatever stage the exchange is in (connecting, sending, reading), the timeout ends it.
    signal.addEventListener('abort', () => reject(new CallbackProblem('aborted')), { once: true });
    request.end(method === 'POST' ? body : undefined);
  });
}

function readBounded(response: http.IncomingMessage, request: http.ClientRequest, resolve: (answer: HopAnswer) => void, reject: (error: Error) => void) {
  const tooLarge = () => new CallbackProblem(`the callback answer is larger than ${limits.callbackResponseBytesMax} bytes`);
  if (Number(response.headers['content-length'] ?? 0) > limits.callbackResponseBytesMax) {
    request.destroy();
    return reject(tooLarge());
  }
  const chunks: Buffer[] = [];
  let size = 0;
  response.on('data', (chunk: Buffer) => {
    size += chunk.length;
    // Stop reading at once: a seller cannot make this process buffer more than the limit.
    if (size > limits.callbackResponseBytesMax) {
      request.destroy();
      reject(tooLarge());
      return;
    }
    chunks.push(chunk);
  });
  response.on('end', () => resolve({ status: response.statusCode ?? 0, location: response.headers.location, body: Buffer.concat(chunks) }));
  response.on('error', reject);
}
