//! The `net.ipv4.tcp_migrate_req` sysctl held at one value for a run and
//! written back on every way out: `record --tcp-migrate-req` and the
//! scenario variants both hold it through [`MigrateReq::claim`]. The
//! sysctl arrived in Linux 5.14 (net/ipv4/sysctl_net_ipv4.c) and is per
//! network namespace.
//!
//! SIGKILL is the one way out that runs no code, so a run that changes the
//! sysctl in a namespace it did not make first writes a state file
//! ([`MIGRATE_REQ_STATE`]) with the value to restore, its process id and
//! its network namespace (the inode of `/proc/thread-self/ns/net`), holds
//! a lock (flock(2)) on it while it runs, and removes it once that value
//! is back. The lock is the liveness test: the kernel drops it however the
//! process ends, whatever the binary is called. The next run of either
//! command (a plain `record` too, [`restore_left`]) that takes the lock of
//! a file left in its own namespace restores that value instead of the
//! one the killed run left, and says so on standard error; a file of
//! another namespace is named and left alone; a file whose lock a live
//! run holds refuses a run that would change the sysctl.

#![cfg(target_os = "linux")]

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where `net.ipv4.tcp_migrate_req` lives (per network namespace).
pub const MIGRATE_REQ: &str = "/proc/sys/net/ipv4/tcp_migrate_req";

/// The state file of a host-namespace run that changes
/// `net.ipv4.tcp_migrate_req`: `previous=V` (the value to restore) and
/// `pid=P` lines, written before the sysctl is set and removed once it is
/// restored. `REUSEPORT_AGENT_STATE` names another file (for tests).
pub const MIGRATE_REQ_STATE: &str = "/run/reuseport-agent-tcp_migrate_req";

/// The state file this run uses.
pub fn state_path() -> PathBuf {
    std::env::var_os("REUSEPORT_AGENT_STATE")
        .map(Into::into)
        .unwrap_or_else(|| MIGRATE_REQ_STATE.into())
}

/// The network namespace of the calling thread, as the inode of
/// `/proc/thread-self/ns/net` (the number in `net:[N]`). The sysctl is per
/// namespace, so a state file names the one whose value it keeps.
pub fn netns() -> io::Result<u64> {
    Ok(std::fs::metadata("/proc/thread-self/ns/net")?.ino())
}

/// What a state file says: `previous=V`, `pid=P` and `netns=N` lines.
#[derive(Debug, PartialEq, Eq)]
struct State {
    /// The value to restore.
    previous: String,
    /// The run that wrote it (for messages: liveness is the file's lock).
    pid: i32,
    /// The network namespace whose sysctl it is; `None` in a file written
    /// before the namespace was recorded.
    netns: Option<u64>,
}

fn read_state(text: &str) -> Option<State> {
    let mut previous = None;
    let mut pid = None;
    let mut netns = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("previous", v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                previous = Some(v.to_string())
            }
            Some(("pid", p)) => pid = p.parse().ok(),
            Some(("netns", n)) => netns = n.parse().ok(),
            _ => {}
        }
    }
    Some(State {
        previous: previous?,
        pid: pid?,
        netns,
    })
}

/// The state file opened (created when `create`) with its lock taken:
/// `Ok(None)` when there is none, `Held` when a live run holds the lock.
/// The lock (flock(2)) goes with the process however it ends, SIGKILL
/// included, so a file whose lock can be taken was left by a dead run,
/// whatever its binary is called.
fn lock(path: &Path, create: bool) -> Result<Option<File>, HoldError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let state_error = |source| HoldError::State {
        path: path.to_path_buf(),
        source,
    };
    loop {
        let f = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .mode(0o600)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if !create && e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(state_error(e)),
        };
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(state_error(e));
            }
            let pid = std::fs::read_to_string(path)
                .ok()
                .as_deref()
                .and_then(read_state)
                .map_or(0, |s| s.pid);
            return Err(HoldError::Held {
                pid,
                state: path.to_path_buf(),
            });
        }
        // The run that held it may have removed the file between the open
        // and the lock: then this lock is on a file no one else will open.
        match std::fs::metadata(path) {
            Ok(m) if m.ino() == f.metadata().map_err(state_error)?.ino() => return Ok(Some(f)),
            _ => continue,
        }
    }
}

