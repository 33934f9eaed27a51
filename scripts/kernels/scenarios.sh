#!/usr/bin/env bash
# Records the incoming-cpu scenario inside Debian's 5.10 and 6.1 kernels, booted under
# QEMU with 4 vCPUs one after the other (reuseport-agent scenario --kernel,
# agent/src/cmd/scenario/guest.rs), into public/traces/kernels/scenario-incoming-cpu-K.json.
# These stay out of public/traces/scenario-*.json: calibrate fits this machine's runs,
# and an emulated guest's times are not this machine's. Images are cached in
# .cache/kernels/. About a minute and a half under TCG on two CPUs.
set -euo pipefail
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release -q -p reuseport-agent
guest=$(bash scripts/kernels/guest-agent.sh)
agent="${CARGO_TARGET_DIR:-target}/release/reuseport-agent"
mkdir -p public/traces/kernels
for k in 5.10 6.1; do
  "$agent" scenario incoming-cpu --kernel "$k" --scale 0.25 \
    --guest-agent "$guest" -o "public/traces/kernels/scenario-incoming-cpu-$k.json"
done
