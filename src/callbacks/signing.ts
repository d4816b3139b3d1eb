import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Callback signatures (decisions section 7): HMAC-SHA256 over `${timestamp}.${body}` with the
 * capability's callback secret, sent as `X-Marketplace-Signature: t=<unix seconds>,v1=<hex>`.
 * The timestamp is inside the signed text so that a seller can refuse old, replayed requests.
 */
export const signatureHeader = 'X-Marketplace-Signature';

export const signatureOf = (secret: string, timestamp: number, body: string) => createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

export const signatureHeaderValue = (secret: string, timestamp: number, body: string) => `t=${timestamp},v1=${signatureOf(secret, timestamp, body)}`;

/**
 * What a seller runs to check a callback (also used by the tests): the header must parse, the
 * signature match in constant time, and the timestamp be within `toleranceSeconds` of `nowSeconds`.
 */
export function verifySignature(secret: string, header: string | undefined, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = Object.fromEntries((header ?? '').split(',').map((part) => part.split('=', 2) as [string, string]));
  const timestamp = Number(parts.t);
  if (!Number.isInteger(timestamp) || typeof parts.v1 !== 'string' || !/^[0-9a-f]{64}$/.test(parts.v1)) return false;
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  return timingSafeEqual(Buffer.from(parts.v1, 'hex'), Buffer.from(signatureOf(secret, timestamp, body), 'hex'));
}
