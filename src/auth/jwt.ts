import jwt from 'jsonwebtoken';
import type { Config } from '../config.ts';
import { limits } from '../limits.ts';

/**
 * JWTs for human callers. The algorithm is pinned by configuration: a token signed with any other
 * algorithm (including `none`) is refused, and `exp` is required.
 */
export interface JwtService {
  sign(userId: string, lifetimeSeconds?: number): { token: string; expiresInSeconds: number };
  /** The token's subject and expiry, or null when it is not one of ours or has expired. */
  verify(token: string): { subject: string; expiresAtMs: number } | null;
}

export function createJwtService(
  config: Pick<Config, 'JWT_ALGORITHM' | 'JWT_SECRET' | 'JWT_PUBLIC_KEY' | 'JWT_PRIVATE_KEY' | 'JWT_ISSUER' | 'JWT_AUDIENCE'>,
): JwtService {
  const algorithm = config.JWT_ALGORITHM;
  const verifyKey = algorithm === 'HS256' ? config.JWT_SECRET : config.JWT_PUBLIC_KEY!;
  const signKey = algorithm === 'HS256' ? config.JWT_SECRET : config.JWT_PRIVATE_KEY;
  return {
    sign(userId, lifetimeSeconds = limits.jwtLifetimeSeconds) {
      if (!signKey) throw new Error('JWT_PRIVATE_KEY is required to sign tokens with RS256');
      const token = jwt.sign({}, signKey, {
        algorithm,
        subject: userId,
        expiresIn: lifetimeSeconds,
        ...(config.JWT_ISSUER ? { issuer: config.JWT_ISSUER } : {}),
        ...(config.JWT_AUDIENCE ? { audience: config.JWT_AUDIENCE } : {}),
      });
      return { token, expiresInSeconds: lifetimeSeconds };
    },
    verify(token) {
      try {
        const payload = jwt.verify(token, verifyKey, {
          algorithms: [algorithm],
          ...(config.JWT_ISSUER ? { issuer: config.JWT_ISSUER } : {}),
          ...(config.JWT_AUDIENCE ? { audience: config.JWT_AUDIENCE } : {}),
        });
        if (typeof payload !== 'object' || typeof payload.exp !== 'number' || typeof payload.sub !== 'string') return null;
        return { subject: payload.sub, expiresAtMs: payload.exp * 1000 };
      } catch {
        return null;
      }
    },
  };
}
