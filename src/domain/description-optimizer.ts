import { unmetCriteria } from './clarity.ts';

/**
 * The built-in description optimiser behind POST /tasks/description-optimize (docs/tasks.md
 * "AI help"): deterministic, in the text's language. It tidies the white space and adds a line
 * for each thing the clarity analyser finds missing (what is delivered, how much, in which format,
 * by when, for how much, how it is accepted), as a labelled blank for the publisher to fill in:
 * it never invents a deadline or a price. Each change is listed.
 */
const sections: Record<string, { en: [string, string]; zh: [string, string] }> = {
  deliverable: { en: ['Deliverable: [what you will receive]', 'added a line for the deliverable'], zh: ['交付物：【你将收到什么】', '补充了“交付物”一行'] },
  quantity: { en: ['Quantity: [how many, or how much]', 'added a line for the quantity'], zh: ['数量：【多少件或多大工作量】', '补充了“数量”一行'] },
  format: { en: ['Format: [file type or form of the delivery]', 'added a line for the format'], zh: ['格式：【交付的文件类型或形式】', '补充了“格式”一行'] },
  deadline: {
    en: ['Deadline: [when you need it: a date or a number of days]', 'added a line for the deadline'],
    zh: ['截止时间：【何时需要：日期或天数】', '补充了“截止时间”一行'],
  },
  budget: { en: ['Budget: [amount or range]', 'added a line for the budget'], zh: ['预算：【金额或范围】', '补充了“预算”一行'] },
  acceptance: {
    en: ['Acceptance: [how you will check the delivery]', 'added a line for the acceptance criteria'],
    zh: ['验收标准：【如何验收交付】', '补充了“验收标准”一行'],
  },
};

export function optimizeDescription(text: string): { language: 'en' | 'zh'; optimized_description: string; changes: string[] } {
  const changes: string[] = [];
  const tidy = text
    .split('\n')
    .map((line) => line.replace(/[ \t]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const { language, names } = unmetCriteria(tidy);
  if (tidy !== text) changes.push(language === 'zh' ? '整理了多余的空格和空行' : 'tidied extra spaces and blank lines');
  // A part whose labelled line is already there (added by an earlier run, still a blank to fill in)
  // is not added again: optimising twice adds nothing the second time.
  const labelled = (line: string) => tidy.split('\n').some((existing) => existing.startsWith(line.slice(0, line.search(/[:：]/) + 1)));
  const added = names
    .filter((name) => name in sections)
    .map((name) => sections[name]![language])
    .filter(([line]) => !labelled(line));
  for (const [, change] of added) changes.push(change);
  const optimized = added.length === 0 ? tidy : `${tidy}\n\n${added.map(([line]) => line).join('\n')}`;
  return { language, optimized_description: optimized, changes };
}
