import { api } from '../lib/api.js';
import { categoryLabel, loadCategories, word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { money } from '../lib/money.js';
import { transactionList } from '../lib/transactions.js';

// Hiring: the tasks the person published (every status), changed in place as the task stream
// tells of a move, and the transactions they pay for.
function taskRow(task) {
  return h(
    'li',
    { class: 'row', 'data-id': task.id },
    h('a', { href: `#/tasks/${task.id}` }, task.title),
    ' ',
    h('span', { class: `badge status-${task.status}` }, word('status.task', task.status)),
    ' ',
    h('span', { class: 'amount' }, task.bounty_amount === null ? t('task.no-bounty') : money(task.bounty_amount, task.bounty_currency)),
    task.category ? h('span', { class: 'hint' }, ` · ${categoryLabel(task.category)}`) : null,
    h('span', { class: 'hint' }, ` · ${when(task.updated_at)}`),
  );
}

export async function render(ctx) {
  await loadCategories();
  const list = h('ul', { class: 'rows' });
  const empty = h('p', { class: 'hint', hidden: true }, t('hire.empty'));
  const problem = h('div');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('list.more'));
  let cursor = null;

  async function load(append) {
    const envelope = await api('GET', '/api/v1/tasks/', { query: { page_size: 20, cursor: append ? cursor : undefined } });
    if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
    if (!append) list.replaceChildren();
    list.append(...envelope.data.items.map(taskRow));
    empty.hidden = list.children.length > 0;
    cursor = envelope.data.next_cursor;
    more.hidden = !envelope.data.has_more;
  }
  more.addEventListener('click', () => load(true));

  listen(ctx, '/api/v1/tasks/events', (type, event) => {
    if (type === 'too_old') return load(false);
    if (!event || !event.data || event.data.task.user_id !== ctx.me.user_id) return;
    const old = list.querySelector(`[data-id="${event.task_id}"]`);
    if (!old) return load(false);
    const merged = { ...(old.task || {}), ...event.data.task };
    api('GET', `/api/v1/tasks/${event.task_id}`).then((fresh) => {
      const row = taskRow(fresh.code === 0 ? fresh.data : merged);
      const current = list.querySelector(`[data-id="${event.task_id}"]`);
      if (current) current.replaceWith(row);
    });
  });

  const bought = transactionList(ctx, 'buyer', t('hire.transactions'));
  await Promise.all([load(false), bought.ready]);
  return h(
    'div',
    { class: 'page' },
    h('h1', null, t('hire.title')),
    h('p', { class: 'lead' }, t('hire.lead')),
    h('p', null, h('a', { class: 'button primary', href: '#/tasks/new' }, t('hire.publish'))),
    h('section', { 'aria-labelledby': 'my-tasks' }, h('h2', { id: 'my-tasks' }, t('hire.tasks')), problem, empty, list, h('div', { class: 'actions' }, more)),
    bought,
  );
}
