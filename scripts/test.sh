#!/usr/bin/env bash
# Sets everything up and runs every test; stops at the first failing stage and names it.
# Ends with a table of every stage's time (also after a failure).
#   --quick   the inner loop (npm run test:quick): rustfmt, Biome, line width, import cycles, clippy, the wasm package
#             (when its inputs changed), the model's tests, typecheck and Vitest; no agent, site or
#             browser builds. Vitest's comparisons with the agent run only if a release agent has been
#             built since its sources last changed (they say they were skipped otherwise).
set -euo pipefail
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) printf 'usage: bash scripts/test.sh [--quick]\n' >&2; exit 2 ;;
esac
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

# Each suite's output, for the ran/skipped summary at the end (scripts/test-summary.mjs), and each
# stage's seconds and name (stages.tsv), for the table at the end.
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/reuseport-test.XXXXXX")
: >"$LOGS/stages.tsv"

stage_table() {
  local secs name
  printf '\n==> test: stage times (s; "beside" ran on the core the stages next to it left idle)\n' >&2
  while IFS=$'\t' read -r secs name; do printf '  %6s  %s\n' "$secs" "$name" >&2; done <"$LOGS/stages.tsv"
  printf '  %6s  %s\n' "$SECONDS" "in all" >&2
}
# Stops the run at a failed stage: what ran, the stage times, the stage's name.
failed() {
  node scripts/test-summary.mjs "$LOGS" >&2 || true
  stage_table
  printf '\n==> test: FAILED at stage "%s"\n' "$1" >&2
  exit 1
}
# stage NAME COMMAND...: runs one stage; in a background chain (BESIDE set) a failure ends the chain
# and bg_wait reports it.
stage() {
  local name=$1; shift
  local t0=$SECONDS
  printf '\n==> test: %s%s\n' "$name" "${BESIDE:+ (beside)}" >&2
  if ! "$@"; then
    printf '%s\t%s\n' "$((SECONDS - t0))" "$name${BESIDE:+ (beside)} (FAILED)" >>"$LOGS/stages.tsv"
    printf '==> test: %s FAILED (command: %s)\n' "$name" "$*" >&2
    [[ -n ${BESIDE:-} ]] && exit 1
    failed "$name"
  fi
  printf '%s\t%s\n' "$((SECONDS - t0))" "$name${BESIDE:+ (beside)}" >>"$LOGS/stages.tsv"
  printf '==> test: %s ok (%ss)\n' "$name" "$((SECONDS - t0))" >&2
}

# bg_start NAME FUNCTION [FUNCTION...]: runs the stages the first FUNCTION runs (it may call the others)
# beside the next ones; its output is kept, and shown when bg_wait collects it, which also fails the
# run if one of its stages failed.
BG_PID=0
BG_NAME=""
bg_start() {
  BG_NAME=$1
  printf '\n==> test: %s: started, beside the next stages\n' "$BG_NAME" >&2
  # Its own process group (setsid), so that a failure elsewhere stops the builds it started too.
  BESIDE=1 setsid bash -c "$(declare -f stage "${@:2}"); $(declare -p LOGS static); set -euo pipefail; $2" >"$LOGS/beside.log" 2>&1 &
  BG_PID=$!
}
bg_wait() {
  local rc=0
  (( BG_PID != 0 )) || return 0
  wait "$BG_PID" || rc=$?
  BG_PID=0
  printf '\n==> test: %s: its output\n' "$BG_NAME" >&2
  cat "$LOGS/beside.log" >&2
  (( rc == 0 )) || failed "$BG_NAME"
}
trap '(( BG_PID == 0 )) || kill -- "-$BG_PID" 2>/dev/null; rm -rf "$LOGS"' EXIT

stage setup bash scripts/setup.sh
# Format and lint first, so a format error fails in seconds (configurations:
# biome.json, Cargo's defaults for rustfmt and clippy).
stage "rustfmt (cargo fmt --check)" cargo fmt --all --check
stage "biome (format and lint: src, site, scripts, tests, configs)" biome check --error-on-warnings
stage "line width (strings the formatter cannot break)" node scripts/check-line-width.mjs
stage "import cycles and layers in src/ (dependency-cruiser, .dependency-cruiser.cjs)" depcruise --validate --output-type err src
# Not --quiet: the per-test lines carry the reasons of ignored tests; the passes are not shown.
cargo_test() {
  cargo test "$@" 2>&1 | tee "$LOGS/cargo.log" | grep -vE '^test .* \.\.\. ok$|^running [0-9]+ tests?$|^$'
}
# As root, a test that would skip for want of root fails instead (agent/tests/common).
[[ $EUID -eq 0 ]] && export REUSEPORT_REQUIRE_ROOT=1

