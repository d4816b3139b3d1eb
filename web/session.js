// What the pages that act for a signed-in person share (the device page, the MCP sign-in consent
// page): the session, kept in this tab's sessionStorage; same-origin API calls that send its token
// only in the Authorization header (docs/decisions/identity-and-access.md, "Device authorization": that header is what a
// cross-site form cannot send); and the sign-in / sign-up form of web/sign-in.html.
'use strict';

window.MarketplaceSession = (function () {
  const storageKey = 'agent-marketplace.device-page';
  const $ = (id) => document.getElementById(id);
  let session = read();
  let signingUp = false;

  function read() {
    try {
      return JSON.parse(sessionStorage.getItem(storageKey) || 'null');
    } catch {
      return null;
    }
  }

  function save(value) {
    session = value;
    if (value) sessionStorage.setItem(storageKey, JSON.stringify(value));
    else sessionStorage.removeItem(storageKey);
  }

  /** One call to the API: resolves to the envelope; a network failure becomes a code of its own. */
  async function call(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (session) headers.Authorization = 'Bearer ' + session.token;
    try {
      const response = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'omit',
        cache: 'no-store',
      });
      return await response.json();
    } catch {
      return { code: -1, data: null };
    }
  }

  function show(id, visible) {
    $(id).hidden = !visible;
  }

  function setText(id, text) {
    const element = $(id);
    element.textContent = text || '';
    element.hidden = !text;
  }

  /** The sentences every page needs; `own` answers the codes of the page's own calls first. */
  function explainer(own) {
    return (envelope, context) => {
      const data = envelope.data || {};
      const mine = own(envelope, context);
      if (mine) return mine;
      switch (envelope.code) {
        case -1:
          return 'The server could not be reached. Check your connection and try again.';
        case 4010:
          return context === 'sign-in' ? 'Wrong email or password.' : 'Your session has ended. Please sign in again.';
        case 4092:
          return 'An account with this email already exists. Sign in instead.';
        case 4000:
          return 'Some of what you entered is not valid: ' + ((data.errors || [])[0] || {}).message + '.';
        case 4290:
          return 'Too many attempts. Please wait ' + (data.retry_after_seconds || 60) + ' seconds and try again.';
        default:
          return data.detail || 'Something went wrong (code ' + envelope.code + '). Please try again.';
      }
    };
  }

  /** Puts each validation error next to its field; what has no field goes to the form's message. */
  function showErrors(envelope, fields, formErrorId, context, explain) {
    for (const id of Object.values(fields)) {
      setText(id + '-error', '');
      $(id).removeAttribute('aria-invalid');
    }
    setText(formErrorId, '');
    let first = null;
    if (envelope.code === 4000 && envelope.data && Array.isArray(envelope.data.errors)) {
      for (const error of envelope.data.errors) {
        const id = fields[String(error.path).replace(/^body\./, '')];
        if (!id) continue;
        setText(id + '-error', error.message);
        $(id).setAttribute('aria-invalid', 'true');
        first = first || $(id);
      }
    }
    if (first) first.focus();
    else setText(formErrorId, explain(envelope, context));
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

  /** Wires the sign-in form: on success the session is kept and `onSignedIn` runs. */
  function attachSignIn(onSignedIn, explain) {
    $('mode-toggle').addEventListener('click', toggleMode);
    $('sign-in-form').addEventListener('submit', async (event) => {
      event.preventDefault();
      const email = $('email').value.trim();
      const body = { email, password: $('password').value };
      if (signingUp && $('display-name').value.trim()) body.display_name = $('display-name').value.trim();
      const envelope = await call('POST', signingUp ? '/api/v1/auth/signup' : '/api/v1/auth/login', body);
      if (envelope.code !== 0) {
        showErrors(envelope, { email: 'email', password: 'password', display_name: 'display-name' }, 'sign-in-error', 'sign-in', explain);
        return;
      }
      $('password').value = '';
      save({ token: envelope.data.access_token, email });
      await onSignedIn();
    });
  }

  /** The optional agent budget of web/budget.html: the categories, from the API, as checkboxes (once). */
  async function attachBudget() {
    const box = $('budget-categories');
    if (box.childElementCount > 0) return;
    const envelope = await call('GET', '/api/v1/categories');
    if (envelope.code !== 0 || !Array.isArray(envelope.data)) {
      show('budget-categories-box', false);
      return;
    }
    box.replaceChildren(
      ...envelope.data.map((category) => {
        const label = document.createElement('label');
        const input = document.createElement('input');
        input.type = 'checkbox';
        input.name = 'categories';
        input.value = category.code;
        label.append(input, document.createTextNode(category.label_en + ' · ' + category.label));
        return label;
      }),
    );
  }

  /** The budget the person chose: null when they left every box empty (the key then has none). */
  function chosenBudget() {
    const budget = {};
    const perPurchase = $('budget-per-purchase').value.trim();
    const daily = $('budget-daily').value.trim();
    const categories = Array.from($('budget-categories').querySelectorAll('input:checked'), (input) => input.value);
    if (perPurchase) budget.per_purchase_max = perPurchase;
    if (daily) budget.daily_max = daily;
    if (categories.length > 0) budget.categories = categories;
    return Object.keys(budget).length > 0 ? budget : null;
  }

  function clearBudget() {
    for (const id of ['budget-per-purchase', 'budget-daily']) {
      $(id).value = '';
      $(id).removeAttribute('aria-invalid');
      setText(id + '-error', '');
    }
    for (const input of $('budget-categories').querySelectorAll('input:checked')) input.checked = false;
  }

  /** Where the API's validation errors of a budget go (showErrors' field map). */
  const budgetFields = { 'budget.per_purchase_max': 'budget-per-purchase', 'budget.daily_max': 'budget-daily' };

  /** A budget in words: "at most 5.00 UT a purchase, 20.00 UT a day (12.00 left today), only in 2 categories". */
  function budgetSentence(budget) {
    const parts = [];
    if (budget.per_purchase_max) parts.push('at most ' + budget.per_purchase_max + ' ' + budget.currency + ' a purchase');
    if (budget.daily_max) {
      const left = budget.left_today === undefined ? '' : ' (' + budget.left_today + ' left today)';
      parts.push((parts.length ? '' : 'at most ') + budget.daily_max + ' ' + budget.currency + ' a day' + left);
    }
    const only = (budget.categories || []).length + (budget.capability_ids || []).length;
    if (only > 0) parts.push('only in ' + only + (only === 1 ? ' category or capability' : ' categories or capabilities'));
    return parts.length ? parts.join(', ') : 'no limit (spending is counted)';
  }

  return {
    $,
    call,
    show,
    setText,
    save,
    explainer,
    showErrors,
    attachSignIn,
    attachBudget,
    chosenBudget,
    clearBudget,
    budgetFields,
    budgetSentence,
    get current() {
      return session;
    },
  };
})();
