// The MCP sign-in consent page: sign in (or sign up), read what the application asks, allow or
// deny; the answer sends the browser back to the application. The session token lives in this
// tab's sessionStorage, shared with the device page, and goes out only in the Authorization
// header of same-origin calls (docs/mcp.md "Signing in").
'use strict';

(function () {
  const storageKey = 'agent-marketplace.device-page';
  const $ = (id) => document.getElementById(id);
  const requestId = new URLSearchParams(location.search).get('request') || '';
  let session = readSession();
  let signingUp = false;

  function readSession() {
    try {
      return JSON.parse(sessionStorage.getItem(storageKey) || 'null');
    } catch {
      return null;
    }
  }

  function saveSession(value) {
    session = value;
    if (value) sessionStorage.setItem(storageKey, JSON.stringify(value));
    else sessionStorage.removeItem(storageKey);
  }

  async function call(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (session) headers.Authorization = 'Bearer ' + session.token;
    try {
      const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', cache: 'no-store' });
      return await response.json();
    } catch {
      return { code: -1, data: null };
    }
  }

  const show = (id, visible) => { $(id).hidden = !visible; };
  function setText(id, text) {
    $(id).textContent = text || '';
    $(id).hidden = !text;
  }

  function explain(envelope, context) {
    const data = envelope.data || {};
    switch (envelope.code) {
      case -1: return 'The server could not be reached. Check your connection and try again.';
      case 4010: return context === 'sign-in' ? 'Wrong email or password.' : 'Your session has ended. Please sign in again.';
      case 4030: return 'Sign in with your personal account (email and password) to answer.';
      case 4092: return 'An account with this email already exists. Sign in instead.';
      case 4040: return 'This sign-in request is unknown, expired or already answered. Start again in the application.';
      case 4290: return 'Too many attempts. Please wait ' + (data.retry_after_seconds || 60) + ' seconds and try again.';
      default: return data.detail || 'Something went wrong (code ' + envelope.code + '). Please try again.';
    }
  }

  function showSignInErrors(envelope) {
    const fields = { email: 'email', password: 'password', display_name: 'display-name' };
    for (const id of Object.values(fields)) {
      setText(id + '-error', '');
      $(id).removeAttribute('aria-invalid');
    }
    let first = null;
    for (const error of (envelope.code === 4000 && envelope.data && envelope.data.errors) || []) {
      const id = fields[String(error.path).replace(/^body\./, '')];
      if (!id) continue;
      setText(id + '-error', error.message);
      $(id).setAttribute('aria-invalid', 'true');
      first = first || $(id);
    }
    setText('sign-in-error', first ? '' : explain(envelope, 'sign-in'));
    if (first) first.focus();
  }

  function signedOut(message) {
    saveSession(null);
    for (const id of ['account', 'request', 'outcome']) show(id, false);
    show('sign-in', true);
    setText('sign-in-error', message || '');
  }

  function toggleMode() {
    signingUp = !signingUp;
    show('display-name-field', signingUp);
    show('password-hint', signingUp);
    $('sign-in-title').textContent = signingUp ? 'Create an account' : 'Sign in';
    $('sign-in-submit').textContent = signingUp ? 'Create account' : 'Sign in';
    $('mode-toggle').textContent = signingUp ? 'Have an account? Sign in' : 'New here? Create an account';
    $('password').setAttribute('autocomplete', signingUp ? 'new-password' : 'current-password');
    $('sign-in-title').focus();
  }

  async function submitSignIn(event) {
    event.preventDefault();
    const email = $('email').value.trim();
    const body = { email, password: $('password').value };
    if (signingUp && $('display-name').value.trim()) body.display_name = $('display-name').value.trim();
    const envelope = await call('POST', signingUp ? '/api/v1/auth/signup' : '/api/v1/auth/login', body);
    if (envelope.code !== 0) return showSignInErrors(envelope);
    $('password').value = '';
    saveSession({ token: envelope.data.access_token, email });
    await enter();
  }

  async function enter() {
    show('sign-in', false);
    $('who').textContent = session.email;
    show('account', true);
    const envelope = await call('GET', '/api/v1/auth/oauth/requests/' + encodeURIComponent(requestId));
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code !== 0) return finish('Cannot continue', explain(envelope));
    const request = envelope.data;
    $('request-client').textContent = request.client_name || request.client_id;
    $('request-client-uri').textContent = request.client_uri || 'not given';
    $('request-redirect').textContent = request.redirect_origin;
    $('request-expiry').dateTime = request.expires_at;
    $('request-expiry').textContent = new Date(request.expires_at).toLocaleString();
    setText('request-error', '');
    show('request', true);
    $('request-title').focus();
  }

  function finish(title, text) {
    show('request', false);
    $('outcome-title').textContent = title;
    $('outcome-text').textContent = text;
    show('outcome', true);
    $('outcome-title').focus();
  }

  async function decide(decision) {
    for (const id of ['approve', 'deny']) $(id).disabled = true;
    const envelope = await call('POST', '/api/v1/auth/oauth/requests/' + encodeURIComponent(requestId) + '/decision', { decision });
    for (const id of ['approve', 'deny']) $(id).disabled = false;
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code !== 0) return setText('request-error', explain(envelope));
    finish(decision === 'approve' ? 'Allowed' : 'Denied', decision === 'approve'
      ? 'Returning you to the application. You can close this page once it says it is connected.'
      : 'The application gets no access. Returning you to it.');
    location.assign(envelope.data.redirect_to);
  }

  function start() {
    $('sign-in-form').addEventListener('submit', submitSignIn);
    $('mode-toggle').addEventListener('click', toggleMode);
    $('sign-out').addEventListener('click', () => signedOut(''));
    $('approve').addEventListener('click', () => decide('approve'));
    $('deny').addEventListener('click', () => decide('deny'));
    if (!requestId) return finish('Nothing to answer', 'This page is opened by an application that signs in; start from the application.');
    if (session) enter();
    else signedOut('');
  }

  start();
})();
