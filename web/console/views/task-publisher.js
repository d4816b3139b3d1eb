import { api, retryKey } from '../lib/api.js';
import { word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { amountProblem, money, normalAmount, toMinor } from '../lib/money.js';
import { applicationBadge, endedWithoutWork } from '../lib/transactions.js';
import { holdPreview, showPublished } from './publish.js';
import { pushesSection, ratingSection } from './task-publisher-parts.js';

// The publisher's side of a task: what publishing held (or why it stayed a draft), the draft's
// publish form, the applications with the price and ceiling of each accept stated on its button,
// pushes and recommendations, closing, and after the match the transaction and the rating.
const skillNames = new Map();
async function skillName(id) {
  if (!skillNames.has(id)) {
    const envelope = await api('GET', `/api/v1/skills/${id}`);
    skillNames.set(id, envelope.code === 0 ? envelope.data.name : id.slice(0, 8));
  }
  return skillNames.get(id);
}

async function walletNotice(task, ctx) {
  const wallet = await api('GET', '/api/v1/wallet/');
  const held = money(task.bounty_held, task.bounty_currency);
  const cash = wallet.code === 0 ? wallet.data.cash : null;
  return h(
    'div',
    { class: 'notice', role: 'status' },
    h('p', null, t('task.published-held', { held })),
    cash && h('p', null, t('task.wallet-after', { available: money(cash.available, 'CNY'), held: money(cash.frozen, 'CNY') })),
    ctx.query.get('published') && h('p', null, h('a', { href: '#/hire' }, t('task.to-hire'))),
  );
}

/**
 * What a draft's notice says, from the wallet as it is now (read with the publish form's preview,
 * and again when the person comes back to the tab): short by how much, or that the balance now
 * covers the bounty. Never from the address, which would keep the balance of the moment it was kept.
 */
function draftNotice(ctx, task, cash) {
  const bounty = task.bounty_amount === null ? null : toMinor(task.bounty_amount);
  const available = cash ? toMinor(cash.available) : null;
  const kept = ctx.query.get('kept') ? 'task.draft-short' : 'task.draft-short-now';
  let lines = [t('task.draft')];
  if (bounty !== null && available !== null && bounty > available)
    lines = [t(kept, { available: money(available, 'CNY'), required: money(bounty, 'CNY') }), t('task.draft-todo')];
  else if (bounty !== null && available !== null && bounty > 0n)
    lines = [t('task.draft-covered', { available: money(available, 'CNY'), required: money(bounty, 'CNY') })];
  return h(
    'div',
    { class: 'notice warning', role: 'status', id: 'draft-notice' },
    lines.map((line) => h('p', null, line)),
  );
}

async function publishDraft(ctx, task, update, notices) {
  let wallet = await api('GET', '/api/v1/wallet/');
  const preview = h('div', { class: 'notice', 'aria-live': 'polite' });
  const bounty = field({ name: 'bounty_amount', label: t('task.field.bounty'), inputmode: 'decimal', value: task.bounty_amount ?? '', currency: 'CNY' });
  const show = () => {
    if (wallet.code !== 0) return;
    preview.replaceChildren(...holdPreview(wallet.data.cash, bounty.input.value).map((line) => h('p', null, line)));
    notices.replaceChildren(draftNotice(ctx, task, wallet.data.cash));
  };
  bounty.input.addEventListener('input', show);
  show();
  // Money added meanwhile (in another tab, by the operator) shows when the person comes back to this one.
  const again = async () => {
    if (document.visibilityState !== 'visible') return;
    const fresh = await api('GET', '/api/v1/wallet/');
    if (fresh.code !== 0) return;
    wallet = fresh;
    show();
  };
  document.addEventListener('visibilitychange', again);
  window.addEventListener('focus', again);
  ctx.onLeave(() => {
    document.removeEventListener('visibilitychange', again);
    window.removeEventListener('focus', again);
  });
  const key = retryKey();
  return h(
    'section',
    { 'aria-labelledby': 'publish-draft' },
    h('h2', { id: 'publish-draft' }, t('task.publish-draft')),
    form({
      label: t('task.publish-draft'),
      submit: t('task.publish-draft.submit'),
      fields: [
        field({
          name: 'delivery_hours',
          label: t('task.field.delivery-hours'),
          inputmode: 'numeric',
          required: true,
          value: task.delivery_hours ?? '',
          hint: t('task.restate'),
        }),
        bounty,
        preview,
      ],
      onSubmit: async (element) => {
        const body = { delivery_hours: Number(valueOf(element, 'delivery_hours')) };
        const amount = valueOf(element, 'bounty_amount');
        body.bounty_amount = amount === '' ? null : normalAmount(amount);
        const problem = amount === '' ? null : amountProblem(amount);
        if (problem) return showProblem(element, { code: 4000, data: { errors: [{ path: 'bounty_amount', message: problem }] } });
        const envelope = await api('POST', `/api/v1/tasks/${task.id}/publish-draft`, { body, retry: key });
        if (envelope.code !== 0) return showProblem(element, envelope, 'publish');
        ctx.announce(t('publish.done'));
        ctx.navigate(`/tasks/${task.id}?published=1`);
        await update(envelope.data);
      },
    }),
  );
}

/** What accepting costs, said before the click: the price, the ceiling sent, and where the money comes from. */
function acceptTerms(task, application) {
  const price = application.proposed_price ?? task.bounty_amount;
  if (price === null) return { price: null, text: t('accept.no-price') };
  const held = toMinor(task.bounty_held);
  const difference = toMinor(price) - held;
  const currency = task.bounty_currency;
  const source =
    difference > 0n
      ? t('accept.more', { amount: money(difference, currency) })
      : difference < 0n
        ? t('accept.back', { amount: money(-difference, currency) })
        : t('accept.same');
  return {
    price,
    text: t('accept.terms', { price: money(price, currency), ceiling: money(price, currency), held: money(held, currency), source }),
  };
}

function applicationRow(ctx, task, application, name, deal) {
  const problem = h('div');
  const terms = acceptTerms(task, application);
  const key = retryKey();
  const termsId = `terms-${application.id}`;
  const actions = [];
  if (application.status === 'pending' && task.status === 'open') {
    actions.push(
      h('p', { id: termsId, class: 'terms' }, terms.text),
      h(
        'div',
        { class: 'actions' },
        terms.price !== null &&
          h(
            'button',
            {
              type: 'button',
              class: 'primary',
              'aria-describedby': termsId,
              onClick: async (event) => {
                const button = event.currentTarget;
                button.disabled = true;
                const envelope = await api('POST', `/api/v1/tasks/${task.id}/applications/${application.id}/accept`, {
                  body: { max_price: terms.price },
                  retry: key,
                });
                button.disabled = false;
                if (envelope.code !== 0) {
                  problem.replaceChildren(errorBox(envelope, 'accept'));
                  return button.focus();
                }
                ctx.announce(t('accept.done'));
                ctx.navigate(`/transactions/${envelope.data.transaction.id}`);
              },
            },
            t('accept.button', { name, price: money(terms.price, task.bounty_currency) }),
          ),
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onClick: async () => {
              const envelope = await api('POST', `/api/v1/tasks/${task.id}/applications/${application.id}/reject`, { idempotent: true });
              if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
              ctx.announce(t('application.rejected'));
            },
          },
          t('application.reject', { name }),
        ),
      ),
    );
  }
  return h(
    'li',
    { class: 'card', 'data-id': application.id, 'data-status': application.status },
    h('h3', null, name, ' ', applicationBadge(application, deal)),
    h(
      'p',
      { class: 'meta' },
      application.proposed_price === null
        ? t('application.no-price')
        : t('application.asks', { price: money(application.proposed_price, task.bounty_currency) }),
      ' · ',
      when(application.applied_at),
    ),
    application.message && h('p', { class: 'text' }, application.message),
    actions,
    problem,
  );
}

