# syntax=docker/dockerfile:1
# Return Address in one image: one process serving HTTP (3000) and SMTP (2525), data in /data
# (SQLite) unless DATABASE_URL names a PostgreSQL. docs/deploy.md runs it behind a TLS proxy.
#   docker build -t return-address .
#   docker run -p 3000:3000 -p 25:2525 -v ra-data:/data -e BASE_URL=https://ra.example.com \
#     -e EMAIL_DOMAIN=ra.example.com -e TRUST_PROXY=1 return-address
#
# Two bases, both pinned by digest (a tag moves; a digest is the exact bytes that were tested):
#   NODE_IMAGE     builds (npm, node-gyp, tsc) and lends its node binary to the runtime.
#   RUNTIME_IMAGE  what ships: Debian slim plus that one binary (no npm, yarn, corepack or Node's
#                  headers), which is what brings the image under 200 MB (docs/deploy.md).
# The digests are published ones of those tags, as pinned in public repositories (node 20.20.2,
# Debian 12.15): the machine this was written on reaches no image registry to ask. Renew both
# together where one is reachable, and keep node's major at 20 (engines, better-sqlite3's ABI):
#   docker buildx imagetools inspect node:20-bookworm-slim     # "Digest:" of the index
#   docker buildx imagetools inspect debian:bookworm-slim
#   skopeo inspect --format '{{.Digest}}' docker://docker.io/library/node:20-bookworm-slim
# Both stay build arguments for locally assembled bases (docs/deploy.md, the appendix). Keep them
# the same Debian release: node and better-sqlite3's addon are built against its glibc.
ARG NODE_IMAGE=node:20-bookworm-slim@sha256:2cf067cfed83d5ea958367df9f966191a942351a2df77d6f0193e162b5febfc0
ARG RUNTIME_IMAGE=debian:bookworm-slim@sha256:88200866dfff7ea7f5cbcb6ec7c8a701889efe6fe859fe64d6990e4b07ea4171

# Production dependencies only. --ignore-scripts: the package's own `prepare` (a build) needs the
# sources and TypeScript, which this stage does not have. better-sqlite3's native addon is then
# made alone, and kept in a build cache keyed by its version, Node's ABI, the platform and glibc:
# a build whose lock file changed, but not better-sqlite3, reuses it (seconds, not the minutes of
# compiling SQLite). On a miss: the prebuilt binary when GitHub is reachable, else compiled
# against the image's own Node headers (python3, make and g++ are installed for that case only).
# Whatever is used must open a database here before the build goes on. The cache mounts (this
# addon, npm's download cache) need BuildKit (Docker 23+ by default) or buildah/podman; they are
# not `sharing=locked`: buildah 1.28 then waits forever on the lock the deps stage took.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The TypeScript client is an npm workspace the service depends on: npm ci links it from here.
COPY packages/client/package.json packages/client/
RUN --mount=type=cache,id=return-address-npm,target=/root/.npm \
    --mount=type=cache,id=return-address-native,target=/var/cache/return-address-native \
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && key="better-sqlite3-$(node -p "require('better-sqlite3/package.json').version")-node-abi$(node -p process.versions.modules)-$(node -p "process.platform+'-'+process.arch+'-glibc'+process.report.getReport().header.glibcVersionRuntime")" \
 && addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node \
 && if [ -f "/var/cache/return-address-native/$key.node" ]; then \
      echo "better-sqlite3: $key from the build cache" \
      && mkdir -p "$(dirname "$addon")" && cp "/var/cache/return-address-native/$key.node" "$addon"; \
    else \
      echo "better-sqlite3: $key not in the build cache: prebuilt or compiled (minutes)" \
      && apt-get update && apt-get install -y --no-install-recommends python3 make g++ \
      && npm_config_nodedir=/usr/local npm rebuild better-sqlite3 \
      && cp "$addon" "/var/cache/return-address-native/$key.node"; \
    fi \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('select sqlite_version()').get()" \
 # What runs is the addon and its lib/: SQLite's sources, the compiler's objects and archives go.
 && cp "$addon" /tmp/addon.node \
 && rm -rf node_modules/better-sqlite3/build node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
      node_modules/better-sqlite3/binding.gyp \
 && mkdir -p "$(dirname "$addon")" && mv /tmp/addon.node "$addon" \
 # Node never reads TypeScript (sources or declarations), source maps or Markdown, nor a package's
 # own tests, examples, benchmarks and docs (folders of those names at a package's root only).
 && find node_modules -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' \
      -o -name '*.md' -o -name '*.markdown' \) -delete \
 && find node_modules -mindepth 2 -maxdepth 3 -type d \( -name test -o -name tests -o -name __tests__ \
      -o -name example -o -name examples -o -name benchmark -o -name benchmarks -o -name docs -o -name .github \) \
      -regex 'node_modules/\(@[^/]*/\)?[^/@][^/]*/[^/]*' -prune -exec rm -rf {} + \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"

# The compiled service: TypeScript and the @types packages are dev dependencies, installed here only
# (with the rest of the dev tools: nothing of this stage but dist/ reaches the image).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/client/package.json packages/client/
RUN --mount=type=cache,id=return-address-npm,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.forward-types.json ./
COPY scripts/copy-assets.mjs scripts/
COPY src src
COPY packages/client packages/client
# Source maps and declarations are for debuggers and TypeScript users, not for the running service.
RUN npm run build \
 && find dist/src packages/client/dist -type f \( -name '*.map' -o -name '*.d.ts' \) -delete

# The node binary the runtime gets, without its symbol table: 12.6 MB (99 -> 86 MB, measured on
# 20.20.2) that nothing at run time reads (stack traces, --prof, --cpu-prof and the inspector
# name JavaScript frames from V8; only perf and gdb would show node's own C++ frames as bare
# addresses), as Debian's own nodejs package ships it. STRIP_NODE=0 keeps the binary byte for
# byte the pinned image's (image ~12.6 MB larger).
FROM ${NODE_IMAGE} AS node
ARG STRIP_NODE=1
RUN if [ "$STRIP_NODE" = 1 ]; then \
      apt-get update && apt-get install -y --no-install-recommends binutils \
      && strip /usr/local/bin/node && node -e "require('node:crypto').randomUUID()"; \
    fi

FROM ${RUNTIME_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    SMTP_PORT=2525 \
    DATA_DIR=/data
# node alone: the service runs no npm.
COPY --from=node /usr/local/bin/node /usr/local/bin/node
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
