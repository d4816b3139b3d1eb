import type { Request, Response } from 'express';
import { fingerprintOf, type IdempotencyRequest, type Outcome } from '../src/engine/money/index.ts';
import { AppError } from '../src/errors.ts';
import { idempotencyKey } from '../src/schemas/transactions.ts';

/**
 * Reads the idempotency key from the `Idempotency-Key` header or the body's `idempotency_key`
 * (both and different: 4000). The fingerprint covers the body without the key itself, so the
 * two ways of sending the key describe the same request.
 */
export function idempotencyRequestOf(request: Request): IdempotencyRequest | null {
  const header = request.get('idempotency-key');
  const body = (request.body ?? {}) as Record<string, unknown>;
  const fromBody = typeof body.idempotency_key === 'string' ? body.idempotency_key : undefined;
  if (header !== undefined && fromBody !== undefined && header !== fromBody) {
    throw new AppError('validation_error', 'two different idempotency keys', {
      errors: [{ path: 'header.Idempotency-Key', message: 'differs from body.idempotency_key' }],
    });
  }
  const key = header ?? fromBody;
  if (key === undefined) return null;
  const parsed = idempotencyKey.safeParse(key);
  if (!parsed.success) {
    throw new AppError('validation_error', 'invalid idempotency key', {
      errors: [{ path: 'header.Idempotency-Key', message: parsed.error.issues[0]!.message }],
    });
  }
  const { idempotency_key: _key, ...rest } = body;
  return { key, operation: operationOf(request), fingerprint: fingerprintOf(rest) };
}

/**
 * The scope of a key is the route (its template, not the spelling of the URL) and the resource it
 * acts on. Route parameters are ids, compared lower-cased, as the database compares them.
 */
function operationOf(request: Request): string {
  const template = (request.route as { path?: string } | undefined)?.path ?? request.path;
  const parameters = Object.entries(request.params as Record<string, string>)
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([name, value]) => `${name}=${String(value).toLowerCase()}`);
  return [request.method, template, ...parameters].join(' ');
}

/** Unwraps an engine outcome, marking a replayed response with `Idempotent-Replayed: true`. */
export function renderOutcome<T>(response: Response, outcome: Outcome<T>): T {
  if (outcome.replayed) response.setHeader('Idempotent-Replayed', 'true');
  return outcome.data;
}
