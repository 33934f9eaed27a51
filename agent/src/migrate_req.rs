//! The `net.ipv4.tcp_migrate_req` sysctl held at one value for a run and
//! written back on every way out: `record --tcp-migrate-req` and the
//! scenario variants both hold it through [`MigrateReq::claim`]. The
//! sysctl arrived in Linux 5.14 (net/ipv4/sysctl_net_ipv4.c) and is per
//! network namespace.
//!
//! SIGKILL is the one way out that runs no code, so in the host namespace a
//! run that changes the sysctl first writes a state file
//! ([`MIGRATE_REQ_STATE`]) with the value to restore and its process id,
//! and removes it once that value is back. The next run of either command
//! that finds the file left by a dead run restores that value instead of
//! the one the killed run left, and says so on standard error; one that
//! finds it held by a live run refuses to start.

#![cfg(target_os = "linux")]

use std::io;
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

/// What a state file says: `previous=V` and `pid=P` lines.
fn read_state(text: &str) -> Option<(String, i32)> {
    let mut previous = None;
    let mut pid = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("previous", v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
                previous = Some(v.to_string())
            }
            Some(("pid", p)) => pid = p.parse().ok(),
            _ => {}
        }
    }
    Some((previous?, pid?))
}

/// Whether process `pid` is a live `reuseport-agent`.
fn agent_alive(pid: i32) -> bool {
    if pid <= 0 || pid == std::process::id() as i32 {
        return false;
    }
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.windows(15).any(|w| w == b"reuseport-agent"))
}

fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
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
    state: Option<PathBuf>,
    /// Who speaks in the note when writing back fails (`record`, `scenario`).
    who: &'static str,
}

impl MigrateReq {
    /// Sets the sysctl to `want` for this run (it reads `current` now) and
    /// writes back on drop the value from before: `current`, or in the
    /// host namespace (`host`) the value a state file left by a killed run
    /// gives. There, a run that changes the sysctl or sets it to 1 keeps a
    /// state file while it holds it, and a live run's state file refuses
    /// this one. (A private namespace dies with the run, and its sysctl
    /// with it: no state file.) `who` (`record`, `scenario`) speaks in the
    /// notes on standard error.
    pub fn claim(
        current: &str,
        want: bool,
        host: bool,
        who: &'static str,
    ) -> Result<MigrateReq, HoldError> {
        let mut previous = current.to_string();
        // A state file of a dead run of this agent, consumed here.
        let mut stale = false;
        let state = host.then(state_path);
        if let Some(path) = &state {
            match std::fs::read_to_string(path).ok().as_deref().map(read_state) {
                Some(Some((_, pid))) if agent_alive(pid) => {
                    return Err(HoldError::Held {
                        pid,
                        state: path.clone(),
                    })
                }
                Some(Some((before, pid))) => {
                    crate::note!(
                        "{who}: an earlier run of this agent (pid {pid}) changed net.ipv4.tcp_migrate_req and ended without restoring it (it was killed); it is {current} now, and {before}, its value before that run, is what this run restores"
                    );
                    previous = before;
                    stale = true;
                }
                Some(None) => crate::note!(
                    "{who}: {} is not a state file this agent wrote; ignored (the value to restore is the current {current})",
                    path.display()
                ),
                None => {
                    if want && current == "1" {
                        crate::note!(
                            "{who}: net.ipv4.tcp_migrate_req is already 1, the value this run sets, and no run of this agent left it so; it stays 1 afterwards. If it should be 0, restore it with `sysctl -w net.ipv4.tcp_migrate_req=0`"
                        );
                    }
                }
            }
        }
        let value = if want { "1" } else { "0" };
        let p = plan(current, &previous, value);
        let state = match state {
            Some(path) if want || p.write || p.restore => {
                write_atomically(
                    &path,
                    &format!("previous={previous}\npid={}\n", std::process::id()),
                )
                .map_err(|source| HoldError::State {
                    path: path.clone(),
                    source,
                })?;
                Some(path)
            }
            Some(path) => {
                // Nothing to change or put back: the dead run's value is
                // already there, and its file has done its work.
                if stale {
                    let _ = std::fs::remove_file(&path);
                }
                None
            }
            None => None,
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
        state: Option<PathBuf>,
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
        if let Some(path) = &self.state {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{plan, read_state, Plan};

    #[test]
    fn a_state_file_needs_both_lines_and_a_numeric_value() {
        assert_eq!(
            read_state("previous=0\npid=42\n"),
            Some(("0".to_string(), 42))
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
