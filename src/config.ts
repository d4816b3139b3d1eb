import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { limits } from './limits.ts';

/**
 * Configuration comes only from the environment (decisions section 11) and is parsed once, so a
 * typo fails the start with a clear message instead of surfacing later as odd behaviour.
 */
const booleanFromString = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((value) => value === 'true' || value === '1' || value === 'yes');

const environmentSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z.string().url().optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  REDIS_URL: z.string().url().optional(),
  JWT_SECRET: z.string().min(16, 'JWT_SECRET must be at least 16 characters').optional(),
  JWT_PUBLIC_KEY: z.string().optional(),
  JWT_PRIVATE_KEY: z.string().optional(),
  JWT_ALGORITHM: z.enum(['HS256', 'RS256']).default('HS256'),
  JWT_ISSUER: z.string().optional(),
  JWT_AUDIENCE: z.string().optional(),
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  PUBLIC_BASE_URL: z.string().url().optional(),
  CALLBACK_ALLOW_PRIVATE: booleanFromString.default(false),
  /**
   * Browser origins (scheme://host[:port], comma-separated) allowed to call /mcp, the JSON-RPC
   * endpoint and its WebSocket, beside PUBLIC_BASE_URL's own; a request with another Origin is
   * refused (403), as the MCP transport specification asks against DNS rebinding. `*` allows any.
   */
  ALLOWED_ORIGINS: z.string().optional(),
  /** Host names (comma-separated) those endpoints answer to, beside PUBLIC_BASE_URL's host and loopback names. */
  ALLOWED_HOSTS: z.string().optional(),
  AUTO_CONFIRM_HOURS: z.coerce.number().positive().default(72),
  DELIVERY_DEADLINE_HOURS: z.coerce.number().positive().default(72),
  PLATFORM_FEE_BPS: z.coerce.number().int().min(0).max(10_000).default(0),
  OUTBOX_RETENTION_HOURS: z.coerce.number().positive().default(limits.outboxRetentionHoursDefault),
  SWEEPER_INTERVAL_MS: z.coerce.number().int().min(10).default(30_000),
  STREAM_HEARTBEAT_MS: z.coerce.number().int().min(10).default(15_000),
  UT_TO_CNY_RATE: z
    .string()
    .regex(/^\d+(\.\d{1,6})?$/)
    .default('0.10'),
  LLM_BASE_URL: z.string().url().optional(),
  LLM_API_KEY: z.string().optional(),
  LLM_MODEL: z.string().optional(),
  /** The model for POST {LLM_BASE_URL}/embeddings; unset: no embeddings (chat models rarely embed). */
  LLM_EMBEDDING_MODEL: z.string().optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * Express's `trust proxy`: off by default, so the client address is the socket's and a client
   * cannot choose its own rate-limit bucket with X-Forwarded-For. Behind a proxy set the number of
   * proxies in front ("1"), or their addresses or subnets ("10.0.0.0/8,loopback").
   */
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((value): boolean | number | string => (value === 'true' ? true : value === 'false' ? false : /^\d+$/.test(value) ? Number(value) : value)),
});

export type RateLimitName = keyof typeof limits.rateLimits;
export const rateLimitNames = Object.keys(limits.rateLimits) as RateLimitName[];
export interface RateLimitSetting {
  requests: number;
  windowSeconds: number;
}

/** `loginFailuresPerAddress` -> `RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS`. */
export const rateLimitVariable = (name: RateLimitName) => `RATE_LIMIT_${name.replace(/[A-Z]/g, (letter) => `_${letter}`).toUpperCase()}`;

/** Each bucket from limits.ts, or its RATE_LIMIT_<NAME> override; null when turned off. */
function parseRateLimits(environment: Record<string, string | undefined>): Record<RateLimitName, RateLimitSetting | null> {
  const problems: string[] = [];
  const settings = Object.fromEntries(
    rateLimitNames.map((name) => {
      const value = environment[rateLimitVariable(name)];
      if (value === undefined) return [name, limits.rateLimits[name]];
      if (value === 'off') return [name, null];
      const match = /^(\d{1,9})\/(\d{1,6})$/.exec(value);
      if (!match || Number(match[1]) < 1 || Number(match[2]) < 1) {
        problems.push(`  ${rateLimitVariable(name)}: must be "<requests>/<seconds>" (both at least 1) or "off"`);
        return [name, null];
      }
      return [name, { requests: Number(match[1]), windowSeconds: Number(match[2]) }];
    }),
  ) as Record<RateLimitName, RateLimitSetting | null>;
  if (problems.length > 0) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return settings;
}

