//! The Linux machinery: sockets, pipes, shared counters and processes, all
//! through `libc`.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use libc::{c_int, c_void, pid_t};

use crate::process::{
    self, close_with_reset, errno, local_port, os_error, set_int, sockaddr, Children, Shared,
    SysError, SOCKADDR_LEN,
};
use crate::signals::{self, Guard, Second};

use super::{
    jain, max_min_ratio, Accept, BenchError, Mode, ModeReport, Plan, Stop, FIRST_CLIENT_ADDR,
    SERVER_ADDR,
};

fn setup(e: SysError) -> BenchError {
    BenchError::Setup {
        call: e.call,
        source: e.source,
    }
}

/// SIGINT, SIGTERM, SIGHUP and the other terminating signals
/// ([`crate::STOP_SIGNALS`]) stop the run for its length.
pub(super) fn signals() -> Result<Guard, BenchError> {
    Guard::install(Second::Waits).map_err(|source| BenchError::Setup {
        call: "sigaction",
        source,
    })
}

/// Forks a child of the run (see [`Children::spawn`]).
fn spawn(
    children: &mut Children,
    what: &'static str,
    body: impl FnOnce(),
) -> Result<pid_t, BenchError> {
    children
        .spawn(body)
        .map_err(|source| BenchError::Fork { what, source })
}

fn pipe() -> Result<(OwnedFd, OwnedFd), BenchError> {
    process::pipe().map_err(setup)
}

/// A record a child writes to a pipe (atomic: smaller than PIPE_BUF).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Record {
    kind: u32,
    index: u32,
    count: u64,
    errno: i32,
    call: u32,
}

const READY: u32 = 1;
const FAILED: u32 = 2;
const DONE: u32 = 3;
const RECORD: usize = std::mem::size_of::<Record>();

/// System calls named in records.
const CALLS: [&str; 10] = [
    "-",
    "socket",
    "setsockopt",
    "bind",
    "listen",
    "connect",
    "epoll_create1",
    "epoll_ctl",
    "fcntl",
    "close",
];
const SOCKET: u32 = 1;
const SETSOCKOPT: u32 = 2;
const BIND: u32 = 3;
const LISTEN: u32 = 4;
const CONNECT: u32 = 5;
const EPOLL_CREATE: u32 = 6;
const EPOLL_CTL: u32 = 7;
const FCNTL: u32 = 8;

fn call_name(c: u32) -> &'static str {
    CALLS.get(c as usize).copied().unwrap_or("?")
}

/// SAFETY: async-signal-safe.
unsafe fn send(fd: RawFd, r: Record) {
    libc::write(fd, (&r as *const Record).cast::<c_void>(), RECORD);
}

/// A TCP socket bound to 127.0.0.1:`port` with SO_REUSEADDR, and
/// SO_REUSEPORT when `reuseport`; listening unless `listen` is false;
/// non-blocking when `nonblocking`. Err: (call, errno); nothing is left
/// open then.
///
/// SAFETY: async-signal-safe (used in children).
unsafe fn open_socket(
    port: u16,
    reuseport: bool,
    listen: bool,
    nonblocking: bool,
) -> Result<RawFd, (u32, c_int)> {
    let flags =
        libc::SOCK_STREAM | libc::SOCK_CLOEXEC | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
    let fd = libc::socket(libc::AF_INET, flags, 0);
    if fd < 0 {
        return Err((SOCKET, errno()));
    }
    let fail = |call| {
        let e = errno();
        libc::close(fd);
        Err((call, e))
    };
    if !set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)
        || (reuseport && !set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1))
    {
        return fail(SETSOCKOPT);
    }
    let addr = sockaddr(SERVER_ADDR, port);
    if libc::bind(fd, (&addr as *const libc::sockaddr_in).cast(), SOCKADDR_LEN) != 0 {
        return fail(BIND);
    }
    if listen && libc::listen(fd, libc::SOMAXCONN) != 0 {
        return fail(LISTEN);
    }
    Ok(fd)
}

/// What a worker needs, all plain values.
#[derive(Clone, Copy)]
struct Worker {
    index: u32,
    /// The shared listener (fork mode), or -1: open your own.
    listener: RawFd,
    /// The agent's hold on the port (reuseport mode): closed at once.
    hold: RawFd,
    port: u16,
    epoll: bool,
    report: RawFd,
    accepted: *const AtomicU64,
    empty: *const AtomicU64,
}