/// Empties and removes a locked state file; its lock goes when `f` drops.
fn remove_locked(path: &Path, f: &File) {
    let _ = f.set_len(0);
    let _ = std::fs::remove_file(path);
}

/// What a locked state file says, read from the start.
fn read_locked(mut f: &File) -> String {
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    text
}

/// What a dead run's state file means here, in this namespace.
enum Left {
    /// Nothing (no file, or an empty one).
    Nothing,
    /// A value to restore, left by a killed run in this namespace.
    Restore(State),
    /// A file this run must not act on (said on standard error).
    Ignored,
}

fn judge(text: &str, here: u64, current: &str, who: &str, path: &Path) -> Left {
    if text.is_empty() {
        return Left::Nothing;
    }
    match read_state(text) {
        Some(s) if s.netns == Some(here) => {
            crate::note!(
                "{who}: an earlier run of this agent (pid {}) changed net.ipv4.tcp_migrate_req and ended without restoring it (it was killed); it is {current} now, and {}, its value before that run, is what this run restores",
                s.pid,
                s.previous
            );
            Left::Restore(s)
        }
        Some(s) => {
            let there = s
                .netns
                .map_or("an unrecorded one".to_string(), |n| format!("net:[{n}]"));
            crate::note!(
                "{who}: {} was left by a killed run (pid {}) in another network namespace ({there}; this is net:[{here}]); its value {} is not restored here. If that namespace still exists, restore it there with `sysctl -w net.ipv4.tcp_migrate_req={}`",
                path.display(),
                s.pid,
                s.previous,
                s.previous
            );
            Left::Ignored
        }
        None => {
            crate::note!(
                "{who}: {} is not a state file this agent wrote; ignored (the value to restore is the current {current})",
                path.display()
            );
            Left::Ignored
        }
    }
}

/// For a run that does not change the sysctl (a plain `record`): puts back
/// the value a killed run's state file in this namespace keeps, and
/// removes the file; says on standard error what it did, or the command
/// that does it when writing the sysctl fails (it needs root). A file held
/// by a live run, or of another namespace, is left alone.
pub fn restore_left(who: &'static str) {
    let path = state_path();
    let Ok(Some(f)) = lock(&path, false) else {
        return;
    };
    let (Ok(here), Ok(current)) = (netns(), current()) else {
        return;
    };
    if let Left::Restore(s) = judge(&read_locked(&f), here, &current, who, &path) {
        match std::fs::write(MIGRATE_REQ, format!("{}\n", s.previous)) {
            Ok(()) => remove_locked(&path, &f),
            Err(e) => crate::note!(
                "{who}: could not restore {MIGRATE_REQ} to {}: {e}; restore it with `sysctl -w net.ipv4.tcp_migrate_req={}` (as root), or run this command as root",
                s.previous,
                s.previous
            ),
        }
    }
}

/// Why [`MigrateReq::claim`] did not hold the sysctl; each caller words it
/// with its own hint.
#[derive(Debug)]
pub enum HoldError {
    /// Another live run of this agent has changed the sysctl and will
    /// restore it.
    Held {
        /// That run.
        pid: i32,
        /// Its state file.
        state: PathBuf,
    },
    /// The state file could not be written (it needs root).
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The sysctl could not be written (it needs root).
    Write(io::Error),
}

/// The sysctl's value now, without its newline.
pub fn current() -> io::Result<String> {
    Ok(std::fs::read_to_string(MIGRATE_REQ)?.trim().to_string())
}

