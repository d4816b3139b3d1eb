import { api } from '../lib/api.js';
import { word } from '../lib/catalog.js';
import { h, svg } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { money, toMinor } from '../lib/money.js';

// Money: both spaces' balances (the human space's CNY, the agent space's UT), the history with the
// API's filters and its cursor, the statistics as a chart (and the same numbers as a table, for
// screen readers), and the exchange rate and fee.
const types = ['deposit', 'freeze', 'unfreeze', 'expense', 'income', 'fee', 'refund', 'withdrawal'];

function balances(overview) {
  const card = (key, balance) =>
    h(
      'div',
      { class: 'card balance' },
      h('h3', null, t(`wallet.${key}`)),
      h(
        'dl',
        { class: 'details' },
        h('dt', null, t('wallet.available')),
        h('dd', { class: 'amount' }, money(balance.available, balance.currency)),
        h('dt', null, t('wallet.frozen')),
        h('dd', null, money(balance.frozen, balance.currency)),
        h('dt', null, t('wallet.total')),
        h('dd', null, money(balance.total, balance.currency)),
      ),
    );
  return h(
    'section',
    { 'aria-labelledby': 'balances' },
    h('h2', { id: 'balances' }, t('wallet.balances')),
    h('div', { class: 'two' }, card('cash', overview.cash), card('ut', overview.ut)),
    h('p', { class: 'hint' }, t('wallet.top-up')),
  );
}

/** Bars for income, expense, deposits and frozen of one currency; the table beside says the same. */
function chart(stats) {
  const measures = ['income', 'expense', 'deposits', 'frozen'];
  const width = 320;
  const rowHeight = 28;
  const group = (key) => {
    const numbers = measures.map((measure) => toMinor(stats[key][measure]) ?? 0n);
    const largest = numbers.reduce((max, value) => (value > max ? value : max), 1n);
    return h(
      'figure',
      { class: 'chart' },
      svg(
        'svg',
        {
          viewBox: `0 0 ${width} ${measures.length * rowHeight}`,
          role: 'img',
          'aria-label': t('wallet.chart.label', { currency: stats[key].currency }),
          class: 'bars',
        },
        measures.map((measure, index) => {
          const length = Number((numbers[index] * 200n) / largest);
          return svg(
            'g',
            { transform: `translate(0 ${index * rowHeight})` },
            svg('text', { x: 0, y: 18, class: 'bar-label' }, t(`wallet.stats.${measure}`)),
            svg('rect', { x: 80, y: 6, width: Math.max(length, 1), height: 16, rx: 2, class: `bar bar-${measure}` }),
          );
        }),
      ),
      // settled_count counts the person's sales only (src/engine/money/wallet.ts): the caption says so.
      h('figcaption', null, t('wallet.chart.caption', { currency: stats[key].currency, count: stats[key].settled_count })),
      h(
        'table',
        { class: 'numbers' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, t('wallet.stats.measure')), h('th', { scope: 'col' }, t('wallet.stats.amount')))),
        h(
          'tbody',
          null,
          measures.map((measure) =>
            h('tr', null, h('th', { scope: 'row' }, t(`wallet.stats.${measure}`)), h('td', null, money(stats[key][measure], stats[key].currency))),
          ),
        ),
      ),
    );
  };
  return h('section', { 'aria-labelledby': 'stats' }, h('h2', { id: 'stats' }, t('wallet.stats')), h('div', { class: 'two' }, group('cash'), group('ut')));
}

function rates(data) {
  return h(
    'section',
    { 'aria-labelledby': 'rates' },
    h('h2', { id: 'rates' }, t('wallet.rates')),
    h(
      'dl',
      { class: 'details' },
      h('dt', null, t('wallet.rate')),
      h('dd', null, t('wallet.rate.value', { cny: data.rates.CNY })),
      h('dt', null, t('wallet.fee')),
      h('dd', null, t('wallet.fee.value', { percent: (data.platform_fee_bps / 100).toFixed(2) })),
      h('dt', null, t('wallet.auto-confirm')),
      h('dd', null, t('wallet.auto-confirm.value', { hours: data.auto_confirm_hours })),
      h('dt', null, t('wallet.rates.updated')),
      h('dd', null, when(data.updated_at)),
    ),
  );
}

/**
 * What one ledger entry (or the two legs of one move between the person's own buckets) was for, in
 * the page's words: read from the entry's type and bucket, never shown as the server's description,
 * which is a developer's note in English ("bounty of task … released", "Funds released (refunded)").
 * The description says only whether a hold was a task's bounty or a deal's escrow, and why escrow was
 * released: the API has no field for these (see docs/decisions/web-console.md), so the page reads them
 * from its fixed shapes, and an entry it does not recognise gets the words of its type alone.
 */