export type Environment = z.infer<typeof environmentSchema>;

export interface Config extends Omit<Environment, 'JWT_SECRET' | 'ADMIN_TOKEN'> {
  JWT_SECRET: string;
  ADMIN_TOKEN: string;
  publicBaseUrl: string;
  allowedOrigins: string[];
  allowedHosts: string[];
  /** True when DATABASE_URL is unset and the embedded PGlite database is used. */
  embeddedDatabase: boolean;
  rateLimits: Record<RateLimitName, RateLimitSetting | null>;
  /** The files this start generated missing secrets into (first start only), for the log. */
  generatedSecretFiles: string[];
}

export class ConfigError extends Error {}

const listOf = (text: string | undefined) =>
  (text ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(environment).filter(([, value]) => value !== ''));
  const parsed = environmentSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const values = parsed.data;
  if (values.JWT_ALGORITHM === 'RS256' && !values.JWT_PUBLIC_KEY) {
    throw new ConfigError('Invalid configuration:\n  JWT_PUBLIC_KEY: required when JWT_ALGORITHM is RS256');
  }
  // Workers are separate processes: they share one database and see each other's events only
  // through Redis, and the embedded database admits a single process.
  if (values.WORKERS > 1 && (!values.DATABASE_URL || !values.REDIS_URL)) {
    throw new ConfigError('Invalid configuration:\n  WORKERS: more than 1 needs DATABASE_URL (PostgreSQL) and REDIS_URL');
  }
  const rateLimits = parseRateLimits(cleaned);
  const generatedSecretFiles: string[] = [];
  const secrets = resolveSecrets(values, (file) => generatedSecretFiles.push(path.resolve(file)));
  return {
    ...values,
    ...secrets,
    generatedSecretFiles,
    publicBaseUrl: values.PUBLIC_BASE_URL ?? `http://localhost:${values.PORT}`,
    allowedOrigins: listOf(values.ALLOWED_ORIGINS),
    allowedHosts: listOf(values.ALLOWED_HOSTS).map((host) => host.toLowerCase()),
    embeddedDatabase: !values.DATABASE_URL,
    rateLimits,
  };
}

const loopbackNames = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The base URL a request reached this server by, for what it says of itself (OAuth metadata, the
 * MCP resource, sign-in redirects): PUBLIC_BASE_URL when it is set. Without it, a request addressed
 * to a loopback name (localhost, 127.0.0.1, [::1], any port) gets that name back, because MCP
 * clients refuse a protected resource other than the URL they were given, and people type either
 * name; any other Host gets the default http://localhost:PORT (docs/mcp.md "Troubleshooting").
 */
export function requestBaseUrl(config: Pick<Config, 'PUBLIC_BASE_URL' | 'publicBaseUrl'>, host: string | undefined): string {
  if (config.PUBLIC_BASE_URL !== undefined || host === undefined) return config.publicBaseUrl;
  const given = host.toLowerCase();
  if (!URL.canParse(`http://${given}`)) return config.publicBaseUrl;
  const url = new URL(`http://${given}`);
  // The Host header is the client's to choose: only a bare loopback name and port is taken.
  const bare = url.host === given || `${url.host}:80` === given;
  return bare && loopbackNames.has(url.hostname) ? url.origin : config.publicBaseUrl;
}

/**
 * A fresh machine must start with no configuration, so missing secrets are generated once and
 * kept in DATA_DIR. In production a missing secret is a configuration error instead, because a
 * generated secret there would silently differ between instances.
 */
function resolveSecrets(values: Environment, generated: (file: string) => void): { JWT_SECRET: string; ADMIN_TOKEN: string } {
  const needsJwtSecret = values.JWT_ALGORITHM === 'HS256' && !values.JWT_SECRET;
  if (values.NODE_ENV === 'production') {
    const missing = [needsJwtSecret && 'JWT_SECRET', !values.ADMIN_TOKEN && 'ADMIN_TOKEN'].filter(Boolean);
    if (missing.length > 0) {
      throw new ConfigError(`Invalid configuration:\n  ${missing.join(', ')}: required when NODE_ENV=production`);
    }
  }
  return {
    JWT_SECRET: values.JWT_SECRET ?? (needsJwtSecret ? storedSecret(values.DATA_DIR, 'jwt-secret', generated) : ''),
    ADMIN_TOKEN: values.ADMIN_TOKEN ?? storedSecret(values.DATA_DIR, 'admin-token', generated),
  };
}

function storedSecret(dataDirectory: string, name: string, generated: (file: string) => void): string {
  const file = path.join(dataDirectory, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDirectory, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  generated(file);
  return secret;
}
