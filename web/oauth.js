// The MCP sign-in consent page: sign in (or sign up), read what the application asks, allow or
// deny; the answer sends the browser back to the application (docs/mcp.md "Signing in"). The
// session and the sign-in form are web/session.js's.
'use strict';

(function () {
  const shared = window.MarketplaceSession;
  const { $, call, show, setText } = shared;
  const requestId = new URLSearchParams(location.search).get('request') || '';

  const explain = shared.explainer((envelope) => {
    if (envelope.code === 4030) return 'Sign in with your personal account (email and password) to answer.';
    if (envelope.code === 4040) return 'This sign-in request is unknown, expired or already answered. Start again in the application.';
    return null;
  });

  function signedOut(message) {
    shared.save(null);
    for (const id of ['account', 'request', 'outcome']) show(id, false);
    show('sign-in', true);
    setText('sign-in-error', message || '');
  }

  function finish(title, text) {
    show('request', false);
    $('outcome-title').textContent = title;
    $('outcome-text').textContent = text;
    show('outcome', true);
    $('outcome-title').focus();
  }

  /** The signed-in view: what the application asks. */
  async function enter() {
    show('sign-in', false);
    $('who').textContent = shared.current.email;
    show('account', true);
    const envelope = await call('GET', '/api/v1/auth/oauth/requests/' + encodeURIComponent(requestId));
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code !== 0) return finish('Cannot continue', explain(envelope));
    const request = envelope.data;
    $('request-client').textContent = request.client_name || request.client_id;
    $('request-client-uri').textContent = request.client_uri || 'not given';
    // The host serving the application's metadata document vouches for it; a registered one has no such address.
    $('request-client-host').textContent = request.client_host
      ? request.client_host + ' (the address that publishes its description)'
      : 'Registered directly with this server: no address vouches for the name';
    $('request-redirect').textContent = request.redirect_uri;
    $('request-expiry').dateTime = request.expires_at;
    $('request-expiry').textContent = new Date(request.expires_at).toLocaleString('en-GB', { dateStyle: 'medium', timeStyle: 'short' });
    setText('request-error', '');
    shared.attachBudget();
    show('request', true);
    $('request-title').focus();
  }

  async function decide(decision) {
    const body = { decision };
    const budget = decision === 'approve' ? shared.chosenBudget() : null;
    if (budget) body.budget = budget;
    for (const id of ['approve', 'deny']) $(id).disabled = true;
    const envelope = await call('POST', '/api/v1/auth/oauth/requests/' + encodeURIComponent(requestId) + '/decision', body);
    for (const id of ['approve', 'deny']) $(id).disabled = false;
    if (envelope.code === 4010) return signedOut(explain(envelope));
    if (envelope.code === 4000) return shared.showErrors(envelope, shared.budgetFields, 'request-error', 'request', explain);
    if (envelope.code !== 0) return setText('request-error', explain(envelope));
    finish(
      decision === 'approve' ? 'Allowed' : 'Denied',
      decision === 'approve'
        ? 'Returning you to the application. You can close this page once it says it is connected.'
        : 'The application gets no access. Returning you to it.',
    );
    location.assign(envelope.data.redirect_to);
  }

  function start() {
    shared.attachSignIn(enter, explain);
    $('sign-out').addEventListener('click', () => signedOut(''));
    $('approve').addEventListener('click', () => decide('approve'));
    $('deny').addEventListener('click', () => decide('deny'));
    if (!requestId) return finish('Nothing to answer', 'This page is opened by an application that signs in; start from the application.');
    if (shared.current) enter();
    else signedOut('');
  }

  start();
})();
