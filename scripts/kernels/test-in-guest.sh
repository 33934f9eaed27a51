#!/usr/bin/env bash
# bash scripts/kernels/test-in-guest.sh TEST [SUITE ...]
# Runs one of the agent's integration tests (agent/tests/TEST.rs) as root inside Debian's
# kernels under QEMU, for the live tests whose answer depends on the kernel's release
# (udp_connect_leaves, say). The test is built statically (x86_64-unknown-linux-musl, without
# the `trace` feature, as scripts/kernels/guest-agent.sh builds the guest agent), packed with
# busybox into an initramfs whose /init runs it, and booted under TCG for at most GUEST_TIMEOUT
# seconds (default 600). SUITE: bullseye (5.10), bookworm (6.1), trixie (6.12); all three
# without one. A suite's newest kernel image is downloaded with apt-get under a throw-away
# configuration and kept in .cache/kernels/test-in-guest/SUITE/. Prints each guest's test
# output; exit status 0 only when every guest booted and its test run passed.
set -euo pipefail
exec </dev/null
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

test=${1:?usage: test-in-guest.sh TEST [SUITE ...] (TEST names agent/tests/TEST.rs)}
shift
[[ -f agent/tests/$test.rs ]] || { echo "test-in-guest: no agent/tests/$test.rs" >&2; exit 2; }
suites=("$@")
[[ ${#suites[@]} -gt 0 ]] || suites=(bullseye bookworm trixie)
for s in "${suites[@]}"; do
  case $s in bullseye | bookworm | trixie) ;;
    *) echo "test-in-guest: $s is not a suite this script boots (bullseye, bookworm, trixie)" >&2; exit 2 ;;
  esac
done
limit=${GUEST_TIMEOUT:-600}
[[ -x /bin/busybox ]] || { echo "test-in-guest: /bin/busybox is missing (busybox-static; scripts/setup.sh installs it)" >&2; exit 2; }
for tool in qemu-system-x86_64 cpio; do
  command -v "$tool" >/dev/null || { echo "test-in-guest: $tool is missing (scripts/setup.sh installs it)" >&2; exit 2; }
done

work=$(mktemp -d)
qemu_pid=
cleanup() {
  if [[ -n $qemu_pid ]]; then kill "$qemu_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "test-in-guest: building $test for x86_64-unknown-linux-musl" >&2
bin=$(nice cargo test --no-run --message-format=json -q --target x86_64-unknown-linux-musl \
  -p reuseport-agent --no-default-features --test "$test" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{for(const l of s.split("\n")){
    try{const m=JSON.parse(l);if(m.executable&&m.target&&m.target.kind.includes("test"))console.log(m.executable)}catch{}}})')
[[ -x $bin ]] || { echo "test-in-guest: the build named no test executable" >&2; exit 1; }

root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,tmp}
cp /bin/busybox "$root/bin/busybox"
cp "$bin" "$root/t"
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
ip link set lo up
echo "@@KERNEL $(cat /proc/sys/kernel/osrelease)"
/t --test-threads=1 --nocapture 2>&1
echo "@@RC $?"
sync
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"

# The suite's newest kernel image: linux-image-amd64's dependency, from the suite and its
# security updates.
vmlinuz() {
  local suite=$1 dir=.cache/kernels/test-in-guest/$1 apt=$work/apt-$1
  if ! compgen -G "$dir/vmlinuz-*" >/dev/null; then
    mkdir -p "$dir" "$apt/lists/partial" "$apt/cache/archives/partial"
    printf 'deb http://deb.debian.org/debian %s main\ndeb http://deb.debian.org/debian-security %s-security main\n' \
      "$suite" "$suite" >"$apt/sources.list"
    local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
    timeout 300 apt-get "${o[@]}" -q update >&2
    local pkg
    pkg=$(apt-cache "${o[@]}" depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
    [[ -n $pkg ]] || { echo "test-in-guest: $suite names no kernel image" >&2; return 1; }
    (cd "$apt" && timeout 300 apt-get "${o[@]}" -q download "$pkg" >&2)
    dpkg-deb --fsys-tarfile "$apt"/*.deb | tar -x -C "$apt" ./boot/
    cp "$apt"/boot/vmlinuz-* "$dir/"
  fi
  compgen -G "$dir/vmlinuz-*" | head -n 1
}

failed=0
for suite in "${suites[@]}"; do
  image=$(vmlinuz "$suite") || { failed=1; continue; }
  echo "test-in-guest: booting $image (TCG, at most $limit s)" >&2
  console=$work/console-$suite.log
  timeout "$limit" qemu-system-x86_64 -accel tcg -m 512 -smp 2 -display none -monitor none \
    -nic none -no-reboot -kernel "$image" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 panic=-1 quiet" -serial "file:$console" >"$work/qemu.log" 2>&1 &
  qemu_pid=$!
  wait "$qemu_pid" || true
  qemu_pid=
  sed -n '/^@@KERNEL/,/^@@RC/p' "$console" | tr -d '\r'
  grep -q '^@@RC 0' "$console" || { echo "test-in-guest: $suite: the test run did not pass" >&2; failed=1; }
done
exit "$failed"
