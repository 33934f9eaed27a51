//! `observe`: a running server's port, diagnosed from the kernel's socket
//! tables. Gathers a [`Snapshot`] (listeners, their owners and the epoll
//! sets that watch them, queues and drops, every connection and its owner;
//! samples over `--for` every `--every`), then hands it to the model's
//! diagnosis ([`reuseport_model::diagnose`]): the key search with labels,
//! each connection predicted, the verdict. The agent only gathers.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use reuseport_model::batch::Isa;
use reuseport_model::diagnose::{
    prepare, Connection, Diagnosis, Listener, ListenerSample, Sample, Snapshot, VerdictKind,
    WorkerSample,
};
use reuseport_model::profile::Profile;
use reuseport_model::recover::{Found, Plan, SPACE};
use reuseport_model::Proto;

use crate::cmd::recover::parallel_search;
use crate::exit::{Failure, Status};

pub mod serve;
#[cfg(target_os = "linux")]
mod tables;
pub mod trace;

/// `observe`'s options.
#[derive(Debug, Clone, Args)]
pub struct ObserveArgs {
    /// The port the server listens on.
    #[arg(long)]
    pub port: u16,
    /// Only sockets bound to this address (default: every address on the port).
    #[arg(long)]
    pub addr: Option<IpAddr>,
    /// TCP or UDP.
    #[arg(long, default_value = "tcp")]
    pub proto: Proto,
    /// Watch this long, sampling queues and connections (e.g. 10s, 500ms, 2m; default: one look).
    #[arg(long = "for", value_parser = duration_arg)]
    pub duration: Option<Duration>,
    /// Time between samples with --for.
    #[arg(long, value_parser = duration_arg, default_value = "1s")]
    pub every: Duration,
    /// Write the JSON report here (`-`: standard output, and the summary goes to standard error).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Kernel profile whose rules the diagnosis uses (`auto`: the running kernel).
    #[arg(long, default_value = "auto")]
    pub kernel: String,
    /// Threads for the key search (1 to 1024; default: every CPU).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Skip the key search.
    #[arg(long)]
    pub no_search: bool,
    /// Serve Prometheus metrics at http://ADDR/metrics, a new look every --every, until a signal (or --for) ends it; ADDR defaults to 127.0.0.1:9477 and is another address only when named.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = serve::DEFAULT_ADDR)]
    pub serve: Option<SocketAddr>,
    /// --trace and its options.
    #[command(flatten)]
    pub tracing: trace::TraceArgs,
}

