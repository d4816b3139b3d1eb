import { limits } from '../limits.ts';
import { formatAmount, parseAmount } from './money.ts';
import { extractSkills } from './skill-extraction.ts';
import { languageOf } from './text.ts';

/**
 * The built-in skill drafter behind ai-create (docs/skills.md "AI-assisted creation"): from a
 * short prompt, the fields of a skill in the prompt's language, deterministic and without any
 * external service. The kind of skill comes from the built-in extraction; the description is the
 * prompt's own words with the deliverables and boundaries a buyer looks for; a price is drafted
 * only when the prompt names one.
 */
export interface DraftInput {
  prompt: string;
  category?: string;
  mode?: 'online' | 'offline';
  city?: string;
}

/** A draft in the create request's form (amounts as decimal text), field by field in the order they are streamed. */
export type DraftField = [name: string, value: unknown];

const closing = {
  en: (kind: string) =>
    `Deliverables: the ${kind.toLowerCase()} work described above, in the formats agreed before work starts. ` +
    'Boundaries: work beyond this description is quoted separately; up to two rounds of revisions are included.',
  zh: () => '交付内容：上述工作，交付格式在开始前书面确认。服务范围：描述以外的工作另行报价；包含最多两轮修改。',
};

/** The prompt's first clause, cut at a word, as a name when no kind of skill is recognised. */
export function headOf(prompt: string): string {
  const first = prompt.split(/[.!?。！？\n,，;；]/)[0]!.trim() || prompt.trim();
  if (first.length <= limits.skillNameLengthMax) return first;
  const cut = first.slice(0, limits.skillNameLengthMax);
  const space = cut.lastIndexOf(' ');
  return (space > 20 ? cut.slice(0, space) : cut).trim();
}

/** A price the prompt names: "50 UT", "$50", "50元", "50 per hour". Only digits and one separator are read. */
export function priceOf(prompt: string): string | undefined {
  const match = /(?:\$|¥|￥)\s?(\d{1,9}(?:\.\d{1,2})?)|(\d{1,9}(?:\.\d{1,2})?)\s?(?:(?:ut|usd|dollars?|rmb|cny)\b|元|块)/i.exec(prompt);
  const amount = match?.[1] ?? match?.[2];
  // Parsed to integer minor units and formatted back: an amount never passes through a float.
  const minor = amount === undefined ? null : parseAmount(amount);
  return minor === null ? undefined : formatAmount(minor);
}

export function pricingModelOf(prompt: string): string {
  const lower = prompt.toLowerCase();
  if (/per hour|hourly|an hour|\/\s?h(?:ou)?r\b|每小时|按小时|时薪/.test(lower)) return 'per_hour';
  if (/per day|daily rate|a day|每天|按天|日薪/.test(lower)) return 'per_day';
  if (/per use|per call|per request|each use|按次|每次/.test(lower)) return 'per_use';
  if (/negotiable|to be agreed|面议|可议/.test(lower)) return 'negotiable';
  return 'fixed';
}

export function draftSkill(input: DraftInput): DraftField[] {
  const prompt = input.prompt.trim();
  const language = languageOf(prompt);
  const found = extractSkills(prompt).skills[0];
  const name = found?.name ?? headOf(prompt);
  const category = input.category ?? found?.category ?? 'other';
  const tags = found?.tags ?? [];
  const body = prompt.length > limits.skillDescriptionLengthMax - 400 ? prompt.slice(0, limits.skillDescriptionLengthMax - 400) : prompt;
  const description = `${body}\n\n${language === 'zh' ? closing.zh() : closing.en(name)}`;
  const price = priceOf(prompt);
  const fields: DraftField[] = [
    ['name', name.slice(0, limits.skillNameLengthMax)],
    ['category', category],
    ['mode', input.mode ?? 'online'],
  ];
  if (input.city !== undefined) fields.push(['city', input.city]);
  fields.push(['tags', tags], ['description', description], ['pricing_model', pricingModelOf(prompt)]);
  if (price !== undefined) fields.push(['ut_price', price]);
  return fields;
}
