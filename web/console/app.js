import { api, whenSessionEnds } from './lib/api.js';
import { byId, clear, h } from './lib/dom.js';
import { errorBox } from './lib/explain.js';
import { chooseLanguage, language, languages, loadLanguage, rememberLanguage, t } from './lib/i18n.js';
import * as session from './lib/session.js';
import { onStreamState } from './lib/stream.js';

// The console's shell: the header (navigation, account, language, live status), the router of
// the `#/...` addresses, and the context each view gets. A view is a module whose `render(ctx)`
// returns the element to show; what it opens (streams) it closes through ctx.onLeave.
const routes = [
  [/^\/?$/, 'halls', 'tasks'],
  [/^\/skills$/, 'halls', 'skills'],
  [/^\/sign-in$/, 'sign-in'],
  [/^\/hire$/, 'hire'],
  [/^\/tasks\/new$/, 'publish'],
  [/^\/tasks\/([0-9a-f-]{36})$/, 'task'],
  [/^\/transactions\/([0-9a-f-]{36})$/, 'transaction'],
  [/^\/work$/, 'work'],
  [/^\/skills\/new$/, 'skill-new'],
  [/^\/wallet$/, 'wallet'],
  [/^\/agents$/, 'agents'],
];
const needsSignIn = new Set(['hire', 'publish', 'task', 'transaction', 'work', 'skill-new', 'wallet', 'agents']);

let leaving = [];
let rendering = 0;

export function navigate(path) {
  if (location.hash === `#${path}`) render();
  else location.hash = path;
}

/** Says something to screen readers (and shows nothing): a polite status. */
export function announce(text) {
  const region = byId('announce');
  region.textContent = '';
  setTimeout(() => {
    region.textContent = text;
  }, 50);
}

