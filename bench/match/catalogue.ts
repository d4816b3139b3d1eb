/**
 * A synthetic market for the matching benchmark: listings built from realistic pieces (a service,
 * a subject, a promise) in English and Chinese, so that common words ("data", "report", "数据")
 * recur across thousands of listings as they do in a real market, and the candidate stage has to
 * cope with large posting lists rather than with a vocabulary that never repeats.
 */
const englishServices = [
  ['Translate', 'translation', 'translation'],
  ['Summarize', 'summary', 'copywriting'],
  ['Clean and deduplicate', 'data cleaning', 'data'],
  ['Scrape', 'web scraping', 'data'],
  ['Transcribe', 'transcription', 'audio'],
  ['Write SEO articles about', 'SEO copywriting', 'marketing'],
  ['Build a dashboard for', 'dashboard', 'data'],
  ['Review the code of', 'code review', 'tech_dev'],
  ['Design a logo for', 'logo design', 'design'],
  ['Edit videos of', 'video editing', 'video'],
  ['Classify images of', 'image classification', 'ai_automation'],
  ['Answer legal questions on', 'legal advice', 'legal_finance'],
  ['Prepare tax filings for', 'tax filing', 'legal_finance'],
  ['Tutor students in', 'tutoring', 'education'],
  ['Generate unit tests for', 'test generation', 'tech_dev'],
  ['Extract tables from', 'PDF extraction', 'data'],
  ['Monitor prices of', 'price monitoring', 'ecommerce'],
  ['Write product descriptions for', 'product copy', 'ecommerce'],
  ['Analyse sentiment of', 'sentiment analysis', 'ai_automation'],
  ['Proofread', 'proofreading', 'copywriting'],
] as const;

const englishSubjects = [
  'financial reports',
  'customer reviews',
  'research papers',
  'legal contracts',
  'podcast episodes',
  'online shops',
  'mobile apps',
  'medical records',
  'real estate listings',
  'job postings',
  'news articles',
  'social media posts',
  'sales data',
  'product catalogs',
  'user interviews',
  'support tickets',
  'academic theses',
  'marketing emails',
  'invoices',
  'restaurant menus',
  'travel guides',
  'software documentation',
  'survey results',
  'YouTube channels',
] as const;

const englishPromises = [
  'Delivered within 24 hours in JSON or CSV.',
  'Accuracy above 98%, checked by a second pass.',
  'Fast turnaround, fixed price per item.',
  'Includes a short report with the main findings.',
  'API access with a per-query price.',
  'Native speakers, industry terminology.',
  'Up to 10,000 items per order.',
  'Export to Excel, Google Sheets or a database.',
] as const;

const chineseServices = [
  ['翻译', '翻译服务', 'translation'],
  ['总结', '摘要', 'copywriting'],
  ['清洗', '数据清洗', 'data'],
  ['采集', '网页数据采集', 'data'],
  ['转写', '语音转文字', 'audio'],
  ['撰写', '文案写作', 'marketing'],
  ['制作', '数据看板', 'data'],
  ['审查', '代码审查', 'tech_dev'],
  ['设计', '标志设计', 'design'],
  ['剪辑', '视频剪辑', 'video'],
  ['标注', '图片标注', 'ai_automation'],
  ['解答', '法律咨询', 'legal_finance'],
  ['辅导', '课程辅导', 'education'],
  ['提取', '表格提取', 'data'],
  ['监控', '价格监控', 'ecommerce'],
  ['分析', '情感分析', 'ai_automation'],
] as const;

const chineseSubjects = [
  '财务报表',
  '用户评论',
  '学术论文',
  '法律合同',
  '播客节目',
  '网店商品',
  '手机应用',
  '医疗记录',
  '房产信息',
  '招聘信息',
  '新闻文章',
  '社交媒体帖子',
  '销售数据',
  '产品目录',
  '客服工单',
  '毕业论文',
  '营销邮件',
  '发票',
  '旅游攻略',
  '软件文档',
  '问卷结果',
  '短视频',
] as const;

const chinesePromises = [
  '24小时内交付，支持JSON或CSV格式。',
  '准确率98%以上，人工复核。',
  '按条计费，价格透明。',
  '附带简要分析报告。',
  '提供API按次调用。',
  '行业术语准确，母语译者。',
] as const;

export interface Listing {
  title: string;
  description: string;
  category: string;
  tags: string[];
  priceMinorUnits: number;
}

/** The listing at position `index`: the same index always gives the same listing. */
export function listingAt(index: number): Listing {
  const pick = <T>(values: readonly T[], salt: number) => values[(index * salt + Math.floor(index / values.length)) % values.length]!;
  const priceMinorUnits = 100 + ((index * 7919) % 20_000);
  if (index % 3 === 2) {
    const [verb, service, category] = pick(chineseServices, 7);
    const subject = pick(chineseSubjects, 11);
    return {
      title: `${verb}${subject}（${service}）`,
      description: `专业${service}：${verb}${subject}。${pick(chinesePromises, 5)}`,
      category,
      tags: [service],
      priceMinorUnits,
    };
  }
  const [verb, service, category] = pick(englishServices, 7);
  const subject = pick(englishSubjects, 11);
  return {
    title: `${verb} ${subject}`,
    description: `Professional ${service} of ${subject}. ${pick(englishPromises, 5)}`,
    category,
    tags: [service],
    priceMinorUnits,
  };
}

/** What buyers ask for: specific needs in both languages, some sharing only common words with the market. */
export const benchDemands = [
  'I need my quarterly financial reports translated from English to German, keeping the accounting terms.',
  'Summarize 200 customer reviews of our mobile app and list the main complaints.',
  'Scrape real estate listings from three websites every day and deliver a CSV.',
  'Transcribe ten podcast episodes with speaker labels.',
  'Clean and deduplicate a customer database of 50,000 rows.',
  'Review the code of our payment service for security problems.',
  'Design a logo for a small coffee shop.',
  'Monitor the prices of 500 products on competitor online shops.',
  'Write product descriptions for a catalog of kitchen tools.',
  'Analyse the sentiment of social media posts about our brand.',
  '把我们的财务报表翻译成英文，保留会计术语。',
  '需要对一万条用户评论做情感分析，输出正负面比例。',
  '每天采集招聘网站的招聘信息，整理成表格。',
  '帮我把播客节目转写成文字稿。',
  '审查我们的代码，找出安全漏洞。',
  '为新开的咖啡店设计一个标志。',
  '剪辑一段三分钟的产品宣传短视频。',
  '从发票PDF中提取表格数据到Excel。',
  'Translate our legal contracts into Chinese (翻译法律合同).',
  'Need a dashboard for weekly sales data with charts.',
] as const;
