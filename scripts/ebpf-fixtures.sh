#!/usr/bin/env bash
# Compiles the eBPF programs nobody here wrote (tests/fixtures/ebpf/, README there) into the
# directory given as the first argument, as their own builds do: the kernel selftests' with
# clang -O2 -g -target bpf and libbpf's headers, nginx's QUIC helper with its makefile's flags
# (and the legacy map struct it needs, -include). Tests compile their own; public/examples/ keeps
# the nginx object for the page (README there).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:?usage: ebpf-fixtures.sh OUTDIR}
mkdir -p "$out"
clang=$(command -v clang || command -v clang-14) || { echo "ebpf-fixtures: clang is missing (scripts/setup.sh installs it)" >&2; exit 1; }
fx=tests/fixtures/ebpf
sys=(-D__x86_64__ -idirafter /usr/include/x86_64-linux-gnu -idirafter /usr/include)
"$clang" -O2 -g -target bpf "${sys[@]}" -I/usr/include/bpf -I"$fx" \
  -c "$fx/test_select_reuseport_kern.c" -o "$out/test_select_reuseport_kern.o" 2>/dev/null
"$clang" -O2 -g -target bpf "${sys[@]}" -I/usr/include/bpf \
  -c "$fx/test_migrate_reuseport.c" -o "$out/test_migrate_reuseport.o" 2>/dev/null
"$clang" -O2 -Wall -DPROGNAME='"ngx_quic_reuseport_helper"' -DLICENSE_BSD -DLICENSE='"BSD"' \
  -include "$fx/bpf_map_def.h" -target bpf "${sys[@]}" \
  -c "$fx/ngx_quic_reuseport_helper.c" -o "$out/ngx_quic_reuseport_helper.o"
echo "ebpf-fixtures: wrote $(ls "$out"/*.o | wc -l) objects to $out" >&2
