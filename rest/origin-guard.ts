import type { IncomingHttpHeaders } from 'node:http';
import type { Config } from '../src/config.ts';
import { AppError } from '../src/errors.ts';

/**
 * Origin and Host validation for the endpoints an agent's browser-side code could reach (/mcp,
 * the JSON-RPC endpoint and its WebSocket): the MCP transport specification asks servers to
 * validate Origin against DNS rebinding, where a page of another site, whose name now resolves to
 * this server, calls it with the visitor's network position. A request without Origin (any client
 * that is not a browser) passes; one addressed to a Host name that is neither PUBLIC_BASE_URL's, a
 * loopback name, nor in ALLOWED_HOSTS is refused, and so is one whose Origin is neither this
 * server's (PUBLIC_BASE_URL, or the Host it was sent to) nor in ALLOWED_ORIGINS (docs/mcp.md
 * "Origin and Host").
 */
const loopbackHosts = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

const hostnameOf = (host: string) => {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return null;
  }
};

export function originGuard(config: Pick<Config, 'publicBaseUrl' | 'allowedOrigins' | 'allowedHosts'>) {
  const own = new URL(config.publicBaseUrl);
  const origins = new Set([
    own.origin,
    ...config.allowedOrigins.map((origin) => (origin === '*' ? '*' : URL.canParse(origin) ? new URL(origin).origin : origin)),
  ]);
  const hosts = new Set([own.hostname.toLowerCase(), ...config.allowedHosts]);

  /**
   * Throws 4030 when the request is addressed to a host, or comes from an origin, this server does
   * not answer. The host is checked first: once it is one of this server's names, a page served
   * from that very name (Origin naming the Host the request was sent to) is this server's own.
   */
  return (headers: IncomingHttpHeaders, hostname?: string) => {
    const host = hostname ?? hostnameOf(headers.host ?? '');
    if (host !== null && !hosts.has(host) && !loopbackHosts.has(host)) {
      throw new AppError('forbidden', `this server does not answer to the host name ${host.slice(0, 200)} (the operator's ALLOWED_HOSTS lists the others)`);
    }
    const origin = headers.origin;
    if (origin === undefined || origins.has('*') || origins.has(origin)) return;
    const sameHost = URL.canParse(origin) && headers.host !== undefined && new URL(origin).host.toLowerCase() === headers.host.toLowerCase();
    if (!sameHost)
      throw new AppError(
        'forbidden',
        `requests from the origin ${origin.slice(0, 200)} are not allowed here (the operator's ALLOWED_ORIGINS lists the others)`,
      );
  };
}

export type OriginGuard = ReturnType<typeof originGuard>;
