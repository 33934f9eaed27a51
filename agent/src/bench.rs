//! `bench`: the seed articles' benchmark, one listening socket shared by
//! forked server processes against one SO_REUSEPORT listener per process.
//!
//! The article (Krishna Kumar, "Linux TCP SO_REUSEPORT: Usage and
//! Implementation") runs 48 server processes in one of two ways and 48
//! client processes that each connect and reset a million times:
//! - `fork`: `socket(); bind(); listen(); fork()`: every worker accepts on
//!   the same kernel socket, so they contend for its lock and queue, and
//!   the spread of connections over the workers is whatever the wake-ups
//!   make it (4m45s in the article);
//! - `reuseport`: `fork(); socket(); setsockopt(SO_REUSEPORT); bind();
//!   listen()`: each worker has its own listener and accept queue, and the
//!   kernel spreads the connections by hashing the 4-tuple (1m36s).
//!
//! Here, for each mode, the agent forks `--workers` server processes
//! listening on `127.0.0.1:PORT` and `--clients` client processes. Client
//! `i` connects from its own address, `127.0.1.1 + i`, so the clients never
//! run out of 4-tuples, and ends each connection with a reset (`SO_LINGER
//! {1, 0}`, then `close`), so no TIME_WAIT sockets pile up. Workers accept
//! and close, with a blocking `accept` (the classic pre-fork server) or,
//! with `--epoll`, level-triggered epoll on the listener and a non-blocking
//! `accept` (every worker polling the one shared socket is woken for each
//! connection: the thundering herd).
//!
//! The time of a mode runs from the moment all clients are released (they
//! are forked first and wait at a gate) to the moment the last one reports
//! that it is done. Workers count their accepts in shared memory; once the
//! clients are done the agent waits for the workers to accept what is left
//! in the queues, then kills them and reads the counts.
//!
//! Every child process runs in a process group of its own per mode, dies
//! with the agent (`PR_SET_PDEATHSIG`), and is killed and reaped when the
//! mode ends, on every path: success, error, `--timeout`, or Ctrl-C
//! (SIGINT or SIGTERM), after which the counts so far are reported. The
//! children only make system calls (no allocation), so forking is sound
//! even from a multithreaded caller.
//!
//! Output: a human summary by default; with `--json` one object,
//! [`Report`], whose fields are documented there.

use std::io::{self, Write};
use std::time::Instant;

use clap::{Args, ValueEnum};
use serde::Serialize;
use thiserror::Error;

/// The most server or client processes a run may fork.
pub const MAX_PROCS: u32 = 1024;

/// The address the workers listen on.
pub const SERVER_ADDR: [u8; 4] = [127, 0, 0, 1];

/// The address of client 0; client `i` uses this plus `i`.
pub const FIRST_CLIENT_ADDR: [u8; 4] = [127, 0, 1, 1];

/// The article's figures, for the comparison line.
const ARTICLE: &str = "the article measured 48 server and 48 client processes on two 48-core machines over a 40G link, 1,000,000 connections per client: fork 4m45s, SO_REUSEPORT 1m36s (ratio 2.95)";

/// Which modes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// One listener created before fork(), shared by all workers.
    Fork,
    /// One SO_REUSEPORT listener per worker, opened after fork().
    Reuseport,
    /// Fork, then reuseport, and the ratio of their times.
    Both,
}

/// One way of serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One listener shared by all workers.
    Fork,
    /// One SO_REUSEPORT listener per worker.
    Reuseport,
}

/// How workers wait for connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accept {
    /// Blocking `accept` (the kernel wakes one waiter per connection).
    Blocking,
    /// Level-triggered epoll on the listener, then non-blocking `accept`.
    Epoll,
}

