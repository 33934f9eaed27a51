//! The QEMU lab: Debian's kernels booted with a busybox initramfs and a
//! static agent, the agent run there with argument lists it is given, and
//! each run's output brought back. The lab knows no command: `verify
//! --kernels` (the model against each kernel) and `scenario --kernel` (a
//! curated scenario inside another kernel) each give it the argument lists
//! to run and judge what comes back.
//!
//! 1. **fetch** ([`mod@fetch`]): the suite's `linux-image-amd64` resolved to the
//!    image package (on sid, 7.x: the `linux-binary-*` package it depends
//!    on) with `apt-get` under a throw-away configuration, downloaded with
//!    `apt-get download`, and only the `vmlinuz` kept in the cache
//!    (`.cache/kernels/<suite>/`, reused on the next run);
//! 2. **initramfs** ([`mod@initramfs`]): busybox (static), the statically linked
//!    agent (`x86_64-unknown-linux-musl`) and an `/init` that brings up `lo`
//!    and runs the agent once per program, packed with `cpio`;
//! 3. **boot** ([`mod@boot`]): QEMU (TCG by default: KVM is often unusable in
//!    CI), killed after its timeout; the guest prints its `uname -r` and
//!    each program's output between markers on its second serial port
//!    (`ttyS1`, a file on the host), so kernel messages on the console
//!    (`ttyS0`) never mix with the data;
//! 4. **guest output** ([`guest`]): that port's text, parsed.

use std::fs;
use std::path::{Path, PathBuf};

pub mod boot;
pub mod fetch;
pub mod guest;
mod host;
pub mod initramfs;

pub use boot::boot;
pub use fetch::{fetch, requests, Image, Request, UnknownKernel, MIRROR, SUITES};
pub use guest::{parse_guest_output, BootEnd, GuestOutput, GuestRun, MARK};
pub use host::one_line;
pub use initramfs::{guest_agent, init_script, initramfs, is_static_x86_64_elf};

use host::workspace;

/// What a command tells the lab.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Who is running the lab, the prefix of its progress lines
    /// (`verify --kernels`).
    pub who: String,
    /// Where kernel images are cached (default: `.cache/kernels` in the
    /// source tree, or in the current directory).
    pub cache: Option<PathBuf>,
    /// The static agent run in the guests (default: built with cargo for
    /// `x86_64-unknown-linux-musl` from the source tree).
    pub guest_agent: Option<PathBuf>,
    /// Resolve and download the newest images again, even when cached.
    pub refresh: bool,
    /// The Debian mirror.
    pub mirror: String,
    /// QEMU's accelerator.
    pub accel: Accel,
    /// Seconds one guest may run before QEMU is killed.
    pub boot_timeout: u64,
}

/// One program the guest runs: its name in the output, and the agent's
/// arguments (`/init` adds `--output`).
pub type Program = (String, Vec<String>);

/// QEMU's accelerator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Accel {
    /// Emulation (TCG): slow, works on any host.
    #[default]
    Tcg,
    /// Hardware virtualisation.
    Kvm,
}

impl Accel {
    /// QEMU's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }
}

/// The kernel cache of `opts` (its `cache`, or `.cache/kernels` in the
/// source tree), created and made absolute: cpio runs in another
/// directory, and QEMU is given file paths. Err: the directory and why.
pub fn cache_dir(opts: &LabOptions) -> Result<PathBuf, (String, std::io::Error)> {
    let cache = opts.cache.clone().unwrap_or_else(|| {
        workspace()
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".cache/kernels")
    });
    let io = |source| (cache.display().to_string(), source);
    fs::create_dir_all(&cache).map_err(io)?;
    fs::canonicalize(&cache).map_err(io)
}

/// One run's own directory under `CACHE/runs/`, named `PID-N`, locked
/// (flock on its `.lock`) while the run lives: two runs at once never share
/// a directory (they did, and one of them failed at boot when the other
/// removed its files). Directories of earlier runs whose lock is free are
/// removed when a run starts, as a run used to remove its predecessor's.
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
    /// Held while this lives.
    _lock: fs::File,
}

/// Makes this run's [`RunDir`] under `cache`, removing those of runs that
/// have ended.
pub fn run_dir(cache: &Path) -> Result<RunDir, String> {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let runs = cache.join("runs");
    let flock = |f: &fs::File| {
        // SAFETY: flock on a descriptor the caller owns.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    };
    for e in fs::read_dir(&runs).into_iter().flatten().flatten() {
        let lock = e.path().join(".lock");
        // Only this layout's directories; a free lock is a run that ended.
        if let Ok(f) = fs::File::open(&lock) {
            if flock(&f) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    let name = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let path = runs.join(name);
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lock =
        fs::File::create(path.join(".lock")).map_err(|e| format!("{}: {e}", path.display()))?;
    if !flock(&lock) {
        return Err(format!("{}: cannot lock {}", path.display(), ".lock"));
    }
    Ok(RunDir { path, _lock: lock })
}

#[cfg(test)]
mod run_dir_tests {
    use super::*;

    /// Why: two `verify --kernels` runs at once shared `runs/SUITE/`, and
    /// one removed the other's files ("FAILED at boot: the guest never
    /// reached /init"). Each run has its own directory, locked while it
    /// lives; a later run removes only those of runs that have ended.
    #[test]
    fn runs_at_once_get_their_own_directories_and_only_ended_ones_are_removed() {
        let cache = std::env::temp_dir().join(format!("run-dir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let first = run_dir(&cache).unwrap();
        let second = run_dir(&cache).unwrap();
        assert_ne!(first.path, second.path);
        fs::write(first.path.join("trace.json"), "{}").unwrap();
        let third = run_dir(&cache).unwrap();
        assert!(
            first.path.join("trace.json").exists(),
            "a live run's files stay"
        );
        let ended = first.path.clone();
        drop(first);
        let fourth = run_dir(&cache).unwrap();
        assert!(!ended.exists(), "an ended run's directory goes");
        assert!(second.path.exists() && third.path.exists() && fourth.path.exists());
        drop((second, third, fourth));
        let _ = fs::remove_dir_all(&cache);
    }
}
