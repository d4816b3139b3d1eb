import http from 'node:http';
import net from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { type SseStream, frame, openSse, setHeartbeatInterval } from '../../src/events/sse.ts';

/**
 * What an SSE stream puts on the wire, seen by real HTTP clients: frames written as whole chunks
 * to the socket (multi-byte text included), HTTP/1.0 clients without chunks, and heartbeats only
 * on streams that were quiet for an interval.
 */
const streams: SseStream[] = [];
let server: http.Server | null = null;

afterEach(async () => {
  for (const stream of streams.splice(0)) stream.close();
  if (server) await new Promise((resolve) => server!.close(resolve));
  server = null;
});
afterAll(() => setHeartbeatInterval(limits.streamHeartbeatMs));

/** A server whose every request opens an SSE stream, resolved in order of arrival. */
async function sseServer() {
  const opened: ((stream: SseStream) => void)[] = [];
  const waiting: SseStream[] = [];
  server = http.createServer((_request, response) => {
    const stream = openSse(response, () => {});
    streams.push(stream);
    const resolve = opened.shift();
    if (resolve) resolve(stream);
    else waiting.push(stream);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const next = () => (waiting.length > 0 ? Promise.resolve(waiting.shift()!) : new Promise<SseStream>((resolve) => opened.push(resolve)));
  return { port, next };
}

/** An HTTP/1.1 client that keeps the decoded body and when each piece of it arrived. */
function client(port: number) {
  const pieces: { at: number; text: string }[] = [];
  const request = http.get(`http://127.0.0.1:${port}/`, { agent: false }, (response) => {
    response.setEncoding('utf8');
    response.on('data', (text: string) => pieces.push({ at: Date.now(), text }));
  });
  request.on('error', () => {});
  return { pieces, text: () => pieces.map((piece) => piece.text).join('') };
}

describe('an SSE stream on the wire', () => {
  it('delivers frames with multi-byte text whole and in order to an HTTP/1.1 client', async () => {
    const { port, next } = await sseServer();
    const reader = client(port);
    const stream = await next();
    const texts = ['{"note":"héllo wörld ✓"}', '{"note":"日本語のテキスト"}', '{"note":"plain"}'];
    for (const [index, text] of texts.entries()) expect(stream.sendFrame(frame(text, String(index + 1), 'note'))).toBe(true);
    const expected = `: connected\n\n${texts.map((text, index) => frame(text, String(index + 1), 'note')).join('')}`;
    await expect.poll(reader.text).toBe(expected);
  });

  it('writes plain frames, no chunks, to an HTTP/1.0 client', async () => {
    const { port, next } = await sseServer();
    let raw = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.0\r\nHost: localhost\r\n\r\n'));
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (raw += text));
    const stream = await next();
    stream.sendFrame(frame('{"n":1}', '1', 'tick'));
    await expect.poll(() => raw).toContain('id: 1\nevent: tick\ndata: {"n":1}\n\n');
    expect(raw).not.toMatch(/transfer-encoding: chunked/i);
    expect(raw.slice(raw.indexOf('\r\n\r\n') + 4)).toBe(': connected\n\nid: 1\nevent: tick\ndata: {"n":1}\n\n');
    socket.destroy();
  });

  it('writes nothing after the response was ended by someone else (no chunk after the last one)', async () => {
    let opened: { stream: SseStream; response: http.ServerResponse } | null = null;
    server = http.createServer((_request, response) => {
      const stream = openSse(response, () => {});
      streams.push(stream);
      opened = { stream, response };
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    let raw = '';
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n'));
    socket.setEncoding('utf8');
    socket.on('data', (text: string) => (raw += text));
    await expect.poll(() => raw).toContain(': connected');
    const { stream, response } = opened!;
    // An error path ending the raw response after its head went out (rpc/index.ts does so).
    response.end();
    expect(stream.sendFrame(frame('{"late":1}', '9', 'late'))).toBe(false);
    await expect.poll(() => raw).toContain('0\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    // On a kept-alive connection anything after the last chunk would read as the next response.
    expect(raw.endsWith('0\r\n\r\n')).toBe(true);
    expect(raw).not.toContain('late');
    socket.destroy();
  });

  it('sends heartbeats to a quiet stream at least every interval, and none to one that carries events', async () => {
    const intervalMs = 2_000;
    setHeartbeatInterval(intervalMs);
    const { port, next } = await sseServer();
    const quiet = client(port);
    await next();
    const busy = client(port);
    const busyStream = await next();
    const started = Date.now();
    const writer = setInterval(() => busyStream.sendFrame(frame('{}', undefined, 'tick')), 300);
    await new Promise((resolve) => setTimeout(resolve, 2 * intervalMs + 700));
    clearInterval(writer);

    expect(busy.text()).not.toContain(': heartbeat');
    const beats = quiet.pieces.filter((piece) => piece.text.includes(': heartbeat')).map((piece) => piece.at);
    expect(beats.length).toBeGreaterThanOrEqual(2);
    // No more than an interval (and the timer's own lateness) between two writes to the quiet stream.
    const gaps = [beats[0]! - started, ...beats.slice(1).map((at, index) => at - beats[index]!)];
    // Generous for a loaded machine's timers, and still short of two intervals (a missed beat).
    for (const gap of gaps) expect(gap).toBeLessThanOrEqual(intervalMs + 1_000);
  });
});
