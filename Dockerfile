# Two stages: the first installs everything and compiles TypeScript to dist/, the second carries only the
# compiled service, its production dependencies, the migrations and the schema, and runs as the unprivileged
# `node` user. The embedded data directory (used only without DATABASE_URL) is /data.
FROM node:20.20.2-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:20.20.2-bookworm-slim
ENV NODE_ENV=production PORT=4000 HOST=0.0.0.0 GOVERNANCE_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/migrations ./migrations
COPY --from=build /app/schema ./schema
COPY --from=build /app/proto ./proto
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 4000 8081
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--v8-pool-size=1", "bin/governance.js"]
CMD ["serve"]
