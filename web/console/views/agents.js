import { api } from '../lib/api.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { loadCategories } from '../lib/catalog.js';
import { budgetPanel } from './agent-budget.js';
import { transactionRow } from '../lib/transactions.js';

// My agents: the API keys that act for the person (made here, by a device sign-in, or by an MCP
// connection), when each was made and last used, revoking one, each key's budget and what is left
// of it today, set, changed or removed (views/agent-budget.js), the transactions made through
// each key, and all the transactions the person's agents made in the agent space.
function kindOf(key) {
  if (key.origin) return key.origin;
  return / \(MCP sign-in\)$/.test(key.name || '') ? 'mcp' : 'device';
}

/**
 * Transactions of the agent space made through the person's keys, newest first, with cursor
 * paging: all of them, or one key's (`api_key_id`; each item names its key, and an item of
 * another key is left out should a server answer without the filter).
 */
function transactionsOf(keyId) {
  const list = h('ul', { class: 'rows' });
  const problem = h('div');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('list.more'));
  let cursor = null;
  async function load(append) {
    const query = { page_size: 10, cursor: append ? cursor : undefined, api_key_id: keyId };
    const envelope = await api('GET', '/api/v1/auth/agent-transactions', { query });
    if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
    problem.replaceChildren();
    if (!append) list.replaceChildren();
    const items = keyId ? envelope.data.items.filter((item) => !('api_key_id' in item) || item.api_key_id === keyId) : envelope.data.items;
    list.append(...items.map(transactionRow));
    if (list.children.length === 0) list.append(h('li', { class: 'hint' }, t(keyId ? 'agents.key-transactions.none' : 'agents.no-transactions')));
    cursor = envelope.data.next_cursor;
    more.hidden = !envelope.data.has_more;
  }
  more.addEventListener('click', () => load(true));
  return { parts: [problem, list, h('div', { class: 'actions' }, more)], load };
}

function agentTransactions() {
  const { parts, load } = transactionsOf(null);
  const section = h(
    'section',
    { 'aria-labelledby': 'agent-transactions' },
    h('h2', { id: 'agent-transactions' }, t('agents.transactions')),
    h('p', { class: 'hint' }, t('agents.transactions.lead')),
    parts,
  );
  section.ready = load(false);
  return section;
}

/** One key's transactions, read when the person opens them (a page of many keys reads none at first). */
function keyTransactions(key, name) {
  const { parts, load } = transactionsOf(key.id);
  let loaded = false;
  const details = h('details', { class: 'key-transactions', 'data-key-id': key.id }, h('summary', null, t('agents.key-transactions', { name })), parts);
  details.addEventListener('toggle', () => {
    if (details.open && !loaded) {
      loaded = true;
      void load(false);
    }
  });
  return details;
}

function keyCard(ctx, key, reload, categories) {
  const problem = h('div');
  const name = key.name || key.key_prefix;
  return h(
    'li',
    { class: 'card' },
    h(
      'h3',
      null,
      name,
      ' ',
      h('span', { class: `badge ${key.revoked_at ? 'status-revoked' : 'status-active'}` }, key.revoked_at ? t('agents.revoked') : t('agents.active')),
    ),
    h(
      'dl',
      { class: 'details' },
      h('dt', null, t('agents.kind')),
      h('dd', null, t(`agents.kind.${kindOf(key)}`)),
      h('dt', null, t('agents.prefix')),
      h('dd', { class: 'code' }, key.key_prefix),
      h('dt', null, t('agents.created')),
      h('dd', null, when(key.created_at)),
      'last_used_at' in key && [h('dt', null, t('agents.last-used')), h('dd', null, key.last_used_at ? when(key.last_used_at) : t('agents.never-used'))],
      key.revoked_at && [h('dt', null, t('agents.revoked-at')), h('dd', null, when(key.revoked_at))],
    ),
    budgetPanel(ctx, key, reload, categories),
    keyTransactions(key, name),
    !key.revoked_at &&
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            onClick: async () => {
              if (!window.confirm(t('agents.revoke.confirm', { name }))) return;
              const envelope = await api('DELETE', `/api/v1/auth/api-keys/${key.id}`);
              if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
              ctx.announce(t('agents.revoked.done', { name }));
              await reload();
            },
          },
          t('agents.revoke', { name }),
        ),
      ),
    problem,
  );
}

function createForm(ctx, reload, secretHolder) {
  return form({
    label: t('agents.create'),
    submit: t('agents.create.submit'),
    fields: [field({ name: 'name', label: t('agents.create.name'), required: true, maxlength: 100, hint: t('agents.create.name.hint') })],
    onSubmit: async (element) => {
      const envelope = await api('POST', '/api/v1/auth/api-keys', { body: { name: valueOf(element, 'name') } });
      if (envelope.code !== 0) return showProblem(element, envelope, 'agents');
      element.reset();
      const secret = h('output', { class: 'secret code', id: 'new-secret' }, envelope.data.api_key);
      secretHolder.replaceChildren(
        h(
          'div',
          { class: 'notice warning', role: 'status' },
          h('h3', { tabindex: '-1', id: 'secret-title' }, t('agents.secret.title', { name: envelope.data.key.name })),
          h('p', null, t('agents.secret.once')),
          h(
            'dl',
            { class: 'details' },
            h('dt', null, 'X-Api-Key'),
            h('dd', null, secret),
            h('dt', null, 'X-Platform-User-Id'),
            h('dd', { class: 'code' }, envelope.data.user_id),
          ),
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', class: 'secondary', onClick: () => secretHolder.replaceChildren() }, t('agents.secret.hide')),
          ),
        ),
      );
      secretHolder.querySelector('#secret-title').focus();
      await reload();
    },
  });
}

export async function render(ctx) {
  const list = h('ul', { class: 'cards' });
  const problem = h('div');
  const secretHolder = h('div');
  const categories = await loadCategories();
  async function reload() {
    const envelope = await api('GET', '/api/v1/auth/api-keys', { query: { page_size: 100 } });
    if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
    list.replaceChildren(
      ...(envelope.data.items.length
        ? envelope.data.items.map((key) => keyCard(ctx, key, reload, categories))
        : [h('li', { class: 'hint' }, t('agents.none'))]),
    );
  }
  const transactions = agentTransactions();
  await Promise.all([reload(), transactions.ready]);
  return h(
    'div',
    { class: 'page' },
    h('h1', null, t('agents.title')),
    h('p', { class: 'lead' }, t('agents.lead')),
    h('section', { 'aria-labelledby': 'create-key' }, h('h2', { id: 'create-key' }, t('agents.create')), secretHolder, createForm(ctx, reload, secretHolder)),
    h(
      'section',
      { 'aria-labelledby': 'keys' },
      h('h2', { id: 'keys' }, t('agents.keys')),
      h('p', { class: 'hint' }, t('agents.keys.lead'), ' ', h('a', { href: '/device' }, t('agents.device-page'))),
      problem,
      list,
    ),
    transactions,
  );
}
