// The session of a signed-in person, shared with the device and consent pages: the same key in
// this tab's sessionStorage, so signing in here also signs in there. The token goes only in the
// Authorization header of same-origin calls (a cross-site form cannot send that header).
const storageKey = 'agent-marketplace.device-page';
const listeners = new Set();

function read() {
  try {
    return JSON.parse(sessionStorage.getItem(storageKey) || 'null');
  } catch {
    return null;
  }
}

let session = read();

export const current = () => session;
export const signedIn = () => Boolean(session && session.token);

export function save(value) {
  session = value;
  if (value) sessionStorage.setItem(storageKey, JSON.stringify(value));
  else sessionStorage.removeItem(storageKey);
  for (const listener of listeners) listener(session);
}

export function update(fields) {
  if (session) save({ ...session, ...fields });
}

/** Runs on every sign-in and sign-out. */
export const onChange = (listener) => listeners.add(listener);