/// Options of `bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Server processes per mode. Default: twice the CPUs (nproc), at most 64.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=MAX_PROCS as i64))]
    pub workers: Option<u32>,

    /// Client processes; client i connects from 127.0.1.1 + i. Default: as many as --workers.
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=MAX_PROCS as i64))]
    pub clients: Option<u32>,

    /// Connections each client makes, one after the other (connect, then reset).
    #[arg(long, value_name = "M", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=100_000_000))]
    pub connections: u32,

    /// Which way of serving to measure.
    #[arg(long, value_enum, default_value_t = ModeArg::Both)]
    pub mode: ModeArg,

    /// Port on 127.0.0.1 to listen on; 0 picks a free one for each mode.
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// Bound on the whole run, in seconds: when it passes, every child is killed and the counts so far are reported as incomplete.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub timeout: u64,

    /// Workers block in accept() (the classic pre-fork server). This is the default.
    #[arg(long, conflicts_with = "epoll")]
    pub blocking_accept: bool,

    /// Workers wait in epoll_wait() on the listener and accept without blocking; with the shared listener of the fork mode every worker is woken for each connection (thundering herd).
    #[arg(long)]
    pub epoll: bool,
}

impl BenchArgs {
    /// The worker count, with the default applied.
    pub fn worker_count(&self, nproc: usize) -> u32 {
        self.workers
            .unwrap_or_else(|| (2 * nproc).clamp(2, 64) as u32)
    }

    /// The client count, with the default applied.
    pub fn client_count(&self, nproc: usize) -> u32 {
        self.clients.unwrap_or_else(|| self.worker_count(nproc))
    }

    /// How workers wait for connections.
    pub fn accept(&self) -> Accept {
        if self.epoll {
            Accept::Epoll
        } else {
            Accept::Blocking
        }
    }

    fn modes(&self) -> &'static [Mode] {
        match self.mode {
            ModeArg::Fork => &[Mode::Fork],
            ModeArg::Reuseport => &[Mode::Reuseport],
            ModeArg::Both => &[Mode::Fork, Mode::Reuseport],
        }
    }
}

