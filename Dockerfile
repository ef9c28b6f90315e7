# NICO as one binary in a small non-root image.
#   docker build -t nico:dev .
# Stage 1 compiles main.ts with `deno compile` (it downloads the Deno runtime
# it embeds, so this needs network access); stage 2 runs the binary with the
# git CLI, which NICO uses to resolve `ref` to a commit (git ls-remote).
FROM denoland/deno:2.9.6 AS build
WORKDIR /src
COPY deno.json deno.lock ./
COPY main.ts ./
COPY crds/ crds/
COPY lib/ lib/
COPY controllers/ controllers/
COPY webhooks/ webhooks/
RUN deno compile --frozen --allow-all --output /out/nico main.ts

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin nico
COPY --from=build /out/nico /usr/local/bin/nico
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/usr/local/bin/nico"]
CMD ["run"]
