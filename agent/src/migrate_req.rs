//! The `net.ipv4.tcp_migrate_req` sysctl held at one value for a run and
//! written back on every way out: `record --tcp-migrate-req` and the
//! scenario variants that ask for it both hold it through [`MigrateReq`].
//! The sysctl arrived in Linux 5.14 (net/ipv4/sysctl_net_ipv4.c) and is
//! per network namespace.

#![cfg(target_os = "linux")]

use std::io;
use std::path::PathBuf;

/// Where `net.ipv4.tcp_migrate_req` lives (per network namespace).
pub const MIGRATE_REQ: &str = "/proc/sys/net/ipv4/tcp_migrate_req";

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
    /// Sets the sysctl to `want` (it reads `current` now), to be written
    /// back to `previous` on drop; `previous` is `current` unless the
    /// caller knows better (a state file left by a killed run). `state`, if
    /// any, is already written and is removed once `previous` is back. The
    /// error is the write's: setting a sysctl needs root.
    pub fn hold(
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
    use super::{plan, Plan};

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
