import { api } from '../lib/api.js';
import { categoryLabel, loadCategories, word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { money } from '../lib/money.js';
import { endedWithoutWork } from '../lib/transactions.js';

// One task: its details for everyone who may see it, then the publisher's part (applications,
// pushes, accepting, the draft, rating) or a worker's (applying, their application). The task
// stream keeps it current: a move of this task or of an application to it redraws what changed.
export function details(task, deal) {
  // A matched task whose deal ended without the work is not "Matched" to a person: it says the deal ended.
  const ended = task.status === 'matched' && deal && endedWithoutWork.includes(deal.status);
  const rows = [
    [
      t('task.status'),
      ended
        ? h('span', { class: 'badge status-ended' }, t('status.task.deal-ended'))
        : h('span', { class: `badge status-${task.status}` }, word('status.task', task.status)),
    ],
    [t('task.bounty'), task.bounty_amount === null ? t('task.no-bounty') : money(task.bounty_amount, task.bounty_currency)],
    [t('task.held'), money(task.bounty_held, task.bounty_currency)],
    [t('task.field.category'), categoryLabel(task.category)],
    [t('task.field.mode'), task.mode === 'offline' ? t('mode.offline-in', { city: task.city || '' }) : t('mode.online')],
    [t('task.field.delivery-hours'), task.delivery_hours ? t('task.hours', { hours: task.delivery_hours }) : '—'],
    task.tags && task.tags.length ? [t('task.field.tags'), task.tags.join(', ')] : null,
    task.published_at ? [t('task.published'), when(task.published_at)] : null,
    task.expires_at && task.status === 'open' ? [t('task.expires'), when(task.expires_at)] : null,
  ].filter(Boolean);
  return h(
    'section',
    { 'aria-labelledby': 'task-details', id: 'details' },
    h('h2', { id: 'task-details' }, t('task.details')),
    h(
      'dl',
      { class: 'details' },
      rows.map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
    ),
    h('h3', null, t('task.field.description')),
    h('p', { class: 'text' }, task.description),
  );
}

/** The transaction of a matched task (the publisher's and the accepted worker's to read), or null. */
async function dealOf(task) {
  if (task.status !== 'matched' || !task.transaction_id) return null;
  const envelope = await api('GET', `/api/v1/transactions/${task.transaction_id}`);
  return envelope.code === 0 ? envelope.data : null;
}

export async function render(ctx) {
  const id = ctx.params[0];
  await loadCategories();
  const envelope = await api('GET', `/api/v1/tasks/${id}`);
  if (envelope.code !== 0) return h('div', { class: 'page' }, h('h1', null, t('task.title')), errorBox(envelope, 'task'));
  let task = envelope.data;
  let deal = await dealOf(task);
  const mine = task.user_id === ctx.me.user_id;
  const part = mine ? await import('./task-publisher.js') : await import('./task-worker.js');
  const title = h('h1', null, task.title);
  const detailsHolder = h('div', null, details(task, deal));
  const role = await part.build(ctx, task, deal);

  async function refresh() {
    const fresh = await api('GET', `/api/v1/tasks/${id}`);
    if (fresh.code !== 0) return;
    task = fresh.data;
    deal = await dealOf(task);
    title.textContent = task.title;
    detailsHolder.replaceChildren(details(task, deal));
    await role.update(task, deal);
    followDeal();
  }
  listen(ctx, '/api/v1/tasks/events', (type, event) => {
    if (type === 'too_old' || (event && event.task_id === id)) refresh();
  });
  // The deal's moves (a cancel, a refund) change what the task page says about it: its own stream
  // (the rating part listens to the same one, so it is one connection), from when the deal is known.
  let followed = null;
  const followDeal = () => {
    if (!deal || followed === deal.id) return;
    followed = deal.id;
    // The stream replays the deal's history first: only a move newer than what is shown redraws.
    listen(ctx, `/api/v1/transactions/${deal.id}/events`, (type, event) => {
      const moved = event && event.data && event.data.transaction;
      if (type === 'too_old' || (moved && deal && moved.updated_at > deal.updated_at)) refresh();
    });
  };
  followDeal();
  return h('div', { class: 'page' }, title, role.notices, detailsHolder, role.element);
}
