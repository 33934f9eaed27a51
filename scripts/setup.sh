#!/usr/bin/env bash
# Installs whatever the build and tests need and is missing; quick when all is present.
# Needs beforehand: node (>= 20.19) with npm, and rustup (with cargo). Debian/Ubuntu for apt steps.
# Progress goes to stderr, one "setup: ..." line per action.
set -euo pipefail
# Cargo's rustc probe (`rustc -`) reads this process's stdin: keep it empty,
# so whatever the caller's stdin holds is never compiled as Rust.
exec </dev/null

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export DEBIAN_FRONTEND=noninteractive

log() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

# --- 1. Tools that must exist already ---------------------------------------------------------
have node || die "node not found on PATH; install Node.js >= 20.19 (https://nodejs.org)"
have npm || die "npm not found on PATH; it ships with Node.js"
have rustup || die "rustup not found (looked in PATH and ${CARGO_HOME:-$HOME/.cargo}/bin); install it from https://rustup.rs"
have cargo || die "cargo not found; run 'rustup default stable'"
cargo -V >/dev/null 2>&1 || die "cargo does not run (no default Rust toolchain?); run 'rustup default stable'"

node_version=$(node -p 'process.versions.node')
IFS=. read -r node_major node_minor _ <<<"$node_version"
if (( node_major < 20 || (node_major == 20 && node_minor < 19) )); then
  die "node $node_version is too old; Vite 8 needs >= 20.19"
fi

# --- 2. System packages via apt (collected, one 'apt-get update') ------------------------------
apt_pkgs=()
apt_why=()
if ! have cc; then apt_pkgs+=(gcc libc6-dev); apt_why+=("gcc: C compiler/linker for cargo install"); fi
if [[ ! -x /usr/bin/chromium ]]; then apt_pkgs+=(chromium fonts-liberation); apt_why+=("chromium: system browser for the Playwright e2e tests; npx playwright install cannot download"); fi
# Without a CJK font the Chinese pages render as empty boxes in the browser tests' screenshots.
if [[ ! -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]]; then apt_pkgs+=(fonts-wqy-microhei); apt_why+=("fonts-wqy-microhei: a Chinese font for the browser"); fi
# verify --kernels (agent/src/cmd/verify/kernels.rs): boots Debian's kernels under QEMU with a busybox initramfs.
if ! have qemu-system-x86_64; then apt_pkgs+=(qemu-system-x86); apt_why+=("qemu-system-x86: boots other kernels for verify --kernels"); fi
if [[ ! -x /bin/busybox ]] || ! /bin/busybox --list 2>/dev/null | grep -qx ip || ldd /bin/busybox >/dev/null 2>&1; then apt_pkgs+=(busybox-static); apt_why+=("busybox-static: the shell and tools of the verify --kernels initramfs"); fi
if ! have cpio; then apt_pkgs+=(cpio); apt_why+=("cpio: packs the verify --kernels initramfs"); fi
# observe's tests diagnose a real server (agent/tests/observe.rs); never started as a service (policy-rc.d below).
if [[ ! -x /usr/bin/python3 ]]; then apt_pkgs+=(python3); apt_why+=("python3: the asyncio server the observe tests diagnose"); fi
if [[ ! -x /usr/sbin/haproxy ]]; then apt_pkgs+=(haproxy); apt_why+=("haproxy: the threaded server the observe tests diagnose, run on loopback by the tests"); fi
# observe --trace (agent/build.rs): clang compiles the eBPF object, bpftool writes vmlinux.h from the
# kernel's BTF, and the vendored libbpf (libbpf-sys) links libelf and zlib and is configured with pkg-config.
if ! have clang && ! have clang-14; then apt_pkgs+=(clang); apt_why+=("clang: compiles observe --trace's eBPF program"); fi
if ! have bpftool && [[ ! -x /usr/sbin/bpftool ]]; then apt_pkgs+=(bpftool); apt_why+=("bpftool: writes vmlinux.h from the kernel's BTF for observe --trace"); fi
if [[ ! -e /usr/include/libelf.h ]]; then apt_pkgs+=(libelf-dev); apt_why+=("libelf-dev: libbpf reads ELF objects with it (observe --trace)"); fi
if [[ ! -e /usr/include/zlib.h ]]; then apt_pkgs+=(zlib1g-dev); apt_why+=("zlib1g-dev: libbpf links zlib (observe --trace)"); fi
if ! have pkg-config; then apt_pkgs+=(pkg-config); apt_why+=("pkg-config: finds libelf and zlib for libbpf (observe --trace)"); fi
if ! have make; then apt_pkgs+=(make); apt_why+=("make: builds the vendored libbpf (observe --trace)"); fi
# observe --serve's test scrapes the agent with a real Prometheus, run on loopback by the test.
if [[ ! -x /usr/bin/prometheus ]]; then apt_pkgs+=(prometheus); apt_why+=("prometheus: scrapes observe --serve in its test, run on loopback by the test"); fi
if [[ ! -x /usr/sbin/nginx ]]; then apt_pkgs+=(nginx); apt_why+=("nginx: the real server the observe tests diagnose, run on loopback by the tests"); fi

