// Builds the page from elements, never from HTML text: what a person typed is shown as text,
// exactly as typed, and nothing in it can run or style anything.
const svgNamespace = 'http://www.w3.org/2000/svg';

function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

function apply(element, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value);
    else if (name === 'text') element.textContent = value;
    else if (value === true) element.setAttribute(name, '');
    else element.setAttribute(name, String(value));
  }
  return element;
}

/** h('button', {type: 'button', onClick}, 'Label'): an HTML element with attributes, listeners and children. */
export const h = (tag, props, ...children) => append(apply(document.createElement(tag), props), children);

/** The same for SVG (the statistics chart). */
export const svg = (tag, props, ...children) => append(apply(document.createElementNS(svgNamespace, tag), props), children);

export const clear = (element) => {
  element.replaceChildren();
  return element;
};

export const byId = (id) => document.getElementById(id);

let counter = 0;
/** A fresh id for a label's `for`, a description's `aria-describedby`. */
export const uid = (prefix) => `${prefix}-${(counter += 1)}`;

/** Random hex from the browser's generator (also outside secure contexts, unlike randomUUID). */
export function randomKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}
