# syntax=docker/dockerfile:1
# Adze: one image holding the three binaries; each workload picks its command.
#   docker build -t adze:dev .
#   adze-provisioner run ... | adze-extender ... | adze-agent ...
# Build stage: the workspace, compiled once with the locked dependency versions.
ARG RUST_VERSION=1.89
FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# The cache mounts keep the registry and target dir between builds on the same builder;
# the binaries are copied out of the cached target dir before the stage ends.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
      --bin adze-provisioner --bin adze-extender --bin adze-agent \
 && mkdir -p /out \
 && cp target/release/adze-provisioner target/release/adze-extender target/release/adze-agent /out/

# Runtime: glibc + libgcc + CA certificates, no shell, uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/adze-provisioner"]
CMD ["--help"]
