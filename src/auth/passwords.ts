import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt with a per-password salt; the stored form carries its parameters so they can change. */
const keyLengthBytes = 32;
const cost = 16384;

function derive(password: string, salt: Buffer, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLengthBytes, { N: n, r: 8, p: 1 }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  return `scrypt$${cost}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** A fixed hash to verify against when the email is unknown, so timing does not reveal accounts. */
const decoyHash = `scrypt$${cost}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(keyLengthBytes).toString('base64')}`;

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const [scheme, n, salt, key] = (stored ?? decoyHash).split('$');
  if (scheme !== 'scrypt' || !n || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await derive(password, Buffer.from(salt, 'base64'), Number(n));
  return timingSafeEqual(actual, expected) && stored != null;
}
