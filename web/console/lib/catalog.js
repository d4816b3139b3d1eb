import { get } from './api.js';
import { language, t } from './i18n.js';

// Categories (public, read once) and the words for the API's fixed values.
let categories = null;

export async function loadCategories() {
  if (!categories) {
    const envelope = await get('/api/v1/categories');
    categories = envelope.code === 0 ? envelope.data : [];
  }
  return categories;
}

export function categoryLabel(code) {
  if (!code) return t('category.none');
  const found = (categories || []).find((category) => category.code === code);
  if (!found) return code;
  return language() === 'zh' ? found.label : found.label_en;
}

export const categoryOptions = (empty) => [['', empty], ...(categories || []).map((category) => [category.code, categoryLabel(category.code)])];

/** t('status.task.open'), falling back to the API's own word. */
export function word(group, value) {
  const key = `${group}.${value}`;
  const text = t(key);
  return text === key ? String(value) : text;
}