if (( quick )); then
  stage "clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
  stage build-wasm bash scripts/build-wasm.sh
  stage "the model's tests (cargo test -p reuseport-model)" cargo_test -p reuseport-model
  stage typecheck tsc --noEmit -p tsconfig.json
  stage "unit tests (vitest)" vitest run --reporter=default --reporter=json --outputFile.json="$LOGS/vitest.json"
  node scripts/test-summary.mjs "$LOGS" >&2
  stage_table
  printf '\n==> test: quick stages passed (%ss); npm test runs everything\n' "$SECONDS" >&2
  exit 0
fi

# Two lanes, so that both cores stay busy (measured: every browser test and build is CPU-bound, while
# cargo test and the verify stages leave a core idle, waiting on the kernel and on servers):
#   beside: the wasm package, the site built twice with its link checks, the test agent; then
#           typecheck, Vitest and Playwright, beside cargo test and the verify stages;
#   here:   clippy, rustdoc, the test build and cargo test (none of which needs the other lane); then,
#           once the other lane has built the agent, the verify stages on this kernel and in the QEMU guest.
# cargo locks each profile's directory on its own, so the lanes' builds never wait on each other. The
# wasm build's TypeScript declarations (scripts/gen-types.sh) build in a profile of their own
# (`types`), not in target/debug, whose lock the debug lane holds.
#
# The one build of the agent that Vitest, the browser tests, the verify stages and the guest run: static
# (x86_64-unknown-linux-musl), in the `test-agent` profile (Cargo.toml). tests/agent.ts reads
# REUSEPORT_AGENT; Playwright's global setup builds nothing then. Elsewhere than x86_64 Linux it is the
# host's own target, in the same profile.
TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
static=0
[[ $(uname -s) == Linux && $(uname -m) == x86_64 ]] && static=1
if (( static )); then
  AGENT="$TARGET_DIR/x86_64-unknown-linux-musl/test-agent/reuseport-agent"
else
  AGENT="$TARGET_DIR/test-agent/reuseport-agent"
fi
site_builds() {
  stage "site build (astro, pagefind)" astro build --silent
  stage "link check over the built site" node scripts/check-links.mjs dist
  # The same site under a sub-path, as a host serving it at /reuseport-lab/ would.
  rm -rf dist-base
  stage "site build under /reuseport-lab/" env BASE_PATH=/reuseport-lab/ astro build --silent --outDir dist-base/reuseport-lab
  stage "link check under /reuseport-lab/" node scripts/check-links.mjs dist-base /reuseport-lab/
}
builds() {
  stage build-wasm bash scripts/build-wasm.sh
  site_builds
  if (( static )); then
    stage "agent build (static, x86_64-unknown-linux-musl, test-agent profile: this host's and the guest's)" \
      bash scripts/kernels/guest-agent.sh --profile test-agent
  else
    stage "agent build (test-agent profile)" cargo build --profile test-agent -q -p reuseport-agent
  fi
}
browser_tests() {
  stage typecheck tsc --noEmit -p tsconfig.json
  stage "unit tests (vitest)" vitest run --reporter=default --reporter=json --outputFile.json="$LOGS/vitest.json"
  stage "e2e tests (playwright)" env PLAYWRIGHT_JSON_OUTPUT_NAME="$LOGS/playwright.json" playwright test --reporter=list,json
}
beside_lane() {
  builds
  touch "$LOGS/agent.ready"
  browser_tests
}
# Waits until the other lane has built the agent; a lane that ended without it is collected, and fails the run.
agent_ready() {
  until [[ -e $LOGS/agent.ready ]]; do
    kill -0 "$BG_PID" 2>/dev/null || { bg_wait; [[ -e $LOGS/agent.ready ]] || failed "the agent build"; }
    sleep 1
  done
}
export REUSEPORT_AGENT=$AGENT
bg_start "the builds, typecheck, Vitest and the browser tests" beside_lane builds site_builds browser_tests
stage "clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "rustdoc intra-doc links" env RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" cargo doc --workspace --no-deps --quiet
# reuseport-wasm has no native tests (its code runs in the model's tests, Vitest and the browser tests):
# compiling it natively here built js-sys and wasm-bindgen's macros for 0 tests, a sixth of the
# compile. It is taken back in as soon as it has a test or a doc example.
not_tested=(--exclude reuseport-wasm)
if grep -rqE '#\[(test|cfg\(test\))\]|^\s*//[/!]\s*```' wasm/bindings/src; then not_tested=(); fi
stage "cargo test: build" cargo test --workspace "${not_tested[@]}" --no-run
# The Rust tests need nothing the other lane builds (the agent's tests run the debug binary cargo built).
stage "cargo test" cargo_test --workspace "${not_tested[@]}"

