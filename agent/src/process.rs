//! The agent's process helpers, everything through `libc` (the stop flag is
//! [`crate::signals`]'s): the children of one run of `bench` or `scenario`
//! in a process group of their own (killed and reaped on every way out),
//! counters in memory shared with them, pipes, clocks, the CPUs a thread
//! may use and pinning to one, whether the agent is root, and plain socket
//! helpers.
//!
//! The helpers the children call are async-signal-safe, so a child may
//! use them between `fork()` and `_exit()` even if the agent had threads.

#![cfg(target_os = "linux")]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use libc::{c_int, pid_t};

/// A system call that failed while a run was set up.
#[derive(Debug)]
pub struct SysError {
    /// The call.
    pub call: &'static str,
    /// Why.
    pub source: io::Error,
}

impl SysError {
    /// The call and the current `errno`.
    pub fn last(call: &'static str) -> SysError {
        SysError {
            call,
            source: os_error(errno()),
        }
    }
}

/// The calling thread's `errno`.
pub fn errno() -> c_int {
    // SAFETY: errno is thread-local and always readable.
    unsafe { *libc::__errno_location() }
}

/// `errno` as an [`io::Error`].
pub fn os_error(e: c_int) -> io::Error {
    io::Error::from_raw_os_error(e)
}

/// Memory shared with the children (MAP_SHARED, so writes made after
/// fork are seen by the agent), zeroed at the start.
pub struct Shared {
    base: *mut u8,
    len: usize,
}

/// One slot of [`Shared::counter`]: a cache line's worth and more.
pub const SLOT: usize = 128;

impl Shared {
    /// `slots` slots of [`SLOT`] bytes.
    pub fn new(slots: usize) -> Result<Shared, SysError> {
        Shared::bytes(slots.max(1) * SLOT)
    }

