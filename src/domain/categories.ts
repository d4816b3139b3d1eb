/** The 22 category codes of the specification, with Chinese and English labels. */
export interface Category {
  code: string;
  label: string;
  label_en: string;
  icon: string;
  description: string;
}

const rows: [code: string, label: string, labelEnglish: string, icon: string, description: string][] = [
  ['tech_dev', '技术开发', 'Tech & Development', '💻', 'Software, web, mobile and backend development'],
  ['design', '设计', 'Design', '🎨', 'UI, UX, graphic and brand design'],
  ['copywriting', '文案写作', 'Copywriting', '✍️', 'Articles, marketing copy and scripts'],
  ['translation', '翻译', 'Translation', '🌐', 'Translation and localization between languages'],
  ['data', '数据', 'Data', '📊', 'Data collection, cleaning, analysis and labelling'],
  ['consulting', '咨询', 'Consulting', '💡', 'Expert advice and strategy'],
  ['marketing', '营销推广', 'Marketing', '📣', 'Promotion, growth and social media'],
  ['video', '视频', 'Video', '🎬', 'Video shooting, editing and production'],
  ['audio', '音频', 'Audio', '🎧', 'Voice-over, music and audio editing'],
  ['education', '教育培训', 'Education', '📚', 'Tutoring, courses and training'],
  ['life_service', '生活服务', 'Life Services', '🏠', 'Errands, housekeeping and everyday help'],
  ['business', '商务服务', 'Business Services', '💼', 'Business support and operations'],
  ['legal_finance', '法律财务', 'Legal & Finance', '⚖️', 'Legal, accounting and tax services'],
  ['photography', '摄影', 'Photography', '📷', 'Photo shooting and retouching'],
  ['ecommerce', '电商', 'E-commerce', '🛒', 'Online store setup and operations'],
  ['ai_automation', 'AI与自动化', 'AI & Automation', '🤖', 'AI agents, workflows and automation'],
  ['academic', '学术', 'Academic', '🎓', 'Research, papers and academic support'],
  ['illustration', '插画', 'Illustration', '🖌️', 'Illustration, drawing and comics'],
  ['repair', '维修', 'Repair', '🔧', 'Device, appliance and home repair'],
  ['health', '健康', 'Health', '🩺', 'Fitness, nutrition and wellbeing'],
  ['hr_admin', '人事行政', 'HR & Admin', '🗂️', 'Recruiting, HR and administrative work'],
  ['other', '其他', 'Other', '📦', 'Anything that fits no other category'],
];

export const categories: readonly Category[] = rows.map(([code, label, label_en, icon, description]) => ({
  code,
  label,
  label_en,
  icon,
  description,
}));

export const categoryCodes = categories.map((category) => category.code) as [string, ...string[]];