function applicationsSection(ctx, task) {
  const list = h('ul', { class: 'cards' });
  const empty = h('p', { class: 'hint' }, t('applications.empty'));
  const problem = h('div');
  const section = h('section', { 'aria-labelledby': 'applications' }, h('h2', { id: 'applications' }, t('applications.title')), problem, empty, list);
  section.load = async (current, deal) => {
    const envelope = await api('GET', `/api/v1/tasks/${current.id}/applications`, { query: { page_size: 50 } });
    if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
    const seen = new Set();
    for (const application of envelope.data.items) {
      seen.add(application.id);
      const old = list.querySelector(`[data-id="${application.id}"]`);
      if (old && old.dataset.status === application.status && current.status === 'open') continue;
      const row = applicationRow(ctx, current, application, await skillName(application.skill_id), deal);
      if (old) old.replaceWith(row);
      else list.append(row);
    }
    empty.hidden = seen.size > 0;
  };
  return section;
}

function closeSection(ctx, task) {
  const problem = h('div');
  return h(
    'section',
    { 'aria-labelledby': 'close-task' },
    h('h2', { id: 'close-task' }, t('task.close')),
    h('p', null, t('task.close.lead', { held: money(task.bounty_held, task.bounty_currency) })),
    problem,
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onClick: async () => {
          const envelope = await api('POST', `/api/v1/tasks/${task.id}/close`, { idempotent: true });
          if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
          ctx.announce(t('task.closed'));
        },
      },
      t('task.close.button'),
    ),
  );
}

