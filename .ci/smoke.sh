#!/usr/bin/env bash
# Smoke test of the zero-configuration default: `npm start` with no DATABASE_URL and no REDIS_URL
# (embedded PGlite in DATA_DIR, in-process bus). It checks that the server
#   - becomes ready and serves /readyz and the 22 categories,
#   - refuses a second server on the same DATA_DIR with a clear message,
#   - shuts down gracefully on SIGTERM within 15 s,
#   - keeps its data across a restart (a user signed up before can log in after).
set -euo pipefail

cd "$(dirname "$0")/.."
exec </dev/null

unset DATABASE_URL REDIS_URL JWT_SECRET ADMIN_TOKEN NODE_ENV PUBLIC_BASE_URL
DATA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/marketplace-smoke.XXXXXX")
WORK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/marketplace-smoke-logs.XXXXXX")
export DATA_DIR
export HOST=127.0.0.1
export LOG_LEVEL=info

READY_TIMEOUT_S=60
STOP_TIMEOUT_S=15
SMOKE_EMAIL=smoke@example.com
SMOKE_PASSWORD=smoke-pass-123

server_pid=""
current_log=""
ok=false

log() { printf 'smoke: %s\n' "$*"; }

# A free TCP port: the one asked for (3917, or SMOKE_PORT) when it is free, otherwise one the kernel picks.
free_port() {
  node -e '
    const net = require("node:net");
    const tryPort = (port) => {
      const server = net.createServer();
      server.once("error", () => tryPort(0));
      server.listen(port, "127.0.0.1", () => { const p = server.address().port; server.close(() => console.log(p)); });
    };
    tryPort(Number(process.argv[1]));
  ' "$1"
}

# Is any process of the group led by $1 still alive?
group_alive() { kill -0 -- "-$1" 2>/dev/null; }

stop_group() {
  local pid=$1
  if group_alive "$pid"; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do group_alive "$pid" || return 0; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
}

