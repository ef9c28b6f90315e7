# NICO as one binary on a minimal non-root image.
#   docker build -t nico:dev .
# Stage 1 compiles main.ts with `deno compile` (it downloads the Deno runtime
# it embeds, so this needs network access); stage 2 runs the binary alone.
FROM denoland/deno:2.9.6 AS build
WORKDIR /src
COPY deno.json deno.lock ./
COPY main.ts ./
COPY crds/ crds/
COPY lib/ lib/
COPY controllers/ controllers/
COPY webhooks/ webhooks/
RUN deno install --frozen --entrypoint main.ts \
 && deno compile --frozen --allow-all --output /out/nico main.ts

# The compiled binary links against glibc: use a distroless cc image.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/nico /usr/local/bin/nico
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/usr/local/bin/nico"]
CMD ["run"]
