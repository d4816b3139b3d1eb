import { api, retryKey } from '../lib/api.js';
import { postStream } from '../lib/stream.js';
import { categoryOptions, loadCategories } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, fieldError, form, showProblem, valueOf } from '../lib/forms.js';
import { t } from '../lib/i18n.js';
import { amountProblem, fromMinor, money, normalAmount, toMinor } from '../lib/money.js';
import * as session from '../lib/session.js';

// Publishing a task: the bounty is held from the wallet's available CNY. The page shows, before
// the click, what is available and held now and what will be after; if the balance is short the
// API keeps the task as a draft (4020) and the task page says so, with the numbers.
export function taskFields(values = {}) {
  return [
    field({ name: 'title', label: t('task.field.title'), required: true, value: values.title, maxlength: 200 }),
    field({
      name: 'description',
      label: t('task.field.description'),
      type: 'textarea',
      rows: 6,
      required: true,
      value: values.description,
      hint: t('task.field.description.hint'),
    }),
    h(
      'div',
      { class: 'grid' },
      field({ name: 'category', label: t('task.field.category'), options: categoryOptions(t('task.field.category.none')), value: values.category }),
      field({
        name: 'mode',
        label: t('task.field.mode'),
        options: [
          ['online', t('mode.online')],
          ['offline', t('mode.offline')],
        ],
        value: values.mode,
      }),
      field({ name: 'city', label: t('task.field.city'), hint: t('task.field.city.hint'), value: values.city }),
      field({ name: 'delivery_hours', label: t('task.field.delivery-hours'), inputmode: 'numeric', required: true, value: values.delivery_hours ?? 72 }),
      field({ name: 'tags', label: t('task.field.tags'), hint: t('task.field.tags.hint'), value: (values.tags || []).join(', ') }),
    ),
  ];
}

/**
 * The answer of a publish (a new task, or one published again): the new task's page; short of
 * money, the draft kept, with the numbers; any other refusal on the form.
 */
export function showPublished(ctx, element, envelope) {
  if (envelope.code === 4020 && envelope.data && envelope.data.task_id) {
    forgetDraft();
    ctx.announce(t('publish.kept-draft'));
    // The task page says how short the balance is from the wallet as it is then, not from this answer.
    return ctx.navigate(`/tasks/${envelope.data.task_id}?kept=1`);
  }
  if (envelope.code !== 0) return showProblem(element, envelope, 'publish');
  forgetDraft();
  ctx.announce(t('publish.done'));
  ctx.navigate(`/tasks/${envelope.data.id}?published=1`);
}

// What a person typed in the publish form, kept in this tab (sessionStorage) as they type: a session
// that ends before they send it (4010, sign in again, back to the form) or a reload does not lose it.
const draftKey = 'agent-marketplace.console-publish-draft';
const draftFields = ['title', 'description', 'category', 'mode', 'city', 'delivery_hours', 'tags', 'bounty_amount'];

function keepDraft(element) {
  const values = {};
  for (const name of draftFields) values[name] = element.elements.namedItem(name)?.value ?? '';
  const who = session.current() && session.current().user_id;
  try {
    sessionStorage.setItem(draftKey, JSON.stringify({ user_id: who, values }));
  } catch {
    // A full or disabled storage only loses the convenience.
  }
}

function keptDraft() {
  try {
    const kept = JSON.parse(sessionStorage.getItem(draftKey) || 'null');
    const who = session.current() && session.current().user_id;
    if (!kept || !kept.values || (kept.user_id && who && kept.user_id !== who)) return null;
    return Object.values(kept.values).some((value) => value !== '') ? kept.values : null;
  } catch {
    return null;
  }
}

const forgetDraft = () => sessionStorage.removeItem(draftKey);