/// A worker process. SAFETY: async-signal-safe calls only; never
/// returns.
unsafe fn worker_main(w: Worker) -> ! {
    let fail = |call: u32, e: c_int| -> ! {
        send(
            w.report,
            Record {
                kind: FAILED,
                index: w.index,
                errno: e,
                call,
                ..Record::default()
            },
        );
        libc::_exit(1)
    };
    let fd = if w.listener >= 0 {
        w.listener
    } else {
        libc::close(w.hold);
        match open_socket(w.port, true, true, w.epoll) {
            Ok(fd) => fd,
            Err((call, e)) => fail(call, e),
        }
    };
    let ep = if w.epoll {
        let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
        if ep < 0 {
            fail(EPOLL_CREATE, errno());
        }
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: 0,
        };
        if libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) != 0 {
            fail(EPOLL_CTL, errno());
        }
        // The fork mode's shared listener was made non-blocking by the
        // agent; check rather than assume.
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0
            || (fl & libc::O_NONBLOCK == 0
                && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) != 0)
        {
            fail(FCNTL, errno());
        }
        ep
    } else {
        -1
    };
    send(
        w.report,
        Record {
            kind: READY,
            index: w.index,
            ..Record::default()
        },
    );
    libc::close(w.report);
    let accepted = &*w.accepted;
    let empty = &*w.empty;
    let mut n = 0u64;
    let mut misses = 0u64;
    loop {
        if w.epoll {
            let mut ev = libc::epoll_event { events: 0, u64: 0 };
            if libc::epoll_wait(ep, &mut ev, 1, -1) < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                libc::_exit(2);
            }
            let before = n;
            loop {
                let c = libc::accept4(fd, ptr::null_mut(), ptr::null_mut(), libc::SOCK_CLOEXEC);
                if c >= 0 {
                    libc::close(c);
                    n += 1;
                    accepted.store(n, Ordering::Relaxed);
                    continue;
                }
                match errno() {
                    libc::EINTR | libc::ECONNABORTED | libc::EPROTO => continue,
                    libc::EAGAIN => break,
                    libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT => libc::_exit(2),
                    _ => break,
                }
            }
            if n == before {
                misses += 1;
                empty.store(misses, Ordering::Relaxed);
            }
        } else {
            let c = libc::accept4(fd, ptr::null_mut(), ptr::null_mut(), libc::SOCK_CLOEXEC);
            if c >= 0 {
                libc::close(c);
                n += 1;
                accepted.store(n, Ordering::Relaxed);
            } else if matches!(
                errno(),
                libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT
            ) {
                libc::_exit(2);
            }
        }
    }
}

/// What a client needs, all plain values.
#[derive(Clone, Copy)]
struct Client {
    index: u32,
    connections: u32,
    port: u16,
    gate: RawFd,
    gate_write: RawFd,
    report: RawFd,
    connected: *const AtomicU64,
}

/// A client process: waits at the gate, then connects and resets
/// `connections` times from its own address. SAFETY: async-signal-safe
/// calls only; never returns.
unsafe fn client_main(c: Client) -> ! {
    // Hold no write end of the gate, or it would never open.
    libc::close(c.gate_write);
    let mut byte = 0u8;
    while libc::read(c.gate, (&mut byte as *mut u8).cast(), 1) < 0 && errno() == libc::EINTR {}
    libc::close(c.gate);

    let server = sockaddr(SERVER_ADDR, c.port);
    let src = (u32::from_be_bytes(FIRST_CLIENT_ADDR) + c.index).to_be_bytes();
    let local = sockaddr(src, 0);
    let connected = &*c.connected;
    let mut n = 0u64;
    let mut failure = (0u32, 0 as c_int);
    while n < u64::from(c.connections) {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            failure = (SOCKET, errno());
            break;
        }
        // Bind the address only; the port is chosen at connect(), per
        // 4-tuple, instead of from the ports free for bind().
        if !set_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1) {
            failure = (SETSOCKOPT, errno());
            libc::close(fd);
            break;
        }
        if libc::bind(
            fd,
            (&local as *const libc::sockaddr_in).cast(),
            SOCKADDR_LEN,
        ) != 0
        {
            failure = (BIND, errno());
            libc::close(fd);
            break;
        }
        let mut r = libc::connect(
            fd,
            (&server as *const libc::sockaddr_in).cast(),
            SOCKADDR_LEN,
        );
        while r != 0 && errno() == libc::EINTR {
            r = libc::connect(
                fd,
                (&server as *const libc::sockaddr_in).cast(),
                SOCKADDR_LEN,
            );
        }
        if r != 0 {
            failure = (CONNECT, errno());
            libc::close(fd);
            break;
        }
        n += 1;
        connected.store(n, Ordering::Relaxed);
        close_with_reset(fd);
    }
    send(
        c.report,
        Record {
            kind: DONE,
            index: c.index,
            count: n,
            errno: failure.1,
            call: failure.0,
        },
    );
    libc::_exit(if failure.0 == 0 { 0 } else { 1 })
}

enum Next {
    Record(Record),
    Eof,
    Stopped(Stop),
}

/// Reads records from a pipe until the deadline or a stop signal.
struct Records {
    fd: OwnedFd,
    buf: Vec<u8>,
    eof: bool,
}

