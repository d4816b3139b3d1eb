import { api, retryKey } from '../lib/api.js';
import { word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { money } from '../lib/money.js';

// One transaction, followed live: its stream (from its creation on, resumed with Last-Event-ID
// after a drop) redraws the status and the actions and adds each move to the history, without a
// reload. The seller accepts the work and delivers; the buyer confirms (paying the seller) or
// disputes; after settlement the publisher rates on the task's page.
function delivered(payload) {
  if (!payload) return null;
  const text = typeof payload.text === 'string' ? payload.text : null;
  const link = typeof payload.link === 'string' ? payload.link : null;
  const rest = Object.entries(payload).filter(([name]) => name !== 'text' && name !== 'link');
  return h(
    'div',
    { class: 'delivery' },
    text && h('p', { class: 'text' }, text),
    link && h('p', null, t('deliver.link-label'), ' ', h('span', { class: 'url' }, link)),
    rest.length > 0 &&
      h(
        'dl',
        { class: 'details' },
        rest.map(([name, value]) => [h('dt', null, name), h('dd', null, typeof value === 'string' ? value : JSON.stringify(value))]),
      ),
  );
}

function details(transaction) {
  const rows = [
    [t('transaction.status'), h('span', { class: `badge status-${transaction.status}` }, word('status.transaction', transaction.status))],
    [t('transaction.price'), money(transaction.price_ut, transaction.currency)],
    transaction.task_id ? [t('transaction.task'), h('a', { href: `#/tasks/${transaction.task_id}` }, t('transaction.to-task'))] : null,
    [t('transaction.created'), when(transaction.created_at)],
    transaction.delivery_deadline ? [t('transaction.deadline'), when(transaction.delivery_deadline)] : null,
    transaction.delivered_at ? [t('transaction.delivered'), when(transaction.delivered_at)] : null,
    transaction.auto_confirm_at && transaction.status === 'delivered' ? [t('transaction.auto-confirm'), when(transaction.auto_confirm_at)] : null,
    transaction.settled_at ? [t('transaction.settled'), when(transaction.settled_at)] : null,
    transaction.dispute_reason ? [t('transaction.dispute-reason'), transaction.dispute_reason] : null,
  ].filter(Boolean);
  return h(
    'section',
    { 'aria-labelledby': 'transaction-details' },
    h('h2', { id: 'transaction-details' }, t('transaction.details')),
    h(
      'dl',
      { class: 'details' },
      rows.map(([term, value]) => [h('dt', null, term), h('dd', null, value)]),
    ),
    transaction.result_payload && [h('h3', null, t('transaction.delivery')), delivered(transaction.result_payload)],
  );
}

// Set by the person's own move: its answer redraws the page, and the keyboard goes on from the next
// step (a move of the other party, heard on the stream, moves nobody's focus).
let ownMove = false;

function actionButton(ctx, transaction, action, label, problem, className = 'primary') {
  // One key per button: a retry after a lost answer replays the move instead of failing on the new state.
  const key = retryKey();
  return h(
    'button',
    {
      type: 'button',
      class: className,
      onClick: async (event) => {
        const button = event.currentTarget;
        button.disabled = true;
        const envelope = await api('POST', `/api/v1/transactions/${transaction.id}/${action}`, { retry: key });
        if (envelope.code !== 0) {
          button.disabled = false;
          problem.replaceChildren(errorBox(envelope, 'transaction'));
          // The keyboard goes back to the button it pressed (disabling it had taken the focus away).
          return button.focus();
        }
        ctx.announce(t(`transaction.done.${action}`));
        ownMove = true;
        ctx.showTransaction(envelope.data);
      },
    },
    label,
  );
}

/** A link the other party can open: an http or https address (the form sends no browser check: novalidate). */
function isWebAddress(text) {
  try {
    return ['http:', 'https:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

function deliverForm(ctx, transaction) {
  const key = retryKey();
  return form({
    label: t('deliver.title'),
    submit: t('deliver.submit'),
    fields: [
      field({ name: 'text', label: t('deliver.text'), type: 'textarea', rows: 5, required: true, hint: t('deliver.text.hint') }),
      field({ name: 'link', label: t('deliver.link'), type: 'url' }),
    ],
    onSubmit: async (element) => {
      const payload = { text: valueOf(element, 'text') };
      if (!payload.text) return showProblem(element, { code: 4000, data: { errors: [{ path: 'text', message: t('deliver.text.missing') }] } });
      const link = valueOf(element, 'link');
      if (link && !isWebAddress(link)) return showProblem(element, { code: 4000, data: { errors: [{ path: 'link', message: t('deliver.link.invalid') }] } });
      if (link) payload.link = link;
      const envelope = await api('POST', `/api/v1/transactions/${transaction.id}/deliver`, { body: { result_payload: payload }, retry: key });
      if (envelope.code !== 0) return showProblem(element, envelope, 'transaction');
      ctx.announce(t('transaction.done.deliver'));
      ownMove = true;
      ctx.showTransaction(envelope.data);
    },
  });
}

function disputeForm(ctx, transaction) {
  return form({
    label: t('dispute.title'),
    submit: t('dispute.submit'),
    submitClass: 'secondary',
    fields: [field({ name: 'reason', label: t('dispute.reason'), type: 'textarea', rows: 3 })],
    onSubmit: async (element) => {
      const body = valueOf(element, 'reason') ? { reason: valueOf(element, 'reason') } : {};
      const envelope = await api('POST', `/api/v1/transactions/${transaction.id}/dispute`, { body, idempotent: true });
      if (envelope.code !== 0) return showProblem(element, envelope, 'transaction');
      ctx.announce(t('transaction.done.dispute'));
      ownMove = true;
      ctx.showTransaction(envelope.data);
    },
  });
}

function actions(ctx, transaction, role) {
  const problem = h('div');
  const price = money(transaction.price_ut, transaction.currency);
  const parts = [];
  const status = transaction.status;
  if (role === 'seller' && status === 'frozen') {
    parts.push(
      h('p', null, t('transaction.seller.frozen', { price })),
      h(
        'div',
        { class: 'actions' },
        actionButton(ctx, transaction, 'accept', t('transaction.accept'), problem),
        actionButton(ctx, transaction, 'reject', t('transaction.reject'), problem, 'secondary'),
      ),
    );
  }
  if (role === 'seller' && status === 'accepted')
    parts.push(
      h('p', null, t('transaction.seller.accepted')),
      deliverForm(ctx, transaction),
      h('div', { class: 'actions' }, actionButton(ctx, transaction, 'reject', t('transaction.reject'), problem, 'secondary')),
    );
  if (role === 'buyer' && status === 'delivered') {
    parts.push(
      h('p', { id: 'confirm-terms' }, t('transaction.buyer.delivered', { price })),
      h('div', { class: 'actions' }, actionButton(ctx, transaction, 'confirm', t('transaction.confirm', { price }), problem)),
      h('h3', null, t('dispute.title')),
      disputeForm(ctx, transaction),
    );
  }
  if (role === 'buyer' && ['pending_freeze', 'frozen'].includes(status))
    parts.push(
      h('p', null, t('transaction.buyer.waiting')),
      h('div', { class: 'actions' }, actionButton(ctx, transaction, 'cancel', t('transaction.cancel'), problem, 'secondary')),
    );
  if (role === 'buyer' && status === 'accepted') parts.push(h('p', null, t('transaction.buyer.accepted')));
  if (role === 'seller' && status === 'delivered') parts.push(h('p', null, t('transaction.seller.delivered')));
  if (status === 'settled')
    parts.push(
      h('p', null, t(`transaction.${role}.settled`, { price })),
      role === 'buyer' &&
        transaction.task_id &&
        h('p', null, h('a', { class: 'button primary', href: `#/tasks/${transaction.task_id}` }, t('transaction.rate'))),
    );
  if (status === 'disputed') parts.push(h('p', null, t('transaction.disputed')));
  // A deal that ended without the work: who ended it and where the money went (back to the buyer),
  // or that none had been held yet.
  if (['cancelled_by_buyer', 'rejected_by_seller', 'failed', 'refunded'].includes(status)) {
    const ended = transaction.frozen_at ? `transaction.${role}.${status}` : 'transaction.ended-unheld';
    parts.push(h('p', { class: 'outcome' }, t(ended, { price })));
  }
  if (parts.length === 0) return null;
  const over = ['cancelled_by_buyer', 'rejected_by_seller', 'failed', 'refunded'].includes(status);
  return h('section', { 'aria-labelledby': 'next-step' }, h('h2', { id: 'next-step' }, t(over ? 'transaction.outcome' : 'transaction.next')), parts, problem);
}

export async function render(ctx) {
  const id = ctx.params[0];
  const envelope = await api('GET', `/api/v1/transactions/${id}`);
  if (envelope.code !== 0) return h('div', { class: 'page' }, h('h1', null, t('transaction.title')), errorBox(envelope, 'transaction'));
  let transaction = envelope.data;
  const role = transaction.buyer_user_id === ctx.me.user_id ? 'buyer' : 'seller';
  const top = h('div');
  const history = h('ol', { class: 'history', 'aria-live': 'polite', 'aria-relevant': 'additions' });
  const draw = () => {
    // The pressed button was disabled while its call ran, which already took the focus from it.
    const hadFocus = top.contains(document.activeElement) || ownMove;
    ownMove = false;
    top.replaceChildren(details(transaction), actions(ctx, transaction, role) || '');
    // A keyboard user whose button just went away continues from the next step (or the details).
    const landing = top.querySelector('#next-step') || top.querySelector('#transaction-details');
    landing.setAttribute('tabindex', '-1');
    if (hadFocus) landing.focus();
  };
  // The answer of the person's own move shows at once; the stream brings the other party's.
  ctx.showTransaction = (fresh) => {
    if (fresh.updated_at < transaction.updated_at) {
      // The stream brought a newer state first: it was drawn, and the focus goes there now.
      if (ownMove) top.querySelector('#next-step, #transaction-details')?.focus();
      ownMove = false;
      return;
    }
    transaction = fresh;
    draw();
  };
  draw();

  listen(ctx, `/api/v1/transactions/${id}/events`, async (type, event) => {
    if (type === 'too_old' || !event || !event.data) {
      const fresh = await api('GET', `/api/v1/transactions/${id}`);
      if (fresh.code === 0) transaction = fresh.data;
      return draw();
    }
    // Each move in words (who did what), then the status it led to.
    const action = event.data.action;
    history.append(
      h(
        'li',
        null,
        h('time', { datetime: event.created_at }, when(event.created_at)),
        ' ',
        action ? [word('event.transaction', action), ' · '] : null,
        h('span', { class: `badge status-${event.data.transaction.status}` }, word('status.transaction', event.data.transaction.status)),
      ),
    );
    if (event.data.transaction.updated_at > transaction.updated_at || event.data.transaction.status !== transaction.status) {
      const omitted = event.data.transaction.omitted_fields && event.data.transaction.omitted_fields.length;
      const fresh = omitted ? (await api('GET', `/api/v1/transactions/${id}`)).data : { ...transaction, ...event.data.transaction };
      if (fresh && fresh.updated_at >= transaction.updated_at) {
        transaction = fresh;
        draw();
      }
    }
  });

  return h(
    'div',
    { class: 'page' },
    h('h1', null, t(`transaction.title.${role}`)),
    top,
    h('section', { 'aria-labelledby': 'history' }, h('h2', { id: 'history' }, t('transaction.history')), history),
  );
}
