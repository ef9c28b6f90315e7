# NICO as one binary in a small non-root image.
#   docker build -t nico:dev .
# Stage 1 compiles main.ts with `deno compile` (it downloads the Deno runtime
# it embeds, so this needs network access), with the V8 flags of
# deploy/v8-flags built in: a compiled binary does not read DENO_V8_FLAGS.
# Stage 2 runs the binary with the git CLI, which NICO uses to resolve `ref`
# to a commit (git ls-remote). tests/unit/image_test.ts builds this stage's
# context without Docker and type-checks and bundles main.ts in it.
FROM denoland/deno:2.9.6 AS build
WORKDIR /src
COPY deno.json deno.lock ./
COPY main.ts ./
COPY cli/ cli/
COPY core/ core/
COPY crds/ crds/
COPY lib/ lib/
COPY controllers/ controllers/
COPY webhooks/ webhooks/
COPY deploy/v8-flags deploy/
RUN deno compile --frozen --allow-all --v8-flags="$(cat deploy/v8-flags)" --output /out/nico main.ts

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin nico
COPY --from=build /out/nico /usr/local/bin/nico
# No public root CA: NICO's TLS connections trust only the CAs it is given (docs/operations.md, Security).
ENV DENO_TLS_CA_STORE=""
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/usr/local/bin/nico"]
CMD ["run"]