if (( ${#apt_pkgs[@]} > 0 )); then
  have apt-get || die "missing ${apt_pkgs[*]} and apt-get is not available; install them with your package manager"
  if (( EUID == 0 )); then
    sudo=()
  elif have sudo; then
    sudo=(sudo --preserve-env=DEBIAN_FRONTEND)
  else
    die "need root or sudo to install ${apt_pkgs[*]}"
  fi
  for why in "${apt_why[@]}"; do log "installing ${why%%:*} via apt (${why#*: })"; done
  log "running apt-get update"
  "${sudo[@]}" apt-get update -qq >&2
  # No package may start a system service: a policy-rc.d that refuses (101) for the install,
  # removed after unless one was there before.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null && "${sudo[@]}" chmod 755 "$policy"
    trap '"${sudo[@]}" rm -f "$policy"' EXIT
  fi
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >&2
fi

# --- 3. Node packages (also provide wasm-opt: npm `binaryen`, see scripts/build-wasm.sh) ------------------------------------------------------------------------
stamp=node_modules/.setup-stamp
want_stamp="$(node -p 'process.version') $(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ ! -d node_modules ]]; then
  log "installing npm packages (node_modules missing): npm ci"
  npm ci --no-audit --no-fund >&2
  printf '%s\n' "$want_stamp" >"$stamp"
elif [[ ! -f $stamp || "$(cat "$stamp")" != "$want_stamp" ]]; then
  log "installing npm packages (package-lock.json or node changed since last install): npm ci"
  npm ci --no-audit --no-fund >&2
  printf '%s\n' "$want_stamp" >"$stamp"
fi

# --- 4. Rust wasm target ---------------------------------------------------------------------
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "installing Rust target wasm32-unknown-unknown (to compile the model to WebAssembly)"
  rustup target add wasm32-unknown-unknown >&2
fi

# The static agent that runs inside the verify --kernels guests.
if ! rustup target list --installed | grep -qx x86_64-unknown-linux-musl; then
  log "installing Rust target x86_64-unknown-linux-musl (the static agent inside verify --kernels guests)"
  rustup target add x86_64-unknown-linux-musl >&2
fi

# cargo install, --locked first; fall back to fresh resolution if a locked dependency
# is not (or no longer) available in the registry index.
cargo_install() {
  if ! cargo install --locked "$@" >&2; then
    log "cargo install --locked $* failed; retrying without --locked"
    cargo install "$@" >&2
  fi
}

# --- 5. wasm-pack ------------------------------------------------------------------------------
if ! have wasm-pack; then
  log "installing wasm-pack (builds the wasm package): cargo install wasm-pack --locked"
  cargo_install wasm-pack
fi

# --- 6. wasm-bindgen CLI, exactly the version in Cargo.lock ------------------------------------
# (otherwise wasm-pack tries to download one from GitHub)
wbg_want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[[ -n $wbg_want ]] || die "could not read the wasm-bindgen version from Cargo.lock"
wbg_have=""
if have wasm-bindgen; then wbg_have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}') || true; fi
if [[ $wbg_have != "$wbg_want" ]]; then
  log "installing wasm-bindgen-cli $wbg_want (must match Cargo.lock; found '${wbg_have:-none}')"
  cargo_install wasm-bindgen-cli --version "$wbg_want" --force
fi

exit 0
