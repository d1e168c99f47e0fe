# Murmur's image, used by docker-compose.yml.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY prisma ./prisma
COPY prisma.config.ts ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY . .
ENV HOST=0.0.0.0 NODE_ENV=production
EXPOSE 3000
# Node itself is PID 1's child of nothing: `docker stop` SIGTERM reaches the graceful shutdown.
CMD ["node", "--import", "tsx", "src/main.ts"]