/// Parses `10s`, `500ms`, `2m`, or plain seconds; at most one day.
pub fn duration_arg(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration such as 10s, 500ms or 2m"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(format!("{s:?}: the unit must be ms, s, m or h")),
    };
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("{s:?}: give a duration above 0 and at most a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What `observe` can fail on.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    /// The socket tables could not be read.
    #[error("reading the socket tables through sock_diag netlink failed: {0}")]
    Tables(io::Error),
    /// The kernel named is unknown.
    #[error("--kernel: {0}")]
    Kernel(String),
    /// The snapshot is refused by the model.
    #[error("{0}")]
    Diagnose(#[from] reuseport_model::diagnose::DiagnoseError),
    /// Writing the report failed.
    #[error("writing the report to {path}: {source}")]
    Write {
        /// Where.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// Not on Linux.
    #[error("observe reads Linux socket tables; this is not Linux")]
    NotLinux,
    /// The metrics endpoint could not listen.
    #[error("--serve {addr}: cannot listen there: {source} (name another address, e.g. --serve 127.0.0.1:9478)")]
    Serve {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: io::Error,
    },
}

impl Failure for ObserveError {
    fn broken_pipe(&self) -> bool {
        matches!(self, ObserveError::Write { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// The report: what was seen and what the model says of it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The report's format.
    pub format: &'static str,
    /// The kernel release observed (`uname -r`).
    pub kernel_release: String,
    /// What the tables showed (the last look, with every sample).
    pub snapshot: Snapshot,
    /// Processes whose descriptors could not be read (run as root to see all).
    pub unreadable_processes: u32,
    /// Whether a signal ended the watch or the search early.
    pub interrupted: bool,
    /// The diagnosis.
    #[serde(flatten)]
    pub diagnosis: Diagnosis,
    /// What --trace recorded and how it compares with the model, or why it refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceReport>,
}

impl Report {
    /// The exit status this report gives (see `exit`).
    pub fn ending(&self) -> Status {
        if self.interrupted {
            Status::Interrupted
        } else if self.diagnosis.verdict.kind == VerdictKind::Undecided
            || self.diagnosis.agreement.is_some_and(|(a, n)| a != n)
            || self
                .trace
                .as_ref()
                .and_then(|t| t.check.as_ref())
                .is_some_and(|c| !c.exact())
        {
            Status::Partial
        } else {
            Status::Ok
        }
    }
}

/// One look at the tables.
#[cfg(target_os = "linux")]
fn look(args: &ObserveArgs) -> Result<(Vec<Listener>, Vec<Connection>, u32), ObserveError> {
    let sockets = tables::dump(args.proto, args.port).map_err(ObserveError::Tables)?;
    let sockets: Vec<_> = sockets
        .into_iter()
        .filter(|s| tables::on_addr(&s.local, args.addr))
        .collect();
    let h = tables::holders(&tables::inodes(&sockets));
    let mut listeners = Vec::new();
    let mut connections = Vec::new();
    for s in &sockets {
        let owners = h.owners.get(&s.inode).cloned().unwrap_or_default();
        if s.listening(args.proto) {
            listeners.push(Listener {
                id: s.inode.to_string(),
                local: s.local.to_string(),
                owners,
                accepting: h.watched.get(&s.inode).map(|p| p.iter().copied().collect()),
                epoll_sets: h.epoll_sets.get(&s.inode).copied(),
                queue: s.rqueue,
                backlog: if args.proto == Proto::Tcp {
                    s.wqueue
                } else {
                    0
                },
                drops: s.drops,
            });
        } else if s.connection(args.proto) {
            connections.push(Connection {
                client: s.remote.to_string(),
                server: s.local.to_string(),
                owners,
            });
        }
    }
    Ok((listeners, connections, h.unreadable))
}

#[cfg(not(target_os = "linux"))]
fn look(_: &ObserveArgs) -> Result<(Vec<Listener>, Vec<Connection>, u32), ObserveError> {
    Err(ObserveError::NotLinux)
}

fn sample_of(t_ms: u64, listeners: &[Listener], connections: &[Connection]) -> Sample {
    let mut per: BTreeMap<u32, u64> = BTreeMap::new();
    for c in connections {
        if let [o] = c.owners.as_slice() {
            *per.entry(o.pid).or_default() += 1;
        }
    }
    Sample {
        t_ms,
        listeners: listeners
            .iter()
            .map(|l| ListenerSample {
                id: l.id.clone(),
                queue: l.queue,
                drops: l.drops,
            })
            .collect(),
        workers: per
            .into_iter()
            .map(|(pid, connections)| WorkerSample { pid, connections })
            .collect(),
    }
}

/// Runs `observe`; `stop` set by a signal ends the watch or the search
/// with what there is.
pub fn run(
    args: &ObserveArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<Report, ObserveError> {
    let running = crate::kernel::running_release().ok();
    let profile = Profile::resolve(&args.kernel, running.as_deref())
        .map_err(|e| ObserveError::Kernel(e.to_string()))?;
    // The report's file is checked before anything is watched (crate::output).
    let output = match &args.json {
        Some(p) if p.as_os_str() != "-" => Some(crate::output::Output::prepare(p).map_err(
            |source| ObserveError::Write {
                path: p.display().to_string(),
                source,
            },
        )?),
        _ => None,
    };
    let trace_output = match &args.tracing.trace_out {
        Some(p) => {
            Some(
                crate::output::Output::prepare(p).map_err(|source| ObserveError::Write {
                    path: p.display().to_string(),
                    source,
                })?,
            )
        }
        None => None,
    };
    let server = match args.serve {
        Some(addr) => {
            let s = serve::Server::start(addr)
                .map_err(|source| ObserveError::Serve { addr, source })?;
            serve::announce(err, s.addr());
            Some(s)
        }
        None => None,
    };
    // --trace: refused with the reason (the tables alone then), or attached now.
    let mut trace_report = None;
    let tracer = if args.tracing.trace {
        match trace::Tracer::start(&args.tracing, args.port, args.proto, running.as_deref()) {
            Ok(t) => {
                let _ = writeln!(
                    err,
                    "observe: tracing {} with {} on {}",
                    args.port,
                    t.attach,
                    trace::point(t.attach)
                );
                Some(t)
            }
            Err(why) => {
                let _ = writeln!(
                    err,
                    "observe: --trace refused: {why}; observing the socket tables alone"
                );
                trace_report = Some(trace::refused(why));
                None
            }
        }
    } else {
        None
    };
    let mut served = Served::default();
    let started = Instant::now();
    let (mut listeners, mut connections, mut unreadable) = look(args)?;
    let mut samples = vec![sample_of(0, &listeners, &connections)];
    if let Some(s) = &server {
        s.publish(served.look(profile, args, &listeners, &connections, &samples, stop, err));
    }
    // --serve watches until a signal, or for --for when given; --trace for 10 s unless --for says.
    let watch = args
        .duration
        .or(server.as_ref().map(|_| Duration::MAX))
        .or(args.tracing.trace.then_some(Duration::from_secs(10)));
    if let Some(total) = watch {
        while started.elapsed() < total && !stop.load(Ordering::Relaxed) {
            let wake = Instant::now() + args.every;
            while Instant::now() < wake
                && !stop.load(Ordering::Relaxed)
                && started.elapsed() < total
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            (listeners, connections, unreadable) = look(args)?;
            let t = started.elapsed().as_millis() as u64;
            samples.push(sample_of(t, &listeners, &connections));
            if let (Some(t), Some(_)) = (&tracer, &server) {
                let (per_inode, full, rate) = t.live();
                served.totals.selected = per_inode
                    .into_iter()
                    .map(|(inode, n)| (inode.to_string(), n))
                    .collect();
                served.totals.lost = [("ring-full", full), ("rate", rate)].into();
            }
            if let Some(s) = &server {
                // A long watch keeps the last samples only (the diagnosis reads trends from them).
                if samples.len() > SERVE_SAMPLES {
                    samples.drain(..samples.len() - SERVE_SAMPLES);
                }
                s.publish(served.look(
                    profile,
                    args,
                    &listeners,
                    &connections,
                    &samples,
                    stop,
                    err,
                ));
                continue;
            }
            let queued: u32 = listeners.iter().map(|l| l.queue).sum();
            let _ = writeln!(
                err,
                "observe: {:5.1} s of {:.1} s: {} listener(s), {} connection(s), {} queued",
                t as f64 / 1000.0,
                total.as_secs_f64(),
                listeners.len(),
                connections.len(),
                queued
            );
        }
    }
    let snapshot = Snapshot {
        proto: args.proto,
        port: args.port,
        listeners,
        connections,
        samples,
    };
    if let Some(t) = tracer {
        let threads = search_threads(args);
        let locals: BTreeMap<u64, SocketAddr> = snapshot
            .listeners
            .iter()
            .filter_map(|l| Some((l.id.parse().ok()?, l.local.parse().ok()?)))
            .collect();
        trace_report = Some(match t.finish() {
            Err(why) => trace::refused(why),
            Ok(c) => {
                let mut search = |plan: &Plan| {
                    let s = parallel_search(
                        &|r, f: &mut Found| plan.search(Isa::Best, r, f),
                        0..SPACE,
                        threads,
                        stop,
                        " (observe --trace)",
                        false,
                        err,
                    );
                    (s.searched.end == SPACE).then_some(s.found)
                };
                let built = trace::build(
                    &c,
                    profile,
                    running.as_deref().unwrap_or(""),
                    args.proto,
                    args.port,
                    &locals,
                    &mut search,
                );
                let mut report = built.report;
                if let (Some(tr), Some(o), Some(path)) =
                    (&built.trace, trace_output, &args.tracing.trace_out)
                {
                    write_trace(tr, o, path)?;
                    report.file = Some(path.display().to_string());
                }
                report
            }
        });
    }
    let prepared = prepare(profile, &snapshot)?;
    // With --serve a signal is how the watch ends, not an interruption.
    let mut interrupted = stop.load(Ordering::Relaxed) && server.is_none();
    drop(server);
    let found = if let Some(f) = served.key.and_then(|k| confirm(&prepared, k)) {
        Some(f)
    } else if prepared.searchable()
        && !args.no_search
        && !interrupted
        && !stop.load(Ordering::Relaxed)
    {
        let threads = search_threads(args);
        let s = parallel_search(
            &|r, f: &mut Found| prepared.search(r, f),
            0..SPACE,
            threads,
            stop,
            " (observe)",
            false,
            err,
        );
        if s.searched.end < SPACE {
            interrupted = true;
            None
        } else {
            Some(s.found)
        }
    } else {
        None
    };
    let diagnosis = prepared.finish(found.as_ref());
    let report = Report {
        format: "reuseport-observe-v1",
        kernel_release: running.unwrap_or_default(),
        snapshot,
        unreadable_processes: unreadable,
        interrupted,
        diagnosis,
        trace: trace_report,
    };
    let summary = summary(&report);
    let json = serde_json::to_string_pretty(&report).expect("the report serialises");
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            writeln!(out, "{json}").map_err(|source| ObserveError::Write {
                path: "stdout".into(),
                source,
            })?;
            let _ = write!(err, "{summary}");
        }
        Some(p) => {
            let o = output.expect("prepared above");
            o.commit(format!("{json}\n").as_bytes())
                .map_err(|source| ObserveError::Write {
                    path: p.display().to_string(),
                    source,
                })?;
            write!(out, "{summary}").map_err(|source| ObserveError::Write {
                path: "stdout".into(),
                source,
            })?;
        }
        None => write!(out, "{summary}").map_err(|source| ObserveError::Write {
            path: "stdout".into(),
            source,
        })?,
    }
    Ok(report)
}

/// The key search's threads: --threads, or every CPU.
fn search_threads(args: &ObserveArgs) -> u32 {
    args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1)
    })
}

/// Writes the trace to `path` whole or not at all (crate::output).
fn write_trace(
    t: &crate::trace::Trace,
    o: crate::output::Output,
    path: &std::path::Path,
) -> Result<(), ObserveError> {
    let bad = |source| ObserveError::Write {
        path: path.display().to_string(),
        source,
    };
    let json = serde_json::to_string(t).expect("a trace serialises");
    o.commit(format!("{json}\n").as_bytes()).map_err(bad)
}

/// Samples a `--serve` watch keeps for the diagnosis.
const SERVE_SAMPLES: usize = 60;

/// The key, when it still fits the connections `prepared` holds.
fn confirm(prepared: &reuseport_model::diagnose::Prepared, key: u32) -> Option<Found> {
    let mut f = Found::new(1);
    prepared.search(u64::from(key)..u64::from(key) + 1, &mut f);
    (f.count == 1).then_some(f)
}

/// What `--serve` keeps between looks: the key once found (the search runs
/// again only when it stops fitting) and the running totals.
#[derive(Default)]
struct Served {
    key: Option<u32>,
    totals: serve::Totals,
}

impl Served {
    /// Diagnoses one look and gives its metrics.
    #[allow(clippy::too_many_arguments)]
    fn look(
        &mut self,
        profile: &'static Profile,
        args: &ObserveArgs,
        listeners: &[Listener],
        connections: &[Connection],
        samples: &[Sample],
        stop: &AtomicBool,
        err: &mut dyn Write,
    ) -> String {
        let snap = Snapshot {
            proto: args.proto,
            port: args.port,
            listeners: listeners.to_vec(),
            connections: connections.to_vec(),
            samples: samples.to_vec(),
        };
        self.totals.add_look(&snap);
        let prepared = match prepare(profile, &snap) {
            Ok(p) => p,
            Err(e) => {
                let _ = writeln!(err, "observe: this look cannot be diagnosed: {e}");
                return String::from("# EOF\n");
            }
        };
        let mut found = self.key.and_then(|k| confirm(&prepared, k));
        if found.is_none() && prepared.searchable() && !args.no_search {
            self.key = None;
            let threads = args.threads.unwrap_or(1);
            let s = parallel_search(
                &|r, f: &mut Found| prepared.search(r, f),
                0..SPACE,
                threads,
                stop,
                " (observe --serve)",
                true,
                err,
            );
            if s.searched.end == SPACE {
                if s.found.count == 1 {
                    self.key = s.found.values.first().copied();
                }
                found = Some(s.found);
            }
        }
        let d = prepared.finish(found.as_ref());
        let kind = serde_json::to_value(d.verdict.kind).expect("a string");
        let _ = writeln!(
            err,
            "observe: {} listener(s), {} connection(s), verdict {}",
            d.listeners.len(),
            d.connections.len(),
            kind.as_str().unwrap_or("")
        );
        serve::exposition(&snap, &d, &self.totals)
    }
}

/// The human summary, in English from the sentence table.
fn summary(r: &Report) -> String {
    let d = &r.diagnosis;
    let mut s = String::new();
    let kind = serde_json::to_value(d.verdict.kind).expect("a string");
    let kind = kind.as_str().unwrap_or("");
    s.push_str(&format!(
        "{} port {} on {} (model {}): {} listener(s), {} connection(s)\n",
        match d.proto {
            Proto::Tcp => "TCP",
            Proto::Udp => "UDP",
        },
        d.port,
        if r.kernel_release.is_empty() {
            "?"
        } else {
            &r.kernel_release
        },
        d.kernel,
        d.listeners.len(),
        d.connections.len()
    ));
    for l in &d.listeners {
        let owners: Vec<String> = l
            .owners
            .iter()
            .map(|o| format!("{}/{}", o.comm, o.pid))
            .collect();
        s.push_str(&format!(
            "  listener {} {} slot {} queue {}/{} drops {} held by {} accepting {}\n",
            l.id,
            l.local,
            l.slot.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
            l.queue,
            l.backlog,
            l.drops.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
            owners.join(","),
            l.accepting
                .as_ref()
                .map(|a| format!("{a:?}"))
                .unwrap_or_else(|| "?".into()),
        ));
    }
    for w in &d.workers {
        s.push_str(&format!(
            "  worker {} {} connections {} slot {}\n",
            w.pid,
            w.comm,
            w.connections,
            w.slot.map(|x| x.to_string()).unwrap_or_else(|| "?".into())
        ));
    }
    match (&d.key, &d.key_reason) {
        (Some(k), _) => s.push_str(&format!(
            "  key {} (expected false matches {:.2e}, from {} connections)\n",
            k.initval, k.expected_false_matches, k.connections
        )),
        (None, Some(r)) => s.push_str(&format!(
            "  no key: {}\n",
            serde_json::to_string(r).expect("serialises")
        )),
        _ => {}
    }
    if let Some((a, n)) = d.agreement {
        s.push_str(&format!(
            "  predicted: {a} of {n} connections where their owner accepts\n"
        ));
    }
    if let Some(t) = &r.trace {
        s.push_str(&trace_summary(t));
    }
    s.push_str(&format!("verdict: {kind}"));
    if !d.verdict.pids.is_empty() {
        s.push_str(&format!(" (pids {:?})", d.verdict.pids));
    }
    s.push('\n');
    s.push_str(&crate::messages::say(
        "diagnosis_verdict",
        &d.verdict.message(),
    ));
    s.push('\n');
    s
}

impl crate::exit::Ending for Report {
    fn status(&self) -> crate::exit::Status {
        self.ending()
    }
}

/// The summary's lines for --trace.
fn trace_summary(t: &trace::TraceReport) -> String {
    let mut s = String::new();
    if let Some(why) = &t.reason {
        s.push_str(&format!("  trace refused: {why}\n"));
        return s;
    }
    s.push_str(&format!(
        "  trace: {} on {}: {} records, {} kept; lost {} (ring buffer full) and {} (over the rate)\n",
        t.attach.unwrap_or("?"),
        t.symbol,
        t.records,
        t.kept,
        t.lost_ring_full,
        t.lost_rate
    ));
    for l in &t.per_listener {
        s.push_str(&format!(
            "    slot {} inode {} records {}\n",
            l.slot,
            l.inode.map(|i| i.to_string()).unwrap_or_else(|| "?".into()),
            l.records
        ));
    }
    if let Some(c) = &t.check {
        match &c.key_reason {
            Some(why) if c.choice_tested > 0 => s.push_str(&format!(
                "  trace: hashes not checked ({why}); chosen socket {} of {} against the model ({})\n",
                c.choice_agreed, c.choice_tested, c.profile
            )),
            Some(why) => s.push_str(&format!("  trace not checked: {why}\n")),
            None => s.push_str(&format!(
                "  trace against the model ({}): hash {} of {}, chosen socket {} of {}{}\n",
                c.profile,
                c.hash_agreed,
                c.hash_tested,
                c.choice_agreed,
                c.choice_tested,
                if c.not_by_hash > 0 {
                    format!(
                        " ({} a program or SO_INCOMING_CPU could decide)",
                        c.not_by_hash
                    )
                } else {
                    String::new()
                }
            )),
        }
        for m in &c.mismatches {
            s.push_str(&format!("    differs: {m}\n"));
        }
    }
    s
}
