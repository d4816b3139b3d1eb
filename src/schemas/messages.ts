import { z } from 'zod';

/**
 * The words of a 4000's `data.errors[].message` where a schema does not give its own: zod's
 * defaults are written for developers ("Too small: expected string to have >=1 characters",
 * `Invalid option: expected one of "tech_dev"|"design"|...`), and the web console and every client
 * show them to people. These say what to send instead, in the words the rest of the API uses
 * ("must be at most 200 characters"). A schema's own message (`{ error: ... }`, a refinement's)
 * still wins: zod asks this only when there is none. Installed once, by the module every schema
 * imports (src/schemas/common.ts).
 */
type RawIssue = z.core.$ZodRawIssue;

const typeNames: Record<string, string> = {
  int: 'a whole number',
  number: 'a number',
  string: 'text (a JSON string)',
  boolean: 'true or false',
  array: 'a list (a JSON array)',
  object: 'an object',
  bigint: 'a whole number',
  date: 'a date',
};

const formatNames: Record<string, string> = {
  url: 'a URL',
  email: 'an email address',
  datetime: 'a date and time with its offset, such as 2026-11-28T12:00:00Z',
  date: 'a date such as 2026-11-28',
  uuid: 'a UUID',
};

function sizeMessage(issue: RawIssue & { origin?: string; inclusive?: boolean }, bound: number | bigint, most: boolean): string | undefined {
  const exact = issue.inclusive !== false;
  const origin = issue.origin ?? '';
  if (!most && Number(bound) === 1 && ['string', 'array', 'set'].includes(origin)) return 'must not be empty';
  if (origin === 'string') return `must be ${most ? 'at most' : 'at least'} ${bound} characters`;
  if (origin === 'array' || origin === 'set') return `must have ${most ? 'at most' : 'at least'} ${bound} items`;
  if (['number', 'int', 'bigint'].includes(origin)) return `must be ${most ? (exact ? 'at most' : 'less than') : exact ? 'at least' : 'more than'} ${bound}`;
  return undefined;
}

export function messageFor(issue: RawIssue): string | undefined {
  if (issue.code === 'too_small') return sizeMessage(issue, issue.minimum, false);
  if (issue.code === 'too_big') return sizeMessage(issue, issue.maximum, true);
  if (issue.code === 'invalid_type') {
    const name = typeNames[issue.expected];
    return name ? `must be ${name}` : undefined;
  }
  if (issue.code === 'invalid_value') {
    if (issue.values.length === 1) return `must be ${JSON.stringify(issue.values[0])}`;
    // An empty value a query allows (role=, meaning either) is named as "" rather than as nothing.
    return `must be one of: ${issue.values.map((value) => (value === '' ? '""' : String(value))).join(', ')}`;
  }
  if (issue.code === 'invalid_format') {
    const name = formatNames[issue.format];
    return name ? `must be ${name}` : 'is not in the expected format';
  }
  if (issue.code === 'unrecognized_keys') return `has ${issue.keys.length === 1 ? 'a field' : 'fields'} this request does not take: ${issue.keys.join(', ')}`;
  // Anything else (a refinement's own message, a union) keeps zod's words.
  return undefined;
}

z.config({ customError: messageFor });
