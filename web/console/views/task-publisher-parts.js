import { api } from '../lib/api.js';
import { word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { amountProblem, money, normalAmount } from '../lib/money.js';

// The publisher's pushes (recommended skills to invite or select at a price, and the pushes sent)
// and the rating of the matched skill once its transaction has settled.
function pushRow(ctx, task, push, reload) {
  const problem = h('div');
  return h(
    'li',
    { class: 'row' },
    h('span', null, push.skill_name || push.skill_id.slice(0, 8)),
    ' ',
    h('span', { class: `badge status-${push.status}` }, word('status.push', push.status)),
    ' ',
    h('span', { class: 'hint' }, push.kind === 'selection' ? t('push.selection-at', { price: money(push.price, task.bounty_currency) }) : t('push.invitation')),
    push.status === 'pending' &&
      h(
        'button',
        {
          type: 'button',
          class: 'link',
          onClick: async () => {
            const envelope = await api('DELETE', `/api/v1/tasks/${task.id}/pushes/${push.id}`);
            if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
            ctx.announce(t('push.withdrawn'));
            await reload();
          },
        },
        t('push.withdraw'),
      ),
    problem,
  );
}

function candidateRow(ctx, task, candidate, reload) {
  const problem = h('div');
  const priceField = field({
    name: 'price',
    label: t('push.price', { name: candidate.name }),
    inputmode: 'decimal',
    value: candidate.ut_price ?? task.bounty_amount ?? '',
  });
  const choose = form({
    label: t('push.select', { name: candidate.name }),
    submit: t('push.select', { name: candidate.name }),
    fields: [priceField],
    extra: h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onClick: async () => {
          const envelope = await api('POST', `/api/v1/tasks/${task.id}/push-skill`, { body: { skill_id: candidate.skill_id } });
          if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope, 'push'));
          ctx.announce(t('push.invited'));
          await reload();
        },
      },
      t('push.invite', { name: candidate.name }),
    ),
    onSubmit: async (element) => {
      const price = valueOf(element, 'price');
      const problem = amountProblem(price, task.bounty_currency);
      if (problem) return showProblem(element, { code: 4000, data: { errors: [{ path: 'price', message: problem }] } });
      const envelope = await api('POST', `/api/v1/tasks/${task.id}/select-skill`, { body: { skill_id: candidate.skill_id, price: normalAmount(price) } });
      if (envelope.code !== 0) return showProblem(element, envelope, 'push');
      ctx.announce(t('push.selected'));
      await reload();
    },
  });
  return h(
    'li',
    { class: 'card' },
    h('h3', null, candidate.name),
    h(
      'p',
      { class: 'meta' },
      candidate.ut_price === null ? t('skill.price-open') : money(candidate.ut_price, task.bounty_currency),
      ' · ',
      t('push.score', { score: Math.round(candidate.score * 100) }),
    ),
    choose,
    problem,
  );
}