function parse() {
  const [path, search] = location.hash.replace(/^#/, '').split('?');
  for (const [pattern, view, variant] of routes) {
    const match = pattern.exec(path || '/');
    if (match) return { view, variant, params: match.slice(1), query: new URLSearchParams(search || '') };
  }
  return { view: 'not-found', params: [], query: new URLSearchParams() };
}

function navigation(current) {
  const signedIn = session.signedIn();
  const links = [
    ['#/', 'nav.tasks', current === 'halls:tasks'],
    ['#/skills', 'nav.skills', current === 'halls:skills'],
    ...(signedIn
      ? [
          ['#/hire', 'nav.hire', ['hire', 'publish'].includes(current)],
          ['#/work', 'nav.work', ['work', 'skill-new'].includes(current)],
          ['#/wallet', 'nav.wallet', current === 'wallet'],
          ['#/agents', 'nav.agents', current === 'agents'],
        ]
      : []),
  ];
  return h(
    'nav',
    { 'aria-label': t('nav.label') },
    h(
      'ul',
      { class: 'nav' },
      links.map(([href, key, here]) => h('li', null, h('a', { href, 'aria-current': here ? 'page' : null }, t(key)))),
    ),
  );
}

const liveStatus = h('p', { class: 'live', id: 'live', role: 'status', hidden: true });
onStreamState((state) => {
  liveStatus.hidden = state === 'idle';
  liveStatus.dataset.state = state;
  liveStatus.textContent = state === 'idle' ? '' : t(`live.${state}`);
});

function header(current) {
  const bar = clear(byId('bar'));
  const other = languages.find((code) => code !== language());
  const switcher = h(
    'button',
    { type: 'button', class: 'link', lang: other === 'zh' ? 'zh-CN' : 'en', onClick: () => switchLanguage(other) },
    t(`language.${other}`),
  );
  const me = session.current();
  const account = session.signedIn()
    ? h(
        'p',
        { class: 'account' },
        h('span', null, t('account.signed-in-as'), ' ', h('strong', null, me.email || '')),
        ' ',
        h('button', { type: 'button', class: 'link', onClick: signOut }, t('account.sign-out')),
      )
    : h('p', { class: 'account' }, h('a', { href: '#/sign-in' }, t('account.sign-in')));
  bar.append(
    h('p', { class: 'brand' }, h('a', { href: '#/' }, t('brand'))),
    navigation(current),
    h('div', { class: 'bar-end' }, liveStatus, account, switcher),
  );
  byId('skip').textContent = t('skip');
}

async function switchLanguage(code) {
  rememberLanguage(code);
  await loadLanguage(code);
  await render();
}

function signOut() {
  session.save(null);
  announce(t('account.signed-out'));
  navigate('/');
}

whenSessionEnds(() => {
  session.save(null);
  navigate(`/sign-in?ended=1&next=${encodeURIComponent(location.hash.replace(/^#/, ''))}`);
});

/** What a view needs: its address's parts, the signed-in person, and where to register its clean-up. */
function context(route, turn) {
  return {
    params: route.params,
    query: route.query,
    variant: route.variant,
    me: session.current(),
    navigate,
    announce,
    // A view still finishing after the person moved on (an answer arriving late) is cleaned up at once.
    onLeave: (cleanup) => (turn === rendering ? leaving.push(cleanup) : cleanup()),
  };
}

async function render() {
  const turn = (rendering += 1);
  for (const cleanup of leaving.splice(0)) cleanup();
  const route = parse();
  const key = route.variant ? `${route.view}:${route.variant}` : route.view;
  header(key);
  const view = byId('view');
  if (needsSignIn.has(route.view) && !session.signedIn()) return navigate(`/sign-in?next=${encodeURIComponent(location.hash.replace(/^#/, ''))}`);
  if (session.signedIn() && !session.current().user_id) {
    const me = await api('GET', '/api/v1/auth/me');
    if (me.code === 0) session.update({ user_id: me.data.user_id });
  }
  let content;
  try {
    const module = route.view === 'not-found' ? null : await import(`./views/${route.view}.js`);
    content = module
      ? await module.render(context(route, turn))
      : h('section', null, h('h1', { tabindex: '-1' }, t('not-found.title')), h('p', null, h('a', { href: '#/' }, t('not-found.back'))));
  } catch (error) {
    console.error(error);
    content = h('section', null, h('h1', { tabindex: '-1' }, t('error.page.title')), errorBox({ code: -3, data: null }));
  }
  if (turn !== rendering) return;
  clear(view).append(content);
  const heading = view.querySelector('h1');
  document.title = `${heading ? heading.textContent : ''} · ${t('brand')}`;
  // After the first page, moving to another page puts the keyboard and the screen reader on its title.
  if (heading) heading.setAttribute('tabindex', '-1');
  if (heading && turn > 1) heading.focus();
  window.scrollTo(0, 0);
}

/**
 * When the control a person used goes away (an action's answer redraws its section, a list
 * replaces its rows), the keyboard would start again from the top of the page and a screen reader
 * would say nothing: it lands instead on the first heading (or alert) of the nearest part of the
 * page that is still there. A control that is only disabled while its call runs keeps its place
 * (lib/forms.js gives the focus back to it).
 */
function keepFocusWhenControlsGo(view) {
  let focusPath = [];
  // Only a change that follows the person's own key or click (an answer to it) moves the focus; a
  // redraw from the stream while they read does not.
  let lastInputAt = 0;
  const recentMs = 10_000;
  for (const type of ['keydown', 'pointerdown']) document.addEventListener(type, () => (lastInputAt = Date.now()), true);
  document.addEventListener('focusin', (event) => {
    focusPath = [];
    for (let node = event.target; node && node !== document.body; node = node.parentElement) focusPath.push(node);
  });
  new MutationObserver(() => {
    if (focusPath.length === 0 || focusPath[0].isConnected || Date.now() - lastInputAt > recentMs) return;
    if (document.activeElement && document.activeElement !== document.body) return;
    const holder = focusPath.find((node) => node.isConnected);
    focusPath = [];
    if (!holder) return;
    const landing = holder.querySelector('h2, h3, [role="alert"]') || holder;
    if (!landing.matches('a[href], button, input, select, textarea, [tabindex]')) landing.setAttribute('tabindex', '-1');
    landing.focus();
  }).observe(view, { childList: true, subtree: true });
}

async function start() {
  keepFocusWhenControlsGo(byId('view'));
  // The skip link moves the focus to the page's content; the hash of the address is the router's.
  byId('skip').addEventListener('click', (event) => {
    event.preventDefault();
    byId('view').focus();
  });
  await loadLanguage(chooseLanguage());
  window.addEventListener('hashchange', render);
  session.onChange(() => header(parse().view));
  await render();
}

start();
