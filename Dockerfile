# ---------------------------------------------------------------------------------------------
# Node 26, the Active LTS line on 2026-11-30: Node 20 reached end of life in April 2026, and
# Node 24 moved to Maintenance LTS when 26 became Active LTS in October 2026 (security fixes only
# from then on). package.json "engines" (>=22.15.0 <27) is what the lockfile needs (OpenTelemetry
# 3 needs 22.15; better-sqlite3 12 lists 26.x as its newest), and CI runs the suite on Node 26.
# Both stages use the same tag, so the native module is built for the ABI that runs it. Debian 13 (trixie) is
# the base the node:26 images default to.
ARG NODE_IMAGE=node:26-trixie-slim

# ---------------------------------------------------------------------------------------------
# Build stage: install every dependency (compiling better-sqlite3 if no prebuilt binary fits),
# compile TypeScript to dist/, then drop dev and optional dependencies.
FROM ${NODE_IMAGE} AS build

# Toolchain for node-gyp, used only when better-sqlite3 has no prebuilt binary for this
# platform and Node ABI (or no network access to its GitHub release downloads).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, in a layer of their own: it depends on the manifest and the lockfile only,
# so a change to the code reuses it and does not rebuild the native module. `--ignore-scripts`
# holds back `prepare` (the TypeScript build, which needs src/); the rebuild then runs the install
# scripts of the two packages that have one (package.json "allowScripts": better-sqlite3, with
# its prebuilt binary or node-gyp and the toolchain above, and esbuild), whether the bundled npm
# only warns about unreviewed install scripts (npm 11) or blocks them.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts \
 && npm rebuild better-sqlite3 esbuild \
 && rm -rf /root/.npm

# Then the code: compile TypeScript to dist/ and drop what the runtime does not need (dev
# dependencies, and pino-pretty, optional: the server writes JSON lines when it is missing).
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build \
 && npm prune --omit=dev --omit=optional \
 && test -f dist/src/cli/main.js \
 && node -e "require('better-sqlite3')(':memory:').close()"

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
