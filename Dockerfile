# Plant Store as one container: the single executable (`bun run build`) on a slim Debian.
#   docker build -t plant-store .
#   docker run -p 3000:3000 -v plant-store-data:/data plant-store       # prints the first token once
#   docker exec <container> plant-store token create --user alice
# See docs/operations.md (Deploying).

FROM oven/bun:1.4.5 AS build
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile
COPY . .
RUN bun run build

# The executable carries Bun, the migrations and the Swagger assets: it needs only glibc.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /data plant-store \
    && mkdir /data && chown plant-store:plant-store /data
COPY --from=build /app/dist/plant-store /usr/local/bin/plant-store
USER plant-store
WORKDIR /data
ENV DATABASE_URL=/data/plants.sqlite HOST=0.0.0.0 PORT=3000
# The start script's memory settings (package.json, docs/decisions/0016-jsc-memory-settings.md).
ENV BUN_JSC_forceRAMSize=134217728 BUN_JSC_useFTLJIT=0
VOLUME /data
EXPOSE 3000
# SIGTERM drains for SHUTDOWN_TIMEOUT_MS (10 s): give `docker stop -t 20` or stop_grace_period: 20s.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/plant-store"]
