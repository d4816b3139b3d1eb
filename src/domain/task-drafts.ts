import { limits } from '../limits.ts';
import { type DraftField, headOf, priceOf, pricingModelOf } from './skill-drafts.ts';
import { extractSkills } from './skill-extraction.ts';
import { languageOf } from './text.ts';

/**
 * The built-in task drafter behind POST /tasks/ai-create (docs/tasks.md "AI help"): from a short
 * prompt, the fields of a task in the prompt's language, deterministic. The prompt's first clause
 * is the title; the kind of work (built-in extraction) gives the category and tags; the
 * description is the prompt with the deliverables and acceptance a seller looks for; a deadline
 * ("in 3 days", "48 hours", "3天") becomes delivery_hours (else three days); a price it names
 * becomes the bounty.
 */
export interface TaskDraftInput {
  prompt: string;
  category?: string;
  mode?: 'online' | 'offline';
  city?: string;
}

const closing = {
  en: 'Deliverables: the work described above, in the format agreed before work starts. Acceptance: the publisher checks the delivery against this description within two days.',
  zh: '交付内容：上述工作，交付格式在开始前书面确认。验收：发布者在两天内按本描述验收。',
};
const defaultDeliveryHours = 72;

/** Hours a prompt's deadline names, bounded to the limits; only digits and one unit are read. */
const chineseDigits: Record<string, string> = { 一: '1', 两: '2', 二: '2', 三: '3', 四: '4', 五: '5', 六: '6', 七: '7', 八: '8', 九: '9', 十: '10' };

export function deliveryHoursOf(prompt: string): number {
  // "两天" and "3天" alike: a single Chinese numeral before a unit is read as its digit.
  const digits = prompt.replace(/[一两二三四五六七八九十](?=\s?(小时|天|日|周))/g, (numeral) => chineseDigits[numeral]!);
  const match = /(\d{1,4})\s?(hours?|hrs?|h\b|days?|weeks?|小时|天|日|周)/i.exec(digits);
  if (!match) return /a week/i.test(prompt) ? 168 : defaultDeliveryHours;
  const amount = Number(match[1]);
  const unit = match[2]!.toLowerCase();
  const hours = /^(day|days|天|日)$/.test(unit) ? amount * 24 : /^(week|weeks|周)$/.test(unit) ? amount * 168 : amount;
  return Math.min(Math.max(hours, 1), limits.skillDurationHoursMax);
}

export function draftTask(input: TaskDraftInput): DraftField[] {
  const prompt = input.prompt.trim();
  const language = languageOf(prompt);
  const found = extractSkills(prompt).skills[0];
  const title = headOf(prompt).slice(0, limits.taskTitleLengthMax);
  const body = prompt.slice(0, limits.taskDescriptionLengthMax - 400);
  const bounty = priceOf(prompt);
  const fields: DraftField[] = [
    ['title', title],
    ['mode', input.mode ?? 'online'],
  ];
  if (input.city !== undefined) fields.push(['city', input.city]);
  const category = input.category ?? found?.category;
  if (category !== undefined) fields.push(['category', category]);
  fields.push(
    ['tags', found?.tags ?? []],
    ['description', `${body}\n\n${closing[language]}`],
    ['delivery_hours', deliveryHoursOf(prompt)],
    ['preferred_billing_model', pricingModelOf(prompt)],
  );
  if (bounty !== undefined) fields.push(['bounty_amount', bounty]);
  return fields;
}
