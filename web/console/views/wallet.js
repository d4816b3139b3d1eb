import { api } from '../lib/api.js';
import { word } from '../lib/catalog.js';
import { h, svg } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
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

function historyRow(item) {
  const amount = toMinor(item.amount);
  // Each cell names its column, so that on a phone a row reads as a small card (console.css).
  const cell = (column, props, ...children) => h('td', { 'data-label': t(`wallet.history.${column}`), ...props }, ...children);
  return h(
    'tr',
    null,
    cell('when', null, when(item.created_at)),
    cell('type', null, word('history', item.type)),
    cell('amount', { class: amount < 0n ? 'amount negative' : 'amount' }, money(item.amount, item.currency)),
    cell('balance', null, money(item.balance_after, item.currency), ' ', h('span', { class: 'hint' }, word('bucket', item.bucket))),
    cell('description', null, item.description),
  );
}

function history() {
  const body = h('tbody');
  const empty = h('p', { class: 'hint', hidden: true }, t('wallet.history.empty'));
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('list.more'));
  let query = {};
  let cursor = null;
  async function load(append, element) {
    const envelope = await api('GET', '/api/v1/wallet/transactions', { query: { ...query, page_size: 20, cursor: append ? cursor : undefined } });
    if (envelope.code !== 0) return element ? showProblem(element, envelope) : body.replaceChildren(h('tr', null, h('td', { colspan: 5 }, errorBox(envelope))));
    if (!append) body.replaceChildren();
    body.append(...envelope.data.items.map(historyRow));
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
  return section;
}

export async function render() {
  const [overview, stats, rate] = await Promise.all([api('GET', '/api/v1/wallet/'), api('GET', '/api/v1/wallet/stats'), api('GET', '/api/v1/wallet/rates')]);
  const list = history();
  await list.ready;
  return h(
    'div',
    { class: 'page' },
    h('h1', null, t('wallet.title')),
    overview.code === 0 ? balances(overview.data) : errorBox(overview),
    list,
    stats.code === 0 ? chart(stats.data) : errorBox(stats),
    rate.code === 0 ? rates(rate.data) : errorBox(rate),
  );
}
