#!/usr/bin/env bash
# Sets everything up and runs every test; stops at the first failing stage and names it.
set -euo pipefail
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

stage() {
  local name=$1; shift
  local t0=$SECONDS
  printf '\n==> test: %s\n' "$name" >&2
  if ! "$@"; then
    node scripts/test-summary.mjs "$LOGS" >&2 || true
    printf '\n==> test: FAILED at stage "%s" (command: %s)\n' "$name" "$*" >&2
    exit 1
  fi
  printf '==> test: %s ok (%ss)\n' "$name" "$((SECONDS - t0))" >&2
}

# Each suite's output, for the ran/skipped summary at the end (scripts/test-summary.mjs).
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/reuseport-test.XXXXXX")
trap 'rm -rf "$LOGS"' EXIT

stage setup bash scripts/setup.sh
# Format and lint first, so a format error fails in seconds (configurations:
# biome.json, Cargo's defaults for rustfmt and clippy).
stage "rustfmt (cargo fmt --check)" cargo fmt --all --check
stage "biome (format and lint: src, site, scripts, tests, configs)" biome check --error-on-warnings
stage "line width (strings the formatter cannot break)" node scripts/check-line-width.mjs
stage "clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
stage "rustdoc intra-doc links" env RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" cargo doc --workspace --no-deps --quiet
stage build-wasm bash scripts/build-wasm.sh
# Not --quiet: the per-test lines carry the reasons of ignored tests; the passes are not shown.
cargo_test() {
  cargo test --workspace 2>&1 | tee "$LOGS/cargo.log" | grep -vE '^test .* \.\.\. ok$|^running [0-9]+ tests?$|^$'
}
# As root, a test that would skip for want of root fails instead (agent/tests/common).
[[ $EUID -eq 0 ]] && export REUSEPORT_REQUIRE_ROOT=1
stage "cargo test" cargo_test
if [[ $(uname -s) == Linux ]]; then
  stage "agent release build" cargo build --release -q -p reuseport-agent
  stage "verify on the running kernel (record, recover, predict)" target/release/reuseport-agent verify --quick
  # The differential test of the lookup and bind rules: 500 random layouts (seed 11) built on
  # this kernel in a private network namespace, every answer compared with the model
  # (agent/src/differential/, the layout draw in agent/src/layouts.rs).
  stage "verify --layouts on the running kernel (bind, listen, lookup)" target/release/reuseport-agent verify --layouts 500
  # The same with call logs as programs make them (agent/src/calldraw.rs): options after bind,
  # binds out of order, shutdown and listen again, closes between binds; every call's answer compared.
  stage "verify --layouts --call-logs on the running kernel (every call, lookup)" target/release/reuseport-agent verify --layouts 500 --call-logs
  # Another kernel than this one: Debian 6.1 booted under QEMU, recorded inside, checked here
  # (agent/src/kernels.rs). No QEMU, no download or no boot fails this stage; it never skips.
  stage "static guest agent (x86_64-unknown-linux-musl)" bash scripts/kernels/guest-agent.sh
  # Besides the curated layouts, 50 random layouts and 50 random call logs (seed 11) are built
  # in the guest and every answer and receiving set compared with the model for 6.1.
  stage "verify in Debian 6.1 under QEMU (record in the guest, recover and predict here)" \
    target/release/reuseport-agent verify --kernels 6.1 --quick --layouts 50 \
    --guest-agent "${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/release/reuseport-agent"
else
  printf '==> test: verify skipped: it records on a Linux kernel\n' >&2
fi
stage typecheck tsc --noEmit -p tsconfig.json
stage "unit tests (vitest)" vitest run --reporter=default --reporter=json --outputFile.json="$LOGS/vitest.json"
stage "site build (astro, pagefind)" astro build --silent
stage "link check over the built site" node scripts/check-links.mjs dist
# The same site under a sub-path, as a host serving it at /reuseport-lab/ would.
rm -rf dist-base
stage "site build under /reuseport-lab/" env BASE_PATH=/reuseport-lab/ astro build --silent --outDir dist-base/reuseport-lab
stage "link check under /reuseport-lab/" node scripts/check-links.mjs dist-base /reuseport-lab/
stage "e2e tests (playwright)" env PLAYWRIGHT_JSON_OUTPUT_NAME="$LOGS/playwright.json" playwright test --reporter=list,json

node scripts/test-summary.mjs "$LOGS" >&2
printf '\n==> test: all stages passed (%ss)\n' "$SECONDS" >&2
