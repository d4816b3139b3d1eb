import { api } from '../lib/api.js';
import { h } from '../lib/dom.js';
import { field, form, showProblem, valueOf } from '../lib/forms.js';
import { t } from '../lib/i18n.js';
import * as session from '../lib/session.js';

// Sign in or create an account: the same calls, fields and rules as the device and consent pages
// (web/sign-in.html), the same session afterwards. Errors go next to their field.
export async function render(ctx) {
  let signingUp = ctx.query.get('mode') === 'sign-up';
  const next = ctx.query.get('next') || '/';
  const title = h('h1', null);
  const holder = h('div');

  function build() {
    title.textContent = signingUp ? t('sign-in.title.sign-up') : t('sign-in.title');
    const toggle = h(
      'button',
      { type: 'button', class: 'link', onClick: () => ((signingUp = !signingUp), build(), title.focus()) },
      signingUp ? t('sign-in.to-sign-in') : t('sign-in.to-sign-up'),
    );
    const element = form({
      label: title.textContent,
      submit: signingUp ? t('sign-in.submit.sign-up') : t('sign-in.submit'),
      extra: toggle,
      fields: [
        field({ name: 'email', label: t('sign-in.email'), type: 'email', autocomplete: 'username', required: true }),
        field({
          name: 'password',
          label: t('sign-in.password'),
          type: 'password',
          autocomplete: signingUp ? 'new-password' : 'current-password',
          required: true,
          hint: signingUp ? t('sign-in.password.hint') : null,
        }),
        signingUp ? field({ name: 'display_name', label: t('sign-in.display-name'), autocomplete: 'name' }) : null,
      ],
      onSubmit: async (element) => {
        const email = valueOf(element, 'email');
        const body = { email, password: element.elements.namedItem('password').value };
        if (signingUp && valueOf(element, 'display_name')) body.display_name = valueOf(element, 'display_name');
        const envelope = await api('POST', signingUp ? '/api/v1/auth/signup' : '/api/v1/auth/login', { body });
        if (envelope.code !== 0) return showProblem(element, envelope, signingUp ? 'sign-up' : 'sign-in');
        session.save({ token: envelope.data.access_token, email, user_id: envelope.data.user_id });
        ctx.announce(t('sign-in.done'));
        ctx.navigate(next.startsWith('/') ? next : '/');
      },
    });
    holder.replaceChildren(element);
  }

  build();
  return h(
    'div',
    { class: 'page narrow' },
    title,
    ctx.query.get('ended') && h('p', { class: 'notice', role: 'status' }, t('sign-in.ended')),
    h('p', { class: 'lead' }, t('sign-in.lead')),
    h('section', null, holder),
  );
}