function purposeOf(item) {
  const description = String(item.description || '');
  const task = /^bounty of task /.test(description);
  const released = /^Funds released \(([a-z_]+)\)$/.exec(description);
  switch (item.type) {
    case 'freeze':
      return { key: task ? 'history.about.task-hold' : 'history.about.deal-hold', link: task ? 'task' : 'transaction' };
    case 'unfreeze':
      if (task) return { key: 'history.about.task-release', link: 'task' };
      return {
        key: released ? `history.about.deal-release.${released[1]}` : 'history.about.deal-release',
        link: 'transaction',
        fallback: 'history.about.deal-release',
      };
    case 'refund':
      return { key: 'history.about.refund', link: 'transaction' };
    case 'expense':
      return { key: 'history.about.expense', link: 'transaction' };
    case 'income':
      return { key: 'history.about.income', link: 'transaction' };
    case 'deposit':
      // The operator's own note is shown as they wrote it; the default note is the page's words.
      return description && description !== 'Credit by the operator' ? { text: description } : { key: 'history.about.deposit' };
    default:
      return { key: `history.about.${item.type}`, fallback: 'history.about.other' };
  }
}

function purposeText(purpose) {
  if (purpose.text) return purpose.text;
  const text = t(purpose.key);
  return text === purpose.key ? t(purpose.fallback || 'history.about.other') : text;
}

/**
 * The two legs of one move between the person's own buckets (a hold, its release, a refund): one
 * row, not two. The API names each entry's movement (`movement_id`, shared by the legs of one
 * move), so the legs are joined by it, not by what they look like or where they stand in the list.
 */
const bucketMoves = ['freeze', 'unfreeze', 'refund'];
const legsOfOneMove = (a, b) =>
  Boolean(a && b && a.movement_id) &&
  a.movement_id === b.movement_id &&
  bucketMoves.includes(a.type) &&
  a.type === b.type &&
  a.bucket !== b.bucket &&
  a.currency === b.currency &&
  toMinor(a.amount) === -toMinor(b.amount);

const isUuid = (text) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(String(text || ''));

function historyRow(item, partner) {
  // Each cell names its column, so that on a phone a row reads as a small card (console.css).
  const cell = (column, props, ...children) => h('td', { 'data-label': t(`wallet.history.${column}`), ...props }, ...children);
  const purpose = purposeOf(item);
  const link =
    purpose.link && isUuid(item.biz_ref_id)
      ? h('a', { href: `#/${purpose.link === 'task' ? 'tasks' : 'transactions'}/${item.biz_ref_id}` }, t(`history.open.${purpose.link}`))
      : null;
  const legs = partner ? [item, partner] : [item];
  const available = legs.find((leg) => leg.bucket === 'available');
  const frozen = legs.find((leg) => leg.bucket === 'frozen');
  let amount;
  let amountClass = 'amount';
  if (partner) {
    // Money moved between the person's own buckets: nothing was gained or lost, so no sign and no red.
    const toHeld = toMinor(frozen.amount) > 0n;
    amount = [money(frozen.amount.replace('-', ''), item.currency), ' ', h('span', { class: 'hint' }, t(toHeld ? 'history.to-held' : 'history.to-available'))];
    amountClass = 'amount moved';
  } else {
    const minor = toMinor(item.amount);
    const bucket = item.bucket === 'frozen' ? 'history.leg.frozen' : 'history.leg.available';
    amount = [minor > 0n ? `+${money(item.amount, item.currency)}` : money(item.amount, item.currency), ' ', h('span', { class: 'hint' }, t(bucket))];
    // Red only for money that left the wallet (a payment, a withdrawal), not for a release of a hold.
    if (minor < 0n && !bucketMoves.includes(item.type)) amountClass = 'amount negative';
  }
  const balance = [
    available && t('history.balance.available', { amount: money(available.balance_after, item.currency) }),
    frozen && t('history.balance.held', { amount: money(frozen.balance_after, item.currency) }),
  ]
    .filter(Boolean)
    .join(t('history.balance.separator'));
  const row = h(
    'tr',
    { 'data-ids': legs.map((leg) => leg.id).join(' ') },
    cell('when', null, when(item.created_at)),
    cell('type', null, word('history', item.type)),
    cell('amount', { class: amountClass }, amount),
    cell('balance', null, balance),
    cell('description', null, purposeText(purpose), link ? [' ', link] : null),
  );
  row.entry = item;
  return row;
}

/**
 * Rows for a page of entries. `lone` holds the rows shown so far with one leg of a move between
 * the person's own buckets, by movement: the other leg joins that row where it stands, also when
 * it comes on a later page (a page break between the legs), instead of showing the move twice.
 */
