import { api } from '../lib/api.js';
import { h, uid } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, fieldError, form, showProblem, valueOf } from '../lib/forms.js';
import { categoryLabel } from '../lib/catalog.js';
import { t, when } from '../lib/i18n.js';
import { amountProblem, money, normalAmount } from '../lib/money.js';

// One key's agent budget on My agents (docs/decisions/money-and-escrow.md "Agent budgets"): its
// bounds and what is left today as the key list tells them, a form that sets or changes it (PUT,
// the API's own messages beside their fields) and a button that removes it (DELETE). The engine
// decides every charge; the page only shows and edits the person's choice.

function bounds(budget) {
  const bound = (amount) => (amount === null ? t('budget.no-bound') : money(amount, budget.currency));
  return h(
    'dl',
    { class: 'details' },
    h('dt', null, t('budget.per-purchase')),
    h('dd', null, bound(budget.per_purchase_max)),
    h('dt', null, t('budget.daily')),
    h('dd', null, bound(budget.daily_max)),
    h('dt', null, t('budget.spent-today')),
    h('dd', null, money(budget.spent_today, budget.currency)),
    h('dt', null, t('budget.left-today')),
    h('dd', { class: 'amount budget-left' }, bound(budget.left_today)),
    budget.categories && [h('dt', null, t('budget.categories')), h('dd', null, budget.categories.map(categoryLabel).join(', '))],
    budget.capability_ids && [h('dt', null, t('budget.capabilities')), h('dd', { class: 'code' }, budget.capability_ids.join(', '))],
    budget.resets_at && [h('dt', null, t('budget.resets')), h('dd', null, when(budget.resets_at))],
  );
}

/** The categories as check boxes in a fieldset (one name, so the API's message goes to the form's alert). */
function categoryChoice(categories, chosen) {
  const boxes = categories.map((category) => {
    const id = uid('budget-category');
    return h(
      'div',
      { class: 'field field-check' },
      h('input', { type: 'checkbox', id, name: 'categories', value: category.code, checked: chosen.includes(category.code) }),
      h('label', { for: id }, categoryLabel(category.code)),
    );
  });
  return h(
    'details',
    { class: 'budget-categories', open: chosen.length > 0 },
    h('summary', null, t('budget.form.categories')),
    h('fieldset', null, h('legend', null, t('budget.form.categories.legend')), h('div', { class: 'check-grid' }, boxes)),
  );
}

const amountOrNull = (text) => (text === '' ? null : text);

function budgetForm(key, budget, categories, done) {
  const name = key.name || key.key_prefix;
  const fields = [
    field({
      name: 'per_purchase_max',
      label: t('budget.form.per-purchase'),
      inputmode: 'decimal',
      value: budget?.per_purchase_max ?? '',
      hint: t('budget.form.empty-hint'),
    }),
    field({ name: 'daily_max', label: t('budget.form.daily'), inputmode: 'decimal', value: budget?.daily_max ?? '', hint: t('budget.form.empty-hint') }),
    categoryChoice(categories, budget?.categories ?? []),
    field({
      name: 'capability_ids',
      label: t('budget.form.capabilities'),
      type: 'textarea',
      rows: 2,
      value: (budget?.capability_ids ?? []).join('\n'),
      hint: t('budget.form.capabilities.hint'),
    }),
  ];
  return form({
    label: t('budget.form.label', { name }),
    submit: t(budget ? 'budget.form.change' : 'budget.form.set', { name }),
    fields,
    onSubmit: async (element) => {
      const perPurchase = valueOf(element, 'per_purchase_max');
      const daily = valueOf(element, 'daily_max');
      // The page checks only what it can say better than the API; the API stays the judge.
      let wrong = false;
      for (const [fieldName, text] of [
        ['per_purchase_max', perPurchase],
        ['daily_max', daily],
      ]) {
        if (text !== '' && amountProblem(text, 'UT')) wrong = fieldError(element, fieldName, amountProblem(text, 'UT')) || wrong;
      }
      if (wrong) return element.querySelector('[aria-invalid]').focus();
      const categories = [...element.querySelectorAll('input[name="categories"]:checked')].map((box) => box.value);
      const capabilities = valueOf(element, 'capability_ids')
        .split(/[\s,]+/)
        .filter(Boolean);
      const envelope = await api('PUT', `/api/v1/auth/api-keys/${key.id}/budget`, {
        body: {
          per_purchase_max: amountOrNull(normalAmount(perPurchase)),
          daily_max: amountOrNull(normalAmount(daily)),
          categories: categories.length ? categories : null,
          capability_ids: capabilities.length ? capabilities : null,
        },
      });
      if (envelope.code !== 0) return showProblem(element, envelope, 'budget');
      await done(t('budget.saved', { name }));
    },
  });
}

/**
 * The budget part of a key's card; `ctx.announce` says what changed, `reload` redraws the list,
 * `categories` is the public list (loadCategories(), read before the cards are drawn).
 */
export function budgetPanel(ctx, key, reload, categories) {
  if (!('budget' in key)) return null;
  const budget = key.budget;
  const name = key.name || key.key_prefix;
  const problem = h('div');
  // The list is drawn again with the new numbers; focus returns to this key's budget heading.
  const done = async (message) => {
    ctx.announce(message);
    await reload();
    document.getElementById(`budget-${key.id}`)?.focus();
  };
  const editable = !key.revoked_at;
  return h(
    'div',
    { class: 'budget' },
    h('h4', { id: `budget-${key.id}`, tabindex: '-1' }, t('budget.title')),
    budget ? bounds(budget) : h('p', { class: 'hint' }, t('budget.none')),
    editable &&
      h(
        'details',
        { class: 'budget-edit' },
        h('summary', null, t(budget ? 'budget.edit.change' : 'budget.edit.set', { name })),
        budgetForm(key, budget, categories, done),
      ),
    editable &&
      budget &&
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onClick: async () => {
              if (!window.confirm(t('budget.remove.confirm', { name }))) return;
              const envelope = await api('DELETE', `/api/v1/auth/api-keys/${key.id}/budget`);
              if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope, 'budget'));
              await done(t('budget.removed', { name }));
            },
          },
          t('budget.remove', { name }),
        ),
      ),
    problem,
  );
}
