//! Builds the eBPF object of `observe --trace` (feature `trace`, Linux):
//! writes `vmlinux.h` from the build machine's kernel BTF with bpftool,
//! compiles `src/cmd/observe/trace/trace.bpf.c` with clang for the BPF target
//! and generates its libbpf-rs skeleton in `OUT_DIR`. CO-RE relocates the
//! object's field offsets on the kernel it is loaded into, so the build
//! machine's kernel need not be the one traced.
//!
//! Without BTF, bpftool or clang here the build goes on without the object
//! (a warning says why) and `observe --trace` says it was built without it.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(bpf_object)");
    #[cfg(feature = "trace")]
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        bpf::build();
    }
}

#[cfg(feature = "trace")]
mod bpf {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const SRC: &str = "src/cmd/observe/trace/trace.bpf.c";
    const BTF: &str = "/sys/kernel/btf/vmlinux";

    fn found(names: &[&str]) -> Option<String> {
        names.iter().find_map(|n| {
            Command::new(n)
                .arg("--version")
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|_| n.to_string())
        })
    }

    fn skip(why: &str) {
        println!(
            "cargo::warning=observe --trace is built without its eBPF object: {why} (scripts/setup.sh installs clang and bpftool)"
        );
    }

    pub fn build() {
        println!("cargo::rerun-if-changed={SRC}");
        println!("cargo::rerun-if-changed=build.rs");
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        if !Path::new(BTF).exists() {
            return skip(&format!("{BTF} is missing (a kernel without BTF)"));
        }
        let Some(bpftool) = found(&["bpftool", "/usr/sbin/bpftool"]) else {
            return skip("bpftool not found");
        };
        let Some(clang) = found(&["clang", "clang-14", "clang-15", "clang-16", "clang-19"]) else {
            return skip("clang not found");
        };
        let dump = Command::new(&bpftool)
            .args(["btf", "dump", "file", BTF, "format", "c"])
            .output()
            .expect("bpftool runs");
        if !dump.status.success() {
            return skip(&format!(
                "bpftool btf dump failed: {}",
                String::from_utf8_lossy(&dump.stderr).trim()
            ));
        }
        std::fs::write(out.join("vmlinux.h"), &dump.stdout).expect("OUT_DIR is writable");
        let skel = out.join("trace.skel.rs");
        libbpf_cargo::SkeletonBuilder::new()
            .source(SRC)
            .obj(out.join("trace.bpf.o"))
            .clang(&clang)
            .clang_args([
                std::ffi::OsString::from("-I"),
                out.clone().into_os_string(),
                "-Wall".into(),
                "-O2".into(),
            ])
            .build_and_generate(&skel)
            .unwrap_or_else(|e| panic!("compiling {SRC}: {e:#}"));
        println!("cargo::rustc-cfg=bpf_object");
    }
}
