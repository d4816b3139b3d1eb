import { api } from '../lib/api.js';
import { h } from '../lib/dom.js';
import { errorBox } from '../lib/explain.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t, when } from '../lib/i18n.js';
import { amountProblem, money, normalAmount } from '../lib/money.js';
import { applicationBadge, endedWithoutWork } from '../lib/transactions.js';
import { word } from '../lib/catalog.js';

// A worker's side of someone else's task: apply with one of their active skills (a message and a
// price of their own), see their application move, withdraw it, and once accepted go to the
// transaction to accept the work and deliver.
async function mySkills() {
  const envelope = await api('GET', '/api/v1/skills/', { query: { status: 'active', page_size: 100 } });
  return envelope.code === 0 ? envelope.data.items : [];
}

async function myApplications(taskId) {
  const envelope = await api('GET', '/api/v1/tasks/applications/mine', { query: { page_size: 100 } });
  return envelope.code === 0 ? envelope.data.items.filter((application) => application.task_id === taskId) : [];
}

function applicationRow(ctx, task, application, skills, reload, deal) {
  const ended = Boolean(deal && endedWithoutWork.includes(deal.status));
  const problem = h('div');
  const skill = skills.find((each) => each.id === application.skill_id);
  return h(
    'li',
    { class: 'card' },
    h('h3', null, skill ? skill.name : t('application.yours'), ' ', applicationBadge(application, deal)),
    h(
      'p',
      { class: 'meta' },
      application.proposed_price === null
        ? t('application.no-price')
        : t('application.asks', { price: money(application.proposed_price, task.bounty_currency) }),
      ' · ',
      when(application.applied_at),
    ),
    application.message && h('p', { class: 'text' }, application.message),
    application.status === 'accepted' &&
      task.transaction_id &&
      (ended
        ? h('p', null, t(`application.ended.${deal.status}`), ' ', h('a', { href: `#/transactions/${task.transaction_id}` }, t('task.to-transaction')))
        : h('p', null, h('a', { class: 'button primary', href: `#/transactions/${task.transaction_id}` }, t('application.to-transaction')))),
    application.status === 'pending' &&
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onClick: async () => {
            const envelope = await api('DELETE', `/api/v1/tasks/${task.id}/applications/${application.id}`);
            if (envelope.code !== 0) return problem.replaceChildren(errorBox(envelope));
            ctx.announce(t('application.withdrawn'));
            await reload();
          },
        },
        t('application.withdraw'),
      ),
    problem,
  );
}

function applyForm(ctx, task, skills, reload) {
  // Creating a skill brings the person back here, with it chosen (skill-new.js).
  if (skills.length === 0)
    return h('p', null, t('apply.no-skills'), ' ', h('a', { href: `#/skills/new?next=${encodeURIComponent(`/tasks/${task.id}`)}` }, t('apply.create-skill')));
  return form({
    label: t('apply.title'),
    submit: t('apply.submit'),
    fields: [
      field({ name: 'skill_id', label: t('apply.skill'), options: skills.map((skill) => [skill.id, skill.name]), value: ctx.query.get('skill') }),
      field({
        name: 'proposed_price',
        label: t('apply.price'),
        inputmode: 'decimal',
        hint: t('apply.price.hint', { bounty: task.bounty_amount === null ? t('task.no-bounty') : money(task.bounty_amount, task.bounty_currency) }),
      }),
      field({ name: 'message', label: t('apply.message'), type: 'textarea', rows: 3 }),
    ],
    onSubmit: async (element) => {
      const body = { skill_id: valueOf(element, 'skill_id') };
      const price = valueOf(element, 'proposed_price');
      if (price && amountProblem(price, task.bounty_currency))
        return showProblem(element, { code: 4000, data: { errors: [{ path: 'proposed_price', message: amountProblem(price, task.bounty_currency) }] } });
      if (price) body.proposed_price = normalAmount(price);
      if (valueOf(element, 'message')) body.message = valueOf(element, 'message');
      const envelope = await api('POST', `/api/v1/tasks/${task.id}/applications`, { body, idempotent: true });
      if (envelope.code !== 0) return showProblem(element, envelope, 'apply');
      ctx.announce(t('apply.done'));
      await reload();
    },
  });
}

export async function build(ctx, first, firstDeal) {
  const skills = await mySkills();
  const element = h('div');
  let task = first;
  let deal = firstDeal;

  async function reload() {
    const applications = await myApplications(task.id);
    const live = applications.some((application) => ['pending', 'accepted'].includes(application.status));
    const parts = [];
    if (applications.length) {
      parts.push(
        h(
          'section',
          { 'aria-labelledby': 'my-application' },
          h('h2', { id: 'my-application' }, t('application.mine')),
          h(
            'ul',
            { class: 'cards' },
            applications.map((application) => applicationRow(ctx, task, application, skills, reload, deal)),
          ),
        ),
      );
    }
    if (task.status === 'open' && !live)
      parts.push(h('section', { 'aria-labelledby': 'apply' }, h('h2', { id: 'apply' }, t('apply.title')), applyForm(ctx, task, skills, reload)));
    if (task.status !== 'open' && !applications.length)
      parts.push(h('p', { class: 'notice' }, t('task.not-open', { status: word('status.task', task.status) })));
    element.replaceChildren(...parts);
  }

  await reload();
  return {
    notices: h('div'),
    element,
    update: async (fresh, freshDeal) => {
      task = fresh;
      deal = freshDeal;
      await reload();
    },
  };
}
