import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * An API key is `mk_<prefix>_<secret>`. The prefix finds the row; the SHA-256 of the whole key is
 * compared in constant time. Keys carry 256 bits of randomness, so a fast hash is sufficient and
 * the plain key never needs to be stored.
 */
export interface GeneratedKey {
  key: string;
  prefix: string;
  hash: string;
}

export function generateApiKey(): GeneratedKey {
  const prefix = randomBytes(6).toString('hex');
  const key = `mk_${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function parseApiKeyPrefix(key: string): string | null {
  const match = /^mk_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$/.exec(key);
  return match ? match[1]! : null;
}

export function apiKeyMatches(key: string, storedHash: string): boolean {
  const actual = Buffer.from(hashApiKey(key), 'hex');
  const expected = Buffer.from(storedHash, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
