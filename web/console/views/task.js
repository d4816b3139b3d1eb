import { api } from '../lib/api.js';
import { categoryLabel, loadCategories, word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { money } from '../lib/money.js';

// One task: its details for everyone who may see it, then the publisher's part (applications,
// pushes, accepting, the draft, rating) or a worker's (applying, their application). The task
// stream keeps it current: a move of this task or of an application to it redraws what changed.
export function details(task) {
  const rows = [
    [t('task.status'), h('span', { class: `badge status-${task.status}` }, word('status.task', task.status))],
    [t('task.bounty'), task.bounty_amount === null ? t('task.no-bounty') : money(task.bounty_amount, task.bounty_currency)],
    [t('task.held'), money(task.bounty_held, task.bounty_currency)],
    [t('task.field.category'), categoryLabel(task.category)],
    [t('task.field.mode'), task.mode === 'offline' ? t('mode.offline-in', { city: task.city || '' }) : t('mode.online')],
    [t('task.field.delivery-hours'), task.delivery_hours ? t('task.delivery-hours', { hours: task.delivery_hours }) : '—'],
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

export async function render(ctx) {
  const id = ctx.params[0];
  await loadCategories();
  const envelope = await api('GET', `/api/v1/tasks/${id}`);
  if (envelope.code !== 0) return h('div', { class: 'page' }, h('h1', null, t('task.title')), errorBox(envelope, 'task'));
  let task = envelope.data;
  const mine = task.user_id === ctx.me.user_id;
  const part = mine ? await import('./task-publisher.js') : await import('./task-worker.js');
  const title = h('h1', null, task.title);
  const detailsHolder = h('div', null, details(task));
  const role = await part.build(ctx, task);

  async function refresh() {
    const fresh = await api('GET', `/api/v1/tasks/${id}`);
    if (fresh.code !== 0) return;
    task = fresh.data;
    title.textContent = task.title;
    detailsHolder.replaceChildren(details(task));
    await role.update(task);
  }
  listen(ctx, '/api/v1/tasks/events', (type, event) => {
    if (type === 'too_old' || (event && event.task_id === id)) refresh();
  });
  return h('div', { class: 'page' }, title, role.notices, detailsHolder, role.element);
}
