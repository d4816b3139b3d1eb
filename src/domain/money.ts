import { limits } from '../limits.ts';

/**
 * Money is integer minor units (hundredths) as BigInt, never a float. Requests may send a number
 * or a string with at most two fraction digits; responses always show a string like "12.50".
 */
export type Currency = 'UT' | 'CNY';
export type MinorUnits = bigint;

const decimalPattern = /^(\d{1,16})(?:\.(\d{1,2}))?$/;

/** Parses "12.5", "12.50" or 12.5 to 1250n; returns null for anything else (negative, 3 decimals, exponent). */
export function parseAmount(input: string | number): MinorUnits | null {
  // A JSON number is parsed from its shortest decimal rendering, which is exact for two decimals.
  const text = typeof input === 'number' ? (Number.isFinite(input) ? String(input) : '') : input.trim();
  const match = decimalPattern.exec(text);
  if (!match) return null;
  const minor = BigInt(match[1]!) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
  return minor > limits.amountMinorUnitsMax ? null : minor;
}

/** Why an input is not an amount, in words a client can act on (the maximum when it is only too large). */
export function amountProblem(input: string | number): string {
  const text = typeof input === 'number' ? (Number.isFinite(input) ? String(input) : '') : input.trim();
  if (/^\d+(?:\.\d{1,2})?$/.test(text)) return `must be at most ${formatAmount(limits.amountMinorUnitsMax)}`;
  return 'must be a non-negative amount like "12.50", with at most two fraction digits';
}

export function formatAmount(minor: MinorUnits | string | number): string {
  const value = BigInt(minor);
  const sign = value < 0n ? '-' : '';
  const absolute = value < 0n ? -value : value;
  return `${sign}${absolute / 100n}.${String(absolute % 100n).padStart(2, '0')}`;
}

/** Basis points of an amount, rounded down so the fee never exceeds the stated rate. */
export function feeOf(amount: MinorUnits, basisPoints: number): MinorUnits {
  return (amount * BigInt(basisPoints)) / 10_000n;
}

export const currencyOfSpace = (space: 'agent' | 'human'): Currency => (space === 'agent' ? 'UT' : 'CNY');
