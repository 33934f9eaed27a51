//! Stopping a run on a signal, the one way every subcommand does it: while
//! a [`Guard`] lives, each of [`STOP_SIGNALS`] sets [`STOP`] instead of
//! ending the process, the run polls [`stopped`], writes what it has done,
//! puts the system back, and exits with status 130
//! ([`crate::exit::Status::Interrupted`]). The handlers are installed
//! without `SA_RESTART`, so a blocking `connect()`, `accept()` or
//! `epoll_wait()` returns `EINTR` and the run sees the flag at once; the
//! previous actions come back when the guard drops.
//!
//! A forked child calls [`reset_in_child`] so that the signals end it the
//! ordinary way.

#![cfg(unix)]

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use libc::c_int;

/// The signals whose default action ends the process and that a run
/// catches to stop cleanly (the partial result written, the system put
/// back): SIGHUP (the terminal closed), SIGINT (Ctrl-C), SIGQUIT, SIGTERM,
/// SIGUSR1, SIGUSR2 and SIGALRM. SIGKILL and SIGSTOP cannot be caught.
pub const STOP_SIGNALS: &[c_int] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Set by the handler when one of [`STOP_SIGNALS`] arrives while a
/// [`Guard`] lives.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a second signal ends the process at once (see
/// [`Second::Ends`]).
static SECOND_ENDS: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: c_int) {
    // Atomics and _exit only: async-signal-safe.
    if STOP.swap(true, Ordering::SeqCst) && SECOND_ENDS.load(Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(crate::exit::Status::Interrupted.code().into()) };
    }
}

/// Whether a stop signal arrived since the [`Guard`] was installed.
pub fn stopped() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// What a second signal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Second {
    /// Nothing more: the run is already stopping, and must still put the
    /// system back (a sysctl, child processes).
    Waits,
    /// Ends the process with status 130 at once: for a run with nothing to
    /// put back, whose stop may take a moment (`recover` finishing its
    /// chunks), so an impatient user is obeyed.
    Ends,
}

/// The stop handlers, for as long as this lives.
#[must_use = "the handlers are removed when the guard drops"]
pub struct Guard {
    old: Vec<(c_int, libc::sigaction)>,
}

impl Guard {
    /// Clears [`STOP`] and installs the handler for each of
    /// [`STOP_SIGNALS`]. On an error the ones installed so far are put
    /// back.
    pub fn install(second: Second) -> io::Result<Guard> {
        STOP.store(false, Ordering::SeqCst);
        SECOND_ENDS.store(second == Second::Ends, Ordering::SeqCst);
        let mut guard = Guard {
            old: Vec::with_capacity(STOP_SIGNALS.len()),
        };
        for &sig in STOP_SIGNALS {
            // SAFETY: a zeroed sigaction is a valid "no flags, empty mask"
            // value; the handler is async-signal-safe.
            let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
            let rc = unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_stop_signal as extern "C" fn(c_int) as usize;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, &mut prev)
            };
            if rc != 0 {
                // `guard` drops here and restores those installed so far.
                return Err(io::Error::last_os_error());
            }
            guard.old.push((sig, prev));
        }
        Ok(guard)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores an action read by sigaction in `install`.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// A reader that ends with an error when a stop signal interrupts a read,
/// where readers of the standard library retry (`read_to_end`, and
/// `read_capped_line`, retry on `EINTR`): so a run blocked reading its
/// standard input stops at the first signal. The error's kind is
/// [`io::ErrorKind::Other`]; [`stopped`] tells it apart.
pub struct Stoppable<R>(pub R);

impl<R: io::Read> io::Read for Stoppable<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.0.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted && stopped() => {
                    return Err(io::Error::other("stopped by a signal"))
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }
}

/// In a freshly forked child: the default action for every one of
/// [`STOP_SIGNALS`], so a signal ends the child instead of setting the
/// parent's flag in the child's copy of memory.
///
/// # Safety
/// Async-signal-safe calls only, so it may run between `fork()` and
/// `_exit()`.
pub unsafe fn reset_in_child() {
    for &sig in STOP_SIGNALS {
        libc::signal(sig, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal sent to the process while the guard lives only sets the
    /// flag (the test process survives), and the old action is back after.
    #[test]
    fn a_stop_signal_sets_the_flag_and_the_old_action_returns() {
        let before = unsafe {
            let mut a: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut a);
            a.sa_sigaction
        };
        {
            let _guard = Guard::install(Second::Waits).unwrap();
            assert!(!stopped());
            // SAFETY: raise sends to this thread; the handler is installed.
            unsafe { libc::raise(libc::SIGUSR2) };
            assert!(stopped());
        }
        let after = unsafe {
            let mut a: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut a);
            a.sa_sigaction
        };
        assert_eq!(before, after);
    }
}
