import { dependencyFailureOf } from './dependency-failures.ts';
import { limits } from './limits.ts';
/**
 * One table of every error the service can answer with. The REST envelope and the JSON-RPC
 * error are both rendered from this table, so the two transports can never disagree.
 */
export const errorTable = {
  validation_error: { code: 4000, httpStatus: 400, rpcCode: -32602 },
  invalid_json: { code: 4001, httpStatus: 400, rpcCode: -32700 },
  unauthenticated: { code: 4010, httpStatus: 401, rpcCode: -32110 },
  mixed_credentials: { code: 4011, httpStatus: 400, rpcCode: -32111 },
  // /mcp only: API key headers that are not valid. 403, not 401, so that an OAuth client (which
  // takes a 401 for "sign in") shows the person what is wrong instead (docs/mcp.md "Signing in").
  credentials_rejected: { code: 4012, httpStatus: 403, rpcCode: -32112 },
  forbidden: { code: 4030, httpStatus: 403, rpcCode: -32130 },
  not_found: { code: 4040, httpStatus: 404, rpcCode: -32001 },
  method_not_allowed: { code: 4050, httpStatus: 405, rpcCode: -32105 },
  // A2A's -32002 means "task not cancelable": only cancel methods answer 4090 with it (rpc/).
  invalid_state_transition: { code: 4090, httpStatus: 409, rpcCode: -32190 },
  idempotency_in_progress: { code: 4091, httpStatus: 409, rpcCode: -32191 },
  conflict: { code: 4092, httpStatus: 409, rpcCode: -32192 },
  // The price to pay is above the buyer's ceiling (max_price, or the price the buyer was shown):
  // refused before any money moves, with data {currency, price, max_price} in major units.
  price_above_ceiling: { code: 4093, httpStatus: 409, rpcCode: -32193 },
  idempotency_key_reused: { code: 4220, httpStatus: 422, rpcCode: -32122 },
  insufficient_balance: { code: 4020, httpStatus: 402, rpcCode: -32120 },
  // The charge is beyond the agent budget the key's owner set (per purchase, per UTC day, or the
  // categories and capabilities allowed): refused with nothing moved, with data {budget, currency,
  // amount, left_today, ...} naming the bound and what is left (docs/decisions/money-and-escrow.md "Agent budgets").
  agent_budget_exceeded: { code: 4021, httpStatus: 402, rpcCode: -32121 },
  payload_too_large: { code: 4130, httpStatus: 413, rpcCode: -32113 },
  rate_limited: { code: 4290, httpStatus: 429, rpcCode: -32129 },
  daily_limit_reached: { code: 4291, httpStatus: 429, rpcCode: -32128 },
  authorization_pending: { code: 4801, httpStatus: 200, rpcCode: -32181 },
  slow_down: { code: 4802, httpStatus: 200, rpcCode: -32182 },
  expired_token: { code: 4803, httpStatus: 410, rpcCode: -32183 },
  access_denied: { code: 4804, httpStatus: 403, rpcCode: -32184 },
  internal_error: { code: 5000, httpStatus: 500, rpcCode: -32603 },
  callback_failed: { code: 5020, httpStatus: 502, rpcCode: -32150 },
  callback_timeout: { code: 5040, httpStatus: 504, rpcCode: -32154 },
  unavailable: { code: 5030, httpStatus: 503, rpcCode: -32153 },
} as const;

export type ErrorName = keyof typeof errorTable;

export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly errorName: ErrorName,
    readonly detail?: string,
    readonly data: Record<string, unknown> | null = null,
  ) {
    super(detail ?? errorName);
  }
  get code(): number {
    return errorTable[this.errorName].code;
  }
  get httpStatus(): number {
    return errorTable[this.errorName].httpStatus;
  }
  get rpcCode(): number {
    return errorTable[this.errorName].rpcCode;
  }
}

export interface ErrorBody {
  code: number;
  message: string;
  data: Record<string, unknown> | null;
}

/**
 * Turns anything thrown into the public error shape. Unknown errors are logged with their stack
 * and answered with a generic 5000, never with a stack trace or SQL in the body.
 */
export function toAppError(error: unknown, log: (message: string, error: unknown) => void): AppError {
  if (error instanceof AppError) return error;
  // A backend that cannot be reached is not our fault nor the caller's: 503, and when to retry.
  const dependency = dependencyFailureOf(error);
  if (dependency) {
    log(`${dependency} unavailable`, error);
    return new AppError('unavailable', `the ${dependency} is unavailable; retry shortly`, {
      dependency,
      retry_after_seconds: limits.dependencyRetryAfterSeconds,
    });
  }
  log('unexpected error', error);
  return new AppError('internal_error');
}

export function errorBody(error: AppError): ErrorBody {
  // The message is the stable machine name from the decisions table; a human-readable detail
  // rides in data.detail when there is no structured data to carry.
  const data = error.data ?? (error.detail && error.detail !== error.errorName ? { detail: error.detail } : null);
  return { code: error.code, message: error.errorName, data };
}

export const notFound = (what = 'resource') => new AppError('not_found', `${what} not found`);
export const forbidden = (why = 'not allowed') => new AppError('forbidden', why);
export const unauthenticated = (why = 'missing or invalid credentials') => new AppError('unauthenticated', why);
