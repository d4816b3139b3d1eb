/**
 * The built-in clarity analyser (decisions section 8): how clearly a demand says what is wanted,
 * as a score from 0 to 1 with the reasons and concrete suggestions, in the description's own
 * language (Chinese or English, told apart by script). Pure and deterministic: the same text
 * always gets the same answer, with no model and no database.
 *
 * The score is the sum of the weights of the criteria a description meets (they sum to 1), less
 * 0.05 for each distinct vague word (at most 0.2), kept within 0..1 and rounded to two decimals.
 * docs/decisions/matching.md "Clarity" lists the rules.
 */
export type ClarityLanguage = 'zh' | 'en';

export interface ClarityAssessment {
  score: number;
  language: ClarityLanguage;
  reasons: string[];
  suggestions: string[];
}

interface Criterion {
  name: string;
  weight: number;
  /** Whether the text meets it; for length, half the weight counts at half the length. */
  met(text: string, language: ClarityLanguage): number;
  found: Record<ClarityLanguage, string>;
  missing: Record<ClarityLanguage, string>;
  suggestion: Record<ClarityLanguage, string>;
}

const any = (patterns: Record<ClarityLanguage, RegExp>) => (text: string, language: ClarityLanguage) =>
  patterns[language].test(text) || (language === 'zh' && patterns.en.test(text)) ? 1 : 0;

/** Chinese is measured in characters, English in words; the thresholds say "a few sentences". */
function lengthScore(text: string, language: ClarityLanguage): number {
  const size = language === 'zh' ? (text.match(/\p{Script=Han}/gu) ?? []).length : (text.match(/[\p{L}\p{N}]+/gu) ?? []).length;
  const [full, half] = language === 'zh' ? [40, 20] : [25, 12];
  return size >= full ? 1 : size >= half ? 0.5 : 0;
}

/*
 * Every pattern here runs on user text up to demandDescriptionLengthMax characters, so each must
 * run in linear time. An unanchored run such as `\d+` followed by something that may not come
 * would be tried from every position inside a long run of digits, each attempt scanning to the
 * run's end: quadratic (10,000 digits took 0.9 s). A lookbehind `(?<!\d)` lets a run start only
 * where it really starts, which finds the same matches, since a run's full length is tried first.
 * test/market/adversarial-text.test.ts feeds every analyser such inputs at the maximum size.
 */
const criteria: readonly Criterion[] = [
  {
    name: 'length',
    weight: 0.15,
    met: lengthScore,
    found: { en: 'The description has enough detail to act on.', zh: '描述篇幅足够，信息较完整。' },
    missing: { en: 'The description is short: a provider has little to go on.', zh: '描述过短，服务方难以判断具体需求。' },
    suggestion: { en: 'Add two or three sentences on the context, who will use the result and how.', zh: '补充两三句背景说明：结果给谁用、怎么用。' },
  },
  {
    name: 'deliverable',
    weight: 0.2,
    met: any({
      en: /\b(website|web ?site|app|application|logo|report|article|essay|script|api|dashboard|translation|translate|video|spreadsheet|summary|summari[sz]e|design|code|bot|plugin|poster|banner|dataset|model|slides?|presentation|landing page|document|manual|illustration|photos?|audio|podcast|crawler|scraper|database|mockups?|prototype)\b/i,
      zh: /(网站|网页|小程序|应用|APP|报告|文章|论文|脚本|接口|看板|翻译|视频|表格|摘要|设计|代码|机器人|插件|海报|横幅|数据集|模型|幻灯片|PPT|文档|手册|插画|照片|音频|爬虫|数据库|原型|标志|商标|文案|方案)/i,
    }),
    found: { en: 'It names a concrete deliverable.', zh: '说明了具体的交付物。' },
    missing: { en: 'It does not say what exactly should be delivered.', zh: '没有说明具体要交付什么。' },
    suggestion: {
      en: 'Name the deliverable, e.g. "a 5-page landing page" or "a cleaned CSV file".',
      zh: '写明交付物，例如“一个5页的落地页”或“一份清洗后的CSV文件”。',
    },
  },
  {
    name: 'quantity',
    weight: 0.15,
    met: any({
      en: /\b\d+(?:[.,]\d+)?[\s-]*(?:k\b|words?|pages?|items?|images?|pictures?|photos?|minutes?|mins?|hours?|seconds?|screens?|languages?|rows?|records?|files?|slides?|articles?|posts?|products?|endpoints?|characters?|px|x\d+|mb|gb|%)/i,
      zh: /((?<!\d)\d+|(?<![一二三四五六七八九十百千万两])[一二三四五六七八九十百千万两]+)\s*(个|页|张|字|篇|分钟|小时|秒|条|份|套|幅|种|行|款|件|万字|千字|屏|集|首|人)/,
    }),
    found: { en: 'It gives a quantity or size.', zh: '给出了数量或规模。' },
    missing: { en: 'It gives no quantity or size.', zh: '没有给出数量或规模。' },
    suggestion: { en: 'State how much: number of pages, words, items, minutes or screens.', zh: '写明数量：页数、字数、条数、时长或屏数。' },
  },
  {
    name: 'format',
    weight: 0.1,
    met: any({
      en: /\b(pdf|docx?|markdown|md|csv|json|xlsx?|excel|png|jpe?g|svg|mp4|mov|mp3|wav|figma|psd|ppt|pptx|html|format|resolution|1080p|4k|source files?)\b/i,
      zh: /(格式|分辨率|源文件|横版|竖版|尺寸)/,
    }),
    found: { en: 'It specifies a format.', zh: '指定了交付格式。' },
    missing: { en: 'It does not say in which format the result is wanted.', zh: '没有说明交付格式。' },
    suggestion: { en: 'Say the format, e.g. PDF, DOCX, CSV, PNG 1920x1080 or MP4.', zh: '写明格式，例如PDF、Word、CSV、PNG（1920x1080）或MP4。' },
  },
  {
    name: 'deadline',
    weight: 0.15,
    met: any({
      en: /\b(deadline|due|by (monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|the end|end of|next|\d)|within \d+|in \d+ (hours?|days?|weeks?)|tomorrow|next week|\d{4}-\d{2}-\d{2}|asap|urgent)\b/i,
      zh: /(截止|之前|以前|天内|周内|小时内|明天|后天|下周|本周|月底|月初|期限|交付时间|工期|(?<!\d)\d+月\d+日|(?<!\d)\d+号|加急|尽快)/,
    }),
    found: { en: 'It sets a deadline.', zh: '给出了截止时间。' },
    missing: { en: 'It sets no deadline.', zh: '没有给出截止时间。' },
    suggestion: { en: 'Give a deadline, e.g. "within 3 days" or "by 2025-06-30".', zh: '给出截止时间，例如“3天内”或“6月30日前”。' },
  },
  {
    name: 'budget',
    weight: 0.1,
    met: any({
      en: /(\bbudget\b|\$\s?\d|¥\s?\d|\b\d+(?:\.\d+)?\s*(usd|cny|rmb|ut|dollars?|yuan)\b|\bprice\b|\bpay\b)/i,
      zh: /(预算|(?<!\d)\d+\s*(元|块|UT)|报酬|价格|费用|酬劳)/i,
    }),
    found: { en: 'It states a budget.', zh: '说明了预算。' },
    missing: { en: 'It states no budget.', zh: '没有说明预算。' },
    suggestion: { en: 'State a budget or a price range, so providers know whether to respond.', zh: '写明预算或价格区间，方便服务方判断是否接单。' },
  },
  {
    name: 'acceptance',
    weight: 0.15,
    met: any({
      en: /\b(acceptance|criteria|must|requirements?|required|should (include|support|have|be)|done when|pass(es)?|tests?|verified|accuracy|at least|no more than|compatible)\b/i,
      zh: /(验收|要求|必须|标准|需满足|需要满足|测试|通过|准确率|至少|不超过|不少于|兼容)/,
    }),
    found: { en: 'It says how the result will be judged.', zh: '说明了验收标准。' },
    missing: { en: 'It does not say how the result will be accepted.', zh: '没有说明如何验收。' },
    suggestion: { en: 'Add acceptance criteria: what must be true for you to accept the work.', zh: '补充验收标准：满足哪些条件才算完成。' },
  },
];

