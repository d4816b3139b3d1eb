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
  switch (issue.origin) {
    case 'string':
      if (!most && Number(bound) === 1) return 'must not be empty';
      return `must be ${most ? 'at most' : 'at least'} ${bound} characters`;
    case 'array':
    case 'set':
      if (!most && Number(bound) === 1) return 'must not be empty';
      return `must have ${most ? 'at most' : 'at least'} ${bound} items`;
    case 'number':
    case 'int':
    case 'bigint':
      return `must be ${most ? (exact ? 'at most' : 'less than') : exact ? 'at least' : 'more than'} ${bound}`;
    default:
      return undefined;
  }
}

export function messageFor(issue: RawIssue): string | undefined {
  switch (issue.code) {
    case 'too_small':
      return sizeMessage(issue, issue.minimum, false);
    case 'too_big':
      return sizeMessage(issue, issue.maximum, true);
    case 'invalid_type': {
      const name = typeNames[issue.expected];
      return name ? `must be ${name}` : undefined;
    }
    case 'invalid_value':
      if (issue.values.length === 1) return `must be ${JSON.stringify(issue.values[0])}`;
      return `must be one of: ${issue.values.map((value) => String(value)).join(', ')}`;
    case 'invalid_format': {
      const name = formatNames[issue.format];
      return name ? `must be ${name}` : 'is not in the expected format';
    }
    case 'unrecognized_keys':
      return `has ${issue.keys.length === 1 ? 'a field' : 'fields'} this request does not take: ${issue.keys.join(', ')}`;
    default:
      return undefined;
  }
}

z.config({ customError: messageFor });
