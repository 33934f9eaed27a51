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
agent=target/release/reuseport-agent
out=public/traces
mkdir -p "$out"
entries=()

# name | what it shows | arguments
traces=(
  "tcp-v4-specific-8|TCP group of 8 on 127.0.0.1: the hash spreads 1000 connections from 64 clients|record --proto tcp --listeners 8 --bind 127.0.0.1 --clients 64 --count 1000 --seed 1"
  "tcp-v4-wildcard-8|TCP group of 8 on 0.0.0.0: from 5.0 the hash sees local address 0|record --proto tcp --listeners 8 --bind 0.0.0.0 --clients 64 --count 1000 --seed 2"
  "udp-v4-specific-8|UDP group of 8 on 127.0.0.1: UDP keeps lport inside the hash|record --proto udp --listeners 8 --bind 127.0.0.1 --clients 64 --count 1000 --seed 3"
  "tcp-v4-closed-1-5|TCP group of 8 with listeners 1 then 5 closed before traffic: the last member moves into each hole|record --proto tcp --listeners 8 --closed 1,5 --clients 64 --count 1000 --seed 4"
  "tcp-v4-130|TCP group of 130: past 128 members socks[] doubles to 256|record --proto tcp --listeners 130 --clients 64 --count 3000 --sample 3 --seed 5"
  "tcp-v4-incoming-cpu|TCP group of 4 with SO_INCOMING_CPU on every listener and the client pinned round-robin: from 6.2 each connection lands on a listener of its CPU|record --proto tcp --listeners 4 --incoming-cpu-all --pin-cpu --clients 32 --count 400 --seed 6"
  "udp-v4-bpf-cpu|UDP group of 64 with a classic BPF program returning the CPU: the program, not the hash, chooses|record --proto udp --listeners 64 --bpf cpu --pin-cpu --clients 32 --count 400 --seed 7"
  "udp-v4-bpf-payload-mod-4|UDP group of 8 with a program returning payload mod 4: datagram k lands on listener k mod 4|record --proto udp --listeners 8 --bpf payload-mod:4 --clients 32 --count 400 --seed 8"
  "tcp-v6-wildcard-netns|TCP group of 8 on [::] in a private network namespace, clients from fd00::/112|record --proto tcp --listeners 8 --bind :: --netns --clients 64 --count 1000 --seed 9"
)

for t in "${traces[@]}"; do
  IFS='|' read -r name shows args <<<"$t"
  echo "record-traces: $name" >&2
  # shellcheck disable=SC2086
  $agent $args --output "$out/$name.json"
  entries+=("$(node -e '
    const [name, shows, args] = process.argv.slice(1);
    const t = JSON.parse(require("fs").readFileSync(`public/traces/${name}.json`, "utf8"));
    console.log(JSON.stringify({ file: `${name}.json`, kind: "trace", shows, command: `reuseport-agent ${args}`, kernel: t.kernel.release, profile: t.kernel.profile, proto: t.group.proto, listeners: t.group.listeners, events: t.counts.events, recorded: t.counts.recorded ?? t.events.length }));
  ' "$name" "$shows" "$args")")
done

# bench FILE SHOWS ARGS...: runs `reuseport-agent ARGS`, writes FILE, adds its manifest entry.
bench() {
  local file=$1 shows=$2; shift 2
  echo "record-traces: $file" >&2
  $agent "$@" > "$out/$file"
  entries+=("$(node -e '
    const [file, shows, args] = process.argv.slice(1);
    console.log(JSON.stringify({ file, kind: "bench", shows, command: `reuseport-agent ${args}`, kernel: require("os").release() }));
  ' "$file" "$shows" "$*")")
}
bench bench-fork-vs-reuseport.json "The seed articles benchmark on this machine: workers sharing one listener after fork() against one SO_REUSEPORT listener each; times and per-worker accepts" \
  bench --workers 4 --clients 4 --connections 5000 --json
bench bench-fork-vs-reuseport-epoll.json "The same benchmark with epoll workers: in fork mode every worker waits in epoll on the one shared listener; per-worker accepts show the skew" \
  bench --workers 4 --clients 4 --connections 5000 --epoll --json

printf '%s\n' "${entries[@]}" | node -e '
  const lines = require("fs").readFileSync(0, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const manifest = { format: "reuseport-lab-trace-manifest", version: 1, machine: { cpus: require("os").cpus().length, kernel: require("os").release() }, traces: lines };
  require("fs").writeFileSync("public/traces/manifest.json", JSON.stringify(manifest, null, 2) + "\n");
'
echo "record-traces: wrote public/traces/manifest.json (${#entries[@]} entries)" >&2
AGENT="$agent" node scripts/trace-keys.mjs