function historyRows(items, lone) {
  const rows = [];
  for (const item of items) {
    const shown = lone.get(item.movement_id);
    if (shown && legsOfOneMove(shown.entry, item)) {
      lone.delete(item.movement_id);
      const joined = historyRow(shown.entry, item);
      const index = rows.indexOf(shown);
      if (index >= 0) rows[index] = joined;
      else shown.replaceWith(joined);
      continue;
    }
    const row = historyRow(item);
    if (item.movement_id && bucketMoves.includes(item.type)) lone.set(item.movement_id, row);
    rows.push(row);
  }
  return rows;
}

function history() {
  const body = h('tbody');
  const empty = h('p', { class: 'hint', hidden: true }, t('wallet.history.empty'));
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('list.more'));
  let query = {};
  let cursor = null;
  let pages = 0;
  let lone = new Map();
  async function load(append, element) {
    const envelope = await api('GET', '/api/v1/wallet/transactions', { query: { ...query, page_size: 20, cursor: append ? cursor : undefined } });
    if (envelope.code !== 0) {
      if (element) return showProblem(element, envelope);
      lone = new Map();
      return body.replaceChildren(h('tr', null, h('td', { colspan: 5 }, errorBox(envelope))));
    }
    if (!append) {
      body.replaceChildren();
      lone = new Map();
    }
    pages = append ? pages + 1 : 1;
    body.append(...historyRows(envelope.data.items, lone));
    empty.hidden = body.children.length > 0;
    cursor = envelope.data.next_cursor;
    more.hidden = !envelope.data.has_more;
  }
  more.addEventListener('click', () => load(true));
  const filters = form({
    label: t('wallet.history.filters'),
    submit: t('wallet.history.apply'),
    submitClass: 'secondary',
    fields: h(
      'div',
      { class: 'grid' },
      field({ name: 'type', label: t('wallet.history.type'), options: [['', t('hall.any')], ...types.map((type) => [type, word('history', type)])] }),
    ),
    onSubmit: async (element) => {
      query = { type: valueOf(element, 'type') };
      await load(false, element);
    },
  });
  const table = h(
    'div',
    { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': t('wallet.history.table') },
    h(
      'table',
      null,
      h('caption', { class: 'visually-hidden' }, t('wallet.history')),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['when', 'type', 'amount', 'balance', 'description'].map((column) => h('th', { scope: 'col' }, t(`wallet.history.${column}`))),
        ),
      ),
      body,
    ),
  );
  const section = h(
    'section',
    { 'aria-labelledby': 'history-title' },
    h('h2', { id: 'history-title' }, t('wallet.history')),
    h('p', { class: 'hint' }, t('wallet.history.lead')),
    filters,
    empty,
    table,
    h('div', { class: 'actions' }, more),
  );
  section.ready = load(false);
  // A move heard on the stream reads the first page again, unless the person has paged further (their place is kept).
  section.refresh = () => (pages <= 1 ? load(false) : null);
  return section;
}

export async function render(ctx) {
  const [overview, stats, rate] = await Promise.all([api('GET', '/api/v1/wallet/'), api('GET', '/api/v1/wallet/stats'), api('GET', '/api/v1/wallet/rates')]);
  const list = history();
  await list.ready;
  let balancesPart = overview.code === 0 ? balances(overview.data) : errorBox(overview);
  let statsPart = stats.code === 0 ? chart(stats.data) : errorBox(stats);

  // The wallet follows the person's money as it moves, also when they pay, publish or are paid in
  // another tab: every move of their deals and tasks (the two streams, shared with their other tabs)
  // reads the balances, the statistics and the history again, once for a burst of events.
  let timer = null;
  const refresh = () => {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const [fresh, freshStats] = await Promise.all([api('GET', '/api/v1/wallet/'), api('GET', '/api/v1/wallet/stats'), list.refresh()]);
      if (fresh.code === 0) {
        const next = balances(fresh.data);
        balancesPart.replaceWith(next);
        balancesPart = next;
      }
      if (freshStats.code === 0) {
        const next = chart(freshStats.data);
        statsPart.replaceWith(next);
        statsPart = next;
      }
    }, 250);
  };
  ctx.onLeave(() => clearTimeout(timer));
  listen(ctx, '/api/v1/transactions/events', (type, event) => {
    if (type === 'too_old' || (event && event.data && event.data.transaction)) refresh();
  });
  listen(ctx, '/api/v1/tasks/events', (type, event) => {
    if (type === 'too_old' || event) refresh();
  });
  return h('div', { class: 'page' }, h('h1', null, t('wallet.title')), balancesPart, list, statsPart, rate.code === 0 ? rates(rate.data) : errorBox(rate));
}
