import http from 'node:http';
import { type Channel, type Session, createChannel, createSession } from 'better-sse';

/**
 * The same baseline as bare-server.ts, written with better-sse (the library the design names):
 * a session per connection, a channel per group, one broadcast per POST /emit. Measured beside the
 * bare server in the same run (its preamble, a retry line, plays the bare server's comment), to decide whether the product's streams should use it
 * (docs/decisions/streams-and-deliveries.md "Plain frames, not better-sse").
 */
const groups = new Map<string, Channel>();
const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const group = url.searchParams.get('group') ?? '0';
  if (request.method === 'POST' && url.pathname === '/emit') {
    groups.get(group)?.broadcast({ created_at: new Date().toISOString() }, 'tick', { eventId: '1' });
    response.end('ok');
    return;
  }
  void createSession(request, response, { keepAlive: null, headers: { 'X-Accel-Buffering': 'no' } }).then((session: Session) => {
    const channel = groups.get(group) ?? createChannel();
    groups.set(group, channel);
    channel.register(session);
  });
});
server.keepAliveTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`listening http://127.0.0.1:${port}\n`);
});