impl Records {
    fn new(fd: OwnedFd) -> Records {
        Records {
            fd,
            buf: Vec::new(),
            eof: false,
        }
    }

    fn next(&mut self, deadline: Instant) -> Result<Next, BenchError> {
        loop {
            if self.buf.len() >= RECORD {
                let mut r = Record::default();
                // SAFETY: Record is plain data of RECORD bytes, and
                // every bit pattern is valid for it.
                unsafe {
                    ptr::copy_nonoverlapping(
                        self.buf.as_ptr(),
                        (&mut r as *mut Record).cast::<u8>(),
                        RECORD,
                    )
                };
                self.buf.drain(..RECORD);
                return Ok(Next::Record(r));
            }
            if self.eof {
                return Ok(Next::Eof);
            }
            if let Some(stop) = wait_readable(self.fd.as_raw_fd(), deadline) {
                return Ok(Next::Stopped(stop));
            }
            let mut chunk = [0u8; 4096];
            // SAFETY: reading into a local buffer of that size.
            let n =
                unsafe { libc::read(self.fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            match n {
                0 => self.eof = true,
                n if n > 0 => self.buf.extend_from_slice(&chunk[..n as usize]),
                _ if matches!(errno(), libc::EINTR | libc::EAGAIN) => {}
                _ => {
                    return Err(BenchError::Setup {
                        call: "read",
                        source: os_error(errno()),
                    })
                }
            }
        }
    }
}

fn stop_now(deadline: Instant) -> Option<Stop> {
    if signals::stopped() {
        Some(Stop::Interrupted)
    } else if Instant::now() >= deadline {
        Some(Stop::Timeout)
    } else {
        None
    }
}

/// Waits until `fd` is readable (or at EOF): `None`, or why it stopped
/// waiting. Polls in slices of at most 100 ms so a signal that lands
/// just before poll() is seen soon.
fn wait_readable(fd: RawFd, deadline: Instant) -> Option<Stop> {
    loop {
        if let Some(stop) = stop_now(deadline) {
            return Some(stop);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.min(Duration::from_millis(100)).as_millis().max(1) as c_int;
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } > 0 {
            return None;
        }
    }
}

/// Runs one mode (see the module docs).
pub(super) fn run_mode(plan: &Plan, mode: Mode) -> Result<ModeReport, BenchError> {
    let workers = plan.workers as usize;
    let clients = plan.clients as usize;
    let epoll = plan.accept == Accept::Epoll;
    // Slots 0..workers: accepts (word 0) and empty wake-ups (word 1);
    // then one per client: connections made.
    let shared = Shared::new(workers + clients).map_err(setup)?;
    let mut children = Children::default();
    let listen_err = |call, e| BenchError::Listen {
        port: plan.port,
        call,
        source: os_error(e),
    };

    // The fork mode's listener, or the reuseport mode's hold on the
    // port: bound with SO_REUSEPORT but not listening, so it takes no
    // connections and joins no group, and a port 0 is fixed before
    // the workers bind it.
    // SAFETY: a plain socket call; the fd is owned at once.
    let socket = unsafe {
        open_socket(
            plan.port,
            mode == Mode::Reuseport,
            mode == Mode::Fork,
            epoll,
        )
    }
    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
    .map_err(|(call, e)| listen_err(call_name(call), e))?;
    let port = local_port(&socket).map_err(|e| BenchError::Listen {
        port: plan.port,
        call: "getsockname",
        source: e,
    })?;

    let mut report = ModeReport {
        mode,
        port,
        process_group: 0,
        complete: false,
        stopped: None,
        seconds: None,
        connections: plan.clients as u64 * u64::from(plan.connections),
        connected: 0,
        accepted: 0,
        connections_per_second: None,
        per_worker: vec![0; workers],
        empty_wakeups: epoll.then(|| vec![0; workers]),
        per_client: vec![0; clients],
        max_min_ratio: None,
        jain: None,
        errors: Vec::new(),
    };

    // Workers.
    let (ready_r, ready_w) = pipe()?;
    for i in 0..workers {
        let w = Worker {
            index: i as u32,
            listener: if mode == Mode::Fork {
                socket.as_raw_fd()
            } else {
                -1
            },
            hold: socket.as_raw_fd(),
            port,
            epoll,
            report: ready_w.as_raw_fd(),
            accepted: shared.counter(i, 0),
            empty: shared.counter(i, 1),
        };
        // SAFETY: worker_main is async-signal-safe.
        spawn(&mut children, "worker", move || unsafe { worker_main(w) })?;
    }
    report.process_group = children.pgid;
    drop(ready_w);
    let mut ready_records = Records::new(ready_r);
    let mut ready = 0;
    while ready < workers {
        match ready_records.next(plan.deadline)? {
            Next::Record(r) if r.kind == READY => ready += 1,
            Next::Record(r) => {
                return Err(BenchError::WorkerListen {
                    worker: r.index,
                    port,
                    call: call_name(r.call),
                    source: os_error(r.errno),
                })
            }
            Next::Eof => {
                return Err(BenchError::WorkerDied {
                    ready: ready as u32,
                    workers: plan.workers,
                })
            }
            Next::Stopped(stop) => {
                report.stopped = Some(stop);
                children.stop();
                return Ok(report);
            }
        }
    }
    drop(ready_records);
    // Another program's listener on the port would take part of the
    // connections (an SO_REUSEPORT one of the same user joins the group),
    // and the counts would be wrong: refused, as `record` refuses it.
    let own: std::collections::HashSet<u64> = children
        .pids
        .iter()
        .chain(std::iter::once(&(std::process::id() as i32)))
        .flat_map(|&pid| crate::cmd::record::foreign::socket_inodes(pid))
        .collect();
    let at = std::net::IpAddr::from(SERVER_ADDR);
    let found = crate::cmd::record::foreign::find(reuseport_model::Proto::Tcp, port, at, at, &own);
    if !found.is_empty() {
        children.stop();
        return Err(BenchError::ForeignListeners {
            port,
            found: found
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    // The workers hold the listeners now; clients must not inherit them.
    drop(socket);

    // Clients, forked first and held at the gate.
    let (gate_r, gate_w) = pipe()?;
    let (done_r, done_w) = pipe()?;
    for i in 0..clients {
        let c = Client {
            index: i as u32,
            connections: plan.connections,
            port,
            gate: gate_r.as_raw_fd(),
            gate_write: gate_w.as_raw_fd(),
            report: done_w.as_raw_fd(),
            connected: shared.counter(workers + i, 0),
        };
        // SAFETY: client_main is async-signal-safe.
        spawn(&mut children, "client", move || unsafe { client_main(c) })?;
    }
    drop(gate_r);
    drop(done_w);
    if let Some(stop) = stop_now(plan.deadline) {
        report.stopped = Some(stop);
        children.stop();
        return Ok(report);
    }

    let start = Instant::now();
    drop(gate_w);
    let mut done_records = Records::new(done_r);
    let mut done = 0;
    let mut end = None;
    while done < clients {
        match done_records.next(plan.deadline)? {
            Next::Record(r) => {
                done += 1;
                if r.call != 0 {
                    report.errors.push(format!(
                        "client {} (from {}) stopped after {} connections: {} failed: {}",
                        r.index,
                        super::ip_string(
                            (u32::from_be_bytes(FIRST_CLIENT_ADDR) + r.index).to_be_bytes()
                        ),
                        r.count,
                        call_name(r.call),
                        os_error(r.errno)
                    ));
                }
            }
            Next::Eof => {
                report.errors.push(format!(
                    "{} client processes died without reporting",
                    clients - done
                ));
                break;
            }
            Next::Stopped(stop) => {
                report.stopped = Some(stop);
                end = Some(Instant::now());
                break;
            }
        }
    }
    let elapsed = end.unwrap_or_else(Instant::now) - start;

    // Let the workers take what is still queued: until every connection
    // made is accepted, or nothing moves for a second.
    let connected: u64 = shared.read(workers, clients, 0).iter().sum();
    if report.stopped.is_none() {
        let mut last = 0;
        let mut moved = Instant::now();
        loop {
            let accepted: u64 = shared.read(0, workers, 0).iter().sum();
            if accepted >= connected {
                break;
            }
            if let Some(stop) = stop_now(plan.deadline) {
                report.stopped = Some(stop);
                break;
            }
            if accepted != last {
                last = accepted;
                moved = Instant::now();
            } else if moved.elapsed() > Duration::from_secs(1) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    children.stop();

    report.per_worker = shared.read(0, workers, 0);
    report.empty_wakeups = epoll.then(|| shared.read(0, workers, 1));
    report.per_client = shared.read(workers, clients, 0);
    report.connected = report.per_client.iter().sum();
    report.accepted = report.per_worker.iter().sum();
    let secs = elapsed.as_secs_f64();
    report.seconds = Some(secs);
    report.connections_per_second = (secs > 0.0).then(|| report.connected as f64 / secs);
    report.max_min_ratio = max_min_ratio(&report.per_worker);
    report.jain = jain(&report.per_worker);
    if report.accepted < report.connected && report.stopped.is_none() {
        report.errors.push(format!(
            "{} connections were made but never accepted (an accept queue overflowed: the client saw the handshake complete, the listener dropped it)",
            report.connected - report.accepted
        ));
    }
    report.complete = report.stopped.is_none()
        && report.errors.is_empty()
        && report.connected == report.connections
        && report.accepted == report.connected;
    Ok(report)
}
