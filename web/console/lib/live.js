import { openStream } from './stream.js';

// One connection per stream for everything on the page that listens to it; closed when the last
// listener's page is left. The position reached is kept for the session of this tab, so that
// coming back to a page resumes after the last event seen (Last-Event-ID) instead of from now.
const open = new Map();
const positions = new Map();

export function listen(ctx, path, handler) {
  let entry = open.get(path);
  if (!entry) {
    entry = { handlers: new Set(), stream: null };
    open.set(path, entry);
    entry.stream = openStream(path, {
      lastEventId: positions.get(path) ?? null,
      onEvent: (type, data, id) => {
        if (id !== null) positions.set(path, id);
        for (const each of entry.handlers) each(type, data);
      },
      onSignedOut: () => {},
    });
  }
  entry.handlers.add(handler);
  ctx.onLeave(() => {
    entry.handlers.delete(handler);
    if (entry.handlers.size > 0) return;
    entry.stream.close();
    open.delete(path);
  });
}

/** Forgets the positions (a sign-out: the next person starts from now). */
export const forgetPositions = () => positions.clear();
