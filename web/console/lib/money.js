import { t } from './i18n.js';

// Amounts are decimal strings with two fraction digits ("12.50"); they are added and compared as
// whole minor units (BigInt), never as floating-point numbers, and shown with their currency.
export function toMinor(amount) {
  const text = String(amount ?? '0').trim();
  const match = /^(-?)(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!match) return null;
  const minor = BigInt(match[2]) * 100n + BigInt((match[3] || '').padEnd(2, '0') || '0');
  return match[1] ? -minor : minor;
}

export function fromMinor(minor) {
  const negative = minor < 0n;
  const absolute = negative ? -minor : minor;
  return `${negative ? '-' : ''}${absolute / 100n}.${String(absolute % 100n).padStart(2, '0')}`;
}

const grouped = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** "¥1,234.50" for CNY, "1,234.50 UT" for UT. */
export function money(amount, currency) {
  if (amount === null || amount === undefined) return '';
  const minor = typeof amount === 'bigint' ? amount : toMinor(amount);
  if (minor === null) return String(amount);
  const text = fromMinor(minor);
  const negative = text.startsWith('-');
  const [whole, fraction] = text.replace('-', '').split('.');
  const number = `${grouped(whole)}.${fraction}`;
  const sign = negative ? '−' : '';
  return currency === 'CNY' ? `${sign}¥${number}` : `${sign}${number} ${currency || 'UT'}`;
}

/** The largest amount the API takes (src/domain/money.ts, limits.amountMinorUnitsMax): 10,000,000,000,000.00. */
export const largestMinor = 1_000_000_000_000_000n;

/** What a person typed, trimmed, with full-width digits and point (a Chinese keyboard) read as ordinary ones. */
export const normalAmount = (text) =>
  String(text ?? '')
    .trim()
    .replace(/[\uff10-\uff19]/g, (digit) => String.fromCharCode(digit.charCodeAt(0) - 0xfee0))
    .replace(/\uff0e/g, '.');

/** Whether what a person typed is an amount the API takes (at least 0, at most two decimals, at most the largest). */
export function isAmount(text) {
  const value = normalAmount(text);
  return /^\d+(\.\d{1,2})?$/.test(value) && toMinor(value) <= largestMinor;
}

/**
 * Why what a person typed is not an amount, in the page's words (null when it is one): too large
 * says the largest, a minus sign, a third decimal or a comma say what to change.
 */
export function amountProblem(text, currency = 'CNY') {
  const value = normalAmount(text);
  if (/^\d+(\.\d{1,2})?$/.test(value)) return toMinor(value) > largestMinor ? t('money.too-large', { largest: money(largestMinor, currency) }) : null;
  if (/^[-\u2212]/.test(value)) return t('money.negative');
  if (/^\d+\.\d{3,}$/.test(value)) return t('money.decimals');
  if (/^[\d.]+([,\uff0c\s'][\d.]+)+$/.test(value)) return t('money.comma');
  return t('money.invalid');
}
