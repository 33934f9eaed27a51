#!/usr/bin/env bash
# Records the curated traces in public/traces/ on this machine's kernel and
# writes their manifest. Needs Linux and root (netns, sysctl, CPU pinning).
# Each trace is small: at most 1000 events kept.
set -euo pipefail
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cargo build --release -q -p reuseport-agent
agent="${CARGO_TARGET_DIR:-target}/release/reuseport-agent"
out=public/traces
mkdir -p "$out"

# The curated recordings (agent/src/cmd/curated/): one JSON object a line with
# kind, file, shows and the agent's arguments.
list=$(mktemp)
trap 'rm -f "$list"' EXIT
"$agent" curated > "$list"
while IFS= read -r line; do
  mapfile -t args < <(node -e 'for (const a of JSON.parse(process.argv[1]).args) console.log(a)' "$line" </dev/null)
  file=$(node -e 'console.log(JSON.parse(process.argv[1]).file)' "$line" </dev/null)
  echo "record-traces: $file" >&2
  if [ "${args[0]}" = record ]; then
    "$agent" "${args[@]}" --output "$out/$file" </dev/null
  else
    "$agent" "${args[@]}" > "$out/$file" </dev/null
  fi
done < "$list"

# The manifest: an entry per curated recording, made from its file, in the
# list's order; the entries of other kinds (scenario runs, the calibration)
# are kept as they are.
node scripts/trace-manifest.mjs --list "$list"
AGENT="$agent" node scripts/trace-keys.mjs