/** A transaction that ended without the work: the money is back, and the task can be published again. */
function matchedSection(ctx, task, deal) {
  const status = deal ? deal.status : null;
  const toTransaction = h('a', { href: `#/transactions/${task.transaction_id}` }, t('task.to-transaction'));
  if (endedWithoutWork.includes(status)) {
    // One sentence per way of ending: who ended it and where the money went.
    return h(
      'section',
      { 'aria-labelledby': 'matched' },
      h('h2', { id: 'matched' }, t('task.ended-without-work')),
      h('p', null, t(`task.ended.${status}`, { price: money(deal.price_ut, deal.currency) }), ' ', toTransaction),
      reuseForm(ctx, task),
    );
  }
  return h(
    'section',
    { 'aria-labelledby': 'matched' },
    h('h2', { id: 'matched' }, t('task.matched')),
    h('p', null, status ? t('task.matched.status', { status: word('status.transaction', status) }) : null, ' ', toTransaction),
  );
}

/** Publishing the task again (POST /tasks/{id}/reuse), restating its delivery time and bounty, as the API asks. */
function reuseForm(ctx, task) {
  const key = retryKey();
  return form({
    label: t('task.reuse'),
    submit: t('task.reuse.submit'),
    fields: [
      field({ name: 'delivery_hours', label: t('task.field.delivery-hours'), inputmode: 'numeric', required: true, value: task.delivery_hours ?? '' }),
      field({
        name: 'bounty_amount',
        label: t('task.field.bounty'),
        inputmode: 'decimal',
        value: task.bounty_amount ?? '',
        hint: t('task.field.bounty.hint'),
        currency: 'CNY',
      }),
    ],
    onSubmit: async (element) => {
      const hours = valueOf(element, 'delivery_hours');
      const bounty = valueOf(element, 'bounty_amount');
      const problem = bounty === '' ? null : amountProblem(bounty);
      if (problem) return showProblem(element, { code: 4000, data: { errors: [{ path: 'bounty_amount', message: problem }] } });
      const body = { delivery_hours: /^\d{1,4}$/.test(hours) ? Number(hours) : hours, bounty_amount: bounty === '' ? null : normalAmount(bounty) };
      showPublished(ctx, element, await api('POST', `/api/v1/tasks/${task.id}/reuse`, { body, retry: key }));
    },
  });
}

export async function build(ctx, first, firstDeal) {
  const notices = h('div');
  const element = h('div');
  let shown = null;
  let applications = null;
  let pushes = null;

  async function update(task, deal = null) {
    // A draft's notice is drawn with its publish form, from the same reading of the wallet.
    if (task.status === 'open' && (ctx.query.get('published') || (shown || '').startsWith('draft'))) notices.replaceChildren(await walletNotice(task, ctx));
    else if (task.status !== 'open' && task.status !== 'draft') notices.replaceChildren();
    const now = `${task.status}:${deal ? deal.status : ''}`;
    if (now !== shown) {
      shown = now;
      pushes = task.status === 'open' ? await pushesSection(ctx, task) : null;
      applications = task.status === 'draft' ? null : applicationsSection(ctx, task);
      const parts = [];
      if (task.status === 'draft') parts.push(await publishDraft(ctx, task, update, notices));
      if (task.status === 'matched') {
        const matched = matchedSection(ctx, task, deal);
        // Nothing to rate when the work was never done.
        parts.push(matched, matched.querySelector('form') ? null : await ratingSection(ctx, task));
      }
      if (applications) parts.push(applications);
      if (task.status === 'open') parts.push(pushes, closeSection(ctx, task));
      element.replaceChildren(...parts.filter(Boolean));
    } else if (pushes) await pushes.reload();
    if (applications) await applications.load(task, deal);
  }
  await update(first, firstDeal);
  return { notices, element, update };
}
