#!/usr/bin/env bash
# Writes the TypeScript declarations of the model's Rust record types into
# src/model/generated/ (gitignored): the site's types are never kept by hand.
set -euo pipefail
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="$PWD/src/model/generated"
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
TS_EXPORT_DIR="$out.tmp" cargo test -p reuseport-model --features ts --test ts_export --quiet >/dev/null
rm -rf "$out" && mv "$out.tmp" "$out"
echo "gen-types: wrote $(ls "$out" | wc -l) declarations to src/model/generated" >&2