/** The body the task fields give; null after marking what is wrong. */
export function taskBody(element) {
  const body = { title: valueOf(element, 'title'), description: valueOf(element, 'description'), mode: valueOf(element, 'mode') || 'online' };
  for (const name of ['category', 'city']) if (valueOf(element, name)) body[name] = valueOf(element, name);
  const tags = valueOf(element, 'tags')
    .split(/[,，]/)
    .map((tag) => tag.trim())
    .filter(Boolean);
  if (tags.length) body.tags = tags;
  const hours = valueOf(element, 'delivery_hours');
  let fine = true;
  if (!/^\d{1,4}$/.test(hours) || Number(hours) < 1) fine = !fieldError(element, 'delivery_hours', t('task.field.delivery-hours.invalid'));
  else body.delivery_hours = Number(hours);
  const bounty = valueOf(element, 'bounty_amount');
  if (bounty !== undefined && bounty !== '') {
    const problem = amountProblem(bounty);
    if (problem) fine = !fieldError(element, 'bounty_amount', problem);
    else body.bounty_amount = normalAmount(bounty);
  }
  if (!fine) element.querySelector('[aria-invalid="true"]')?.focus();
  return fine ? body : null;
}

/** "Available now … held now …; after publishing: …" for a bounty being typed. */
export function holdPreview(wallet, bountyText) {
  const available = toMinor(wallet.available);
  const frozen = toMinor(wallet.frozen);
  const now = t('publish.now', { available: money(available, 'CNY'), held: money(frozen, 'CNY') });
  const text = normalAmount(bountyText);
  if (text === '') return [now, t('publish.nothing-held')];
  // A bounty that is typed but is no amount (1e5, -5, 12.345, 100,50, too large) is said as such, not as "no bounty".
  const problem = amountProblem(text);
  if (problem) return [now, t('publish.unreadable', { problem })];
  const bounty = toMinor(text);
  if (bounty === 0n) return [now, t('publish.zero-held')];
  if (bounty > available) return [now, t('publish.short', { bounty: money(bounty, 'CNY'), short: money(bounty - available, 'CNY') })];
  return [
    now,
    t('publish.after', { bounty: money(bounty, 'CNY'), available: money(fromMinor(available - bounty), 'CNY'), held: money(frozen + bounty, 'CNY') }),
  ];
}

/** Fills the publish form from a draft the ai-create stream wrote (the person still checks and sends it). */
function fill(element, draft) {
  for (const [name, value] of Object.entries(draft)) {
    const input = element.elements.namedItem(name);
    if (!input || value === null || value === undefined) continue;
    input.value = Array.isArray(value) ? value.join(', ') : String(value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }
}

/** "Draft it from a sentence": the task ai-create stream, shown as it writes, filling the form. */
function draftHelper(target) {
  // The live region is a wrapper: role=log on the list itself would take away its items' list semantics.
  const log = h('ol', { class: 'history' });
  const logRegion = h('div', { role: 'log', 'aria-label': t('ai.progress') }, log);
  const writing = h('pre', { class: 'writing', hidden: true });
  const helper = form({
    label: t('publish.ai'),
    submit: t('publish.ai.submit'),
    submitClass: 'secondary',
    fields: [field({ name: 'prompt', label: t('publish.ai.prompt'), type: 'textarea', rows: 2, hint: t('publish.ai.hint') })],
    onSubmit: async (element) => {
      log.replaceChildren();
      writing.textContent = '';
      writing.hidden = false;
      const answer = await postStream('/api/v1/tasks/ai-create', { prompt: valueOf(element, 'prompt') }, (event, data) => {
        if (!data) return;
        if (event === 'progress') log.append(h('li', null, t(`ai.stage.${data.stage}`)));
        if (event === 'field') writing.textContent += `${data.field}: ${Array.isArray(data.value) ? data.value.join(', ') : String(data.value)}\n`;
        if (event === 'delta') writing.textContent += data.text;
        if (event === 'error') log.append(h('li', null, errorBox({ code: data.code, data: { detail: data.detail } })));
        if (event === 'draft') {
          fill(target(), data.draft);
          log.append(h('li', null, t('publish.ai.done')));
        }
      });
      if (answer.code !== 0) showProblem(element, answer);
    },
  });
  return h('section', { 'aria-labelledby': 'ai-task' }, h('h2', { id: 'ai-task' }, t('publish.ai')), helper, writing, logRegion);
}

/** "Make the description clearer": description-optimize, its changes listed, the text replaced for the person to check. */
function clearerButton(target) {
  const said = h('div', { 'aria-live': 'polite' });
  const button = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onClick: async () => {
        const element = target();
        const description = valueOf(element, 'description');
        if (!description) return showProblem(element, { code: 4000, data: { errors: [{ path: 'description', message: t('publish.clearer.empty') }] } });
        const body = { description };
        if (valueOf(element, 'title')) body.title = valueOf(element, 'title');
        const envelope = await api('POST', '/api/v1/tasks/description-optimize', { body });
        if (envelope.code !== 0) return said.replaceChildren(errorBox(envelope));
        // Nothing to change is said as such, not as a rewrite with an empty list of changes.
        if (envelope.data.optimized_description === description || envelope.data.changes.length === 0) {
          return said.replaceChildren(h('div', { class: 'notice' }, h('p', null, t('publish.clearer.unchanged'))));
        }
        element.elements.namedItem('description').value = envelope.data.optimized_description;
        said.replaceChildren(
          h(
            'div',
            { class: 'notice' },
            h('p', null, t('publish.clearer.done')),
            h(
              'ul',
              null,
              envelope.data.changes.map((change) => h('li', null, change)),
            ),
          ),
        );
      },
    },
    t('publish.clearer'),
  );
  return h('div', { class: 'field' }, button, said);
}

