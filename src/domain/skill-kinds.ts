/**
 * The kinds of skill the built-in extraction recognises (docs/skills.md "Extraction"): each with
 * its category, its name in both languages, and the words that show it in a text. English words
 * are lower case; a trailing `*` matches any word that starts so ("translat*": translate,
 * translation, translator); words with a space match as a phrase. Chinese words match anywhere.
 * The list is the words of common marketplace work, not of any test's text: where a kind is
 * missing, extraction finds nothing for it and the AI provider (when configured) may.
 */
export interface SkillKind {
  key: string;
  category: string;
  name: { en: string; zh: string };
  english: readonly string[];
  chinese: readonly string[];
}

const kind = (key: string, category: string, en: string, zh: string, english: string, chinese: string): SkillKind => ({
  key, category, name: { en, zh }, english: english.split(',').map((word) => word.trim()), chinese: chinese.split(',').map((word) => word.trim()),
});

export const skillKinds: readonly SkillKind[] = [
  kind('web_frontend', 'tech_dev', 'Web front-end development', '网页前端开发',
    'react, vue*, angular, frontend, front end, html*, css, javascript, typescript, svelte, tailwind, responsive', '前端, 网页开发, 网站开发, 网站建设'),
  kind('backend', 'tech_dev', 'Back-end and API development', '后端与接口开发',
    'backend, back end, node, nodejs, django, flask, fastapi, spring, golang, rest api*, microservice*, postgresql, mysql, mongodb, redis, database*, sql', '后端, 接口, 服务端, 数据库'),
  kind('python', 'tech_dev', 'Python programming', 'Python 编程', 'python, django, flask, fastapi, pandas, script*', 'python'),
  kind('mobile', 'tech_dev', 'Mobile app development', '移动应用开发',
    'ios, android, swift, kotlin, flutter, react native, mobile app*, mini program*', '安卓, 小程序, 移动端, 手机应用, app开发, 苹果应用'),
  kind('devops', 'tech_dev', 'Cloud and DevOps', '云服务与运维', 'docker, kubernetes, aws, azure, gcp, devops, terraform, linux, deploy*, ci pipeline*', '运维, 部署, 服务器, 云服务'),
  kind('testing', 'tech_dev', 'Software testing and QA', '软件测试', 'qa, test automation, selenium, cypress, testing, test case*, unit test*', '测试, 质量保证'),
  kind('security', 'tech_dev', 'Security testing', '安全测试', 'security, vulnerab*, pentest*, penetration test*, owasp', '渗透, 漏洞, 网络安全, 信息安全'),
  kind('ui_ux', 'design', 'UI/UX design', 'UI/UX 设计', 'ui, ux, figma, wirefram*, prototyp*, user interface*, user experience, usability', '交互设计, 界面设计, 原型, 用户体验, ui设计'),
  kind('logo_brand', 'design', 'Logo and brand identity design', '标志与品牌设计', 'logo*, brand*, visual identity, brand guideline*', '标志, 品牌, 商标, 视觉识别, logo'),
  kind('graphic', 'design', 'Graphic design', '平面设计', 'photoshop, graphic design*, poster*, flyer*, brochure*, indesign, banner*, packaging', '平面设计, 海报, 宣传册, 排版, 包装设计'),
  kind('illustration', 'illustration', 'Illustration', '插画', 'illustrat*, drawing*, character design*, comic*, procreate, sketch*', '插画, 手绘, 漫画, 绘本, 原画'),
  kind('copywriting', 'copywriting', 'Copywriting', '文案写作', 'copywrit*, blog post*, article*, content writing, slogan*, product description*, newsletter*', '文案, 撰写, 写作, 软文, 文章'),
  kind('proofreading', 'copywriting', 'Editing and proofreading', '编辑与校对', 'proofread*, copy edit*, copyedit*, editing manuscript*, grammar', '校对, 润色, 审校, 改稿'),
  kind('translation', 'translation', 'Translation', '翻译', 'translat*, locali*, interpret*, bilingual', '翻译, 口译, 笔译, 本地化, 中英, 英中, 英译中, 中译英'),
  kind('data_analysis', 'data', 'Data analysis', '数据分析',
    'data analysis, data analytics, analytics, pandas, excel, tableau, power bi, statistic*, dashboard*, data visuali*', '数据分析, 统计, 报表, 可视化, 数据挖掘'),
  kind('scraping', 'data', 'Web scraping and data collection', '数据采集与爬虫', 'scrap*, crawl*, data collection, spider*, web data', '爬虫, 数据采集, 抓取'),
  kind('labeling', 'data', 'Data labelling', '数据标注', 'annotat*, data labeling, data labelling, labeling, labelling', '标注'),
  kind('machine_learning', 'ai_automation', 'Machine learning and AI', '机器学习与人工智能',
    'machine learning, deep learning, pytorch, tensorflow, llm*, nlp, computer vision, neural network*, fine tun*', '机器学习, 深度学习, 人工智能, 大模型, 神经网络, 算法'),
  kind('automation', 'ai_automation', 'Workflow automation', '流程自动化', 'automat*, zapier, rpa, workflow*, chatbot*', '自动化, 工作流, 机器人'),
  kind('seo', 'marketing', 'SEO and search marketing', '搜索引擎优化', 'seo, sem, search engine*, google ads, keyword research', '搜索引擎优化, 关键词, 竞价, seo'),
  kind('social_media', 'marketing', 'Social media marketing', '社交媒体运营',
    'social media, instagram, tiktok, facebook, influencer*, community management', '新媒体, 社交媒体, 小红书, 抖音, 微博, 公众号, 运营'),
  kind('marketing', 'marketing', 'Marketing strategy', '营销策划', 'marketing, campaign*, go to market, market research, growth', '营销, 策划, 推广, 市场调研'),
  kind('video_editing', 'video', 'Video editing', '视频剪辑',
    'video edit*, premiere, final cut, after effects, davinci, motion graphics, video production, youtube, footage', '剪辑, 视频制作, 短视频, 视频后期'),
  kind('animation', 'video', 'Animation', '动画制作', 'animat*, motion design, blender, maya, 3d model*', '动画, 三维, 建模'),
  kind('voiceover', 'audio', 'Voice-over and narration', '配音与朗读', 'voiceover*, voice over, narrat*, dubbing, podcast*, audiobook*', '配音, 朗读, 播音, 播客, 有声书'),
  kind('music', 'audio', 'Music production', '音乐制作', 'music, compos*, mixing, mastering, sound design, song*', '作曲, 编曲, 混音, 音乐'),
  kind('transcription', 'audio', 'Transcription and subtitles', '听写转录与字幕', 'transcri*, caption*, subtit*', '转录, 转写, 听写, 字幕, 速记'),
  kind('photography', 'photography', 'Photography', '摄影', 'photograph*, photo shoot*, portrait*, lightroom, retouch*, camera', '摄影, 拍摄, 修图, 写真'),
  kind('tutoring', 'education', 'Tutoring and teaching', '辅导与教学', 'tutor*, teach*, lesson*, course*, coach*, instructor*, mentor*', '辅导, 家教, 教学, 授课, 培训, 老师, 课程'),
  kind('academic', 'academic', 'Academic research and writing', '学术研究与写作', 'thesis, dissertation*, literature review, academic*, journal*, citation*, research paper*', '论文, 学术, 文献, 科研'),
  kind('consulting', 'consulting', 'Business consulting', '商业咨询', 'consult*, advis*, strateg*, business plan*', '咨询, 顾问, 商业计划'),
  kind('project_management', 'business', 'Project management', '项目管理', 'project manag*, scrum, agile, pmp, jira, product manag*, roadmap*', '项目管理, 产品经理, 敏捷, 需求分析'),
  kind('ecommerce', 'ecommerce', 'E-commerce operations', '电商运营', 'shopify, amazon, ecommerce, e commerce, online store*, product listing*, taobao', '电商, 淘宝, 天猫, 京东, 店铺, 拼多多, 网店'),
  kind('legal', 'legal_finance', 'Legal documents and contracts', '法律文书与合同', 'contract*, legal, lawyer*, compliance, terms of service, attorney*', '合同, 法律, 律师, 合规, 法务'),
  kind('accounting', 'legal_finance', 'Bookkeeping and accounting', '记账与财务',
    'bookkeep*, accounting, accountant*, tax*, invoic*, quickbooks, financial statement*, audit*', '会计, 记账, 财务, 税务, 报税, 审计'),
  kind('recruiting', 'hr_admin', 'Recruiting and HR', '招聘与人事', 'recruit*, hiring, human resources, payroll, onboarding, talent acquisition', '招聘, 人事, 人力资源, 薪酬'),
  kind('assistant', 'hr_admin', 'Virtual assistance and customer support', '行政助理与客服',
    'virtual assistant*, data entry, scheduling, administrative, customer support, customer service', '行政, 助理, 客服, 录入'),
  kind('home_services', 'life_service', 'Home services', '家政与生活服务', 'cleaning, cooking, pet sitting, babysit*, moving, errand*, housekeep*', '保洁, 家政, 做饭, 搬家, 跑腿, 宠物'),
  kind('repair', 'repair', 'Repair and installation', '维修与安装', 'repair*, install*, plumb*, electrician*, assembl*', '维修, 修理, 安装, 水电'),
  kind('fitness', 'health', 'Fitness and health coaching', '健身与健康指导', 'fitness, personal train*, yoga, nutrition*, diet*, workout*', '健身, 瑜伽, 营养, 减脂, 康复'),
];
