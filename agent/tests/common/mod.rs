//! Helpers shared by the agent's integration tests: running the binary
//! ([`agent`], [`Run`]) and honest skips.
//!
//! A test that cannot run here (it needs root, a newer kernel, a tool) must
//! not pass silently. Where the reason is known at compile time (not Linux)
//! the test is `#[ignore = "reason"]` and cargo counts it as ignored. Where
//! it is known only at run time, [`skip`] says `SKIPPED: reason` on the
//! process's own standard error (past the test harness's capture, so it is
//! seen in every run), and with `REUSEPORT_REQUIRE_ROOT=1` in the
//! environment (the test suite sets it when it runs as root) the skip is a
//! failure instead.

#![allow(dead_code)]

use std::cell::OnceCell;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::time::Duration;

/// The agent's binary, as cargo built it for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");

/// What one run of the binary gave.
pub struct Run {
    /// The exit status (a run ended by a signal fails the test).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    lines: OnceCell<Vec<serde_json::Value>>,
    json: OnceCell<serde_json::Value>,
}

impl Run {
    /// Standard output as JSON Lines, one value a line (a line that is not
    /// JSON fails the test).
    pub fn lines(&self) -> &[serde_json::Value] {
        self.lines.get_or_init(|| {
            self.stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
                .collect()
        })
    }

    /// Standard output as one JSON value; `null` when it is empty.
    pub fn json(&self) -> &serde_json::Value {
        self.json.get_or_init(|| {
            if self.stdout.trim().is_empty() {
                return serde_json::Value::Null;
            }
            serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
                panic!("{e}: stdout {:?}, stderr {:?}", self.stdout, self.stderr)
            })
        })
    }
}

/// Runs `reuseport-agent ARGS` with `stdin` as its standard input, killed
/// after `timeout` (the test then fails).
pub fn agent(args: &[&str], stdin: &str, timeout: Duration) -> Run {
    let out = assert_cmd::Command::new(BIN)
        .args(args)
        .write_stdin(stdin)
        .timeout(timeout)
        .output()
        .unwrap();
    Run {
        code: out
            .status
            .code()
            .unwrap_or_else(|| panic!("{args:?} ended by a signal: {}", out.status)),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        lines: OnceCell::new(),
        json: OnceCell::new(),
    }
}

/// The variable that turns a skip into a failure.
pub const REQUIRE: &str = "REUSEPORT_REQUIRE_ROOT";

/// Whether skips must fail (`REUSEPORT_REQUIRE_ROOT=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE).is_ok_and(|v| v == "1")
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no memory effects.
    unsafe { libc::geteuid() == 0 }
}

/// Reports that `test` cannot run here and why: a failure under
/// `REUSEPORT_REQUIRE_ROOT=1`, otherwise a `SKIPPED` line written straight
/// to file descriptor 2. The caller returns after it.
#[track_caller]
pub fn skip(test: &str, reason: &str) {
    if required() {
        panic!("{test}: required to run ({REQUIRE}=1), but it cannot: {reason}");
    }
    // SAFETY: descriptor 2 is the process's standard error; ManuallyDrop
    // keeps it open after the write.
    let mut err = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(2) });
    let _ = writeln!(err, "SKIPPED: {test}: {reason}");
}

/// Reports that `test` cannot check its claim on this machine for a reason
/// that is a fact of the machine, not a missing privilege (an older kernel,
/// CPU numbering): a `SKIPPED` line on file descriptor 2, never a failure.
pub fn skip_fact(test: &str, reason: &str) {
    // SAFETY: as in `skip`.
    let mut err = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(2) });
    let _ = writeln!(err, "SKIPPED: {test}: {reason}");
}