export async function pushesSection(ctx, task) {
  const sent = h('ul', { class: 'rows' });
  const candidates = h('ul', { class: 'cards' });
  const problem = h('div');
  const names = new Map();
  let shownPushes = null;
  let shownCandidates = null;
  async function reload() {
    const [pushes, recommended, applications] = await Promise.all([
      api('GET', `/api/v1/tasks/${task.id}/pushes`, { query: { page_size: 50 } }),
      // More than are shown: those pushed or applied already are left out, and up to five remain.
      api('GET', `/api/v1/tasks/${task.id}/recommendations`, { query: { top_k: 15 } }),
      api('GET', `/api/v1/tasks/${task.id}/applications`, { query: { page_size: 100 } }),
    ]);
    if (pushes.code !== 0) return problem.replaceChildren(errorBox(pushes));
    problem.replaceChildren();
    if (recommended.code === 0) for (const candidate of recommended.data.candidates) names.set(candidate.skill_id, candidate.name);
    // Drawn again only when something changed: a redraw would take away a price being typed, and the focus.
    const pushesNow = JSON.stringify(pushes.data.items.map((push) => [push.id, push.status, names.get(push.skill_id)]));
    if (pushesNow !== shownPushes) {
      shownPushes = pushesNow;
      sent.replaceChildren(...pushes.data.items.map((push) => pushRow(ctx, task, { ...push, skill_name: names.get(push.skill_id) }, reload)));
      if (pushes.data.items.length === 0) sent.append(h('li', { class: 'hint' }, t('push.none')));
    }
    const pushed = new Set(pushes.data.items.filter((push) => push.status !== 'withdrawn').map((push) => push.skill_id));
    // A skill that has applied to the task (an application not withdrawn) is answered under
    // Applications, not suggested again here.
    const applied = new Set(
      applications.code === 0
        ? applications.data.items.filter((application) => application.status !== 'withdrawn').map((application) => application.skill_id)
        : [],
    );
    const open =
      recommended.code === 0
        ? recommended.data.candidates.filter((candidate) => !pushed.has(candidate.skill_id) && !applied.has(candidate.skill_id)).slice(0, 5)
        : [];
    const candidatesNow = open.map((candidate) => candidate.skill_id).join(' ');
    if (candidatesNow === shownCandidates) return;
    shownCandidates = candidatesNow;
    candidates.replaceChildren(...open.map((candidate) => candidateRow(ctx, task, candidate, reload)));
    if (open.length === 0) candidates.append(h('li', { class: 'hint' }, t('push.no-candidates')));
  }
  await reload();
  const section = h(
    'section',
    { 'aria-labelledby': 'pushes' },
    h('h2', { id: 'pushes' }, t('push.title')),
    h('p', { class: 'hint' }, t('push.lead')),
    problem,
    h('h3', null, t('push.sent')),
    sent,
    h('h3', null, t('push.recommended')),
    candidates,
  );
  // The task page reads the lists again when the task moves (an application arrives, on the stream).
  section.reload = reload;
  return section;
}

export async function ratingSection(ctx, task) {
  const holder = h('div');
  const section = h('section', { 'aria-labelledby': 'rating' }, h('h2', { id: 'rating' }, t('rating.title')), holder);
  async function show() {
    const [transaction, ratings] = await Promise.all([
      api('GET', `/api/v1/transactions/${task.transaction_id}`),
      api('GET', `/api/v1/skills/${task.matched_skill_id}/ratings`, { query: { page_size: 100 } }),
    ]);
    const given = ratings.code === 0 ? ratings.data.items.find((rating) => rating.task_id === task.id) : null;
    if (given)
      return holder.replaceChildren(
        h('p', null, t('rating.given', { score: given.score, date: when(given.created_at) })),
        given.comment && h('p', { class: 'text' }, given.comment),
      );
    if (transaction.code !== 0 || transaction.data.status !== 'settled') return holder.replaceChildren(h('p', { class: 'hint' }, t('rating.after-settled')));
    const element = form({
      label: t('rating.title'),
      submit: t('rating.submit'),
      fields: [
        h(
          'fieldset',
          { class: 'stars' },
          h('legend', null, t('rating.score')),
          [1, 2, 3, 4, 5].map((score) =>
            h(
              'label',
              { class: 'star' },
              h('input', { type: 'radio', name: 'score', value: String(score), required: true }),
              ` ${t('rating.stars', { score })}`,
            ),
          ),
        ),
        field({ name: 'comment', label: t('rating.comment'), type: 'textarea', rows: 3 }),
      ],
      onSubmit: async (element) => {
        const chosen = element.querySelector('input[name="score"]:checked');
        if (!chosen) return showProblem(element, { code: 4000, data: { errors: [{ path: 'score', message: t('rating.pick') }] } });
        const body = { score: Number(chosen.value) };
        if (valueOf(element, 'comment')) body.comment = valueOf(element, 'comment');
        const envelope = await api('POST', `/api/v1/tasks/${task.id}/rating`, { body });
        if (envelope.code !== 0) return showProblem(element, envelope, 'rating');
        ctx.announce(t('rating.done'));
        await show();
      },
    });
    holder.replaceChildren(element);
  }
  listen(ctx, `/api/v1/transactions/${task.transaction_id}/events`, () => show());
  await show();
  return section;
}
