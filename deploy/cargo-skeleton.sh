#!/bin/sh
# Reduces a copy of the workspace to what decides its dependencies: every Cargo.toml, Cargo.lock,
# .cargo/config.toml, and a stand-in `fn main() {}` for each target root Cargo needs to load the
# workspace (src/lib.rs, src/main.rs, src/bin/*.rs and benches/*.rs where they exist, and every
# `path = "…"` a manifest names). Building the skeleton compiles every third-party crate; the
# Dockerfile caches that layer, so a change to the sources rebuilds only the workspace's own
# crates, and only a change to a manifest or the lock file rebuilds the dependencies.
#
# Usage: cargo-skeleton.sh <copy of the workspace>   (edits it in place: run it on a copy)
set -eu
cd "$1"
roots=$(mktemp)
for manifest in $(find . -name Cargo.toml ! -path './target/*' | sort); do
    grep -q '^\[package\]' "$manifest" || continue # the root: a virtual workspace
    dir=$(dirname "$manifest")
    for f in "$dir"/src/lib.rs "$dir"/src/main.rs "$dir"/src/bin/*.rs "$dir"/benches/*.rs; do
        [ -f "$f" ] && echo "$f" >> "$roots"
    done
    # Explicit target paths ([lib], [[bin]], [[test]], [[bench]]: `path = "x.rs"` lines).
    sed -n 's/^[[:space:]]*path[[:space:]]*=[[:space:]]*"\([^"]*\.rs\)".*/\1/p' "$manifest" |
        while read -r path; do echo "$dir/$path"; done >> "$roots"
    # Explicit [[test]]/[[example]] without a path: Cargo infers tests/<name>.rs or
    # examples/<name>.rs and fails to load the workspace when it is missing.
    awk -v dir="$dir" '
        function flush() { if (kind != "" && name != "" && !haspath) print dir "/" kind "/" name ".rs" }
        /^\[/ { flush(); kind = ""; name = ""; haspath = 0 }
        /^\[\[test\]\]/ { kind = "tests" }
        /^\[\[example\]\]/ { kind = "examples" }
        /^[[:space:]]*name[[:space:]]*=/ { n = $0; sub(/^[^"]*"/, "", n); sub(/".*/, "", n); name = n }
        /^[[:space:]]*path[[:space:]]*=/ { haspath = 1 }
        END { flush() }' "$manifest" >> "$roots"
done
find . -type f ! -name Cargo.toml ! -name Cargo.lock ! -path './.cargo/config.toml' -delete
find . -depth -type d -empty -delete
sort -u "$roots" | while read -r f; do
    mkdir -p "$(dirname "$f")"
    printf '#![allow(dead_code, missing_docs)]\nfn main() {}\n' > "$f"
done
rm -f "$roots"
