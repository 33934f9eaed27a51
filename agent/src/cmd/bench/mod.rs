//! `bench`: the fork-against-reuseport article's benchmark, one listening socket shared by
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

use thiserror::Error;

mod args;
mod human;
#[cfg(target_os = "linux")]
mod linux;
mod report;

pub use args::{Accept, BenchArgs, Mode, ModeArg};
pub use report::{jain, max_min_ratio, ModeReport, Report, Stop};

use human::{footer, header, mode_summary, note};

/// The most server or client processes a run may fork.
pub const MAX_PROCS: u32 = 1024;

/// The address the workers listen on.
pub const SERVER_ADDR: [u8; 4] = [127, 0, 0, 1];

/// The address of client 0; client `i` uses this plus `i`.
pub const FIRST_CLIENT_ADDR: [u8; 4] = [127, 0, 1, 1];

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
    /// Listening sockets of another program on the port.
    #[error("port {port} already has listening socket(s) outside this run: {found}. They would take part of the connections (an SO_REUSEPORT listener of the same user joins the workers' group), so the counts would be wrong; choose another --port (or --port 0 for a free one), or stop the program that holds them")]
    ForeignListeners {
        /// The port.
        port: u16,
        /// The sockets, described.
        found: String,
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

/// CPUs available to this process (what `nproc` prints).
pub fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
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

impl crate::exit::Ending for Report {
    fn status(&self) -> crate::exit::Status {
        if self.stopped == Some(Stop::Interrupted) {
            crate::exit::Status::Interrupted
        } else {
            crate::exit::all_or_partial(self.complete)
        }
    }
}

crate::exit::refusing!(BenchError);
