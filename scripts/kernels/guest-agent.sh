#!/usr/bin/env bash
# Builds the statically linked agent that runs inside the verify --kernels guests
# (agent/src/cmd/verify/kernels.rs) and prints its path. Needs the x86_64-unknown-linux-musl
# target (scripts/setup.sh adds it). Without the `trace` feature: libbpf links libelf and zlib,
# which Debian ships for glibc only, so this build's observe --trace says it was built without it.
set -euo pipefail
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release -q --target x86_64-unknown-linux-musl -p reuseport-agent --no-default-features >&2
printf '%s\n' "${CARGO_TARGET_DIR:-$PWD/target}/x86_64-unknown-linux-musl/release/reuseport-agent"
