import { api } from '../lib/api.js';
import { categoryLabel, loadCategories, word } from '../lib/catalog.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { t, when } from '../lib/i18n.js';
import { listen } from '../lib/live.js';
import { money } from '../lib/money.js';
import { transactionList } from '../lib/transactions.js';

// Working: the person's skills, the invitations and selections their skills received (answered
// here), their applications (moved live by the task stream), and the transactions they are paid by.
const titles = new Map();
async function taskTitle(id) {
  if (!titles.has(id)) {
    const envelope = await api('GET', `/api/v1/tasks/${id}`);
    titles.set(id, envelope.code === 0 ? envelope.data.title : id.slice(0, 8));
  }
  return titles.get(id);
}

function skillsSection(skills) {
  return h(
    'section',
    { 'aria-labelledby': 'my-skills' },
    h('h2', { id: 'my-skills' }, t('work.skills')),
    h(
      'p',
      null,
      h('a', { class: 'button primary', href: '#/skills/new' }, t('work.new-skill')),
      ' ',
      h('a', { class: 'button secondary', href: '#/' }, t('work.find-tasks')),
    ),
    skills.length === 0
      ? h('p', { class: 'hint' }, t('work.no-skills'))
      : h(
          'ul',
          { class: 'rows' },
          skills.map((skill) =>
            h(
              'li',
              { class: 'row' },
              h('strong', null, skill.name),
              ' ',
              h('span', { class: `badge status-${skill.status}` }, word('status.skill', skill.status)),
              h(
                'span',
                { class: 'hint' },
                ` · ${categoryLabel(skill.category)} · ${skill.ut_price === null ? t('skill.price-open') : money(skill.ut_price, skill.currency)} · ${word('source', skill.source)}`,
              ),
            ),
          ),
        ),
  );
}

async function pushRow(ctx, push, reload) {
  const problem = h('div');
  const title = await taskTitle(push.task_id);
  const answer = (decision) => async () => {
    const envelope = await api('POST', `/api/v1/tasks/pushes/${push.id}/respond`, { body: { decision } });
    if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope, 'push'));
    const data = envelope.data;
    if (data.accepted) {
      ctx.announce(t('push.answer.matched'));
      return ctx.navigate(`/transactions/${data.accepted.transaction.id}`);
    }
    ctx.announce(data.acceptance_error ? t('push.answer.waiting') : t(`push.answer.${decision}`));
    await reload();
  };
  const termsId = `push-terms-${push.id}`;
  return h(
    'li',
    { class: 'card' },
    h(
      'h3',
      null,
      h('a', { href: `#/tasks/${push.task_id}` }, title),
      ' ',
      h('span', { class: `badge status-${push.status}` }, word('status.push', push.status)),
    ),
    h(
      'p',
      { id: termsId, class: 'meta' },
      push.kind === 'selection' ? t('push.you-were-selected', { price: money(push.price, 'CNY') }) : t('push.you-were-invited'),
      ' · ',
      when(push.created_at),
    ),
    push.message && h('p', { class: 'text' }, push.message),
    push.status === 'pending' &&
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          { type: 'button', class: 'primary', 'aria-describedby': termsId, onClick: answer('accept') },
          push.kind === 'selection' ? t('push.accept-selection', { title }) : t('push.accept-invitation', { title }),
        ),
        h('button', { type: 'button', class: 'secondary', onClick: answer('decline') }, t('push.decline', { title })),
      ),
    problem,
  );
}

function listSection(id, title) {
  const list = h('ul', { class: 'cards' });
  const problem = h('div');
  const section = h('section', { 'aria-labelledby': id }, h('h2', { id }, title), problem, list);
  section.list = list;
  section.problem = problem;
  return section;
}

export async function render(ctx) {
  await loadCategories();
  const skills = await api('GET', '/api/v1/skills/', { query: { page_size: 100 } });
  const pushes = listSection('pushes-to-me', t('work.pushes'));
  const applications = listSection('my-applications', t('work.applications'));

  async function loadPushes() {
    const envelope = await api('GET', '/api/v1/tasks/pushes/mine', { query: { page_size: 50 } });
    if (envelope.code !== 0) return pushes.problem.replaceChildren(errorBox(envelope));
    const rows = await Promise.all(envelope.data.items.map((push) => pushRow(ctx, push, loadPushes)));
    pushes.list.replaceChildren(...(rows.length ? rows : [h('li', { class: 'hint' }, t('work.no-pushes'))]));
  }
  async function loadApplications() {
    const envelope = await api('GET', '/api/v1/tasks/applications/mine', { query: { page_size: 50 } });
    if (envelope.code !== 0) return applications.problem.replaceChildren(errorBox(envelope));
    const rows = await Promise.all(
      envelope.data.items.map(async (application) =>
        h(
          'li',
          { class: 'row' },
          h('a', { href: `#/tasks/${application.task_id}` }, await taskTitle(application.task_id)),
          ' ',
          h('span', { class: `badge status-${application.status}` }, word('status.application', application.status)),
          h(
            'span',
            { class: 'hint' },
            ` · ${application.proposed_price === null ? t('application.no-price') : t('application.asks', { price: money(application.proposed_price, 'CNY') })} · ${when(application.applied_at)}`,
          ),
        ),
      ),
    );
    applications.list.replaceChildren(...(rows.length ? rows : [h('li', { class: 'hint' }, t('work.no-applications'))]));
  }
  listen(ctx, '/api/v1/tasks/events', (type, event) => {
    if (type === 'too_old' || (event && event.application_id)) loadApplications();
    if (type === 'too_old' || (event && event.type === 'application.submitted')) loadPushes();
  });
  const earned = transactionList(ctx, 'seller', t('work.transactions'));
  await Promise.all([loadPushes(), loadApplications(), earned.ready]);
  return h(
    'div',
    { class: 'page' },
    h('h1', null, t('work.title')),
    h('p', { class: 'lead' }, t('work.lead')),
    skills.code === 0 ? skillsSection(skills.data.items) : errorBox(skills),
    pushes,
    applications,
    earned,
  );
}
