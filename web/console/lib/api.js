import { randomKey } from './dom.js';
import * as session from './session.js';

// One call to the REST API (same origin): always resolves to an envelope {code, message, data}.
// A network failure is code -1, an answer that is not the envelope -2: the page explains both,
// it never shows a raw body or stays blank.
let sessionEnded = () => {};
export const whenSessionEnds = (handler) => {
  sessionEnded = handler;
};

export function headers(extra = {}) {
  const result = { Accept: 'application/json', ...extra };
  const current = session.current();
  if (current && current.token) result.Authorization = `Bearer ${current.token}`;
  return result;
}

function queryString(query) {
  const parameters = new URLSearchParams();
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== '') parameters.set(name, String(value));
  }
  const text = parameters.toString();
  return text ? `?${text}` : '';
}

/**
 * An Idempotency-Key kept for one form or button: sent again when the answer was lost (network,
 * unreadable, still in progress), so a retry replays the first request instead of doing it twice;
 * renewed after any other answer, so a changed form is a new request.
 */
export function retryKey() {
  let value = randomKey();
  return {
    get value() {
      return value;
    },
    settle(envelope) {
      if (![-1, -2, 4091].includes(envelope.code)) value = randomKey();
    },
  };
}

/**
 * api('POST', '/api/v1/tasks', {body, query, idempotent: true}). An idempotent call sends a new
 * Idempotency-Key; with `retry` (a retryKey()) the form's own.
 */
export async function api(method, path, options = {}) {
  const extra = {};
  if (options.body !== undefined) extra['Content-Type'] = 'application/json';
  if (options.idempotent || options.retry) extra['Idempotency-Key'] = options.retry ? options.retry.value : randomKey();
  const envelope = await send(method, path, options, extra);
  if (options.retry) options.retry.settle(envelope);
  return envelope;
}

async function send(method, path, options, extra) {
  let response;
  try {
    response = await fetch(path + queryString(options.query), {
      method,
      headers: headers(extra),
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    return { code: -1, message: 'network_error', data: null };
  }
  let envelope;
  try {
    envelope = await response.json();
  } catch {
    return { code: -2, message: 'unreadable_answer', data: { status: response.status } };
  }
  if (!envelope || typeof envelope.code !== 'number') return { code: -2, message: 'unreadable_answer', data: { status: response.status } };
  if (envelope.code === 4010 && session.signedIn()) sessionEnded();
  return envelope;
}

export const get = (path, query) => api('GET', path, { query });