cleanup() {
  local status=$?
  if [ -n "$server_pid" ]; then stop_group "$server_pid"; fi
  if [ "$ok" != true ]; then
    for file in "$WORK_DIR"/*.log; do
      [ -f "$file" ] || continue
      printf '\n----- %s -----\n' "$(basename "$file")" >&2
      cat "$file" >&2
    done
    log "FAILED" >&2
  fi
  rm -rf "$DATA_DIR" "$WORK_DIR"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  log "FAIL: $*" >&2
  exit 1
}

# start_server <name>: starts `npm start` in its own process group (so every child can be reached).
start_server() {
  current_log="$WORK_DIR/$1.log"
  setsid npm start >"$current_log" 2>&1 &
  server_pid=$!
  log "started $1 (pid $server_pid) on port $PORT with DATA_DIR=$DATA_DIR"
}

wait_ready() {
  local deadline=$(( $(date +%s) + READY_TIMEOUT_S )) status
  while [ "$(date +%s)" -lt "$deadline" ]; do
    # The process itself, not its group: right after the start the group may not exist yet
    # (setsid has not run), which made this check fail at random on a busy machine.
    kill -0 "$server_pid" 2>/dev/null || fail "server exited before it was ready"
    status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$BASE/readyz" || true)
    if [ "$status" = "200" ]; then
      log "ready after $(( READY_TIMEOUT_S - (deadline - $(date +%s)) ))s"
      return 0
    fi
    sleep 0.5
  done
  fail "/readyz did not answer 200 within ${READY_TIMEOUT_S}s"
}

# stop_server: SIGTERM, then every process of the group must be gone within the limit.
# The signal goes to the whole process group (npm and node), as Ctrl-C in a terminal and
# systemd's default KillMode do. `npm start` used to be `exec tsx src/main.ts`: tsx's parent
# relays a signal and SIGKILLs its child when the child does not confirm it within 2 x 30 ms, so
# on a busy machine the server died without a word ("server exited without logging a graceful
# stop", once in CI). It is now `exec node --import tsx src/main.ts`: the server alone decides how
# it stops, and a signal that comes during its start-up is acted on once it listens.
stop_server() {
  local started
  started=$(date +%s)
  kill -TERM -- "-$server_pid"
  while group_alive "$server_pid"; do
    if [ $(( $(date +%s) - started )) -ge "$STOP_TIMEOUT_S" ]; then
      fail "server did not exit within ${STOP_TIMEOUT_S}s of SIGTERM"
    fi
    sleep 0.2
  done
  wait "$server_pid" 2>/dev/null || true
  grep -q '"message":"stopped"' "$current_log" || fail "server exited without logging a graceful stop"
  log "stopped gracefully in $(( $(date +%s) - started ))s"
  server_pid=""
}

# request <method> <path> [json-body]: prints the HTTP status line, then the body, into files.
request() {
  local method=$1 path=$2 body=${3:-}
  local args=(-s -o "$WORK_DIR/body.json" -w '%{http_code}' --max-time 10 -X "$method" "$BASE$path")
  if [ -n "$body" ]; then args+=(-H 'Content-Type: application/json' --data "$body"); fi
  curl "${args[@]}" >"$WORK_DIR/status" || echo 000 >"$WORK_DIR/status"
}

# expect_envelope <http-status> <code> [node-expression over `data` that must be true]
expect_envelope() {
  local want_status=$1 want_code=$2 check=${3:-true} got_status
  got_status=$(cat "$WORK_DIR/status")
  [ "$got_status" = "$want_status" ] || fail "expected HTTP $want_status, got $got_status: $(cat "$WORK_DIR/body.json" 2>/dev/null)"
  node -e '
    const fs = require("node:fs");
    const [file, wantCode, check] = process.argv.slice(1);
    const body = JSON.parse(fs.readFileSync(file, "utf8"));
    if (body.code !== Number(wantCode)) { console.error(`expected code ${wantCode}, got ${JSON.stringify(body)}`); process.exit(1); }
    const data = body.data;
    if (!eval(check)) { console.error(`check failed: ${check} on ${JSON.stringify(data)}`); process.exit(1); }
  ' "$WORK_DIR/body.json" "$want_code" "$check" || fail "unexpected response body"
}

PORT=$(free_port "${SMOKE_PORT:-3917}")
export PORT
BASE="http://127.0.0.1:$PORT"

# 1. First start on an empty DATA_DIR.
start_server server-1
wait_ready

request GET /readyz
expect_envelope 200 0 'data.database === true && data.bus === true'
log "/readyz: code 0, database and bus up"

request GET /api/v1/categories
expect_envelope 200 0 'Array.isArray(data) && data.length === 22'
log "/api/v1/categories: 22 categories"

request POST /api/v1/auth/signup "{\"email\":\"$SMOKE_EMAIL\",\"password\":\"$SMOKE_PASSWORD\"}"
expect_envelope 201 0 'typeof data.user_id === "string" && typeof data.access_token === "string"'
log "signed up $SMOKE_EMAIL"

# 2. A second server on the same DATA_DIR must refuse to start, naming the reason.
second_log="$WORK_DIR/second-server.log"
second_port=$(free_port "${SMOKE_SECOND_PORT:-0}")
set +e
PORT=$second_port timeout 60 npm start >"$second_log" 2>&1
second_status=$?
set -e
[ "$second_status" -ne 0 ] || fail "a second server on the same DATA_DIR started (exit 0)"
[ "$second_status" -ne 124 ] || fail "a second server on the same DATA_DIR did not exit within 60s"
grep -qi 'in use' "$second_log" || fail "the second server's message does not say the data directory is in use"
log "second server on the same DATA_DIR refused (exit $second_status): $(grep -i -m1 'in use' "$second_log" | sed 's/^failed to start: //')"

# 3. Graceful shutdown.
stop_server

# 4. Restart on the same DATA_DIR: the account must still be there.
start_server server-2
wait_ready
request POST /api/v1/auth/login "{\"email\":\"$SMOKE_EMAIL\",\"password\":\"$SMOKE_PASSWORD\"}"
expect_envelope 200 0 'typeof data.access_token === "string"'
log "after restart, $SMOKE_EMAIL logs in: data survived"
stop_server

ok=true
log "PASSED"
