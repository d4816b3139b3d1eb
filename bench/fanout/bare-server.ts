import http from 'node:http';
import pg from 'pg';
import { rawRows, rawSingleStatementQuery } from '../lifecycle/pgbench.ts';

/**
 * The baseline: the least a Node SSE server can do. It holds connections and, on POST /emit,
 * writes one frame carrying the change's time to every connection. Same headers as the product.
 *
 * With BARE_COMMIT_URL it first commits the change, one INSERT on one PostgreSQL connection (as
 * the product commits each change before it may announce it), and stamps the frame with the time
 * the change arrived, before its commit, as the product stamps its events: the least a server can
 * do to stream committed changes.
 */
const groups = new Map<string, Set<http.ServerResponse>>();
const commitUrl = process.env.BARE_COMMIT_URL;
const escrowStep = process.env.BARE_COMMIT_STEP === 'escrow' ? rawSingleStatementQuery() : null;
const draw = (count: number) => 1 + Math.floor(Math.random() * count);
const database = commitUrl ? new pg.Client({ connectionString: commitUrl }) : null;
if (database) {
  await database.connect();
  await database.query('CREATE TABLE IF NOT EXISTS bare_changes (id bigserial PRIMARY KEY, grp text NOT NULL, created_at timestamptz NOT NULL)');
}

/** The change committed before it is announced: one row, or with BARE_COMMIT_STEP=escrow an escrow step. */
function commit(database: pg.Client, group: string, changedAt: Date) {
  if (!escrowStep) return database.query('INSERT INTO bare_changes (grp, created_at) VALUES ($1, $2)', [group, changedAt]);
  const [first, second] = [draw(rawRows.accounts), draw(rawRows.accounts)];
  return database.query(escrowStep, [draw(rawRows.transactions), Math.min(first, second), Math.max(first, second)]);
}

function write(group: string, changedAt: Date) {
  const frame = `id: 1\nevent: tick\ndata: {"created_at":"${changedAt.toISOString()}"}\n\n`;
  for (const connection of groups.get(group) ?? []) connection.write(frame);
}

const server = http.createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const group = url.searchParams.get('group') ?? '0';
  if (request.method === 'POST' && url.pathname === '/emit') {
    const changedAt = new Date();
    if (!database) {
      write(group, changedAt);
      response.end('ok');
      return;
    }
    commit(database, group, changedAt).then(
      () => {
        write(group, changedAt);
        response.end('ok');
      },
      (error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      },
    );
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
