import { h, uid } from './dom.js';
import { errorBox } from './explain.js';
import { fieldWords } from './field-words.js';
import { t } from './i18n.js';

// Form fields with a visible label, an optional hint and a place for the field's own error, tied
// together with for/aria-describedby; errors from the API (4000 lists each field) go next to
// their field and mark it invalid, everything else to the form's alert.
export function field({ name, label, type = 'text', hint, required, value, options, rows, autocomplete, inputmode, maxlength, placeholder, currency }) {
  const id = uid(name);
  const hintId = hint ? `${id}-hint` : null;
  const errorId = `${id}-error`;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ');
  // An amount field names its currency, so that a bound the API states is shown as money (¥10,000.00).
  const common = { id, name, required, autocomplete, inputmode, maxlength, placeholder, 'aria-describedby': describedBy, 'data-currency': currency };
  let input;
  if (options) {
    input = h(
      'select',
      common,
      options.map(([optionValue, text]) => h('option', { value: optionValue, selected: String(value ?? '') === optionValue }, text)),
    );
  } else if (type === 'textarea') {
    input = h('textarea', { ...common, rows: rows || 4 });
    input.value = value ?? '';
  } else {
    input = h('input', { ...common, type });
    if (type === 'checkbox') input.checked = Boolean(value);
    else input.value = value ?? '';
  }
  const wrapper = h(
    'div',
    { class: type === 'checkbox' ? 'field field-check' : 'field' },
    type === 'checkbox'
      ? [input, h('label', { for: id }, label)]
      : [h('label', { for: id }, label, required ? h('span', { class: 'required' }, t('form.required-mark')) : null), input],
    hint && h('p', { id: hintId, class: 'hint' }, hint),
    h('p', { id: errorId, class: 'field-error', hidden: true }),
  );
  wrapper.input = input;
  wrapper.dataset.name = name;
  return wrapper;
}

export const valueOf = (form, name) => {
  const input = form.elements.namedItem(name);
  if (!input) return undefined;
  return input.type === 'checkbox' ? input.checked : input.value.trim();
};

export function clearErrors(form) {
  for (const element of form.querySelectorAll('.field-error')) {
    element.textContent = '';
    element.hidden = true;
  }
  for (const element of form.querySelectorAll('[aria-invalid]')) element.removeAttribute('aria-invalid');
  const box = form.querySelector('.form-problem');
  if (box) box.replaceChildren();
}

/**
 * One field's message (the page's own check, or the API's, in the page's words): a second message
 * for the same field is added to the first, not put in its place (a password both too short and
 * without digits says both).
 */
export function fieldError(form, name, message, item) {
  const input = form.elements.namedItem(name);
  if (!input || !input.id) return false;
  const error = document.getElementById(`${input.id}-error`);
  const said = fieldWords(message, { currency: input.dataset ? input.dataset.currency : undefined, labelOf: (other) => labelOf(form, other) });
  // A message about one item of a list field (one line of the capability ids) says which.
  const words = item === undefined ? said : t('field.item', { number: item + 1, message: said });
  if (error.hidden || !error.textContent) error.textContent = words;
  else if (!error.textContent.includes(words)) error.textContent = `${error.textContent} ${words}`;
  error.hidden = false;
  input.setAttribute('aria-invalid', 'true');
  return true;
}

/** The visible label of a form's field (without its "required" mark), for a message that names another field. */
function labelOf(form, name) {
  const input = form.elements.namedItem(name);
  const label = input && input.id ? form.querySelector(`label[for="${input.id}"]`) : null;
  if (!label) return null;
  const mark = label.querySelector('.required');
  return (mark ? label.textContent.slice(0, label.textContent.length - mark.textContent.length) : label.textContent).trim();
}

/** Shows an API refusal on the form; focuses the first field named, else the alert. */
export function showProblem(form, envelope, context) {
  clearErrors(form);
  let first = null;
  const unplaced = [];
  if (envelope.code === 4000 && envelope.data && Array.isArray(envelope.data.errors)) {
    for (const error of envelope.data.errors) {
      const [name, index] = String(error.path)
        .replace(/^(body|query|params)\./, '')
        .split('.');
      const item = /^\d+$/.test(index ?? '') ? Number(index) : undefined;
      if (fieldError(form, name, error.message, item)) first = first || form.elements.namedItem(name);
      else unplaced.push({ ...error, message: fieldWords(error.message, { labelOf: (other) => labelOf(form, other) }) });
    }
    if (first && unplaced.length === 0) return void first.focus();
  }
  const box = form.querySelector('.form-problem');
  box.replaceChildren(errorBox(envelope, context));
  if (unplaced.length)
    box.firstChild.append(
      h(
        'ul',
        null,
        unplaced.map((error) => h('li', null, error.message)),
      ),
    );
  if (first) first.focus();
  else box.focus();
}

/** A form with a submit button that is disabled while its call runs, so one click sends once. */
export function form({ label, fields, submit, onSubmit, extra, submitClass = 'primary' }) {
  const button = h('button', { type: 'submit', class: submitClass }, submit);
  const element = h(
    'form',
    { novalidate: true, 'aria-label': label },
    fields,
    h('div', { class: 'form-problem', tabindex: '-1' }),
    h('div', { class: 'actions' }, button, extra),
  );
  element.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    clearErrors(element);
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    try {
      await onSubmit(element);
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
      // Disabling the button took the keyboard's place away; when nothing else took it (a field
      // with an error, a new page), it goes back to the button rather than to the top of the page.
      if (button.isConnected && (document.activeElement === document.body || document.activeElement === null)) button.focus();
    }
  });
  return element;
}
