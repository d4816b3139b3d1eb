// The page's own words: one file per language (i18n/en.js, i18n/zh.js), chosen from the browser's
// languages (zh* reads Chinese, everything else English), or the person's own choice, kept in this
// browser. What people typed is never translated.
const choiceKey = 'agent-marketplace.console-language';
export const languages = ['en', 'zh'];
let words = {};
let current = 'en';

export function chooseLanguage() {
  const chosen = localStorage.getItem(choiceKey);
  if (languages.includes(chosen)) return chosen;
  for (const tag of navigator.languages || [navigator.language || 'en']) {
    const base = String(tag).toLowerCase().split('-')[0];
    if (languages.includes(base)) return base;
  }
  return 'en';
}

export async function loadLanguage(language) {
  words = (await import(`../i18n/${language}.js`)).default;
  current = language;
  document.documentElement.lang = language === 'zh' ? 'zh-CN' : 'en';
}

export function rememberLanguage(language) {
  localStorage.setItem(choiceKey, language);
}

export const language = () => current;

/** t('hall.title') or t('money.held', {amount}): the word, with {name} replaced; a missing key shows itself. */
export function t(key, values) {
  const text = words[key] ?? key;
  return values ? text.replace(/\{(\w+)\}/g, (whole, name) => (name in values ? String(values[name]) : whole)) : text;
}

export const has = (key) => key in words;

/** A date and time in the page's language, or '' for none. */
export function when(iso) {
  if (!iso) return '';
  return new Date(iso).toLocaleString(current === 'zh' ? 'zh-CN' : 'en-GB', { dateStyle: 'medium', timeStyle: 'short' });
}