/// What holding the sysctl at `want` does, given its value `current` and
/// the value `previous` to leave behind.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    /// Write `want` now; not when the sysctl already holds it (that would
    /// need root for nothing).
    write: bool,
    /// Write `previous` back at the end: it differs from `want`.
    restore: bool,
    /// Write `previous` back when writing `want` failed (the sysctl still
    /// holds `current`): it differs from `current`.
    restore_after_failed_write: bool,
}

fn plan(current: &str, previous: &str, want: &str) -> Plan {
    Plan {
        write: current != want,
        restore: previous != want,
        restore_after_failed_write: previous != current,
    }
}

/// `net.ipv4.tcp_migrate_req` set to one value while this lives; the
/// previous value is written back on drop, which runs on success, on
/// errors, on every terminating signal (the handler only sets a flag) and
/// on panics.
#[derive(Debug)]
pub struct MigrateReq {
    /// The value written back.
    previous: String,
    /// Whether the value differs from the one set, so drop writes it.
    restore: bool,
    /// A file that records `previous` for the next run should this one be
    /// killed (only the caller reads it); removed once `previous` is back.
    state: Option<(PathBuf, File)>,
    /// Who speaks in the note when writing back fails (`record`, `scenario`).
    who: &'static str,
}

impl MigrateReq {
    /// Sets the sysctl to `want` for this run (it reads `current` now) and
    /// writes back on drop the value from before: `current`, or, in a
    /// namespace the run did not make (`host`), the value a state file left
    /// by a killed run in this same namespace gives. There, a run that
    /// changes the sysctl or sets it to 1 keeps the state file, locked,
    /// while it holds it, and a live run's lock refuses this one. (A
    /// private namespace the run made dies with it, and its sysctl with
    /// it: no state file.) `who` (`record`, `scenario`) speaks in the
    /// notes on standard error.
    pub fn claim(
        current: &str,
        want: bool,
        host: bool,
        who: &'static str,
    ) -> Result<MigrateReq, HoldError> {
        let value = if want { "1" } else { "0" };
        let mut previous = current.to_string();
        let mut locked = None;
        if host {
            let path = state_path();
            let here = netns().map_err(|source| HoldError::State {
                path: "/proc/thread-self/ns/net".into(),
                source,
            })?;
            // A file this run cannot open (another user's) is one it cannot
            // act on; should it need the file, making it fails below.
            let found = match lock(&path, false) {
                Err(HoldError::State { source, .. })
                    if source.kind() == io::ErrorKind::PermissionDenied =>
                {
                    None
                }
                found => found?,
            };
            let left = found.as_ref().map_or(Left::Nothing, |f| {
                judge(&read_locked(f), here, current, who, &path)
            });
            // This run may remove the file: it is empty, or consumed here.
            let ours = !matches!(left, Left::Ignored);
            match left {
                Left::Restore(s) => previous = s.previous,
                Left::Nothing if want && current == "1" => crate::note!(
                    "{who}: net.ipv4.tcp_migrate_req is already 1, the value this run sets, and no run of this agent left it so; it stays 1 afterwards. If it should be 0, restore it with `sysctl -w net.ipv4.tcp_migrate_req=0`"
                ),
                _ => {}
            }
            locked = Some((path, found, here, ours));
        }
        let p = plan(current, &previous, value);
        let state = match locked {
            Some((path, found, here, _)) if want || p.write || p.restore => {
                let f = match found {
                    Some(f) => f,
                    None => lock(&path, true)?.expect("made"),
                };
                let text = format!(
                    "previous={previous}\npid={}\nnetns={here}\n",
                    std::process::id()
                );
                f.set_len(0)
                    .and_then(|()| f.write_all_at(text.as_bytes(), 0))
                    .and_then(|()| f.sync_all())
                    .map_err(|source| HoldError::State {
                        path: path.clone(),
                        source,
                    })?;
                Some((path, f))
            }
            Some((path, Some(f), _, true)) => {
                // Nothing to change or put back: the dead run's value is
                // already there, and its file has done its work.
                remove_locked(&path, &f);
                None
            }
            _ => None,
        };
        MigrateReq::hold(current, previous, want, state, who).map_err(HoldError::Write)
    }

