#!/usr/bin/env bash
# Builds the wasm model package into src/model/pkg (gitignored) with wasm-pack, then the
# TypeScript declarations of the model's record types into src/model/generated (gitignored,
# scripts/gen-types.sh).
# Skipped when no input (wasm/, Cargo.*, .cargo/, these scripts) changed since the last
# successful build started.
# Set FORCE=1 to rebuild anyway.
set -euo pipefail
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# node_modules/.bin first: wasm-pack must pick the npm `binaryen` wasm-opt (a current release),
# not an old system one. Debian bookworm's binaryen 108 miswrites the export of wasm-bindgen's
# externref table (it exports table 0, the funcref table), which breaks init() at runtime.
export PATH="$PWD/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

out=src/model/pkg/reuseport_bg.wasm
# The stamp carries the time the last successful build STARTED, so an edit made while
# a build runs still triggers the next one.
stamp=src/model/pkg/.build-stamp
inputs=(wasm Cargo.toml Cargo.lock .cargo scripts/build-wasm.sh scripts/gen-types.sh)

if [[ ${FORCE:-0} != 1 && -f $out && -f src/model/pkg/reuseport.js && -f src/model/pkg-lookup/reuseport.js && -f $stamp && -d src/model/generated ]] \
  && [[ -z $(find "${inputs[@]}" -newer "$stamp" -print -quit 2>/dev/null) ]]; then
  echo "build-wasm: $out and src/model/generated are up to date" >&2
  exit 0
fi

[[ -x node_modules/.bin/wasm-opt ]] || { echo "build-wasm: node_modules/.bin/wasm-opt missing; run 'npm run setup' first" >&2; exit 1; }
# Everything is written into a fresh directory beside the packages and then renamed into
# place, never into src/model/pkg* themselves: a reader (vite, another build) sees the old
# package or the new one, never a half-written one, and when the packages are hard links
# shared with another checkout (a worktree made with `cp -al`), that checkout's files are
# never written through. Same file system as the packages, so the renames are atomic.
tmp=$(mktemp -d src/model/.build-wasm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The stamp's time is this moment: the build started.
touch "$tmp/build-stamp"
echo "build-wasm: wasm-pack build wasm/bindings --release --target web" >&2
# wasm-pack must not download tools: wasm-bindgen and wasm-opt come from scripts/setup.sh.
wasm-pack --log-level warn build wasm/bindings --release --target web \
  --out-dir "$PWD/$tmp/pkg" --out-name reuseport >&2
# The same crate with the full listener lookup, for the pages that need it.
echo "build-wasm: wasm-pack build wasm/bindings --release --target web --features lookup" >&2
wasm-pack --log-level warn build wasm/bindings --release --target web \
  --out-dir "$PWD/$tmp/pkg-lookup" --out-name reuseport -- --features lookup >&2
bash scripts/gen-types.sh "$PWD/$tmp/generated"
mv "$tmp/build-stamp" "$tmp/pkg/.build-stamp"

# Puts the fresh directory $tmp/NAME at src/model/NAME: the old one is renamed aside,
# the new one renamed in (each rename atomic; between the two a reader finds no
# directory, never a mixed one), and the old one removed.
place() {
  local old=""
  if [[ -e src/model/$1 ]]; then
    old="$tmp/old-$1"
    mv -T "src/model/$1" "$old"
  fi
  mv -T "$tmp/$1" "src/model/$1"
  [[ -z $old ]] || rm -rf "$old"
}
# The stamp is in pkg, placed last: it says the set is complete.
place generated
place pkg-lookup
place pkg
echo "build-wasm: wrote $(du -h "$out" | cut -f1) $out and $(du -h src/model/pkg-lookup/reuseport_bg.wasm | cut -f1) src/model/pkg-lookup/reuseport_bg.wasm" >&2
