import { t } from './i18n.js';
import { money } from './money.js';

// A field's error from the API (data.errors[].message of a 4000) in the page's words and language:
// the API's messages are sentences for developers, in English, and some list internal codes ("must
// be one of: tech_dev, design, ..."), or name another field by its API name ("must not be below
// min_bounty"), which a person reading the form does not see. A message with no pattern here is
// shown as the server wrote it. `context.currency` shows an amount bound as money (¥10,000.00);
// `context.labelOf(name)` gives the label another field has on the form.
const amountBound = (bound, context) => (context.currency && /^\d+\.\d{2}$/.test(bound) ? money(bound, context.currency) : bound);

const patterns = [
  [/^required$/, () => t('field.required')],
  [/^must not be empty$/, () => t('field.empty')],
  [/^must be at most (\d+) characters$/, ([count]) => t('field.chars-most', { count })],
  [/^must be at least (\d+) characters$/, ([count]) => t('field.chars-least', { count })],
  [/^must have at most (\d+) items$/, ([count]) => t('field.items-most', { count })],
  [/^must have at least (\d+) items$/, ([count]) => t('field.items-least', { count })],
  [/^must be a whole number$/, () => t('field.whole')],
  [/^must be a number$/, () => t('field.number')],
  [/^must be (?:at most|less than) ([\d.]+)$/, ([bound], context) => t('field.at-most', { bound: amountBound(bound, context) })],
  [/^must be (?:at least|more than) ([\d.]+)$/, ([bound], context) => t('field.at-least', { bound: amountBound(bound, context) })],
  [/^must be greater than zero$/, () => t('field.above-zero')],
  [
    /^must not be below ([a-z_]+)$/,
    ([other], context) => t('field.not-below', { other: (context.labelOf && context.labelOf(other)) || t('field.other-bound') }),
  ],
  [/^must be one of: /, () => t('field.one-of')],
  [/^must be a non-negative amount/, () => t('field.amount')],
  [/^must be a URL$|^must be an https URL$/, () => t('field.url')],
  [/^must be an http or https URL$/, () => t('field.url-http')],
  [/^must be an email address$/, () => t('field.email')],
  [/^must be a UUID$/, () => t('field.uuid')],
  [/^must mix letters with digits or symbols$/, () => t('field.password-mix')],
  [/^must be (?:in the future|after the current time)$/, () => t('field.future')],
  [/^must be within (\d+) days$/, ([days]) => t('field.within-days', { days })],
  [/^must be a date and time/, () => t('field.date-time')],
  [/^must be true or false$/, () => t('field.yes-no')],
  [/^relevance needs q$/, () => t('field.relevance-needs-q')],
];

export function fieldWords(message, context = {}) {
  const text = String(message);
  for (const [pattern, words] of patterns) {
    const match = pattern.exec(text);
    if (match) return words(match.slice(1), context);
  }
  return text;
}
