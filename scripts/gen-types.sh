#!/usr/bin/env bash
# Writes the TypeScript declarations of the Rust record types (the model's, and the
# records the workers exchange with the wasm layer) into
# src/model/generated/ (gitignored), or into the directory given as the first argument
# (scripts/build-wasm.sh gives a fresh one): the site's types are never kept by hand.
set -euo pipefail
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-$PWD/src/model/generated}"
# Written into a fresh directory and renamed into place, never into the old one, whose
# files may be hard links shared with another checkout.
rm -rf "$out.tmp" "$out.old" && mkdir -p "$out.tmp"
TS_EXPORT_DIR="$out.tmp" cargo test --profile types -p reuseport-model --features ts --test ts_export --quiet >/dev/null
# The records the workers exchange with the wasm layer (the paste session's
# requests and answers, the diagnosis plan, the scenario ranking).
TS_EXPORT_DIR="$out.tmp" cargo test --profile types -p reuseport-wasm --features ts --lib ts_export --quiet >/dev/null
if [[ -e $out ]]; then mv -T "$out" "$out.old"; fi
mv -T "$out.tmp" "$out" && rm -rf "$out.old"
echo "gen-types: wrote $(ls "$out" | wc -l) declarations to $out" >&2
