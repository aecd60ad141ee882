# syntax=docker/dockerfile:1
# Return Address in one image: one process serving HTTP (3000) and SMTP (2525), data in /data
# (SQLite) unless DATABASE_URL names a PostgreSQL. docs/deploy.md runs it behind a TLS proxy.
#   docker build -t return-address .
#   docker run -p 3000:3000 -p 25:2525 -v ra-data:/data -e BASE_URL=https://ra.example.com \
#     -e EMAIL_DOMAIN=ra.example.com -e TRUST_PROXY=1 return-address
# NODE_IMAGE: any Debian-based Node 20 image with node and npm under /usr/local (the official one
# by default; a locally assembled one where registries of images are out of reach).
ARG NODE_IMAGE=node:20-bookworm-slim

# Production dependencies only. --ignore-scripts: the package's own `prepare` (a build) needs the
# sources, which this stage does not have; better-sqlite3's native addon is then built alone: a
# prebuilt binary when GitHub is reachable, else compiled against the image's own Node headers.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# The TypeScript client is an npm workspace the service depends on: npm ci links it from here.
COPY packages/client/package.json packages/client/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm_config_nodedir=/usr/local npm rebuild better-sqlite3 \
 && npm cache clean --force

# The compiled service. TypeScript and the types it needs are production dependencies, so the
# deps stage's node_modules compiles it; dev tools (test, lint) are not installed at all.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY scripts/copy-assets.mjs scripts/
COPY src src
COPY packages/client packages/client
RUN npm run build

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    SMTP_PORT=2525 \
    DATA_DIR=/data
WORKDIR /app
# A user of its own, without a shell or a home: the service needs to write /data only.
RUN groupadd --system --gid 10001 return-address \
 && useradd --system --uid 10001 --gid return-address --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin return-address \
 && mkdir -p /data && chown return-address:return-address /data && chmod 700 /data
COPY --from=deps /app/node_modules node_modules
COPY --from=build /app/dist/src dist/src
COPY --from=build /app/dist/.build-stamp dist/.build-stamp
# node_modules/@return-address/client links here.
COPY --from=build /app/packages/client/package.json packages/client/
COPY --from=build /app/packages/client/dist packages/client/dist
COPY package.json ./
COPY bin bin
USER return-address
VOLUME ["/data"]
EXPOSE 3000 2525
# /readyz: storage reachable (and, on PostgreSQL, the LISTEN connection up). node's fetch: the
# image needs no curl.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The same entry as `npm start`: node itself is PID 1 and gets `docker stop`'s SIGTERM, drains,
# exits 0; SIGHUP (docker kill -s HUP) reloads SMTP_TLS_CERT/KEY.
ENTRYPOINT ["node", "--max-semi-space-size=8", "bin/return-address.js"]
CMD ["serve"]
