//! Shared by the eBPF tests: the fixtures compiled by clang at test time.

use std::path::PathBuf;
use std::process::Command;

/// tests/fixtures/ebpf/.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ebpf")
}

/// Compiles a fixture as the selftests' Makefile does (clang -target bpf
/// -O2 -g, libbpf's headers, and `flags`), or says SKIPPED when clang is
/// missing.
pub fn compile_fixture(src: &str, flags: &[&str]) -> Option<Vec<u8>> {
    let clang = ["clang", "clang-14"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let Some(clang) = clang else {
        eprintln!("SKIPPED: clang is not installed (scripts/setup.sh installs it)");
        return None;
    };
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out =
        std::env::temp_dir().join(format!("reuseport-ebpf-{}-{n}-{src}.o", std::process::id()));
    let st = Command::new(clang)
        .args(["-O2", "-g", "-target", "bpf", "-D__x86_64__"])
        .args([
            "-idirafter",
            "/usr/include/x86_64-linux-gnu",
            "-idirafter",
            "/usr/include",
        ])
        .args(flags)
        .args(["-I/usr/include/bpf", "-I"])
        .arg(fixtures())
        .arg("-c")
        .arg(fixtures().join(src))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("clang runs");
    assert!(
        st.status.success(),
        "clang failed on {src}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let bytes = std::fs::read(&out).expect("the object");
    let _ = std::fs::remove_file(&out);
    Some(bytes)
}
