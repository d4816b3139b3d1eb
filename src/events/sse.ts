import type { ServerResponse } from 'node:http';
import { limits } from '../limits.ts';

/**
 * Server-sent events over a plain response. Headers are chosen to survive proxies: no caching or
 * transformation, no buffering (nginx), no compression. One shared timer writes heartbeat
 * comments to every open stream, so a thousand streams cost one timer, not a thousand.
 */
export interface SseStream {
  /** Writes one event; false when the client is too slow and the stream has been closed. */
  send(data: string, id?: string, event?: string): boolean;
  /** Writes a frame built by frame(); lets many streams share one frame string. */
  sendFrame(frame: string): boolean;
  close(): void;
  readonly closed: boolean;
}

const openStreams = new Set<{ response: ServerResponse }>();
let heartbeat: NodeJS.Timeout | null = null;
let heartbeatMs: number = limits.streamHeartbeatMs;

/** Set from configuration (STREAM_HEARTBEAT_MS) when the app is built. */
export function setHeartbeatInterval(intervalMs: number) {
  heartbeatMs = intervalMs;
  if (heartbeat) clearInterval(heartbeat);
  heartbeat = null;
  if (openStreams.size > 0) ensureHeartbeat();
}

function ensureHeartbeat() {
  heartbeat ??= setInterval(() => {
    for (const stream of openStreams) stream.response.write(': heartbeat\n\n');
  }, heartbeatMs);
  heartbeat.unref();
}

export function frame(data: string, id?: string, event?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}${event === undefined ? '' : `event: ${event}\n`}data: ${data}\n\n`;
}

export function openSse(response: ServerResponse, onClose: () => void): SseStream {
  response.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'Content-Encoding': 'identity',
  });
  response.flushHeaders();
  response.write(': connected\n\n');
  const entry = { response };
  openStreams.add(entry);
  ensureHeartbeat();
  let closed = false;
  const finish = () => {
    if (closed) return;
    closed = true;
    openStreams.delete(entry);
    onClose();
  };
  response.on('close', finish);
  // A client that left while the stream was being set up will never emit 'close' again.
  if (response.destroyed) queueMicrotask(finish);
  return {
    send(data, id, event) {
      return this.sendFrame(frame(data, id, event));
    },
    sendFrame(text) {
      if (closed) return false;
      // A client that stopped reading must not hold the server's memory: drop it, and let it
      // resume from the database with Last-Event-ID.
      if (response.writableLength > limits.streamBufferedBytesMax) {
        this.close();
        return false;
      }
      response.write(text);
      return true;
    },
    close() {
      if (!response.writableEnded) response.end();
      finish();
    },
    get closed() {
      return closed;
    },
  };
}

/** Last-Event-ID as a sequence number, or undefined; anything else is the caller's error. */
export function parseLastEventId(value: string | undefined): string | undefined | null {
  if (value === undefined || value === '') return undefined;
  return /^\d{1,18}$/.test(value) ? value : null;
}