    /// Sets the sysctl to `want` (it reads `current` now), to be written
    /// back to `previous` on drop. `state`, if any, is already written and
    /// is removed once `previous` is back. The error is the write's:
    /// setting a sysctl needs root.
    fn hold(
        current: &str,
        previous: String,
        want: bool,
        state: Option<(PathBuf, File)>,
        who: &'static str,
    ) -> io::Result<MigrateReq> {
        let want = if want { "1" } else { "0" };
        let plan = plan(current, &previous, want);
        // Made before the write, so that its drop also follows a failed one.
        let mut guard = MigrateReq {
            previous,
            restore: plan.restore,
            state,
            who,
        };
        if plan.write {
            if let Err(e) = std::fs::write(MIGRATE_REQ, format!("{want}\n")) {
                guard.restore = plan.restore_after_failed_write;
                return Err(e);
            }
        }
        Ok(guard)
    }

    /// The value written back on drop: the one before the run.
    pub fn previous(&self) -> &str {
        &self.previous
    }
}

impl Drop for MigrateReq {
    fn drop(&mut self) {
        if self.restore {
            if let Err(e) = std::fs::write(MIGRATE_REQ, format!("{}\n", self.previous)) {
                crate::note!(
                    "{}: could not restore {MIGRATE_REQ} to {}: {e}; restore it with `sysctl -w net.ipv4.tcp_migrate_req={}`",
                    self.who,
                    self.previous,
                    self.previous
                );
                return;
            }
        }
        if let Some((path, f)) = &self.state {
            remove_locked(path, f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{plan, read_state, Plan, State};

    #[test]
    fn a_state_file_needs_both_lines_and_a_numeric_value() {
        assert_eq!(
            read_state("previous=0\npid=42\n"),
            Some(State {
                previous: "0".to_string(),
                pid: 42,
                netns: None
            })
        );
        assert_eq!(
            read_state("previous=1\npid=42\nnetns=4026531840\n").and_then(|s| s.netns),
            Some(4026531840)
        );
        assert_eq!(read_state("pid=42\n"), None);
        assert_eq!(read_state("previous=0\n"), None);
        assert_eq!(read_state("previous=; rm -rf /\npid=1\n"), None);
    }

    /// A sysctl already at the wanted value is not written, so a run that
    /// changes nothing needs no root (the scenario variants without
    /// migration ask for 0, the default), and nothing is written back.
    #[test]
    fn a_sysctl_already_as_wanted_is_not_written() {
        for v in ["0", "1"] {
            assert_eq!(
                plan(v, v, v),
                Plan {
                    write: false,
                    restore: false,
                    restore_after_failed_write: false
                },
                "{v}"
            );
        }
    }

    /// A changed sysctl is written and then put back; a failed write
    /// changed nothing, so nothing is put back after it.
    #[test]
    fn the_value_before_the_run_is_written_back_when_the_run_changed_it() {
        for (current, want) in [("0", "1"), ("1", "0")] {
            assert_eq!(
                plan(current, current, want),
                Plan {
                    write: true,
                    restore: true,
                    restore_after_failed_write: false
                },
                "{current} -> {want}"
            );
        }
    }

    /// The value from before a killed run (its state file) is put back
    /// even when the sysctl already reads as wanted: that run left it so.
    #[test]
    fn a_killed_runs_value_is_written_back_even_when_nothing_is_written_now() {
        assert_eq!(
            plan("1", "0", "1"),
            Plan {
                write: false,
                restore: true,
                restore_after_failed_write: true
            }
        );
    }
}
