import { api } from '../lib/api.js';
import { categoryLabel, categoryOptions, loadCategories, word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t } from '../lib/i18n.js';
import { amountProblem, normalAmount } from '../lib/money.js';
import { postStream } from '../lib/stream.js';

// Creating a skill three ways: by hand; from a pasted CV (the extraction's candidates, each
// confirmed into a skill); or with ai-create, whose stream is shown as it writes and whose final
// draft fills the form for the person to check and create.
const pricing = ['fixed', 'per_hour', 'per_day', 'per_use', 'negotiable'];

/** The task whose Apply box sent the person here (`?next=/tasks/<id>`), to go back to; only a task's address is taken. */
function taskToReturnTo(ctx) {
  const match = /^\/tasks\/([0-9a-f-]{36})$/.exec(ctx.query.get('next') || '');
  return match ? match[1] : null;
}

function skillForm(ctx, values = {}) {
  return form({
    label: t('skill.form'),
    submit: t('skill.create'),
    fields: [
      field({ name: 'name', label: t('skill.field.name'), required: true, value: values.name, maxlength: 100 }),
      field({
        name: 'description',
        label: t('skill.field.description'),
        type: 'textarea',
        rows: 5,
        required: true,
        value: values.description,
        hint: t('skill.field.description.hint'),
      }),
      h(
        'div',
        { class: 'grid' },
        field({
          name: 'category',
          label: t('skill.field.category'),
          options: categoryOptions(t('skill.field.category.pick')),
          value: values.category,
          required: true,
        }),
        field({
          name: 'mode',
          label: t('task.field.mode'),
          options: [
            ['online', t('mode.online')],
            ['offline', t('mode.offline')],
          ],
          value: values.mode,
        }),
        field({ name: 'city', label: t('task.field.city'), value: values.city }),
        field({ name: 'ut_price', label: t('skill.field.price'), inputmode: 'decimal', value: values.ut_price, hint: t('skill.field.price.hint') }),
        field({
          name: 'pricing_model',
          label: t('skill.field.pricing'),
          options: pricing.map((model) => [model, word('pricing', model)]),
          value: values.pricing_model,
        }),
        field({ name: 'tags', label: t('task.field.tags'), hint: t('task.field.tags.hint'), value: (values.tags || []).join(', ') }),
      ),
    ],
    onSubmit: async (element) => {
      const body = {
        name: valueOf(element, 'name'),
        description: valueOf(element, 'description'),
        category: valueOf(element, 'category'),
        mode: valueOf(element, 'mode'),
        pricing_model: valueOf(element, 'pricing_model'),
      };
      if (valueOf(element, 'city')) body.city = valueOf(element, 'city');
      const price = valueOf(element, 'ut_price');
      if (price && amountProblem(price)) return showProblem(element, { code: 4000, data: { errors: [{ path: 'ut_price', message: amountProblem(price) }] } });
      if (price) body.ut_price = normalAmount(price);
      const tags = valueOf(element, 'tags')
        .split(/[,，]/)
        .map((tag) => tag.trim())
        .filter(Boolean);
      if (tags.length) body.tags = tags;
      const envelope = await api('POST', '/api/v1/skills/', { body, idempotent: true });
      if (envelope.code !== 0) return showProblem(element, envelope, 'skill');
      ctx.announce(t('skill.created', { name: envelope.data.name }));
      // Come from a task's Apply box: back to that task, the new skill chosen there; else to Work.
      const task = taskToReturnTo(ctx);
      ctx.navigate(task ? `/tasks/${task}?skill=${envelope.data.id}` : '/work');
    },
  });
}

function candidateCard(ctx, candidate) {
  const problem = h('div');
  return h(
    'li',
    { class: 'card' },
    h('h3', null, candidate.name),
    h('p', { class: 'meta' }, categoryLabel(candidate.category), ' · ', t('cv.confidence', { percent: Math.round(candidate.confidence * 100) })),
    h('p', { class: 'text' }, candidate.description),
    candidate.evidence.length > 0 && h('p', { class: 'hint' }, t('cv.evidence'), ' ', h('q', null, candidate.evidence[0])),
    form({
      label: t('cv.confirm', { name: candidate.name }),
      submit: t('cv.confirm', { name: candidate.name }),
      fields: [field({ name: 'ut_price', label: t('skill.field.price'), inputmode: 'decimal' })],
      onSubmit: async (element) => {
        const price = valueOf(element, 'ut_price');
        if (price && amountProblem(price)) return showProblem(element, { code: 4000, data: { errors: [{ path: 'ut_price', message: amountProblem(price) }] } });
        const envelope = await api('POST', `/api/v1/skills/candidates/${candidate.id}/confirm`, { body: price ? { ut_price: normalAmount(price) } : {} });
        if (envelope.code !== 0) return showProblem(element, envelope, 'skill');
        ctx.announce(t('skill.created', { name: envelope.data.name }));
        element.replaceWith(h('p', { class: 'notice' }, t('cv.confirmed')));
      },
    }),
    problem,
  );
}

