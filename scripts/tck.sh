#!/usr/bin/env bash
# Runs the official A2A conformance kit (a2aproject/a2a-tck) against this server.
#
# The kit's code never enters this repository: it is cloned (or reused) in TCK_DIR, outside it.
# The server runs from this checkout on a fresh embedded database in a temporary DATA_DIR, seeded
# through the CLI with a buyer (credited 1000 UT), a seller and one platform API key linked to
# both; the seller offers three capabilities whose words the kit's texts do not use (see below).
# The kit calls as the buyer, an agent caller (X-Api-Key + X-Platform-User-Id), over JSON-RPC with the
# v1.0 method names. See docs/a2a-conformance.md for the results and what each failure means.
#
# Usage: scripts/tck.sh [category ...]   (default: mandatory capabilities)
# Environment: TCK_DIR (default /tmp/a2a-tck), TCK_COMMIT, PORT (default 3999), PYTHON
# (default /usr/bin/python3 with Debian's python3-pytest, -pytest-asyncio, -httpx, -requests,
# -responses, -deepdiff, -jsonschema, -dotenv, -grpcio, -protobuf, -aiohttp, -yaml, -openssl),
# TCK_REPORTS (default TCK_DIR/reports-marketplace: one JUnit XML and one log per category).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tck_dir=${TCK_DIR:-/tmp/a2a-tck}
tck_commit=${TCK_COMMIT:-410ba92e1b264df895e1fe6eccfe22db7aeaab06}
port=${PORT:-3999}
python=${PYTHON:-/usr/bin/python3}
reports=${TCK_REPORTS:-$tck_dir/reports-marketplace}
categories=("$@")
[ $# -eq 0 ] && categories=(mandatory capabilities)

if [ ! -d "$tck_dir/.git" ]; then
  git clone --quiet https://github.com/a2aproject/a2a-tck.git "$tck_dir"
fi
git -C "$tck_dir" checkout --quiet "$tck_commit"

data_dir=$(mktemp -d)
export DATA_DIR=$data_dir PORT=$port ADMIN_TOKEN=tck-admin-token-$RANDOM$RANDOM LOG_LEVEL=warn
export PUBLIC_BASE_URL=http://localhost:$port
# The kit's push notification tests run their receiver on localhost:8888; pushes reach loopback
# only with the operator's private-address setting (docs/webhooks.md "Addresses").
export CALLBACK_ALLOW_PRIVATE=true
cli() { (cd "$root" && node --import tsx src/cli/index.ts "$@"); }
field() { node -pe "JSON.parse(require('fs').readFileSync(0, 'utf8')).$1"; }

buyer=$(cli create-user --display-name 'TCK buyer' | field user_id)
seller=$(cli create-user --display-name 'TCK seller' | field user_id)
key_json=$(cli create-api-key --platform custom_mcp --name 'a2a-tck')
api_key=$(echo "$key_json" | field api_key)
key_id=$(echo "$key_json" | field id)
cli link-user --api-key-id "$key_id" --user-id "$buyer" >/dev/null
cli link-user --api-key-id "$key_id" --user-id "$seller" >/dev/null
cli credit --user-id "$buyer" --currency UT --amount 1000 >/dev/null

# One node process (no npx or tsx wrapper in between), so that the trap below stops the server.
(cd "$root" && exec node --import tsx src/main.ts) &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$data_dir"' EXIT
for _ in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
  sleep 1
done

# The seller's offers are those of a real-looking market whose words share nothing with the kit's
# generic texts ("Task for history test", "hello", ...): a text-only message then matches nothing,
# its task is TASK_STATE_WORKING (the demand is open to sellers), which is the state the kit's
# ListTasks tests wait for. Were the kit's words to match an offer, its tasks would be
# TASK_STATE_INPUT_REQUIRED (choose a candidate) and those tests would wait in vain
# (docs/a2a-conformance.md).
offer() {
  curl -sf -X POST "http://127.0.0.1:$port/api/v1/capabilities" -H "X-Api-Key: $api_key" -H "X-Platform-User-Id: $seller" \
    -H 'Content-Type: application/json' \
    -d "{\"title\":\"$1\",\"description\":\"$2\",\"category\":\"$3\",\"capability_type\":\"service\",\"pricing_model\":\"per_use\",\"price_ut\":\"$4\",\"callback_url\":\"https://seller.example/tck\"}" >/dev/null
}
offer 'Appraise antique furniture' 'Valuation of antique chairs, cabinets and clocks for insurance or sale' other 40.00
offer 'Plan vegetarian meals for a week' 'Seven days of vegetarian breakfasts, lunches and dinners with recipes' health 15.00
offer 'Knitting pattern for a wool sweater' 'A knitting pattern sized to your measurements, with yarn quantities' design 8.00

export A2A_AUTH_HEADERS="{\"X-Api-Key\": \"$api_key\", \"X-Platform-User-Id\": \"$buyer\"}"
mkdir -p "$reports"
status=0
for category in "${categories[@]}"; do
  case $category in
    mandatory) selection=(tests/mandatory/ -m 'mandatory or mandatory_protocol or mandatory_jsonrpc') ;;
    capabilities) selection=(tests/optional/capabilities/) ;;
    *) selection=("tests/optional/$category/") ;;
  esac
  (cd "$tck_dir" && "$python" -m pytest "${selection[@]}" --sut-url="http://localhost:$port/api/v1/rpc" \
    --test-scope=all --transports jsonrpc --tb=short -q -p no:cacheprovider \
    --junitxml="$reports/$category.xml") 2>&1 | tee "$reports/$category.log" | tail -n 40 || status=1
done
exit $status
