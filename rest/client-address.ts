import type { IncomingMessage } from 'node:http';
import proxyAddress from 'proxy-addr';

/**
 * The client's address under the TRUST_PROXY setting, for requests express does not see (the
 * WebSocket upgrade). It compiles the setting the way express does for `request.ip`, so that an
 * upgrade and a REST request from the same client count in the same per-address buckets: true
 * trusts every proxy, a number that many hops, a string the listed addresses or subnets
 * ("loopback, 10.0.0.0/8"), false none (the socket's own address).
 */
export type TrustProxySetting = boolean | number | string;

export function compileTrustProxy(setting: TrustProxySetting): (address: string, hop: number) => boolean {
  if (setting === true) return () => true;
  if (setting === false) return () => false;
  if (typeof setting === 'number') return (_address, hop) => hop < setting;
  return proxyAddress.compile(
    setting
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean),
  );
}

export const peerAddress = (request: IncomingMessage, trust: (address: string, hop: number) => boolean) => proxyAddress(request, trust);
