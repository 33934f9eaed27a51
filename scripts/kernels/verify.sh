#!/usr/bin/env bash
# npm run verify:kernels [-- LIST]
# Boots Debian's kernels under QEMU (5.10, 6.1, 6.12 and sid's; or the comma-separated
# LIST), records verify's layouts and builds 200 random layouts (seed 11) inside each,
# recovers and predicts on this host
# (reuseport-agent verify --kernels, agent/src/cmd/verify/kernels.rs). With no LIST it also writes
# the site's verification record, public/verification/kernels.json.
# Images are cached in .cache/kernels/. Exit status: 0 only when every kernel verified.
set -euo pipefail
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

bash scripts/setup.sh
cargo build --release -q -p reuseport-agent
guest=$(bash scripts/kernels/guest-agent.sh)
agent="${CARGO_TARGET_DIR:-target}/release/reuseport-agent"
if [[ $# -eq 0 ]]; then
  exec "$agent" verify --kernels --layouts 200 --guest-agent "$guest" \
    --write-record public/verification/kernels.json
else
  printf 'verify:kernels: only %s; the verification record is written by a run over all kernels\n' "$1" >&2
  exec "$agent" verify --kernels "$1" --layouts 200 --guest-agent "$guest"
fi
