import { t } from './i18n.js';

// A field's error from the API (data.errors[].message of a 4000) in the page's words and language:
// the API's messages are sentences for developers, in English, and some list internal codes ("must
// be one of: tech_dev, design, ..."), which a person choosing from a list does not need. A message
// with no pattern here is shown as the server wrote it.
const patterns = [
  [/^required$/, () => t('field.required')],
  [/^must not be empty$/, () => t('field.empty')],
  [/^must be at most (\d+) characters$/, ([count]) => t('field.chars-most', { count })],
  [/^must be at least (\d+) characters$/, ([count]) => t('field.chars-least', { count })],
  [/^must have at most (\d+) items$/, ([count]) => t('field.items-most', { count })],
  [/^must be a whole number$/, () => t('field.whole')],
  [/^must be a number$/, () => t('field.number')],
  [/^must be (?:at most|less than) ([\d.]+)$/, ([bound]) => t('field.at-most', { bound })],
  [/^must be (?:at least|more than) ([\d.]+)$/, ([bound]) => t('field.at-least', { bound })],
  [/^must be one of: /, () => t('field.one-of')],
  [/^must be a non-negative amount/, () => t('field.amount')],
  [/^must be a URL$|^must be an https URL$/, () => t('field.url')],
  [/^must be an email address$/, () => t('field.email')],
];

export function fieldWords(message) {
  const text = String(message);
  for (const [pattern, words] of patterns) {
    const match = pattern.exec(text);
    if (match) return words(match.slice(1));
  }
  return text;
}
