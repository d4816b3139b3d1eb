import type { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { limits } from '../limits.ts';

/**
 * Server-sent events over a plain response. Headers are chosen to survive proxies: no caching or
 * transformation, no buffering (nginx), no compression. One shared timer writes heartbeat
 * comments, so a thousand streams cost one timer, not a thousand.
 *
 * A stream is one object with no closure of its own (one shared 'close' listener finds it on its
 * response), since an instance may hold ten thousand of them. A client that stops reading is
 * dropped once its unsent output passes limits.streamBufferedBytesMax: its connection is
 * destroyed, which frees that output at once, and it resumes with Last-Event-ID.
 */
const openStreams = new Set<SseStream>();
let heartbeat: NodeJS.Timeout | null = null;
let heartbeatMs: number = limits.streamHeartbeatMs;
const heartbeatFrame = ': heartbeat\n\n';
const streamOfResponse = Symbol('sse stream');

/**
 * The heartbeat timer ticks about every second (limits.streamHeartbeatTickMs), and a stream gets a heartbeat
 * once a heartbeat interval's worth of ticks has gone by without anything written to it. A stream
 * that carries events needs none (any write keeps a proxy from taking it for idle), and idle
 * streams opened at different moments are written at different ticks: before, every heartbeat
 * was one write to every open stream in one go, 10,000 socket writes that held up the events
 * behind them for tens of milliseconds. No stream goes longer than the interval without a write,
 * as before; its heartbeat may come up to a tick early. A short interval (tests) is one tick.
 */
function ticksIn(intervalMs: number): number {
  return Math.min(limits.streamHeartbeatTicksMax, Math.max(1, Math.floor(intervalMs / limits.streamHeartbeatTickMs)));
}

let heartbeatTicks = ticksIn(limits.streamHeartbeatMs);

/** Ticks so far: a stream remembers the tick of its last write, not a time (no clock read per write). */
let heartbeatTick = 0;

/** Set from configuration (STREAM_HEARTBEAT_MS) when the app is built. */
export function setHeartbeatInterval(intervalMs: number) {
  heartbeatMs = intervalMs;
  heartbeatTicks = ticksIn(intervalMs);
  if (heartbeat) clearInterval(heartbeat);
  heartbeat = null;
  if (openStreams.size > 0) ensureHeartbeat();
}

function ensureHeartbeat() {
  heartbeat ??= setInterval(() => {
    heartbeatTick++;
    for (const stream of openStreams) if (heartbeatTick - stream.lastWriteTick >= heartbeatTicks) stream.sendFrame(heartbeatFrame);
  }, heartbeatMs / heartbeatTicks);
  heartbeat.unref();
}

/**
 * A frame as one HTTP/1.1 chunk (size, frame, CRLF), written straight to the socket: one write
 * instead of the response's four (size, CRLF, frame, CRLF) and its cork until the next tick. The
 * last one is kept, since a fan-out writes the same frame to every subscriber one after another.
 */
let chunkedFrame = '';
let chunked = '';
function chunkOf(text: string): string {
  if (text !== chunkedFrame) {
    chunked = `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
    chunkedFrame = text;
  }
  return chunked;
}

export function frame(data: string, id?: string, event?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}${event === undefined ? '' : `event: ${event}\n`}data: ${data}\n\n`;
}

type TaggedResponse = ServerResponse & { [streamOfResponse]?: SseStream };

/** The head of every event stream: no caching, no compression, no buffering by a proxy. */
const streamHeaders = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-cache, no-transform',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
  'Content-Encoding': 'identity',
};

/**
 * HEAD of a stream: the head GET would answer, and no body, so no stream is held open (a HEAD that
 * subscribed would never end, hold one of the credential's stream places, and stall the requests
 * queued behind it on its keep-alive connection).
 */
export function answerStreamHead(response: ServerResponse) {
  response.writeHead(200, streamHeaders);
  response.end();
}

/** The one 'close' listener of every stream's response (called with the response as `this`). */
function onResponseClose(this: TaggedResponse) {
  this[streamOfResponse]?.finish();
}

export class SseStream {
  private state: 'new' | 'open' | 'closed' = 'new';
  /** The heartbeat tick of the last write to this stream: the shared timer skips it until an interval has passed. */
  lastWriteTick = 0;

  constructor(
    readonly response: ServerResponse,
    /** Called once when the stream is over, whoever ended it (the client, the server, a drop). */
    private readonly onClose: (() => void) | null = null,
  ) {}

  /** Writes the head and the first comment; from now on the stream gets heartbeats. */
  start() {
    if (this.state !== 'new') return;
    this.state = 'open';
    const { response } = this;
    response.writeHead(200, streamHeaders);
    response.flushHeaders();
    response.write(': connected\n\n');
    this.lastWriteTick = heartbeatTick;
    openStreams.add(this);
    ensureHeartbeat();
    (response as TaggedResponse)[streamOfResponse] = this;
    response.on('close', onResponseClose);
    // A client that left while the stream was being set up will never emit 'close' again.
    if (response.destroyed) queueMicrotask(() => this.finish());
  }

  /** Writes one event; false when the stream is over or the client too slow (it has been dropped). */
  send(data: string, id?: string, event?: string): boolean {
    return this.sendFrame(frame(data, id, event));
  }

  /** Writes a frame built by frame(); lets many streams share one frame string. */
  sendFrame(text: string): boolean {
    if (this.state !== 'open') return false;
    const { response } = this;
    // Ended by someone else (an error path ending the raw response): a chunk written to the socket
    // now would follow the response's last chunk on a kept-alive connection, where the client
    // would read it as the start of the next response.
    if (response.writableEnded || response.destroyed) {
      this.finish();
      return false;
    }
    if (response.writableLength > limits.streamBufferedBytesMax) {
      this.drop();
      return false;
    }
    this.lastWriteTick = heartbeatTick;
    const { socket } = response;
    // A response with its socket writes into it as it is, so a whole chunk written to the socket
    // lands after everything the response wrote before; without chunked encoding (an HTTP/1.0
    // client), or before the head went out, the response writes the frame itself.
    if (socket !== null && response.chunkedEncoding && response.headersSent) socket.write(chunkOf(text));
    else response.write(text);
    return true;
  }

  /**
   * null while the client reads as fast as it is written to; otherwise a promise that settles once
   * what was written has gone to the socket, or the stream is over. For writers that can wait
   * (events read from the database), where a burst of their own must not count as a slow client.
   * Frames go to the socket itself (sendFrame), so it is the socket's buffer that fills.
   */
  ready(): Promise<void> | null {
    const { response } = this;
    if (this.state !== 'open') return null;
    const { socket } = response;
    const full: EventEmitter | null = socket?.writableNeedDrain ? socket : response.writableNeedDrain ? response : null;
    if (full === null) return null;
    return new Promise((resolve) => {
      const done = () => {
        full.off('drain', done);
        response.off('close', done);
        resolve();
      };
      full.on('drain', done);
      response.on('close', done);
    });
  }

  /** Ends the stream after what was written (shutdown, a revoked key, an expired token, the last event). */
  close() {
    if (!this.response.writableEnded) this.response.end();
    this.finish();
  }

  /** Cuts off a client that does not read: its connection is destroyed with its unsent output. */
  drop() {
    this.response.destroy();
    this.finish();
  }

  get closed() {
    return this.state === 'closed';
  }

  /** The stream is over: no more heartbeats, and its owner is told once. */
  finish() {
    if (this.state === 'closed') return;
    this.state = 'closed';
    openStreams.delete(this);
    this.whenClosed();
  }

  /** What the owner of the stream does when it is over; by default, the callback it was given. */
  protected whenClosed() {
    this.onClose?.();
  }
}

/** A stream written from now on: head and first comment sent. */
export function openSse(response: ServerResponse, onClose: () => void): SseStream {
  const stream = new SseStream(response, onClose);
  stream.start();
  return stream;
}

/** Last-Event-ID as a sequence number, or undefined; anything else is the caller's error. */
export function parseLastEventId(value: string | undefined): string | undefined | null {
  if (value === undefined || value === '') return undefined;
  return /^\d{1,18}$/.test(value) ? value : null;
}
