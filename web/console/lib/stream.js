import { headers } from './api.js';

// Server-sent events read with fetch, so that the session token travels in the Authorization
// header (an EventSource cannot send one). Each frame's `id:` is remembered; after a drop the
// stream reconnects with Last-Event-ID and resumes exactly after the last event seen, waiting
// longer after each failed try (1 s doubling to 30 s, or what a 4290 says).
const listeners = new Set();
const states = new Map();

/** Everything open reports 'live' or 'reconnecting'; the header shows the worst. */
export const onStreamState = (listener) => listeners.add(listener);

/** The state of the streams another tab holds for this one (lib/live.js), or null when there are none. */
export const reportShared = (state) => report('shared', state ?? 'closed');

function report(stream, state) {
  if (state === 'closed') states.delete(stream);
  else states.set(stream, state);
  const all = [...states.values()];
  for (const listener of listeners) listener(summaryOf(all));
}

const summaryOf = (all) => (all.length === 0 ? 'idle' : all.includes('reconnecting') ? 'reconnecting' : all.includes('connecting') ? 'connecting' : 'live');

/** The worst state of this tab's own streams, for the tabs that share them (lib/live.js). */
export const ownState = () => summaryOf([...states.entries()].filter(([stream]) => stream !== 'shared').map(([, state]) => state));

/** Splits SSE text into frames; returns the unfinished tail. */
export function parseFrames(buffer, onFrame) {
  const parts = buffer.split(/\r?\n\r?\n/);
  const tail = parts.pop();
  for (const part of parts) {
    const frame = { id: null, event: 'message', data: [] };
    for (const line of part.split(/\r?\n/)) {
      if (!line || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (name === 'id') frame.id = value;
      else if (name === 'event') frame.event = value;
      else if (name === 'data') frame.data.push(value);
    }
    if (frame.data.length > 0 || frame.id !== null) onFrame(frame);
  }
  return tail;
}

async function readFrames(response, signal, onFrame) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer = parseFrames(buffer + value, onFrame);
  }
}

/**
 * openStream('/api/v1/tasks/events', {onEvent(type, data, id), onSignedOut()}) → {close()}.
 * `lastEventId` starts the stream after a known position (else from now).
 */
export function openStream(path, { onEvent, onSignedOut, lastEventId = null }) {
  let lastId = lastEventId;
  let delay = 1000;
  let controller = null;
  let timer = null;
  let closed = false;
  const handle = {};

  async function connect() {
    if (closed) return;
    controller = new AbortController();
    report(handle, lastId === lastEventId && delay === 1000 ? 'connecting' : 'reconnecting');
    let wait = null;
    try {
      const extra = { Accept: 'text/event-stream' };
      if (lastId !== null) extra['Last-Event-ID'] = lastId;
      const response = await fetch(path, { headers: headers(extra), credentials: 'omit', cache: 'no-store', signal: controller.signal });
      if (!response.ok || !(response.headers.get('content-type') || '').startsWith('text/event-stream')) {
        const envelope = await response.json().catch(() => ({}));
        if (envelope.code === 4010) {
          closed = true;
          report(handle, 'closed');
          if (onSignedOut) onSignedOut();
          return;
        }
        if (envelope.data && envelope.data.retry_after_seconds) wait = envelope.data.retry_after_seconds * 1000;
        throw new Error(`stream refused: ${envelope.code}`);
      }
      report(handle, 'live');
      delay = 1000;
      await readFrames(response, controller.signal, (frame) => {
        if (frame.id !== null) lastId = frame.id;
        let data = null;
        try {
          data = frame.data.length ? JSON.parse(frame.data.join('\n')) : null;
        } catch {
          data = null;
        }
        onEvent(frame.event, data, frame.id);
      });
    } catch {
      // Dropped, refused or aborted: decided below.
    }
    if (closed) return;
    report(handle, 'reconnecting');
    timer = setTimeout(connect, wait ?? delay);
    delay = Math.min(delay * 2, 30_000);
  }

  handle.close = () => {
    closed = true;
    clearTimeout(timer);
    if (controller) controller.abort();
    report(handle, 'closed');
  };
  handle.lastEventId = () => lastId;
  connect();
  return handle;
}

/** A POST that answers with a stream (ai-create): each event as it comes, no reconnect (a draft is not resumable). */
export async function postStream(path, body, onEvent, signal) {
  let response;
  try {
    response = await fetch(path, {
      method: 'POST',
      headers: headers({ Accept: 'text/event-stream', 'Content-Type': 'application/json' }),
      body: JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      signal,
    });
  } catch {
    return { code: -1, message: 'network_error', data: null };
  }
  if (!(response.headers.get('content-type') || '').startsWith('text/event-stream')) {
    return response.json().catch(() => ({ code: -2, message: 'unreadable_answer', data: { status: response.status } }));
  }
  await readFrames(response, signal || new AbortController().signal, (frame) => {
    let data = null;
    try {
      data = JSON.parse(frame.data.join('\n'));
    } catch {
      data = null;
    }
    onEvent(frame.event, data);
  });
  return { code: 0 };
}
