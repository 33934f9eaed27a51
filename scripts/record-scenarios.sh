#!/usr/bin/env bash
# Runs every curated scenario of the gallery on this machine's kernel
# (reuseport-agent scenario NAME, every variant, loopback only) into
# public/traces/scenario-NAME.json, then fits the simulator to them
# (npm run calibrate). Needs root for the variants that set
# net.ipv4.tcp_migrate_req (restored afterwards). About two minutes on two CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p reuseport-agent </dev/null
agent="${CARGO_TARGET_DIR:-target}/release/reuseport-agent"
# The QUIC reload scenario (UDP in a private namespace, root): kernel beside model, datagram by datagram.
"$agent" scenario quic-reload -o public/traces/quic-reload.json
for name in $("$agent" scenario --list | awk 'NF > 2 && $2 == "scale" { print $1 }'); do
  start=$(date +%s.%N)
  "$agent" scenario "$name" -o "public/traces/scenario-$name.json"
  echo "record-scenarios: $name in $(echo "$(date +%s.%N) - $start" | bc) s" >&2
done
"$agent" calibrate
