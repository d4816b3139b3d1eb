import { h } from './dom.js';
import { t, has } from './i18n.js';
import { money } from './money.js';

// An API refusal as a person reads it: what happened and what to do, in the page's language,
// with the numbers the envelope carries (balance, price, wait) and the server's own sentence.
export function explain(envelope, context) {
  const code = envelope.code;
  const data = envelope.data || {};
  const scoped = context && has(`error.${context}.${code}`) ? `error.${context}.${code}` : null;
  const key = scoped || (has(`error.${code}`) ? `error.${code}` : 'error.other');
  const values = {
    code,
    seconds: data.retry_after_seconds ?? 60,
    available: data.available !== undefined ? money(data.available, data.currency) : '',
    required: data.required !== undefined ? money(data.required, data.currency) : '',
    price: data.price !== undefined ? money(data.price, data.currency) : '',
    ceiling: data.max_price !== undefined ? money(data.max_price, data.currency) : '',
    status: data.status ?? '',
    left: data.left_today !== undefined ? (data.left_today === null ? t('budget.no-bound') : money(data.left_today, data.currency)) : '',
  };
  const todoKey = `${key}.todo`;
  return {
    what: t(key, values),
    todo: has(todoKey) ? t(todoKey, values) : '',
    // A refusal this page has its own sentence for (an email already taken on sign-up) is said once,
    // in the page's language: the server's English sentence would only repeat it.
    detail: typeof data.detail === 'string' && !scoped ? data.detail : '',
  };
}

/** The explanation as an alert box: the sentence, what to do, and the server's words if any. */
export function errorBox(envelope, context) {
  const { what, todo, detail } = explain(envelope, context);
  return h(
    'div',
    { class: 'problem', role: 'alert' },
    h('p', { class: 'problem-what' }, what),
    todo && h('p', { class: 'problem-todo' }, todo),
    detail && h('p', { class: 'problem-detail' }, t('error.server-said', { detail })),
  );
}
