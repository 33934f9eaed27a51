//! # reuseport-agent
//!
//! The native companion of Reuseport Lab. It runs the `reuseport-model`
//! crate from the command line: `predict` answers, for each 4-tuple read on
//! standard input, which member of an SO_REUSEPORT group a given Linux
//! kernel hands the connection or datagram to.
//!
//! One module per subcommand, each with one `run` function that reads from
//! any [`std::io::Read`] and writes to any [`std::io::Write`], so the
//! commands can be tested without a process. `main` only parses the command
//! line, calls `run`, and turns the result into an exit status
//! ([`exit`], the one table of statuses).

#![warn(missing_docs)]

use clap::{Parser, Subcommand};

use cmd::{bench, calibrate, observe, predict, record, recover, scenario, verify};

pub mod calllog;
#[cfg(target_os = "linux")]
pub mod cbpf;
pub mod cmd;
pub mod error;
pub mod exit;
pub mod kernel;
#[cfg(unix)]
pub mod lab;
pub mod messages;
#[cfg(target_os = "linux")]
pub mod migrate_req;
#[cfg(unix)]
pub mod output;
#[cfg(target_os = "linux")]
pub mod process;
#[cfg(test)]
mod schema_check;
#[cfg(unix)]
pub mod signals;
pub mod trace;

pub use error::{Error, LineError};

/// Reads a whole file as text, refusing one longer than `cap` bytes (a
/// device such as `/dev/zero`, or a file that is not what the option
/// takes) before holding more than that: the error names the cap and
/// `what` it is the cap of.
pub fn read_capped(path: &std::path::Path, cap: u64, what: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(cap + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "it is longer than {} MiB, the most {what} can be; is it the right file?",
                cap >> 20
            ),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// The date and time of `t` in UTC, RFC 3339 with whole seconds (`…Z`);
/// a time before 1970 (a clock set wrong) reads as 1970-01-01T00:00:00Z.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    jiff::Timestamp::from_second(i64::try_from(secs).unwrap_or(i64::MAX))
        .unwrap_or(jiff::Timestamp::MAX)
        .to_string()
}

/// Writes one line to standard error and ignores a failure: progress and
/// warnings must never end a run, also when standard error is a pipe whose
/// reader has gone (`record … 2>&1 >/dev/null | head -1`), where
/// `eprintln!` would panic.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

#[cfg(unix)]
pub use signals::STOP_SIGNALS;

