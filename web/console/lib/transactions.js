import { api } from './api.js';
import { h } from './dom.js';
import { errorBox } from './explain.js';
import { t, when } from './i18n.js';
import { listen } from './live.js';
import { money } from './money.js';
import { word } from './catalog.js';

/** The statuses of a deal that ended without the work: the money held for it went back to the buyer. */
export const endedWithoutWork = ['cancelled_by_buyer', 'rejected_by_seller', 'refunded', 'failed'];

/** An application's status; an accepted one whose deal ended without the work says so. */
export function applicationBadge(application, deal) {
  if (application.status === 'accepted' && deal && endedWithoutWork.includes(deal.status))
    return h('span', { class: 'badge status-ended' }, t('status.application.deal-ended'));
  return h('span', { class: `badge status-${application.status}` }, word('status.application', application.status));
}

// The person's transactions as buyer or seller, newest first, changed in place as their events
// arrive on the stream (and a new one added at the top).
export function transactionRow(transaction) {
  return h(
    'li',
    { class: 'row', 'data-id': transaction.id },
    h(
      'a',
      { href: `#/transactions/${transaction.id}` },
      t(`transaction.kind.${transaction.transaction_type === 'task' ? 'task' : 'other'}`),
      ' ',
      money(transaction.price_ut, transaction.currency),
    ),
    ' ',
    h('span', { class: `badge status-${transaction.status}` }, word('status.transaction', transaction.status)),
    ' ',
    h('span', { class: 'hint' }, when(transaction.updated_at)),
  );
}

export function transactionList(ctx, role, title) {
  const list = h('ul', { class: 'rows' });
  const empty = h('p', { class: 'hint' }, t('transactions.empty'));
  const problem = h('div');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('list.more'));
  let cursor = null;
  const me = ctx.me.user_id;

  async function load(append) {
    const envelope = await api('GET', '/api/v1/transactions', { query: { role, page_size: 10, cursor: append ? cursor : undefined } });
    if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
    if (!append) list.replaceChildren();
    list.append(...envelope.data.items.map(transactionRow));
    empty.hidden = list.children.length > 0;
    cursor = envelope.data.next_cursor;
    more.hidden = !envelope.data.has_more;
  }
  more.addEventListener('click', () => load(true));

  listen(ctx, '/api/v1/transactions/events', (type, data) => {
    if (!data || !data.data || !data.data.transaction) return type === 'too_old' && load(false);
    const transaction = data.data.transaction;
    const mine = role === 'buyer' ? transaction.buyer_user_id === me : transaction.seller_user_id === me;
    if (!mine) return;
    const row = transactionRow(transaction);
    const old = list.querySelector(`[data-id="${transaction.id}"]`);
    if (old) old.replaceWith(row);
    else list.prepend(row);
    empty.hidden = true;
  });

  const section = h(
    'section',
    { 'aria-labelledby': `transactions-${role}` },
    h('h2', { id: `transactions-${role}` }, title),
    problem,
    empty,
    list,
    h('div', { class: 'actions' }, more),
  );
  section.ready = load(false);
  return section;
}
