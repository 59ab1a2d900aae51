# ---------------------------------------------------------------------------------------------
# Node 26, the Active LTS line on 2026-11-30: Node 20 reached end of life in April 2026, and
# Node 24 moved to Maintenance LTS when 26 became Active LTS in October 2026 (security fixes only
# from then on). The code and its tests also run on Node 20.19+ and 22.12+ (package.json
# "engines"); better-sqlite3 12 lists 26.x among its supported Node versions. Both stages use
# the same tag, so the native module is built for the ABI that runs it. Debian 13 (trixie) is
# the base the node:26 images default to.
ARG NODE_IMAGE=node:26-trixie-slim

# ---------------------------------------------------------------------------------------------
# Build stage: install every dependency (compiling better-sqlite3 if no prebuilt binary fits),
# compile TypeScript to dist/ (npm ci runs the `prepare` script), then drop dev dependencies.
FROM ${NODE_IMAGE} AS build

# Toolchain for node-gyp, used only when better-sqlite3 has no prebuilt binary for this
# platform and Node ABI (or no network access to its GitHub release downloads).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# What `npm ci` and its `prepare` (tsc -p tsconfig.build.json) need, and nothing else.
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src

# better-sqlite3 (its prebuilt binary, or node-gyp with the toolchain above) and esbuild run
# their install scripts here: package.json "allowScripts" approves both, so this holds whether
# the bundled npm only warns about unreviewed install scripts (npm 11) or blocks them.
RUN npm ci \
 && npm prune --omit=dev \
 && test -f dist/src/cli/main.js \
 && rm -rf /root/.npm

# ---------------------------------------------------------------------------------------------
# Runtime stage: the compiled registry and its production dependencies only. The files stay
# owned by root (the server cannot rewrite its own code); it runs as the image's `node` user.
FROM ${NODE_IMAGE}

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    DATABASE_PATH=/data/registry.db

WORKDIR /app

COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The dashboard's page, scripts and styles are served as they are, from source (no build step).
COPY src/http/dashboard ./src/http/dashboard
COPY bin ./bin
COPY migrations ./migrations
COPY openapi.yaml ./openapi.yaml

# The database (and, in dev mode, its registry.secret) lives on this volume. Create it owned
# by `node` before declaring the volume, so a fresh named volume starts out writable.
RUN mkdir -p /data && chown node:node /data
VOLUME /data

USER node

EXPOSE 8006

# Slim images have no curl; Node's own fetch checks liveness. Follows PORT if it is overridden.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "const h = process.env.HOST; const host = !h || h === '0.0.0.0' || h === '::' ? '127.0.0.1' : h.includes(':') ? '[' + h + ']' : h; fetch('http://' + host + ':' + (process.env.PORT || 8006) + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The server handles SIGTERM itself (finishes in-flight requests, closes the database).
CMD ["node", "bin/tool-registry.js", "serve"]
