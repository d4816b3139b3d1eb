import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures as the Standard Webhooks specification (standardwebhooks.com) defines them,
 * so receivers can verify with its libraries in any language: the secret is `whsec_` and base64 of
 * 32 random bytes; each delivery carries `webhook-id` (the delivery id, the same on every retry),
 * `webhook-timestamp` (unix seconds of this attempt) and `webhook-signature`, which is
 * `v1,` and base64 of HMAC-SHA256 over `${id}.${timestamp}.${body}` keyed with the secret's bytes.
 * While a rotated secret is still honoured, both signatures are sent, separated by a space.
 */
export const webhookSecretPrefix = 'whsec_';

export const newWebhookSecret = () => `${webhookSecretPrefix}${randomBytes(32).toString('base64')}`;

const keyOf = (secret: string) => Buffer.from(secret.startsWith(webhookSecretPrefix) ? secret.slice(webhookSecretPrefix.length) : secret, 'base64');

export const webhookSignature = (secret: string, id: string, timestamp: number, body: string) =>
  `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;

export function webhookHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => webhookSignature(secret, id, timestamp, body)).join(' '),
  };
}

/**
 * What a receiver runs (the README's few lines, and the tests): one of the signatures must match
 * in constant time, and the timestamp be within `toleranceSeconds` (five minutes, as the
 * specification's libraries allow) of the receiver's clock, so a captured request cannot be
 * replayed later.
 */
export function verifyWebhook(secret: string, headers: Record<string, string | undefined>, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const id = headers['webhook-id'];
  const timestamp = Number(headers['webhook-timestamp']);
  if (!id || !Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(webhookSignature(secret, id, timestamp, body));
  return (headers['webhook-signature'] ?? '').split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
