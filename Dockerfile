# Steward container image. Used by docker-compose.yml (service "steward").
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
COPY scripts/postinstall.mjs ./scripts/
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY schemas ./schemas
COPY blueprints ./blueprints
USER node
CMD ["node", "--expose-gc", "dist/cli/main.js", "run"]
