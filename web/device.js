// The device verification page: sign in (or sign up), check the user code, approve or deny, and
// manage the keys your approvals issued. The session and the sign-in form are web/session.js's.
'use strict';

(function () {
  const shared = window.MarketplaceSession;
  const { $, call, show, setText } = shared;
  let currentCode = null;
  // The ids of the keys listed, to tell when the key an approval issued has arrived.
  let listedKeys = new Set();
  let waitTimer = null;
  let waiting = null;

  /** A date as the console writes it (12 Mar 2026, 14:05). */
  const dateText = (iso) => new Date(iso).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' });

  function announce(text) {
    setText('status', text);
  }

  /** A sentence a person can act on, for the codes the device calls can meet. */
  const explain = shared.explainer((envelope) => {
    if (envelope.code === 4040) return 'No request has this code. Check the code the application shows and try again.';
    if (envelope.code === 4803) return 'This code has expired or was already used. Start again in the application to get a new code.';
    return null;
  });

  const showErrors = (envelope, fields, formErrorId, context) => shared.showErrors(envelope, fields, formErrorId, context, explain);

  function signedOut(message) {
    shared.save(null);
    for (const id of ['account', 'code', 'request', 'outcome', 'keys']) show(id, false);
    show('sign-in', true);
    setText('sign-in-error', message || '');
  }

  /** The signed-in view: the code (looked up at once when the link carried it) and the keys. */
  async function enter() {
    show('sign-in', false);
    $('who').textContent = shared.current.email;
    show('account', true);
    loadKeys();
    const fromLink = currentCode || new URLSearchParams(location.search).get('user_code');
    if (fromLink) {
      $('user-code').value = fromLink;
      await lookUp(fromLink);
    } else {
      askForCode();
    }
  }

  function askForCode() {
    for (const id of ['request', 'outcome']) show(id, false);
    show('code', true);
    $('user-code').focus();
  }

  async function lookUp(code) {
    const envelope = await call('POST', '/api/v1/auth/device-auth/lookup', { user_code: code });
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code !== 0) {
      show('code', true);
      showErrors(envelope, { user_code: 'user-code' }, 'user-code-error', 'code');
      $('user-code').setAttribute('aria-invalid', 'true');
      $('user-code').focus();
      return;
    }
    currentCode = envelope.data.user_code;
    setText('user-code-error', '');
    $('user-code').removeAttribute('aria-invalid');
    show('code', false);
    $('request-platform').textContent = envelope.data.agent_platform_name;
    $('request-code').textContent = envelope.data.user_code;
    showTime('request-time', envelope.data.requested_at);
    showTime('request-expiry', envelope.data.expires_at);
    setText('request-error', '');
    shared.clearBudget();
    shared.attachBudget();
    show('request', true);
    $('request-title').focus();
  }

  function showTime(id, iso) {
    $(id).dateTime = iso;
    $(id).textContent = dateText(iso);
  }

  async function decide(decision) {
    const body = { user_code: currentCode, decision };
    const budget = decision === 'approve' ? shared.chosenBudget() : null;
    if (budget) body.budget = budget;
    for (const id of ['approve', 'deny']) $(id).disabled = true;
    const envelope = await call('POST', '/api/v1/auth/device-auth/confirm', body);
    for (const id of ['approve', 'deny']) $(id).disabled = false;
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code === 4000) return showErrors(envelope, shared.budgetFields, 'request-error', 'request');
    if (envelope.code !== 0) {
      setText('request-error', explain(envelope));
      return;
    }
    currentCode = null;
    // The code is spent: a reload must not look it up again.
    history.replaceState(null, '', location.pathname);
    show('request', false);
    const approved = envelope.data.status === 'approved';
    $('outcome-title').textContent = approved ? 'Approved' : 'Denied';
    const bounded = budget ? ' It may spend ' + shared.budgetSentence({ ...budget, currency: 'UT' }) + '.' : '';
    $('outcome-text').textContent = approved
      ? envelope.data.agent_platform_name +
        ' is connected.' +
        bounded +
        ' Return to the application: it receives its key within a few seconds, and the key then appears in your list below.'
      : 'The request was denied. ' + envelope.data.agent_platform_name + ' gets no key.';
    show('outcome', true);
    $('outcome-title').focus();
    if (approved) waitForKey(envelope.data.agent_platform_name);
  }

  /**
   * The key exists once the application collects it (its next poll of the token endpoint, within a
   * few seconds): the list is read again every few seconds until a new key is in it (for at most two
   * minutes), and the page says so, instead of a list that still says "No keys yet".
   */
  function waitForKey(platform) {
    clearTimeout(waitTimer);
    waiting = { before: new Set(listedKeys), platform };
    const until = Date.now() + 120_000;
    const tick = async () => {
      await loadKeys();
      if (waiting && Date.now() < until && shared.current) waitTimer = setTimeout(tick, 2_000);
    };
    waitTimer = setTimeout(tick, 1_000);
  }

  /** Said once, by whichever reading of the list (the wait's, a refresh, coming back to the tab) first shows the new key. */
  function noticeNewKey() {
    if (!waiting || ![...listedKeys].some((id) => !waiting.before.has(id))) return;
    announce('The key of ' + waiting.platform + ' is now in your list.');
    waiting = null;
    clearTimeout(waitTimer);
  }

  async function loadKeys() {
    const envelope = await call('GET', '/api/v1/auth/api-keys?page_size=100');
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code !== 0) {
      setText('keys-error', explain(envelope));
      show('keys', true);
      return;
    }
    setText('keys-error', '');
    const list = $('keys-list');
    listedKeys = new Set(envelope.data.items.map((key) => key.id));
    list.replaceChildren(...envelope.data.items.map(keyItem));
    show('keys-empty', envelope.data.items.length === 0);
    show('keys', true);
    noticeNewKey();
  }

  function keyItem(key) {
    const item = document.createElement('li');
    const about = document.createElement('div');
    about.className = 'key';
    const name = document.createElement('strong');
    name.textContent = key.name || key.agent_platform_type;
    const detail = document.createElement('span');
    detail.className = 'hint';
    detail.textContent = 'mk_' + key.key_prefix + '… · created ' + dateText(key.created_at);
    const budget = document.createElement('span');
    budget.className = 'hint';
    budget.textContent = key.budget ? 'Budget: ' + shared.budgetSentence(key.budget) : 'No budget';
    about.append(name, detail, budget);
    item.append(about);
    if (key.revoked_at) {
      const revoked = document.createElement('span');
      revoked.className = 'tag';
      revoked.textContent = 'Revoked';
      item.append(revoked);
    } else {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'secondary';
      button.textContent = 'Revoke';
      button.setAttribute('aria-label', 'Revoke ' + name.textContent + ' key mk_' + key.key_prefix);
      button.addEventListener('click', () => revoke(key));
      item.append(button);
    }
    return item;
  }

  async function revoke(key) {
    const envelope = await call('DELETE', '/api/v1/auth/api-keys/' + encodeURIComponent(key.id));
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code !== 0) {
      setText('keys-error', explain(envelope));
      return;
    }
    await loadKeys();
    announce('The key mk_' + key.key_prefix + '… is revoked.');
    $('keys-title').focus();
  }

  function start() {
    shared.attachSignIn(enter, explain);
    $('sign-out').addEventListener('click', () => {
      signedOut('');
      announce('You are signed out.');
      $('sign-in-title').focus();
    });
    $('code-form').addEventListener('submit', (event) => {
      event.preventDefault();
      currentCode = null;
      lookUp($('user-code').value);
    });
    $('refresh-keys').addEventListener('click', loadKeys);
    // Coming back to this tab (from the application) shows the key it has collected meanwhile.
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && shared.current) loadKeys();
    });
    $('approve').addEventListener('click', () => decide('approve'));
    $('deny').addEventListener('click', () => decide('deny'));
    $('another').addEventListener('click', () => {
      $('user-code').value = '';
      askForCode();
    });
    const fromLink = new URLSearchParams(location.search).get('user_code');
    if (fromLink) $('user-code').value = fromLink;
    if (shared.current) enter();
    else signedOut('');
  }

  start();
})();