/// An error that stops `bench` (exit status 2).
#[derive(Debug, Error)]
pub enum BenchError {
    /// Not Linux.
    #[error("bench forks servers and clients on Linux loopback and needs Linux; this system is not Linux")]
    NotLinux,
    /// The listening socket (fork mode) or the port reservation (reuseport
    /// mode) could not be set up.
    #[error("cannot listen on 127.0.0.1:{port}: {call} failed: {source}; choose another --port, or --port 0 for a free one")]
    Listen {
        /// The port asked for.
        port: u16,
        /// The system call that failed.
        call: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A worker could not open its own SO_REUSEPORT listener.
    #[error("worker {worker} could not open its SO_REUSEPORT listener on 127.0.0.1:{port}: {call} failed: {source}; choose another --port, or --port 0 for a free one")]
    WorkerListen {
        /// The worker's number.
        worker: u32,
        /// The port.
        port: u16,
        /// The system call that failed.
        call: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A worker died before it was ready.
    #[error("worker processes exited before they were listening ({ready} of {workers} ready); run again, and check the kernel log if it repeats")]
    WorkerDied {
        /// Workers that reported ready.
        ready: u32,
        /// Workers forked.
        workers: u32,
    },
    /// fork() failed.
    #[error("cannot fork a {what} process: {source}; lower --workers or --clients, or raise the process limit (ulimit -u)")]
    Fork {
        /// "worker" or "client".
        what: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A pipe, shared memory or signal handler could not be set up.
    #[error("cannot set up the run: {call} failed: {source}; lower --workers or --clients, or raise the open-file limit (ulimit -n)")]
    Setup {
        /// The system call that failed.
        call: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Standard output could not be written.
    #[error("cannot write the results to standard output: {0}")]
    Output(#[source] io::Error),
}

impl BenchError {
    /// Whether this is a write to a closed pipe (`| head -1`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, BenchError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// Why a run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// `--timeout` passed.
    Timeout,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Interrupted,
}

/// The results of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    /// `"fork"` or `"reuseport"`.
    pub mode: Mode,
    /// The port listened on.
    pub port: u16,
    /// The process group of this mode's workers and clients (all of them
    /// were killed and reaped before the report was made).
    pub process_group: i32,
    /// Every client made all its connections, every connection was
    /// accepted, and nothing stopped the mode.
    pub complete: bool,
    /// Set when `--timeout` or a signal stopped this mode.
    pub stopped: Option<Stop>,
    /// Wall time from the release of the clients until the last one was
    /// done (or until the mode was stopped); `null` if clients never started.
    pub seconds: Option<f64>,
    /// Connections asked for: clients × connections.
    pub connections: u64,
    /// Connections the clients made.
    pub connected: u64,
    /// Connections the workers accepted (the sum of `per_worker`).
    pub accepted: u64,
    /// `connected / seconds`.
    pub connections_per_second: Option<f64>,
    /// Accepts of each worker, in worker order.
    pub per_worker: Vec<u64>,
    /// With `--epoll`: returns from `epoll_wait` of each worker after which
    /// `accept` found nothing (another worker took the connection first);
    /// `null` otherwise. The kernel checks readiness again before it
    /// returns, so workers woken for a connection that is already gone go
    /// back to sleep inside `epoll_wait` and are not counted here.
    pub empty_wakeups: Option<Vec<u64>>,
    /// Connections made by each client.
    pub per_client: Vec<u64>,
    /// Largest over smallest of `per_worker`; `null` when a worker got none.
    pub max_min_ratio: Option<f64>,
    /// Jain's fairness index of `per_worker`: (Σx)² / (n·Σx²), 1 when even,
    /// 1/n when one worker got everything; `null` when nothing was accepted.
    pub jain: Option<f64>,
    /// What went wrong in clients or workers, one message each.
    pub errors: Vec<String>,
}

/// The result of a run (the `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// CPUs available to the agent (what `nproc` prints).
    pub nproc: usize,
    /// Server processes per mode.
    pub workers: u32,
    /// Client processes per mode.
    pub clients: u32,
    /// Connections each client makes.
    pub connections_per_client: u32,
    /// `"blocking"` or `"epoll"`.
    pub accept: Accept,
    /// The listening address.
    pub address: String,
    /// `--timeout`, in seconds.
    pub timeout_secs: u64,
    /// Every mode asked for ran and is complete.
    pub complete: bool,
    /// Set when `--timeout` or a signal stopped the run.
    pub stopped: Option<Stop>,
    /// One entry per mode run, in order (fork first).
    pub modes: Vec<ModeReport>,
    /// Fork time over reuseport time, when both modes ran and are complete.
    pub fork_over_reuseport: Option<f64>,
    /// How these numbers relate to the article's.
    pub note: String,
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); `None` when all are 0.
pub fn jain(xs: &[u64]) -> Option<f64> {
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let squares: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    (squares > 0.0).then(|| sum * sum / (xs.len() as f64 * squares))
}

/// Largest over smallest of `xs`; `None` when empty or the smallest is 0.
pub fn max_min_ratio(xs: &[u64]) -> Option<f64> {
    let min = *xs.iter().min()?;
    let max = *xs.iter().max()?;
    (min > 0).then(|| max as f64 / min as f64)
}

/// CPUs available to this process (what `nproc` prints).
pub fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn note(nproc: usize) -> String {
    format!(
        "{ARTICLE}; this machine has {nproc} CPU{}, shared by the servers, the clients and the loopback, so its numbers are not comparable to the article's, only the direction and the spread are",
        if nproc == 1 { "" } else { "s" }
    )
}

/// Runs `bench` (see the module docs): the modes asked for, one after the
/// other, the human summary of each written to `out` as it ends, or with
/// `--json` one [`Report`] object at the end.
///
/// Returns the report; it is incomplete (not an error) after `--timeout`,
/// a signal, or a failed client. Errors are setup failures: nothing was
/// measured then (the children forked so far are killed and reaped).
pub fn run(args: &BenchArgs, mut out: impl Write) -> Result<Report, BenchError> {
    if !cfg!(target_os = "linux") {
        return Err(BenchError::NotLinux);
    }
    // From here on the terminating signals (SIGINT, SIGTERM, SIGHUP, ...)
    // stop the run instead of the agent.
    #[cfg(target_os = "linux")]
    let _signals = linux::signals()?;
    let nproc = nproc();
    let workers = args.worker_count(nproc);
    let clients = args.client_count(nproc);
    let mut report = Report {
        nproc,
        workers,
        clients,
        connections_per_client: args.connections,
        accept: args.accept(),
        address: ip_string(SERVER_ADDR),
        timeout_secs: args.timeout,
        complete: false,
        stopped: None,
        modes: Vec::new(),
        fork_over_reuseport: None,
        note: note(nproc),
    };
    if !args.json {
        header(&mut out, &report).map_err(BenchError::Output)?;
    }
    let deadline = Instant::now() + std::time::Duration::from_secs(args.timeout);
    let plan = Plan {
        workers,
        clients,
        connections: args.connections,
        port: args.port,
        accept: args.accept(),
        deadline,
    };
    run_modes(&plan, args.modes(), &mut report, &mut out, args.json)?;

    report.complete =
        report.modes.len() == args.modes().len() && report.modes.iter().all(|m| m.complete);
    let time = |mode| {
        report
            .modes
            .iter()
            .find(|m| m.mode == mode && m.complete)
            .and_then(|m| m.seconds)
    };
    report.fork_over_reuseport = match (time(Mode::Fork), time(Mode::Reuseport)) {
        (Some(f), Some(r)) if r > 0.0 => Some(f / r),
        _ => None,
    };
    if args.json {
        serde_json::to_writer(&mut out, &report).map_err(|e| BenchError::Output(e.into()))?;
        out.write_all(b"\n").map_err(BenchError::Output)?;
    } else {
        footer(&mut out, &report).map_err(BenchError::Output)?;
    }
    out.flush().map_err(BenchError::Output)?;
    Ok(report)
}

#[cfg(target_os = "linux")]
fn run_modes(
    plan: &Plan,
    modes: &[Mode],
    report: &mut Report,
    out: &mut impl Write,
    json: bool,
) -> Result<(), BenchError> {
    for &mode in modes {
        let m = linux::run_mode(plan, mode)?;
        if !json {
            mode_summary(out, &m, plan.workers).map_err(BenchError::Output)?;
            out.flush().map_err(BenchError::Output)?;
        }
        let stopped = m.stopped;
        report.modes.push(m);
        if stopped.is_some() {
            report.stopped = stopped;
            break;
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn run_modes(
    _: &Plan,
    _: &[Mode],
    _: &mut Report,
    _: &mut impl Write,
    _: bool,
) -> Result<(), BenchError> {
    Err(BenchError::NotLinux)
}

/// What one mode runs.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Plan {
    workers: u32,
    clients: u32,
    connections: u32,
    port: u16,
    accept: Accept,
    deadline: Instant,
}

fn ip_string(a: [u8; 4]) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

fn header(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(
        out,
        "bench: {} workers, {} clients x {} connections each, to {}, {}; nproc {}",
        r.workers,
        r.clients,
        r.connections_per_client,
        r.address,
        match r.accept {
            Accept::Blocking => "blocking accept()",
            Accept::Epoll => "epoll_wait() + non-blocking accept()",
        },
        r.nproc
    )?;
    writeln!(out, "note: {}", r.note)?;
    out.flush()
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

fn list(xs: &[u64]) -> String {
    xs.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")
}

fn mode_summary(out: &mut impl Write, m: &ModeReport, workers: u32) -> io::Result<()> {
    writeln!(out)?;
    match m.mode {
        Mode::Fork => writeln!(
            out,
            "fork       one listener, opened before fork(), shared by {workers} workers (port {})",
            m.port
        )?,
        Mode::Reuseport => writeln!(
            out,
            "reuseport  {workers} listeners with SO_REUSEPORT, one per worker, opened after fork() (port {})",
            m.port
        )?,
    }
    match m.seconds {
        Some(s) => writeln!(
            out,
            "  time        {s:.3} s for {} connections ({} connections/s)",
            m.connected,
            fmt_opt(m.connections_per_second, 0)
        )?,
        None => writeln!(out, "  time        - (the clients never started)")?,
    }
    writeln!(out, "  per worker  {}", list(&m.per_worker))?;
    if let Some(w) = &m.empty_wakeups {
        writeln!(out, "  empty wake-ups per worker  {}", list(w))?;
    }
    writeln!(
        out,
        "  max/min     {}",
        m.max_min_ratio.map_or_else(
            || "inf (a worker accepted nothing)".to_string(),
            |v| format!("{v:.3}")
        )
    )?;
    writeln!(
        out,
        "  Jain index  {} (1 = even, 1/{} = one worker took all)",
        fmt_opt(m.jain, 4),
        m.per_worker.len()
    )?;
    if !m.complete {
        let why = match m.stopped {
            Some(Stop::Timeout) => "stopped by --timeout",
            Some(Stop::Interrupted) => "interrupted",
            None => "failed",
        };
        writeln!(
            out,
            "  INCOMPLETE: {why}; {} of {} connections made, {} accepted",
            m.connected, m.connections, m.accepted
        )?;
    }
    for e in &m.errors {
        writeln!(out, "  error: {e}")?;
    }
    Ok(())
}

fn footer(out: &mut impl Write, r: &Report) -> io::Result<()> {
    writeln!(out)?;
    if let Some(ratio) = r.fork_over_reuseport {
        writeln!(
            out,
            "fork / reuseport time: {ratio:.2} (the article: 2.95 with 48 processes on 48 cores; here {} CPUs)",
            r.nproc
        )?;
    }
    if !r.complete {
        writeln!(
            out,
            "incomplete run{}",
            match r.stopped {
                Some(Stop::Timeout) => format!(": --timeout {} s passed", r.timeout_secs),
                Some(Stop::Interrupted) => ": interrupted".to_string(),
                None => String::new(),
            }
        )?;
    }
    Ok(())
}

/// The Linux machinery: sockets, pipes, shared counters and processes, all
/// through `libc`.
#[cfg(target_os = "linux")]
mod linux {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::ptr;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use libc::{c_int, c_void, pid_t};

    use crate::fork::{
        self, errno, local_port, os_error, set_int, sockaddr, Children, Shared, SysError,
        SOCKADDR_LEN,
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
        fork::pipe().map_err(setup)
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
        let flags = libc::SOCK_STREAM
            | libc::SOCK_CLOEXEC
            | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
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
                        libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT => {
                            libc::_exit(2)
                        }
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
        let reset = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
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
            // Reset rather than close: no TIME_WAIT on either side.
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&reset as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
            libc::close(fd);
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
                let n = unsafe {
                    libc::read(self.fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len())
                };
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5, 5, 5, 5]), Some(1.0));
        assert_eq!(jain(&[8, 0, 0, 0]), Some(0.25));
        assert_eq!(jain(&[0, 0]), None);
        let j = jain(&[1, 3]).unwrap();
        assert!((j - 16.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn max_min() {
        assert_eq!(max_min_ratio(&[2, 4, 3]), Some(2.0));
        assert_eq!(max_min_ratio(&[2, 0]), None);
        assert_eq!(max_min_ratio(&[]), None);
    }

    #[test]
    fn defaults_follow_nproc() {
        use crate::{Cli, Command};
        use clap::Parser;
        let Command::Bench(a) = Cli::try_parse_from(["reuseport-agent", "bench"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        assert_eq!(a.worker_count(2), 4);
        assert_eq!(a.client_count(2), 4);
        assert_eq!(a.worker_count(100), 64);
        assert_eq!(a.connections, 2000);
        assert_eq!(a.timeout, 60);
        assert_eq!(a.accept(), Accept::Blocking);
        assert_eq!(a.modes(), &[Mode::Fork, Mode::Reuseport]);
    }
}
