set -u
export DATA_DIR=$(mktemp -d) PORT=3999
(npx tsx src/main.ts > /tmp/readme-server.log 2>&1 &)
for i in $(seq 1 60); do curl -s localhost:3999/readyz | grep -q '"code":0' && break; sleep 1; done
BASE=http://localhost:3999
json() { node -pe "JSON.parse(require('fs').readFileSync(0, 'utf8')).$1"; }
ADA=$(curl -s -X POST $BASE/api/v1/auth/signup -H 'Content-Type: application/json' -d '{"email":"ada@example.com","password":"correct-horse-42"}')
USER_ID=$(echo "$ADA" | json data.user_id)
KEY=$(curl -s -X POST $BASE/api/v1/admin/api-keys -H "X-Admin-Token: $(cat "$DATA_DIR/admin-token")" -H 'Content-Type: application/json' -d '{"agent_platform_type":"custom_mcp","name":"my agent"}')
API_KEY=$(echo "$KEY" | json data.api_key); API_KEY_ID=$(echo "$KEY" | json data.id)
curl -s -X POST $BASE/api/v1/admin/api-keys/$API_KEY_ID/links -H "X-Admin-Token: $(cat "$DATA_DIR/admin-token")" -H 'Content-Type: application/json' -d "{\"user_id\":\"$USER_ID\"}" >/dev/null
SELLER=(-H "X-Api-Key: $API_KEY" -H "X-Platform-User-Id: $USER_ID")
BOB=$(curl -s -X POST $BASE/api/v1/auth/signup -H 'Content-Type: application/json' -d '{"email":"bob@example.com","password":"correct-horse-42"}' | json data.user_id)
curl -s -X POST $BASE/api/v1/admin/api-keys/$API_KEY_ID/links -H "X-Admin-Token: $(cat "$DATA_DIR/admin-token")" -H 'Content-Type: application/json' -d "{\"user_id\":\"$BOB\"}" >/dev/null
curl -s -X POST $BASE/api/v1/admin/wallet/credit -H "X-Admin-Token: $(cat "$DATA_DIR/admin-token")" -H 'Content-Type: application/json' -d "{\"user_id\":\"$BOB\",\"currency\":\"UT\",\"amount\":\"87.00\"}" >/dev/null
BUYER=(-H "X-Api-Key: $API_KEY" -H "X-Platform-User-Id: $BOB")
eval "$(python3 - <<'PY'
s=open('README.md').read()
start=s.index('### Tasks\n')
block=s[s.index('```bash',start)+7:s.index('```',s.index('```bash',start)+7)]
print(block)
PY
)"
curl -s $BASE/api/v1/wallet/ "${BUYER[@]}" | json 'data.ut.available'
pkill -f "tsx src/main.ts"
