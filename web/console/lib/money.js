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

/** Whether what a person typed is an amount the API takes (at least 0, at most two decimals). */
export const isAmount = (text) => /^\d{1,13}(\.\d{1,2})?$/.test(String(text).trim());
