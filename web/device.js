// The device verification page: sign in (or sign up), check the user code, approve or deny, and
// manage the keys your approvals issued. The session and the sign-in form are web/session.js's.
'use strict';

(function () {
  const shared = window.MarketplaceSession;
  const { $, call, show, setText } = shared;
  let currentCode = null;

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
    $(id).textContent = new Date(iso).toLocaleString();
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
      ? envelope.data.agent_platform_name + ' is connected.' + bounded + ' Return to the application: it receives its key within a few seconds, and the key then appears in your list below.'
      : 'The request was denied. ' + envelope.data.agent_platform_name + ' gets no key.';
    show('outcome', true);
    $('outcome-title').focus();
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
    list.replaceChildren(...envelope.data.items.map(keyItem));
    show('keys-empty', envelope.data.items.length === 0);
    show('keys', true);
  }

  function keyItem(key) {
    const item = document.createElement('li');
    const about = document.createElement('div');
    about.className = 'key';
    const name = document.createElement('strong');
    name.textContent = key.name || key.agent_platform_type;
    const detail = document.createElement('span');
    detail.className = 'hint';
    detail.textContent = 'mk_' + key.key_prefix + '… · created ' + new Date(key.created_at).toLocaleString();
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