    /// At least `len` bytes (rounded up to whole [`SLOT`]s).
    pub fn bytes(len: usize) -> Result<Shared, SysError> {
        let len = len.max(1).div_ceil(SLOT) * SLOT;
        // SAFETY: an anonymous shared mapping; checked below.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(SysError::last("mmap"));
        }
        Ok(Shared {
            base: base.cast(),
            len,
        })
    }

    /// The counter in slot `i`, word `w` (0 to 15).
    pub fn counter(&self, i: usize, w: usize) -> &AtomicU64 {
        assert!((i + 1) * SLOT <= self.len && w < SLOT / 8);
        self.word(i * SLOT / 8 + w)
    }

    /// The `i`-th 8-byte word of the mapping.
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!((i + 1) * 8 <= self.len);
        // SAFETY: in bounds (checked), 8-aligned (page-aligned base),
        // zero-initialised by mmap, and only ever accessed atomically.
        unsafe { &*self.base.add(i * 8).cast::<AtomicU64>() }
    }

    /// Word `w` of slots `from..from + n`.
    pub fn read(&self, from: usize, n: usize, w: usize) -> Vec<u64> {
        (from..from + n)
            .map(|i| self.counter(i, w).load(Ordering::SeqCst))
            .collect()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The children of one run: killed (the whole process group, then each
/// pid) and reaped on [`Children::stop`] or drop.
#[derive(Default)]
pub struct Children {
    /// The process group (the first child's pid; 0 before any).
    pub pgid: pid_t,
    /// Every child, in fork order.
    pub pids: Vec<pid_t>,
}

impl Children {
    /// Forks a child running `body`, in this run's process group. The
    /// child dies with the agent, and takes the default action for the
    /// signals the agent catches.
    pub fn spawn(&mut self, body: impl FnOnce()) -> io::Result<pid_t> {
        self.pids.reserve(1);
        // SAFETY: getpid is always safe.
        let parent = unsafe { libc::getpid() };
        let pgid = self.pgid;
        // SAFETY: the child runs `child_setup` (async-signal-safe) and
        // `body`, which ends in _exit; see the callers for what it does.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(os_error(errno()));
        }
        if pid == 0 {
            // SAFETY: in the child, see above.
            unsafe { child_setup(pgid, parent) };
            body();
            // SAFETY: the bodies never return; if one did, end here.
            unsafe { libc::_exit(127) };
        }
        // Also from this side, so the group is right before the agent
        // signals it (whichever of the two calls runs first wins).
        // SAFETY: pid is our child.
        unsafe { libc::setpgid(pid, if pgid == 0 { pid } else { pgid }) };
        if self.pgid == 0 {
            self.pgid = pid;
        }
        self.pids.push(pid);
        Ok(pid)
    }

    /// Kills every child and waits for each.
    pub fn stop(&mut self) {
        if self.pgid != 0 {
            // SAFETY: signalling our own process group.
            unsafe { libc::kill(-self.pgid, libc::SIGKILL) };
        }
        for &pid in &self.pids {
            // SAFETY: pid is our child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        for pid in self.pids.drain(..) {
            let mut status = 0;
            // SAFETY: waiting for our own child.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 && errno() == libc::EINTR {}
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        self.stop();
    }
}

/// In a new child: joins the run's process group, dies with the agent,
/// and takes the default action for the signals the agent catches.
///
/// SAFETY: async-signal-safe calls only.
unsafe fn child_setup(pgid: pid_t, parent: pid_t) {
    libc::setpgid(0, pgid);
    libc::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        0,
        0,
        0,
    );
    if libc::getppid() != parent {
        libc::_exit(1);
    }
    crate::signals::reset_in_child();
}

/// An IPv4 socket address.
pub fn sockaddr(ip: [u8; 4], port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes(ip).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// The size of a `sockaddr_in`.
pub const SOCKADDR_LEN: libc::socklen_t =
    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// `setsockopt` of one int; true on success.
///
/// # Safety
/// `fd` is a socket; async-signal-safe.
pub unsafe fn set_int(fd: RawFd, level: c_int, name: c_int, v: c_int) -> bool {
    libc::setsockopt(
        fd,
        level,
        name,
        (&v as *const c_int).cast(),
        std::mem::size_of::<c_int>() as libc::socklen_t,
    ) == 0
}

/// Closes a connected TCP socket with a reset rather than a FIN
/// (`SO_LINGER` on with a zero timeout): no TIME_WAIT is left on either
/// side, so a client's address and port pair can connect again at once.
/// `bench` and `scenario` clients end every connection this way.
///
/// # Safety
/// `fd` is a socket the caller owns and does not use again;
/// async-signal-safe.
pub unsafe fn close_with_reset(fd: RawFd) {
    let reset = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    libc::setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_LINGER,
        (&reset as *const libc::linger).cast(),
        std::mem::size_of::<libc::linger>() as libc::socklen_t,
    );
    libc::close(fd);
}

/// The port a socket is bound to.
pub fn local_port(fd: &OwnedFd) -> io::Result<u16> {
    // SAFETY: a zeroed sockaddr_in is valid; getsockname fills it.
    unsafe {
        let mut a: libc::sockaddr_in = std::mem::zeroed();
        let mut len = SOCKADDR_LEN;
        if libc::getsockname(
            fd.as_raw_fd(),
            (&mut a as *mut libc::sockaddr_in).cast(),
            &mut len,
        ) != 0
        {
            return Err(os_error(errno()));
        }
        Ok(u16::from_be(a.sin_port))
    }
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe() -> Result<(OwnedFd, OwnedFd), SysError> {
    let mut fds = [0; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(SysError::last("pipe2"));
    }
    // SAFETY: both are fresh descriptors we own.
    unsafe { Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))) }
}

/// CLOCK_MONOTONIC in nanoseconds (async-signal-safe).
pub fn now_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// This process's CPU time in nanoseconds (async-signal-safe).
pub fn cpu_ns() -> u64 {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: one timespec to fill.
    unsafe { libc::clock_gettime(id, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Whether this process runs as root (can make a network namespace, set a
/// sysctl, change its UID).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Online CPUs (`_SC_NPROCESSORS_ONLN`).
pub fn online_cpus() -> u32 {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as u32
}

/// The CPUs this thread may run on, ascending.
pub fn allowed_cpus() -> io::Result<Vec<u32>> {
    // SAFETY: a zeroed cpu_set_t is the empty set; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET reads the set within its size.
    Ok((0..8 * size)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .map(|c| c as u32)
        .collect())
}

/// Pins the calling thread (or, in a child, process) to one CPU: it has
/// moved there when this returns. Async-signal-safe.
pub fn pin_to(cpu: u32) -> io::Result<()> {
    // SAFETY: the set is built in place and passed with its size; CPU_SET
    // stays in bounds for cpu < CPU_SETSIZE.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no memory effects.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::IntoRawFd;

    use super::*;

    /// The peer of a socket closed by [`close_with_reset`] reads a reset,
    /// not an end of file: the close sent RST, which leaves no TIME_WAIT.
    #[test]
    fn a_socket_closed_with_reset_sends_rst_not_fin() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // SAFETY: the descriptor is taken out of `client` and not used again.
        unsafe { close_with_reset(client.into_raw_fd()) };
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 1];
        let err = server.read(&mut buf).expect_err("a FIN would read Ok(0)");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
    }
}
