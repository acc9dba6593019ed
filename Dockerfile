# TokenVault: one static-ish Rust binary on distroless.
#
#   docker build -t tokenvault .
#   docker run -p 8080:8080 -v tokenvault-data:/data tokenvault
#
# Without TOKENVAULT_MASTER_KEY(_FILE) the server runs in development mode and keeps a generated
# master key in /data/master.key beside the SQLite database: give it a key in production
# (compose.yaml does, from a secret file). docs: README.md "Operating".
#
# The runtime image needs only glibc, libgcc_s and libm (`ldd target/release/tokenvault`; TLS is
# rustls + aws-lc, SQLite and QuickJS are compiled in): gcr.io/distroless/cc-debian12 has them,
# plus CA certificates, /tmp and the `nonroot` user (65532) — and no shell, so the health check
# is the binary's own subcommand. For an image built without any registry see
# deploy/Containerfile.rootfs.

ARG RUST_IMAGE=rust:1-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# 1. The workspace reduced to its manifests, lock file and stub targets: this stage's output
#    changes only when a Cargo.toml or Cargo.lock does.
FROM ${RUST_IMAGE} AS skeleton
COPY deploy/cargo-skeleton.sh /usr/local/bin/cargo-skeleton
COPY . /src
RUN sh /usr/local/bin/cargo-skeleton /src

# 2. Every third-party crate, compiled once per manifest change (a cached layer).
FROM ${RUST_IMAGE} AS builder
WORKDIR /src
ENV CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0
COPY --from=skeleton /src/ ./
RUN cargo build --release --locked -p tokenvault-server --bin tokenvault

# 3. The workspace's own crates. COPY keeps the context's modification times, which may be older
#    than the stub build: touch the sources so cargo rebuilds them instead of linking the stubs.
COPY . .
RUN find crates migrations -name '*.rs' -exec touch {} + \
 && cargo build --release --locked -p tokenvault-server --bin tokenvault \
 && install -D -m 0755 target/release/tokenvault /out/usr/local/bin/tokenvault \
 && install -d -m 0700 /out/data \
 && /out/usr/local/bin/tokenvault --version

# 4. Runtime: no shell, no package manager; runs as 65532:65532 (distroless `nonroot`).
FROM ${RUNTIME_IMAGE}
COPY --from=builder /out/usr/local/bin/tokenvault /usr/local/bin/tokenvault
# /data: the SQLite database and, in development mode, master.key. A named volume mounted here
# starts with this directory's owner and mode.
COPY --from=builder --chown=65532:65532 /out/data /data
ENV TOKENVAULT_LISTEN=0.0.0.0:8080 \
    TOKENVAULT_DATA_DIR=/data
USER 65532:65532
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
# `tokenvault healthcheck`: GET /ready on the configured listen port (0.0.0.0 → loopback), exit
# 0 on 200 and 1 otherwise.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["/usr/local/bin/tokenvault", "healthcheck"]
# The code workers are this same binary re-executed (`tokenvault code-worker`, found through
# /proc/self/exe) under their own seccomp filter, stacked on the runtime's default profile,
# which allows installing it. No capability is needed (compose.yaml drops them all). Run with an
# init (`docker run --init`, compose `init: true`): tokenvault as PID 1 does not reap the
# orphaned workers of a `docker exec … tokenvault <command>`.
ENTRYPOINT ["/usr/local/bin/tokenvault"]
CMD ["serve"]
