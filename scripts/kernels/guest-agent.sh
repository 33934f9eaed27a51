#!/usr/bin/env bash
# Builds the statically linked agent that runs inside the verify --kernels guests
# (agent/src/cmd/verify/kernels.rs) and prints its path. Needs the x86_64-unknown-linux-musl
# target (scripts/setup.sh adds it). Without the `trace` feature: libbpf links libelf and zlib,
# which Debian ships for glibc only, so this build's observe --trace says it was built without it.
#   --profile NAME   the Cargo profile (default release). npm test builds `test-agent` (Cargo.toml):
#                    the model optimised, the rest not, half the compile of the LTO release build.
set -euo pipefail
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
profile=release
case "${1:-}" in
  --profile) profile=${2:?--profile needs a profile name} ;;
  "") ;;
  *) printf 'usage: bash scripts/kernels/guest-agent.sh [--profile NAME]\n' >&2; exit 2 ;;
esac
cargo build --profile "$profile" -q --target x86_64-unknown-linux-musl -p reuseport-agent --no-default-features >&2
printf '%s\n' "${CARGO_TARGET_DIR:-$PWD/target}/x86_64-unknown-linux-musl/$profile/reuseport-agent"