const vagueWords: Record<ClarityLanguage, RegExp> = {
  en: /\b(something|stuff|things?|somehow|whatever|anything|etc|maybe|kind of|sort of|some kind|nice|cool|good enough|you know)\b/gi,
  zh: /(一些|随便|差不多|大概|之类|什么的|等等|看着办|弄一下|搞一个|东西|随意|都行|都可以|啥的)/g,
};

/** Chinese when Han characters are at least as many as Latin words: a few English terms stay Chinese. */
export function detectLanguage(text: string): ClarityLanguage {
  const han = (text.match(/\p{Script=Han}/gu) ?? []).length;
  const latinWords = (text.match(/[A-Za-z]+/g) ?? []).length;
  return han > 0 && han >= latinWords ? 'zh' : 'en';
}

export function analyseClarity(input: string): ClarityAssessment {
  const text = input.trim();
  const language = detectLanguage(text);
  const reasons: string[] = [];
  const suggestions: string[] = [];
  let score = 0;
  for (const criterion of criteria) {
    const met = criterion.met(text, language);
    score += criterion.weight * met;
    if (met === 1) reasons.push(criterion.found[language]);
    else {
      reasons.push(criterion.missing[language]);
      suggestions.push(criterion.suggestion[language]);
    }
  }
  const vague = [...new Set((text.match(vagueWords[language]) ?? []).map((word) => word.toLowerCase()))];
  if (vague.length > 0) {
    score -= Math.min(0.2, 0.05 * vague.length);
    const quoted = vague.map((word) => (language === 'zh' ? `“${word}”` : `"${word}"`)).join(language === 'zh' ? '、' : ', ');
    reasons.push(language === 'zh' ? `含有模糊用语：${quoted}。` : `It uses vague words: ${quoted}.`);
    suggestions.push(language === 'zh' ? `把${quoted}换成具体的内容、数量或标准。` : `Replace ${quoted} with the specific thing, amount or standard you mean.`);
  }
  return { score: Math.round(Math.min(1, Math.max(0, score)) * 100) / 100, language, reasons, suggestions };
}

/** The criteria a text does not fully meet (length aside), by name: what a description optimiser adds. */
export function unmetCriteria(input: string): { language: ClarityLanguage; names: string[] } {
  const text = input.trim();
  const language = detectLanguage(text);
  return {
    language,
    names: criteria.filter((criterion) => criterion.name !== 'length' && criterion.met(text, language) < 1).map((criterion) => criterion.name),
  };
}
