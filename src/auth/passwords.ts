import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.ts';
import { limits } from '../limits.ts';

/** scrypt with a per-password salt; the stored form carries its parameters so they can change. */
const keyLengthBytes = 32;
const cost = 16384;

/**
 * Each hash costs tens of milliseconds of CPU on libuv's small thread pool. Rate limits bound what
 * one address or one account can ask for, but not a flood spread over many of both, so at most a
 * few hashes run at once and a short queue waits; beyond it a sign-in is refused at once (4290)
 * rather than waiting behind hundreds of others while the server starves.
 */
let hashesRunning = 0;
const hashesWaiting: (() => void)[] = [];

async function withHashSlot<T>(work: () => Promise<T>): Promise<T> {
  if (hashesRunning < limits.passwordHashesConcurrentMax) {
    hashesRunning += 1;
  } else {
    if (hashesWaiting.length >= limits.passwordHashesQueuedMax) {
      throw new AppError('rate_limited', 'too many sign-ins at once', { retry_after_seconds: 1, detail: 'too many sign-ins at once; try again shortly' });
    }
    // The slot is handed over by the finishing hash, so hashesRunning stays as it is.
    await new Promise<void>((resolve) => hashesWaiting.push(resolve));
  }
  try {
    return await work();
  } finally {
    const next = hashesWaiting.shift();
    if (next) next();
    else hashesRunning -= 1;
  }
}

function derive(password: string, salt: Buffer, n: number): Promise<Buffer> {
  return withHashSlot(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password, salt, keyLengthBytes, { N: n, r: 8, p: 1 }, (error, key) => (error ? reject(error) : resolve(key)));
      }),
  );
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