if [[ $(uname -s) == Linux ]]; then
  agent_ready
  stage "verify on the running kernel (record, recover, predict)" "$AGENT" verify --quick
  # The differential test of the lookup and bind rules: 500 random layouts (seed 11) built on
  # this kernel in a private network namespace, every answer compared with the model
  # (agent/src/cmd/verify/differential/, the layout profile of agent/src/cmd/verify/calldraw.rs).
  stage "verify --layouts on the running kernel (bind, listen, lookup)" "$AGENT" verify --layouts 500
  # The same with call logs as programs make them (agent/src/cmd/verify/calldraw.rs): options after bind,
  # binds out of order, shutdown and listen again, closes between binds; every call's answer compared.
  stage "verify --layouts --call-logs on the running kernel (every call, lookup)" "$AGENT" verify --layouts 500 --call-logs
  # Classic BPF programs (agent/src/cmd/verify/programs.rs): 100 random programs attached to a UDP
  # and a TCP group in a private namespace, 24 datagrams and 12 SYNs (with Fast Open payloads) each
  # compared with the model, out-of-range indexes with the namespace's recovered keys, and 100
  # mutated programs the kernel must refuse exactly when the model does.
  stage "verify --programs on the running kernel (classic BPF)" "$AGENT" verify --programs 100
  # The kernel selftests' own classic programs (tests/fixtures/cbpf/): every datagram must agree.
  for f in tests/fixtures/cbpf/*.dd; do
    stage "verify --program $(basename "$f") on the running kernel" "$AGENT" verify --program "$f"
  done
  # The QUIC reload scenario (agent/src/cmd/scenario/quic_reload.rs): a UDP group in a private namespace
  # across a reload, with and without the connection-ID program; every datagram compared with the model.
  stage "scenario quic-reload on the running kernel (every datagram, both variants)" \
    "$AGENT" scenario quic-reload -o "$LOGS/quic-reload.json"
  # The kernel selftests' SK_REUSEPORT program and nginx 1.26's QUIC helper (tests/fixtures/ebpf/),
  # compiled by clang here, loaded with libbpf, attached with SO_ATTACH_REUSEPORT_EBPF: 64 datagrams
  # each compared with the model, those the hash decides with the namespace's recovered key
  # (agent/src/cmd/verify/ebpf.rs). The objects go in the run's temporary directory, removed at exit.
  # Loading an ELF object takes libbpf (the agent's `trace` feature), which the static agent leaves out
  # (it runs in guests): the debug agent that cargo test built for its own tests has it.
  TRACE_AGENT="$TARGET_DIR/debug/reuseport-agent"
  ebpf_dir="$LOGS/ebpf"
  stage "compile the eBPF fixtures (clang)" bash scripts/ebpf-fixtures.sh "$ebpf_dir"
  stage "verify --program test_select_reuseport_kern.o on the running kernel (eBPF)" \
    "$TRACE_AGENT" verify --program "$ebpf_dir/test_select_reuseport_kern.o" --ebpf-kind sk_reuseport
  stage "verify --program ngx_quic_reuseport_helper.o on the running kernel (eBPF)" \
    "$TRACE_AGENT" verify --program "$ebpf_dir/ngx_quic_reuseport_helper.o" --ebpf-kind sk_reuseport
  # The selftests' SELECT_OR_MIGRATE program (agent/src/cmd/verify/migrate.rs): 12 children queued on a
  # listener that shuts down, in five cases (three routes of the program, then tcp_migrate_req 1 and 0);
  # where each lands, accepted or reset, compared with the model, and the program's counters too.
  stage "verify --migrate test_migrate_reuseport.o on the running kernel (eBPF)" \
    "$TRACE_AGENT" verify --migrate "$ebpf_dir/test_migrate_reuseport.o"
  # Another kernel than this one: Debian 6.1 booted under QEMU, recorded inside, checked here
  # (agent/src/cmd/verify/kernels.rs). No QEMU, no download or no boot fails this stage; it never skips.
  # Besides the curated layouts, 50 random layouts and 50 random call logs (seed 11) are built
  # in the guest and every answer and receiving set compared with the model for 6.1.
  stage "verify in Debian 6.1 under QEMU (record in the guest, recover and predict here)" \
    "$AGENT" verify --kernels 6.1 --quick --layouts 50 --guest-agent "$AGENT"
else
  printf '==> test: verify skipped: it records on a Linux kernel\n' >&2
fi
bg_wait

node scripts/test-summary.mjs "$LOGS" >&2
stage_table
printf '\n==> test: all stages passed (%ss)\n' "$SECONDS" >&2
