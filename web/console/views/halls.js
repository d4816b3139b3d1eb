import { api } from '../lib/api.js';
import { categoryLabel, categoryOptions, loadCategories, word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { money } from '../lib/money.js';
import { signedIn } from '../lib/session.js';

// The two halls of the human space, for anyone: open tasks and active skills, with the API's
// filters and sorts, and "show more" through its cursor. Signed out, the public hall routes are
// read; signed in, the person's own (same space, same filters).
const kinds = {
  tasks: {
    path: () => (signedIn() ? '/api/v1/tasks/hall' : '/api/v1/public/tasks/hall'),
    sorts: ['newest', 'bounty_desc', 'bounty_asc', 'deadline', 'relevance'],
    min: 'min_bounty',
    max: 'max_bounty',
    item: taskCard,
  },
  skills: {
    path: () => (signedIn() ? '/api/v1/skills/hall' : '/api/v1/public/skills/hall'),
    sorts: ['newest', 'quality', 'price_asc', 'price_desc', 'relevance'],
    min: 'min_price_ut',
    max: 'max_price_ut',
    item: skillCard,
  },
};

const excerpt = (text, length = 180) => (text.length > length ? `${text.slice(0, length)}…` : text);

export function taskCard(task) {
  const href = signedIn() ? `#/tasks/${task.id}` : `#/sign-in?next=${encodeURIComponent(`/tasks/${task.id}`)}`;
  return h(
    'li',
    { class: 'card' },
    h('h3', null, h('a', { href }, task.title)),
    h(
      'p',
      { class: 'meta' },
      h('span', { class: 'amount' }, task.bounty_amount === null ? t('task.no-bounty') : money(task.bounty_amount, task.bounty_currency)),
      ' · ',
      categoryLabel(task.category),
      ' · ',
      task.mode === 'offline' ? t('mode.offline-in', { city: task.city || '' }) : t('mode.online'),
      task.delivery_hours ? [' · ', t('task.delivery-hours', { hours: task.delivery_hours })] : null,
    ),
    h('p', { class: 'text' }, excerpt(task.description)),
    task.expires_at && h('p', { class: 'hint' }, t('task.open-until', { date: when(task.expires_at) })),
  );
}

export function skillCard(skill) {
  return h(
    'li',
    { class: 'card' },
    h('h3', null, skill.name),
    h(
      'p',
      { class: 'meta' },
      h('span', { class: 'amount' }, skill.ut_price === null ? t('skill.price-open') : money(skill.ut_price, skill.currency)),
      ' ',
      word('pricing', skill.pricing_model),
      ' · ',
      categoryLabel(skill.category),
      ' · ',
      skill.mode === 'offline' ? t('mode.offline-in', { city: skill.city || '' }) : t('mode.online'),
    ),
    h('p', { class: 'text' }, excerpt(skill.description)),
    h(
      'p',
      { class: 'hint' },
      skill.rating_count ? t('skill.rated', { score: skill.quality_score.toFixed(1), count: skill.rating_count }) : t('skill.not-rated'),
    ),
  );
}

function filters(kind, onSearch) {
  const spec = kinds[kind];
  return form({
    label: t(`hall.${kind}.filters`),
    submit: t('hall.search'),
    fields: [
      h(
        'div',
        { class: 'grid' },
        field({ name: 'q', label: t('hall.q'), type: 'search', hint: t('hall.q.hint') }),
        field({ name: 'category', label: t('hall.category'), options: categoryOptions(t('hall.any')) }),
        field({
          name: 'mode',
          label: t('hall.mode'),
          options: [
            ['', t('hall.any')],
            ['online', t('mode.online')],
            ['offline', t('mode.offline')],
          ],
        }),
        field({ name: 'city', label: t('hall.city') }),
        field({ name: spec.min, label: t(`hall.${kind}.min`), inputmode: 'decimal', currency: 'CNY' }),
        field({ name: spec.max, label: t(`hall.${kind}.max`), inputmode: 'decimal', currency: 'CNY' }),
        field({ name: 'sort', label: t('hall.sort'), options: [['', t('hall.sort.default')], ...spec.sorts.map((sort) => [sort, t(`hall.sort.${sort}`)])] }),
      ),
    ],
    onSubmit: async (element) => {
      const query = {};
      for (const name of ['q', 'category', 'mode', 'city', spec.min, spec.max, 'sort']) query[name] = valueOf(element, name);
      await onSearch(query, element);
    },
  });
}

export async function render(ctx) {
  const kind = ctx.variant;
  const spec = kinds[kind];
  await loadCategories();
  const list = h('ul', { class: 'cards', 'aria-labelledby': 'results-title' });
  const count = h('p', { class: 'hint', id: 'results-count', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('list.more'));
  const problem = h('div');
  let query = {};
  let cursor = null;

  async function load(append, element) {
    const envelope = await api('GET', spec.path(), { query: { ...query, cursor: append ? cursor : undefined, page_size: 20 } });
    if (envelope.code !== 0) {
      // The list below no longer answers the filters shown: it goes, rather than stand for them.
      if (!append) {
        list.replaceChildren();
        count.textContent = '';
        more.hidden = true;
      }
      if (element) return showProblem(element, envelope, 'hall');
      return problem.replaceChildren(errorBox(envelope, 'hall'));
    }
    problem.replaceChildren();
    if (!append) list.replaceChildren();
    list.append(...envelope.data.items.map(spec.item));
    cursor = envelope.data.next_cursor;
    more.hidden = !envelope.data.has_more;
    count.textContent = envelope.data.total === 0 ? t(`hall.${kind}.empty`) : t('hall.count', { count: envelope.data.total });
  }

  more.addEventListener('click', async () => {
    more.disabled = true;
    await load(true);
    more.disabled = false;
  });
  await load(false);
  const other = kind === 'tasks' ? ['#/skills', t('hall.to-skills')] : ['#/', t('hall.to-tasks')];
  return h(
    'div',
    { class: 'page' },
    h('h1', null, t(`hall.${kind}.title`)),
    // Signed in, the lead says how to apply from here, not to sign in.
    h('p', { class: 'lead' }, t(signedIn() ? `hall.${kind}.lead.signed-in` : `hall.${kind}.lead`)),
    !signedIn() && h('p', { class: 'notice' }, t('hall.signed-out'), h('a', { href: '#/sign-in' }, t('hall.sign-in-link')), t('hall.signed-out.end')),
    signedIn() && kind === 'tasks' && h('p', null, h('a', { class: 'button primary', href: '#/tasks/new' }, t('hire.publish'))),
    h(
      'section',
      { class: 'filters', 'aria-labelledby': 'filters-title' },
      h('h2', { id: 'filters-title' }, t('hall.filters')),
      filters(kind, async (next, element) => {
        query = next;
        await load(false, element);
      }),
    ),
    h(
      'section',
      { 'aria-labelledby': 'results-title' },
      h('h2', { id: 'results-title' }, t(`hall.${kind}.results`)),
      count,
      problem,
      list,
      h('div', { class: 'actions' }, more),
    ),
    h('p', null, h('a', { href: other[0] }, other[1])),
  );
}
