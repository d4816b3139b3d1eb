import { randomKey } from './dom.js';
import * as session from './session.js';
import { onStreamState, openStream, ownState, reportShared } from './stream.js';

// The page's live updates. Each stream (a path such as /api/v1/tasks/events) is opened once for
// everything that listens to it, and once for all the tabs of this browser: a browser keeps at
// most six connections to one host (HTTP/1.1), and with two or three streams a tab, the third tab
// of the console would leave every later request waiting. The tabs find each other on a
// BroadcastChannel: each says every few seconds that it is there, since when, and which streams it
// wants. The oldest tab leads: it opens the streams all of them want and passes each event on;
// the others read them from the channel. When the leader closes (or is not heard for 90 s), the
// next oldest opens the streams again after the last event it saw (Last-Event-ID). Only tabs
// signed in as the same person work together (a stream is opened with the leader's credentials).
// A browser without BroadcastChannel opens each tab's own.
const channelName = 'agent-marketplace.console-streams';
const helloEveryMs = 2_000;
// Longer than the minute a browser may hold the timers of a tab hidden for a while: a leading tab
// in the background is not taken for gone. A tab that closes says so at once (pagehide).
const goneAfterMs = 90_000;
const settleAfterStartMs = 300;
const self = { tab: randomKey(), startedAt: Date.now() };
const local = new Map();
const positions = new Map();
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(channelName) : null;
// The other tabs heard: tab -> { startedAt, heard, paths }.
const others = new Map();
// The streams this tab holds, when it leads: path -> stream.
const held = new Map();
let heldFor = null;
let ready = !channel;
let leading = !channel;

/** Whether `id` is past the position reached on `path`: an event two leaders both passed on (for a moment) is shown once. */
function isNew(path, id) {
  const reached = positions.get(path);
  if (id === null || reached === undefined || !/^\d+$/.test(id) || !/^\d+$/.test(reached)) return true;
  return BigInt(id) > BigInt(reached);
}

function deliver(path, type, data, id) {
  if (!isNew(path, id)) return;
  if (id !== null) positions.set(path, id);
  for (const handler of local.get(path) || []) handler(type, data);
}

/**
 * The tabs signed in as one person share streams (each tab keeps its own session, so their tokens
 * differ; the events of a person's streams do not): a short hash of the user id names the group.
 */
function group() {
  const current = session.current();
  // Until the user id is known, a tab keeps to itself.
  const who = current && current.user_id ? current.user_id : `tab ${self.tab}`;
  let hash = 2166136261;
  for (let index = 0; index < who.length; index++) hash = Math.imul(hash ^ who.charCodeAt(index), 16777619);
  return (hash >>> 0).toString(36);
}

const older = (a, b) => a.startedAt < b.startedAt || (a.startedAt === b.startedAt && a.tab < b.tab);

function leaderIsSelf() {
  const mine = group();
  for (const [tab, other] of others) if (other.group === mine && older({ tab, startedAt: other.startedAt }, self)) return false;
  return true;
}

function open(path) {
  const stream = openStream(path, {
    lastEventId: positions.get(path) ?? null,
    onEvent: (type, data, id) => {
      deliver(path, type, data, id);
      if (channel) channel.postMessage({ kind: 'event', group: group(), path, type, data, id });
    },
    onSignedOut: () => {},
  });
  held.set(path, stream);
}

/** Holds exactly the streams wanted by this tab and the others, when it leads; none otherwise. */
function settle() {
  if (!ready) return;
  // Streams opened for another person (a sign-out, another sign-in) start again, from now: the
  // positions of another person's streams mean nothing for this one.
  const person = session.current() && session.current().user_id;
  if (person && heldFor && person !== heldFor) {
    for (const stream of held.values()) stream.close();
    held.clear();
    positions.clear();
  }
  if (person) heldFor = person;
  leading = !channel || leaderIsSelf();
  const wanted = new Set(leading ? local.keys() : []);
  const mine = group();
  if (leading) for (const other of others.values()) if (other.group === mine) for (const path of other.paths) wanted.add(path);
  for (const [path, stream] of held) {
    if (wanted.has(path)) continue;
    stream.close();
    held.delete(path);
  }
  for (const path of wanted) if (!held.has(path)) open(path);
  if (leading) reportShared(null);
  if (leading && channel) channel.postMessage({ kind: 'state', group: group(), state: ownState() });
  if (!leading && local.size === 0) reportShared(null);
}

const hello = () => channel && channel.postMessage({ kind: 'hello', group: group(), ...self, paths: [...local.keys()] });

if (channel) {
  channel.onmessage = ({ data: message }) => {
    if (message.kind === 'hello') {
      const known = others.has(message.tab);
      others.set(message.tab, { group: message.group, startedAt: message.startedAt, heard: Date.now(), paths: message.paths });
      if (!known) hello();
      settle();
    } else if (message.kind === 'gone') {
      others.delete(message.tab);
      settle();
    } else if (message.group !== group()) {
      // Another session's event or state: not for this tab.
    } else if (message.kind === 'event') {
      if (!leading) deliver(message.path, message.type, message.data, message.id);
      else if (message.id !== null && isNew(message.path, message.id)) positions.set(message.path, message.id);
    } else if (message.kind === 'state' && !leading) {
      reportShared(local.size > 0 ? message.state : null);
    }
  };
  hello();
  setTimeout(() => {
    ready = true;
    settle();
  }, settleAfterStartMs);
  setInterval(() => {
    const now = Date.now();
    for (const [tab, other] of others) if (now - other.heard > goneAfterMs) others.delete(tab);
    hello();
    settle();
  }, helloEveryMs);
  addEventListener('pagehide', () => channel.postMessage({ kind: 'gone', tab: self.tab }));
  onStreamState(() => leading && channel.postMessage({ kind: 'state', group: group(), state: ownState() }));
  // A sign-in or sign-out changes the group: the tabs are sorted again at once.
  session.onChange(() => {
    hello();
    settle();
  });
}

export function listen(ctx, path, handler) {
  const handlers = local.get(path) || new Set();
  const first = handlers.size === 0;
  handlers.add(handler);
  local.set(path, handlers);
  if (first) {
    hello();
    settle();
  }
  ctx.onLeave(() => {
    handlers.delete(handler);
    if (handlers.size > 0) return;
    local.delete(path);
    hello();
    settle();
  });
}

/** Forgets the positions (a sign-out: the next person starts from now). */
export const forgetPositions = () => positions.clear();
