//! The exit status of every subcommand, in one place: [`Status`] is the
//! list of statuses, [`Ending`] says which one a finished run gets,
//! [`Failure`] which one an error gets, and [`finish`] turns either into
//! the process's [`ExitCode`] (printing the error on stderr).
//!
//! This module is a leaf: it knows no command. Each command says the
//! status of its own outcome and errors beside their definitions (an
//! `impl Ending` next to its `Outcome`, a `refusing!`/`interruptible!`
//! line next to its error type).
//!
//! A write to a closed pipe (`reuseport-agent predict … | head -1`) is
//! success: the reader has all it wanted.

use std::fmt::Display;
use std::process::ExitCode;

/// How a run ended, as the shell sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Everything asked was done: every line answered, every mode or
    /// variant completed, every prediction agreed, exactly one key found.
    Ok = 0,
    /// The run finished, but not everything was: some lines gave error
    /// objects, a prediction disagreed, a run was cut short by its timeout,
    /// no key or several keys fit, `calibrate --check` found a difference.
    Partial = 1,
    /// Nothing was done: the options, the kernel, the group or the input
    /// are impossible, or the system refused (also the status of
    /// command-line usage errors, as clap gives it).
    Refused = 2,
    /// A signal (SIGINT, SIGTERM, SIGHUP, …) stopped the run, which wrote
    /// what it had done so far (128 + SIGINT).
    Interrupted = 130,
}

impl Status {
    /// The status as a process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// The exit statuses, for `--help`.
pub const HELP: &str = "\
Exit status (every subcommand; each one's --help says when it gives which):
  0    everything asked was done (a write to a closed pipe counts as done)
  1    the run finished, but some part did not: a line gave an error object,
       a prediction disagreed, a run was cut short, no single key fits
  2    nothing was done: impossible options or input, or the system refused
       (also command-line usage errors)
  130  a signal (SIGINT, SIGTERM, SIGHUP, ...) stopped the run; what was done
       so far was written";

/// A finished run's exit status.
pub trait Ending {
    /// The status this outcome gives.
    fn status(&self) -> Status;
}

/// An error that stops a command: printed on stderr, status
/// [`Status::Refused`] unless it says otherwise.
pub trait Failure: Display {
    /// Whether this is a write to a closed pipe, which counts as success.
    fn broken_pipe(&self) -> bool;
    /// The status this error gives.
    fn status(&self) -> Status {
        Status::Refused
    }
}

/// The exit code of a command's result; an error other than a closed
/// pipe is written to stderr as `error: …`.
pub fn finish<T: Ending, E: Failure>(result: Result<T, E>) -> ExitCode {
    let status = match result {
        Ok(done) => done.status(),
        Err(e) if e.broken_pipe() => Status::Ok,
        Err(e) => {
            crate::note!("error: {e}");
            e.status()
        }
    };
    ExitCode::from(status.code())
}

/// `Ok` when `all`, else `Partial`.
pub fn all_or_partial(all: bool) -> Status {
    if all {
        Status::Ok
    } else {
        Status::Partial
    }
}

impl Ending for () {
    fn status(&self) -> Status {
        Status::Ok
    }
}

/// [`Failure`] for error types whose `is_broken_pipe` method says whether
/// the error is a closed pipe, and which always refuse.
macro_rules! refusing {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::exit::Failure for $t {
            fn broken_pipe(&self) -> bool {
                self.is_broken_pipe()
            }
        }
    )*};
}
pub(crate) use refusing;

/// [`Failure`] for error types that refuse, but for the one variant that
/// says a signal stopped the run.
macro_rules! interruptible {
    ($t:ty => $stopped:pat) => {
        impl $crate::exit::Failure for $t {
            fn broken_pipe(&self) -> bool {
                self.is_broken_pipe()
            }
            fn status(&self) -> $crate::exit::Status {
                if matches!(self, $stopped) {
                    $crate::exit::Status::Interrupted
                } else {
                    $crate::exit::Status::Refused
                }
            }
        }
    };
}
pub(crate) use interruptible;

refusing!(crate::Error);

impl Failure for std::io::Error {
    fn broken_pipe(&self) -> bool {
        self.kind() == std::io::ErrorKind::BrokenPipe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes are what scripts and the docs rely on; 130 is 128 + SIGINT
    /// as a shell reports a process a Ctrl-C ended.
    #[test]
    fn statuses_are_the_documented_numbers() {
        assert_eq!(Status::Ok.code(), 0);
        assert_eq!(Status::Partial.code(), 1);
        assert_eq!(Status::Refused.code(), 2);
        assert_eq!(Status::Interrupted.code(), 128 + libc::SIGINT as u8);
    }

    /// A closed pipe on stdout is success, any other error refuses.
    #[test]
    fn a_closed_pipe_is_success_and_other_errors_refuse() {
        use std::io::{Error, ErrorKind};
        let pipe: Result<(), Error> = Err(Error::from(ErrorKind::BrokenPipe));
        let other: Result<(), Error> = Err(Error::from(ErrorKind::PermissionDenied));
        assert_eq!(finish(pipe), ExitCode::from(0));
        assert_eq!(finish(other), ExitCode::from(2));
    }
}