export async function render(ctx) {
  await loadCategories();
  const walletEnvelope = await api('GET', '/api/v1/wallet/');
  if (walletEnvelope.code !== 0) return h('div', { class: 'page' }, h('h1', null, t('publish.title')), errorBox(walletEnvelope));
  const wallet = walletEnvelope.data.cash;
  const preview = h('div', { class: 'notice', id: 'hold-preview', 'aria-live': 'polite' });
  const showPreview = (text) => preview.replaceChildren(...holdPreview(wallet, text).map((line) => h('p', null, line)));
  const kept = keptDraft();
  const bountyField = field({
    name: 'bounty_amount',
    label: t('task.field.bounty'),
    inputmode: 'decimal',
    hint: t('task.field.bounty.hint'),
    currency: 'CNY',
    value: kept ? kept.bounty_amount : '',
  });
  showPreview(bountyField.input.value);
  bountyField.input.addEventListener('input', () => showPreview(bountyField.input.value));
  // One key for this form: a retry after a lost answer replays the publish instead of making a second task.
  const key = retryKey();
  const fields = taskFields(kept ? { ...kept, tags: kept.tags ? [kept.tags] : [] } : {});
  const element = form({
    label: t('publish.title'),
    submit: t('publish.submit'),
    fields: [...fields.slice(0, 2), clearerButton(() => element), ...fields.slice(2), bountyField, preview],
    onSubmit: async (element) => {
      keepDraft(element);
      const body = taskBody(element);
      if (!body) return;
      showPublished(ctx, element, await api('POST', '/api/v1/tasks/', { body, retry: key }));
    },
  });
  element.addEventListener('input', () => keepDraft(element));
  element.addEventListener('change', () => keepDraft(element));
  const restored = kept && h('p', { class: 'notice', role: 'status' }, t('publish.restored'));
  return h(
    'div',
    { class: 'page narrow' },
    h('h1', null, t('publish.title')),
    h('p', { class: 'lead' }, t('publish.lead')),
    restored,
    draftHelper(() => element),
    h('section', { 'aria-labelledby': 'task-form' }, h('h2', { id: 'task-form' }, t('publish.form')), element),
  );
}