/// Predicts, and on Linux measures, which SO_REUSEPORT listener the kernel picks.
#[derive(Debug, Parser)]
#[command(name = "reuseport-agent", version, about, long_about = None, after_help = exit::HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Predict the listener chosen for each tuple on stdin (one JSON object per line on stdout).
    ///
    /// Input: one tuple per line, `SADDR SPORT DADDR DPORT` or
    /// `SADDR:SPORT DADDR:DPORT` (IPv6 as `[addr]:port`); S is the client, D
    /// the server. Blank lines and `#` comments are skipped; line numbers count
    /// every physical line from 1.
    ///
    /// Output: JSON Lines, one object per tuple line, in input order:
    /// `{"line", "tuple", "profile", "listener", "slot", "hash"}`, or with
    /// `--explain` the whole explain record plus `line`. A line that cannot
    /// be answered gives `{"line", "error"}` and the run goes on.
    ///
    /// Exit status: 0 when every line was answered, 1 when some line gave an
    /// error object, 2 when the group or the options are impossible (nothing
    /// is printed on stdout then).
    Predict(predict::PredictArgs),
    /// Measure one listener shared by forked servers against one SO_REUSEPORT listener per server (the articles' benchmark, on loopback).
    ///
    /// For each mode, forks --workers server processes on 127.0.0.1 and
    /// --clients client processes that each connect --connections times and
    /// reset (client i from 127.0.1.1 + i). `fork`: one listener opened
    /// before fork(), shared by all workers; `reuseport`: each worker opens
    /// its own SO_REUSEPORT listener after fork(). Reports per mode the time
    /// from the clients' release until the last is done, connections/s, each
    /// worker's accepts, max/min and Jain's fairness index; then the fork /
    /// reuseport time ratio. Every child is killed and reaped when a mode
    /// ends, also on --timeout and Ctrl-C (the counts so far are reported).
    ///
    /// Exit status: 0 when every mode completed, 1 when the run is
    /// incomplete (--timeout, a signal, a failed client; partial results are
    /// printed), 2 when the options are impossible or the run could not be
    /// set up (nothing was measured).
    Bench(bench::BenchArgs),
    /// Record which SO_REUSEPORT member the running Linux kernel picks for each connection or datagram, as a trace file (format v1).
    ///
    /// Sets up --listeners sockets on --bind and --port (members numbered in
    /// listen() order, bind() order for UDP), applies --closed,
    /// --incoming-cpu and --bpf, then drives connections (TCP) or datagrams
    /// (UDP) over loopback one at a time from (client address, source port)
    /// pairs chosen from --seed, and records the member that received each
    /// one. Stops at --count events or after --duration seconds. The trace
    /// (JSON, schema public/traces/schema/trace-v1.schema.json) goes to
    /// --output or stdout; progress goes to stderr twice a second.
    ///
    /// Linux only. Exit status: 0 when the recording finished, 130 when a
    /// signal (SIGINT, SIGTERM, SIGHUP, ...) stopped it (the trace holds
    /// what was recorded), 2 when the options are impossible or the system
    /// refused (the message names the socket, the kernel's errno and what
    /// to change).
    Record(record::RecordArgs),
    /// Recover the kernel's IPv4 reuseport hash key (secret + net_hash_mix) from observed selections, by trying all 2^32 values.
    ///
    /// Input: trace files (positional; validated, the group and kernel come
    /// from each), or `--lines FILE|-` with lines `SADDR SPORT DADDR DPORT
    /// LISTENER` and the group described as for predict (--proto,
    /// --listeners, --bind, --closed, ...). Every observation is checked
    /// against the model first; one that cannot be used (a bad line, an IPv6
    /// tuple, a listener that is closed, a group not selected by the hash
    /// alone) refuses the run. Searches on every CPU (--threads) with
    /// progress on stderr; Ctrl-C stops early and reports the part searched.
    ///
    /// Output: one JSON object: `secret` (0x%08x, the first candidate, or
    /// null), `candidates`, `all` (at most 1000), `form`, `profile`,
    /// `observations`, `expectedFalseMatches`, `seconds`,
    /// `candidatesPerSecond`, `complete`, `isa`, and per-form `searches`.
    ///
    /// Exit status: 0 when exactly one key fits, 1 when none or several
    /// (stderr says which), 2 when the input is refused, 130 when
    /// interrupted (the JSON says `"complete": false`).
    Recover(recover::RecoverArgs),
    /// Diagnose a running server's port from the kernel's socket tables: who holds each listener, who accepted each connection, the key, and why the load is uneven.
    ///
    /// Reads the INET_DIAG tables through sock_diag netlink and the owners
    /// of each socket from /proc (as root it sees every process; otherwise
    /// it says how many it could not read). It never connects, sets an
    /// option or signals anything. With --for it samples queues, drops and
    /// per-worker connections every --every, with progress on stderr.
    /// Then the model groups the listeners, searches the per-boot key with
    /// the owners as labels (a pid is a label, never a listener number),
    /// predicts every connection and gives a verdict: hash-spread,
    /// beyond-hash, shared-listener, stalled-listener, few-clients,
    /// single-listener, no-listener or undecided (with the reason).
    ///
    /// Output: a short summary on stdout; with --json FILE the report
    /// (format reuseport-observe-v1, schema beside the trace schema), with
    /// --json - the report on stdout and the summary on stderr.
    ///
    /// Exit status: 0 when diagnosed, 1 when undecided or a connection
    /// disagrees with its prediction, 2 when refused, 130 when a signal
    /// ended the watch or the search (the report has what was seen).
    Observe(observe::ObserveArgs),
    /// Prove the model on the running kernel (Linux): for each IPv4 group layout,
    /// record fresh traffic, recover the hash key from the first part, predict
    /// the rest with the model, and report agreement.
    ///
    /// Layouts: tcp-specific, tcp-wildcard, udp, udp-wildcard, closed (8
    /// listeners, 1 and 5 closed), large (130 listeners). `--quick` records 300
    /// events per layout (the test suite runs it).
    ///
    /// `--kernels [LIST]` does the same in other kernels: Debian's 5.10, 6.1,
    /// 6.12 and sid images (cached in .cache/kernels/), each booted under QEMU
    /// with a busybox initramfs and a static agent that records there; the keys
    /// are recovered and the rest predicted here. It prints a row per kernel and
    /// names the step that failed (fetch, initramfs, boot, record, check); a
    /// kernel whose guest did not boot is never counted as verified.
    /// `--write-record FILE` writes the verification record the site shows.
    ///
    /// Exit status: 0 when every prediction agrees, 1 when any disagrees or
    /// the key cannot be pinned down, 2 when recording is impossible here.
    Verify(verify::VerifyArgs),
    /// Run a curated scenario of the gallery on the running kernel (or, with --kernel, inside a Debian kernel booted under QEMU), over loopback, and write what it measured in the simulator's report shape.
    ///
    /// For each variant (or those named by --variant): forks the workers
    /// with the variant's accept model (shared listener with blocking
    /// accept(), epoll with or without EPOLLEXCLUSIVE, nginx's accept_mutex,
    /// one SO_REUSEPORT listener each, with SO_INCOMING_CPU and pinning, or
    /// with the CPU BPF program), serving each request by spinning for the
    /// scenario's service time; client processes from 127.0.1.1 up open the
    /// connections at the scenario's times and time the answers; stalls,
    /// leaves, rejoins and added workers happen at their times
    /// (net.ipv4.tcp_migrate_req as the variant says, restored afterwards).
    /// A scenario with more CPUs than this machine runs on all of them with
    /// the arrival rate lowered in proportion; --scale shortens it. Every
    /// child is killed and reaped at the end, at --timeout and on SIGINT,
    /// SIGTERM or SIGHUP. The trace (JSON, schema
    /// public/traces/schema/scenario-v1.schema.json) goes to --output or
    /// stdout; one line per variant to stderr.
    ///
    /// Linux only. Exit status: 0 when every variant run completed, 1 when
    /// one was cut short (the trace holds what was measured), 2 when the
    /// options are impossible or the run could not be set up, 130 on a signal.
    Scenario(scenario::ScenarioArgs),
    /// Fit the simulator's free parameters to the recorded scenario runs (public/traces/scenario-*.json), say where simulation and kernel disagree, and extrapolate fork against reuseport to 2, 8, 16 and 48 CPUs.
    ///
    /// Writes calibration.json beside the traces (or --output): the fitted
    /// parameters, per scenario and variant the share error and the latency
    /// distance with the thresholds, a `disagrees` list in words, the
    /// extrapolated ratios and each parameter's effect on them. `npm run
    /// calibrate` runs it. With --check FILE it fits nothing: it re-simulates
    /// every run with FILE's parameters and exits 1 if any figure FILE states
    /// is not what the simulator gives.
    ///
    /// Exit status: 0 when written (or checked and equal), 1 when --check
    /// found a difference, 2 when the traces cannot be read.
    Calibrate(calibrate::CalibrateArgs),
    /// List the curated recordings behind public/traces (the traces, then the benchmarks), one JSON object a line: `kind`, `file`, `shows`, `args` (the agent's arguments that make it). scripts/record-traces.sh records what this lists.
    ///
    /// Exit status: 0.
    Curated,
}
