import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';

/**
 * The codes of device authorization (RFC 8628, docs/decisions/identity-and-access.md "Device authorization"). The
 * device code is the client's secret: 32 random bytes, base64url. The user code is what a person
 * reads off one screen and types into another, so its alphabet has no vowels (no words), no
 * digits and none of the letters people confuse (I, O, U, Y): twenty consonants, eight of them,
 * shown as two groups of four. Both are stored only hashed: the device code as SHA-256, the user
 * code as an HMAC with a server secret.
 */
export const userCodeAlphabet = 'BCDFGHJKLMNPQRSTVWXZ';
export const userCodeLength = 8;

export const deviceCodePattern = /^[A-Za-z0-9_-]{43}$/;

/** The platforms that may ask; the first is the default when a client names none. */
export const agentPlatformTypes = ['custom_mcp', 'claude_code', 'cursor', 'codex_cli'] as const;
export type AgentPlatformType = (typeof agentPlatformTypes)[number];

/** What the verification page shows a person for each platform. */
export const agentPlatformNames: Record<AgentPlatformType, string> = {
  custom_mcp: 'Custom MCP client',
  claude_code: 'Claude Code',
  cursor: 'Cursor',
  codex_cli: 'Codex CLI',
};

export const generateDeviceCode = () => randomBytes(32).toString('base64url');

export function generateUserCode(): string {
  let code = '';
  // randomInt draws without modulo bias, so every letter is equally likely.
  for (let index = 0; index < userCodeLength; index++) code += userCodeAlphabet[randomInt(userCodeAlphabet.length)];
  return code;
}

/** `WDJBMJHT` -> `WDJB-MJHT`, the way the code is shown. */
export const formatUserCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/**
 * What a person typed, in the stored form: case, spaces and dashes do not matter. Null when it
 * cannot be a user code at all (wrong length or a letter outside the alphabet).
 */
export function normalizeUserCode(typed: string): string | null {
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== userCodeLength) return null;
  for (const letter of code) if (!userCodeAlphabet.includes(letter)) return null;
  return code;
}

/** The device code's stored form: 256 random bits need no secret to stay unguessable. */
export const hashCode = (code: string) => createHash('sha256').update(code).digest('hex');

/**
 * The user code's stored form. About 34.6 bits are few enough to try them all against a plain
 * hash, so it is an HMAC under a key derived from the server's secrets: someone who reads the
 * database or Redis, but not the configuration, cannot recover the codes. Every instance has the
 * same secrets, so each computes the same form.
 */
export function userCodeHasher(secrets: { ADMIN_TOKEN: string; JWT_SECRET: string }) {
  const key = createHash('sha256').update(`device user codes\0${secrets.ADMIN_TOKEN}\0${secrets.JWT_SECRET}`).digest();
  return (code: string) => createHmac('sha256', key).update(code).digest('hex');
}
