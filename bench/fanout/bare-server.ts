import http from 'node:http';

/**
 * The baseline: the least a Node SSE server can do. It holds connections and, on POST /emit,
 * writes one frame carrying the send time to every connection. Same headers as the product.
 */
const groups = new Map<string, Set<http.ServerResponse>>();
const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const group = url.searchParams.get('group') ?? '0';
  if (request.method === 'POST' && url.pathname === '/emit') {
    const frame = `id: 1\nevent: tick\ndata: {"created_at":"${new Date().toISOString()}"}\n\n`;
    for (const connection of groups.get(group) ?? []) connection.write(frame);
    response.end('ok');
    return;
  }
  response.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' });
  response.write(': connected\n\n');
  const members = groups.get(group) ?? new Set<http.ServerResponse>();
  groups.set(group, members);
  members.add(response);
  response.on('close', () => members.delete(response));
});
server.keepAliveTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`listening http://127.0.0.1:${port}\n`);
});