function cvPanel(ctx) {
  const results = h('ul', { class: 'cards', 'aria-live': 'polite' });
  return h(
    'div',
    null,
    form({
      label: t('cv.title'),
      submit: t('cv.submit'),
      fields: [field({ name: 'content', label: t('cv.content'), type: 'textarea', rows: 8, required: true, hint: t('cv.content.hint') })],
      onSubmit: async (element) => {
        const envelope = await api('POST', '/api/v1/skills/extract', { body: { content: valueOf(element, 'content') }, idempotent: true });
        if (envelope.code !== 0) return showProblem(element, envelope, 'skill');
        results.replaceChildren(
          ...(envelope.data.candidates.length
            ? envelope.data.candidates.map((candidate) => candidateCard(ctx, candidate))
            : [h('li', { class: 'hint' }, t('cv.none'))]),
        );
        ctx.announce(t('cv.found', { count: envelope.data.candidates.length }));
      },
    }),
    h('h2', null, t('cv.candidates')),
    results,
  );
}

function aiPanel(ctx, useDraft) {
  // The live region is a wrapper: role=log on the list itself would take away its items' list semantics.
  const log = h('ol', { class: 'history' });
  const logRegion = h('div', { role: 'log', 'aria-label': t('ai.progress') }, log);
  const writing = h('pre', { class: 'writing' });
  return h(
    'div',
    null,
    form({
      label: t('ai.title'),
      submit: t('ai.submit'),
      fields: [
        field({ name: 'prompt', label: t('ai.prompt'), type: 'textarea', rows: 3, required: true, hint: t('ai.prompt.hint') }),
        field({ name: 'category', label: t('skill.field.category'), options: categoryOptions(t('ai.category.any')) }),
      ],
      onSubmit: async (element) => {
        log.replaceChildren();
        writing.textContent = '';
        const body = { prompt: valueOf(element, 'prompt') };
        if (valueOf(element, 'category')) body.category = valueOf(element, 'category');
        const answer = await postStream('/api/v1/skills/ai-create', body, (event, data) => {
          if (!data) return;
          if (event === 'progress') log.append(h('li', null, t(`ai.stage.${data.stage}`)));
          if (event === 'field') writing.textContent += `${data.field}: ${Array.isArray(data.value) ? data.value.join(', ') : String(data.value)}\n`;
          if (event === 'delta') writing.textContent += data.text;
          if (event === 'error') log.append(h('li', null, errorBox({ code: data.code, data: { detail: data.detail } }, 'skill')));
          if (event === 'draft') {
            log.append(h('li', null, t('ai.done')));
            useDraft(data.draft);
          }
        });
        if (answer.code !== 0) showProblem(element, answer, 'skill');
      },
    }),
    h('h2', null, t('ai.writing')),
    writing,
    logRegion,
  );
}

export async function render(ctx) {
  await loadCategories();
  const panel = h('div');
  const choose = (way) => () => {
    if (way === 'manual') panel.replaceChildren(skillForm(ctx));
    if (way === 'cv') panel.replaceChildren(cvPanel(ctx));
    if (way === 'ai')
      panel.replaceChildren(
        aiPanel(ctx, (draft) => {
          const review = h('section', { 'aria-labelledby': 'review' }, h('h2', { id: 'review', tabindex: '-1' }, t('ai.review')), skillForm(ctx, draft));
          panel.append(review);
          review.querySelector('h2').focus();
        }),
      );
  };
  const ways = ['manual', 'cv', 'ai'];
  const chooser = h(
    'fieldset',
    { class: 'ways' },
    h('legend', null, t('skill.how')),
    ways.map((way) =>
      h(
        'label',
        { class: 'way' },
        h('input', { type: 'radio', name: 'way', value: way, checked: way === 'manual', onChange: choose(way) }),
        ` ${t(`skill.way.${way}`)}`,
      ),
    ),
  );
  choose('manual')();
  const task = taskToReturnTo(ctx);
  return h(
    'div',
    { class: 'page narrow' },
    h('h1', null, t('skill.new')),
    h('p', { class: 'lead' }, t('skill.new.lead')),
    task && h('p', null, t('skill.new.for-task'), ' ', h('a', { href: `#/tasks/${task}` }, t('skill.new.back-to-task'))),
    h('section', null, chooser, panel),
  );
}
