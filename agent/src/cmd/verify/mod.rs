//! `verify`: the proof that the model is the kernel. For each group layout it
//! records fresh traffic on the running kernel ([`crate::cmd::record`]), recovers
//! the hash key from the first part of the trace ([`crate::cmd::recover`]'s
//! search over all 2^32 values), then predicts every remaining connection
//! with the model and counts agreement. Anything below 100% is a failure.
//!
//! IPv4 only: an IPv6 key is two independent 32-bit values (2^64
//! candidates), so IPv6 is checked structurally by the record tests instead.

pub mod calldraw;
pub mod differential;
pub mod ebpf;
pub mod kernels;
pub mod migrate;
pub mod programs;

use std::io::Write;
use std::sync::atomic::AtomicBool;

use clap::{Args, ValueEnum};
use reuseport_model::batch::Isa;
use reuseport_model::lookup::Host;
use reuseport_model::recover::Plan;
use reuseport_model::{Keys, Profile};
use serde::Serialize;
use thiserror::Error;

use crate::cmd::predict::ProtoArg;
use crate::cmd::record::{self, RecordArgs, RecordError};
use crate::cmd::recover::parallel_search;

/// The layouts `verify` can check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LayoutName {
    /// TCP, 8 listeners on 127.0.0.1.
    TcpSpecific,
    /// TCP, 8 listeners on 0.0.0.0 (the hash sees local address 0 from 5.0).
    TcpWildcard,
    /// UDP, 8 sockets on 127.0.0.1.
    Udp,
    /// UDP, 8 sockets on 0.0.0.0.
    UdpWildcard,
    /// TCP, 8 listeners with 1 and then 5 closed before traffic.
    Closed,
    /// TCP, 130 listeners: past 128 members socks[] doubles.
    Large,
}

impl LayoutName {
    /// Every layout, in the order `verify` checks them.
    pub fn all() -> Vec<LayoutName> {
        vec![
            LayoutName::TcpSpecific,
            LayoutName::TcpWildcard,
            LayoutName::Udp,
            LayoutName::UdpWildcard,
            LayoutName::Closed,
            LayoutName::Large,
        ]
    }

    /// The layout's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LayoutName::TcpSpecific => "tcp-specific",
            LayoutName::TcpWildcard => "tcp-wildcard",
            LayoutName::Udp => "udp",
            LayoutName::UdpWildcard => "udp-wildcard",
            LayoutName::Closed => "closed",
            LayoutName::Large => "large",
        }
    }

    /// The group this layout records, every other option at its default.
    pub fn group(self) -> RecordArgs {
        use std::net::Ipv4Addr;
        let on = |proto, bind: Ipv4Addr| RecordArgs {
            bind: bind.into(),
            ..RecordArgs::new(proto, 8)
        };
        match self {
            LayoutName::TcpSpecific => on(ProtoArg::Tcp, Ipv4Addr::LOCALHOST),
            LayoutName::TcpWildcard => on(ProtoArg::Tcp, Ipv4Addr::UNSPECIFIED),
            LayoutName::Udp => on(ProtoArg::Udp, Ipv4Addr::LOCALHOST),
            LayoutName::UdpWildcard => on(ProtoArg::Udp, Ipv4Addr::UNSPECIFIED),
            LayoutName::Closed => RecordArgs {
                closed: vec![1, 5],
                ..RecordArgs::new(ProtoArg::Tcp, 8)
            },
            LayoutName::Large => RecordArgs::new(ProtoArg::Tcp, 130),
        }
    }

    /// `verify`'s recording of this layout: [`Self::group`] driven by 64
    /// clients, `count` events, pairs drawn from `seed`.
    pub fn recorded(self, count: u64, seed: u64) -> RecordArgs {
        RecordArgs {
            clients: Some(64),
            count,
            seed,
            ..self.group()
        }
    }

    /// The same recording as a `record` command line (for a guest kernel).
    pub fn record_args(self, count: u64, seed: u64) -> Vec<String> {
        self.recorded(count, seed).argv()
    }
}

/// What `--layouts` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LayoutsArg {
    /// These curated group layouts.
    Named(Vec<LayoutName>),
    /// This many random layouts (`verify --layouts N`).
    Random(u32),
}

/// Parses `--layouts`: a number, or layout names separated by commas.
pub fn layouts_arg(s: &str) -> Result<LayoutsArg, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<u32>() {
            Ok(n) if (1..=crate::cmd::verify::differential::MAX_LAYOUTS).contains(&n) => {
                Ok(LayoutsArg::Random(n))
            }
            _ => Err(format!(
                "the number of random layouts must be 1 to {}; got {s}",
                crate::cmd::verify::differential::MAX_LAYOUTS
            )),
        };
    }
    s.split(',')
        .map(|name| {
            <LayoutName as ValueEnum>::from_str(name.trim(), true).map_err(|_| {
                let all: Vec<&str> = LayoutName::all().iter().map(|l| l.name()).collect();
                format!(
                    "unknown layout '{name}': give a number of random layouts, or names among {}",
                    all.join(", ")
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(LayoutsArg::Named)
}

/// Options of `verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// Either curated group layouts to check, comma-separated (tcp-specific,
    /// tcp-wildcard, udp, udp-wildcard, closed, large; all by default), or a
    /// number N: the differential test of the lookup and bind rules on N
    /// random layouts drawn from --seed (agent/src/cmd/verify/calldraw.rs). With
    /// --kernels, N random layouts are built in each guest besides the
    /// curated ones, and their answers compared with the model here.
    #[arg(long, value_name = "N|NAMES", value_parser = layouts_arg)]
    pub layouts: Option<LayoutsArg>,
    /// Connections or datagrams recorded per layout (1 or more).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// How many of them recover the key (1 or more; default 48); the rest
    /// are predicted. Not with --layouts N, which recovers no key.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub train: Option<u64>,
    /// A short run for the test suite: 300 events per layout (not with --count).
    #[arg(long, conflicts_with = "count")]
    pub quick: bool,
    /// Search threads, 1 to 1024 (default: every CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Seed of the client addresses and ports, and of the random layouts.
    #[arg(long, default_value_t = 11)]
    pub seed: u64,
    /// One JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Check traces already recorded (`reuseport-agent record` files) instead of
    /// recording: recover the key from the first `--train` events of each and
    /// predict the rest. Traces selected by a program or `SO_INCOMING_CPU`, and
    /// IPv6 traces, are refused (their key cannot be searched).
    #[arg(long = "trace", value_name = "FILE", conflicts_with_all = ["layouts", "quick"])]
    pub traces: Vec<std::path::PathBuf>,
    /// With --layouts N: draw call logs as programs make them (an option
    /// set after bind, binds in another order than the sockets were made,
    /// shutdown and listen again, closes between binds) and compare every
    /// call's answer (agent/src/calldraw.rs), instead of the layout draw.
    /// `verify --kernels --layouts N` runs both draws in each guest.
    #[arg(long)]
    pub call_logs: bool,
    /// With --layouts N, inside a `verify --kernels` guest: only build and
    /// probe the layouts on this kernel, writing its answers as JSON lines to
    /// --output; the host compares them with the model.
    #[arg(long, hide = true, requires = "output")]
    pub kernel_answers: bool,
    /// The file --kernel-answers writes.
    #[arg(long, value_name = "FILE", hide = true, requires = "kernel_answers")]
    pub output: Option<std::path::PathBuf>,
    /// Classic BPF programs on the live kernel (root; a private network
    /// namespace): N random valid programs, each attached to a UDP group and
    /// fed datagrams with random payloads, every datagram compared with the
    /// model; and N mutated programs, where the kernel must refuse (EINVAL)
    /// exactly those the model refuses. Drawn from --seed.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=programs::MAX_PROGRAMS as i64), conflicts_with_all = ["layouts", "traces", "program"])]
    pub programs: Option<u32>,
    /// One program of your own, checked the same way: a classic program as
    /// JSON (`{"kind": "cbpf", "insns": [...]}`), bpf_asm text or
    /// tcpdump -dd; or an ELF object clang wrote (its first program; see
    /// --ebpf-kind), loaded with libbpf and attached with
    /// SO_ATTACH_REUSEPORT_EBPF.
    #[arg(long, value_name = "FILE", value_parser = crate::cmd::predict::program_arg, conflicts_with_all = ["layouts", "traces"])]
    pub program: Option<reuseport_model::reuseport::Program>,
    /// The kind of an ELF program whose section name does not say it
    /// (sk_reuseport, sk_reuseport_migrate or socket_filter), as a loader
    /// sets it in code.
    #[arg(long, value_name = "KIND", requires = "program")]
    pub ebpf_kind: Option<String>,
    /// Where the children of a listener that shuts down go (5.14+), on the
    /// live kernel beside the model (root; a private network namespace):
    /// the ELF object's `sk_reuseport/migrate` program with three routes
    /// (a socket, SK_DROP, a failed selection), then no program with
    /// net.ipv4.tcp_migrate_req 1 and 0. See `verify/migrate.rs`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["layouts", "traces", "program", "programs"])]
    pub migrate: Option<std::path::PathBuf>,
    /// `--kernels`: the same proof in Debian's kernels booted under QEMU (agent/src/kernels.rs).
    #[command(flatten)]
    pub kernels: crate::cmd::verify::kernels::KernelsArgs,
}

/// `--train`'s default.
pub const DEFAULT_TRAIN: u64 = 48;

impl VerifyArgs {
    /// Training events: `--train`, or [`DEFAULT_TRAIN`].
    pub fn train(&self) -> usize {
        usize::try_from(self.train.unwrap_or(DEFAULT_TRAIN)).unwrap_or(usize::MAX)
    }

    /// Refuses options that the form of `verify` asked for would ignore,
    /// naming them.
    pub fn check(&self) -> Result<(), String> {
        let random = matches!(self.layouts, Some(LayoutsArg::Random(_)));
        if self.call_logs && !random {
            return Err("--call-logs draws random call logs: it needs --layouts N (a number); with named layouts, --trace or none it would be ignored".into());
        }
        if random && self.train.is_some() {
            return Err("--train sets how many events recover a key, and --layouts N recovers none (it compares bind, listen and lookup answers); drop --train".into());
        }
        Ok(())
    }

    /// The curated layouts asked for: all unless `--layouts` names some.
    pub fn named_layouts(&self) -> Vec<LayoutName> {
        match &self.layouts {
            Some(LayoutsArg::Named(v)) if !v.is_empty() => v.clone(),
            _ => LayoutName::all(),
        }
    }
}

/// Why `verify` could not run.
#[derive(Debug, Error)]
pub enum VerifyError {
    /// A trace file could not be read.
    #[error("{0}")]
    Trace(#[from] crate::trace::TraceError),
    /// Recording failed.
    #[error("recording layout {layout} failed: {source}")]
    Record {
        /// The layout.
        layout: &'static str,
        /// The cause.
        source: RecordError,
    },
    /// The trace cannot be used to recover the key.
    #[error("layout {layout}: {problem}")]
    Recover {
        /// The layout (or the trace file).
        layout: String,
        /// What is wrong.
        problem: String,
    },
    /// `--layouts N` could not run.
    #[error("{0}")]
    Layouts(#[from] crate::cmd::verify::differential::LayoutsError),
    /// Options that this form of `verify` would ignore.
    #[error("{0}")]
    Options(String),
    /// Writing the report failed.
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
}

impl VerifyError {
    /// True when stdout was closed early (`| head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, VerifyError::Io(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// One layout's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutResult {
    /// Layout name, or the trace file for `--trace`.
    pub layout: String,
    /// `tcp` or `udp`.
    pub proto: String,
    /// `ipv4`.
    pub family: &'static str,
    /// Bound address.
    pub bind: String,
    /// Group size.
    pub listeners: u32,
    /// Closed before traffic.
    pub closed: Vec<u32>,
    /// The kernel's release and the profile it maps to.
    pub kernel: String,
    /// Profile.
    pub profile: String,
    /// Events recorded.
    pub events: usize,
    /// Events that recovered the key.
    pub train: usize,
    /// Candidates the full search found (1 when the key is pinned down).
    pub candidates: u64,
    /// The key, hex.
    pub secret: Option<String>,
    /// Expected false matches for the training evidence.
    pub expected_false_matches: f64,
    /// Seconds of the full 2^32 search.
    pub recover_seconds: f64,
    /// Events predicted.
    pub tested: usize,
    /// Predictions equal to the kernel's choice.
    pub agreed: usize,
    /// `agreed / tested`, percent.
    pub percent: f64,
    /// The first disagreements, if any.
    pub mismatches: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Per layout.
    pub layouts: Vec<LayoutResult>,
    /// All at 100%.
    pub exact: bool,
    /// A terminating signal stopped the run: `layouts` are those finished
    /// before it (exit status 130).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl Report {
    /// The report of `layouts`: exact when every one predicted something
    /// and agreed on all of it.
    pub fn new(layouts: Vec<LayoutResult>) -> Report {
        let exact = layouts.iter().all(|r| r.tested > 0 && r.agreed == r.tested);
        Report {
            layouts,
            exact,
            interrupted: false,
        }
    }

    /// The report of a run that compares packets, not layouts (the program
    /// and migrate checks): exact as the run says, interrupted when a
    /// terminating signal stopped it.
    fn of_packets(exact: bool) -> Report {
        Report {
            layouts: Vec::new(),
            exact,
            interrupted: stopping(),
        }
    }
}

/// How `verify` records `name`: [`LayoutName::recorded`], and for a
/// wildcard group, which would listen on every address of the host, a
/// private network namespace (record --netns, only lo) when `root` can make
/// one.
pub fn recording(name: LayoutName, count: u64, seed: u64, root: bool) -> RecordArgs {
    let mut rec = name.recorded(count, seed);
    rec.netns = root && rec.bind.is_unspecified();
    rec
}

fn check_layout(
    name: LayoutName,
    args: &VerifyArgs,
    count: u64,
    err: &mut dyn Write,
) -> Result<LayoutResult, VerifyError> {
    let layout = name.name();
    let rec = recording(name, count, args.seed, record::is_root());
    if rec.bind.is_unspecified() {
        let _ = if rec.netns {
            writeln!(
                err,
                "verify: {layout}: binds {} inside a private network namespace (only lo), not on the host",
                rec.bind
            )
        } else {
            writeln!(
                err,
                "verify: {layout}: binds {} on the host for about a second (run as root to record it in a private network namespace)",
                rec.bind
            )
        };
    }
    let (trace, _) =
        record::record(&rec).map_err(|source| VerifyError::Record { layout, source })?;
    check_trace(layout.to_string(), &trace, args, err)
}

/// Recovers the key from the first `args.train` events of `trace` (a
/// search over all 2^32 keys) and predicts the rest with the model.
fn check_trace(
    layout: String,
    trace: &crate::trace::Trace,
    args: &VerifyArgs,
    err: &mut dyn Write,
) -> Result<LayoutResult, VerifyError> {
    check_trace_among(layout, trace, args, 0..1u64 << 32, stop_flag(), err)
}

/// The flag a terminating signal sets while `verify` runs
/// ([`crate::signals::STOP`]).
pub(crate) fn stop_flag() -> &'static AtomicBool {
    #[cfg(unix)]
    return &crate::signals::STOP;
    #[cfg(not(unix))]
    {
        static NEVER: AtomicBool = AtomicBool::new(false);
        &NEVER
    }
}

/// Whether a terminating signal asked the run to stop.
pub(crate) fn stopping() -> bool {
    stop_flag().load(std::sync::atomic::Ordering::SeqCst)
}

/// [`check_trace`] with the search over `keys` only (the tests search a
/// small part of the key space), stopped when `stop` is set.
fn check_trace_among(
    layout: String,
    trace: &crate::trace::Trace,
    args: &VerifyArgs,
    keys: std::ops::Range<u64>,
    stop: &AtomicBool,
    err: &mut dyn Write,
) -> Result<LayoutResult, VerifyError> {
    let bad = |problem: String| VerifyError::Recover {
        layout: layout.clone(),
        problem,
    };
    if trace.group.bpf.is_some() || !trace.group.incoming_cpu.is_empty() {
        return Err(bad("the choice was made by a program or SO_INCOMING_CPU, not by the hash alone, so the key cannot be recovered from it".into()));
    }
    if trace.group.bind.is_ipv6() {
        return Err(bad(
            "an IPv6 key is two 32-bit values and cannot be searched".into(),
        ));
    }
    // The release is quoted in the model's answer; a huge one is cut.
    let profile = Profile::for_release(&trace.kernel.release)
        .map_err(|e| bad(crate::trace::tamed(&e.to_string())))?;
    let group = Host::shorthand_group(profile, &trace.group.spec(Keys::default()))
        .map_err(|e| bad(e.to_string()))?;
    let train = args.train().min(trace.events.len() / 2);
    let mut plan = Plan::new(&group).map_err(|e| bad(e.to_string()))?;
    for e in &trace.events[..train] {
        plan.add(0, &e.tuple(), e.listener)
            .map_err(|e| bad(e.to_string()))?;
    }
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let searched = parallel_search(
        &|r, f| plan.search(Isa::Best, r, f),
        keys,
        threads,
        stop,
        &format!(" {layout}"),
        true,
        err,
    );
    let key = (searched.found.count == 1).then(|| searched.found.values[0]);
    let tested_events = &trace.events[train..];
    let mut agreed = 0;
    let mut mismatches = Vec::new();
    if let Some(k) = key {
        let g = Host::shorthand_group(
            profile,
            &trace.group.spec(Keys {
                v4: k,
                v6_outer: 0,
                v6_inner: 0,
            }),
        )
        .map_err(|e| bad(e.to_string()))?;
        for e in tested_events {
            let got = g.select(&e.tuple(), 0).ok().and_then(|c| c.listener);
            if got == Some(e.listener) {
                agreed += 1;
            } else if mismatches.len() < 5 {
                mismatches.push(format!(
                    "{} {} -> {}: kernel {}, model {:?}",
                    e.saddr, e.sport, e.dport, e.listener, got
                ));
            }
        }
    }
    let tested = tested_events.len();
    Ok(LayoutResult {
        layout: layout.clone(),
        proto: format!("{:?}", trace.group.proto).to_lowercase(),
        family: "ipv4",
        bind: trace.group.bind.to_string(),
        listeners: trace.group.listeners,
        closed: trace.group.closed.clone(),
        kernel: trace.kernel.release.clone(),
        profile: profile.release.to_string(),
        events: trace.events.len(),
        train,
        candidates: searched.found.count,
        secret: key.map(|k| format!("0x{k:08x}")),
        expected_false_matches: plan.expected_false_matches(),
        recover_seconds: searched.seconds,
        tested,
        agreed,
        percent: if tested == 0 {
            0.0
        } else {
            100.0 * agreed as f64 / tested as f64
        },
        mismatches,
    })
}

/// Training events that leave about 0.01 false keys among 2^32 when each
/// event, one of `members` equally likely listeners, rules out all but
/// 1/`members` of them: 2^32 / members^T < 0.01.
pub fn events_needed(members: u32) -> usize {
    if members < 2 {
        return 0;
    }
    ((32.0 + 100f64.log2()) / f64::from(members).log2()).ceil() as usize
}

/// `verify --layouts N`: the differential test ([`crate::cmd::verify::calldraw`]); the
/// report is exact when every layout agreed.
#[cfg(target_os = "linux")]
fn random_layouts(
    args: &VerifyArgs,
    count: u32,
    out: impl Write,
    err: &mut dyn Write,
) -> Result<Report, VerifyError> {
    use crate::cmd::verify::calldraw::{CallLogs, Layouts};
    use crate::cmd::verify::differential::{run, run_kernel_side};
    let opts = crate::cmd::verify::differential::Options {
        count,
        seed: args.seed,
        json: args.json,
    };
    if let (true, Some(path)) = (args.kernel_answers, &args.output) {
        // Only the kernel's side: nothing is compared here, so nothing is
        // reported exact or not; the exit status says the file was written.
        if args.call_logs {
            run_kernel_side::<CallLogs>(&opts, path)?;
        } else {
            run_kernel_side::<Layouts>(&opts, path)?;
        }
        return Ok(Report {
            layouts: Vec::new(),
            exact: true,
            interrupted: false,
        });
    }
    let (exact, interrupted) = if args.call_logs {
        let r = run::<CallLogs>(&opts, out, err)?;
        (r.exact(), r.interrupted)
    } else {
        let r = run::<Layouts>(&opts, out, err)?;
        (r.exact(), r.interrupted)
    };
    Ok(Report {
        layouts: Vec::new(),
        exact,
        interrupted,
    })
}

#[cfg(not(target_os = "linux"))]
fn random_layouts(
    _: &VerifyArgs,
    _: u32,
    _: impl Write,
    _: &mut dyn Write,
) -> Result<Report, VerifyError> {
    Err(VerifyError::Layouts(
        crate::cmd::verify::differential::LayoutsError::Kernel(
            "the layouts are built on a Linux kernel".into(),
        ),
    ))
}

/// The human report: one row per layout, a paragraph per ambiguous key
/// (how many training events would pin it down), and the verdict: exact,
/// DISAGREEMENT, or NOT VERIFIED when no key was pinned down.
fn write_table(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<13} {:<4} {:<10} {:>5} {:>7} {:>6} {:>12} {:>8} {:>9} {:>8}",
        "layout",
        "prot",
        "bind",
        "socks",
        "kernel",
        "train",
        "secret",
        "search s",
        "predicted",
        "agree"
    )?;
    for r in &report.layouts {
        writeln!(
            out,
            "{:<13} {:<4} {:<10} {:>5} {:>7} {:>6} {:>12} {:>8.2} {:>9} {:>7.2}%",
            r.layout,
            r.proto,
            r.bind,
            r.listeners,
            r.profile,
            r.train,
            r.secret.as_deref().unwrap_or(if r.candidates == 0 {
                "none"
            } else {
                "ambiguous"
            }),
            r.recover_seconds,
            r.tested,
            r.percent
        )?;
        for m in &r.mismatches {
            writeln!(out, "    mismatch: {m}")?;
        }
    }
    let ambiguous: Vec<&LayoutResult> =
        report.layouts.iter().filter(|r| r.candidates > 1).collect();
    for r in &ambiguous {
        let members = r.listeners.saturating_sub(r.closed.len() as u32);
        let need = events_needed(members);
        if need == 0 {
            writeln!(
                out,
                "verify: {}: the key is ambiguous: with {members} open member every key fits, so a trace of this group cannot pin it down",
                r.layout
            )?;
            continue;
        }
        writeln!(
            out,
            "verify: {}: the key is ambiguous: {} keys fit the {} training events, so nothing was predicted; about {need} training events pin it down (--train {need} with --count at least {})",
            r.layout,
            r.candidates,
            r.train,
            2 * need
        )?;
    }
    let disagrees = report
        .layouts
        .iter()
        .any(|r| r.candidates == 0 || (r.candidates == 1 && r.agreed != r.tested));
    writeln!(
        out,
        "{}",
        if report.interrupted {
            "verify: INTERRUPTED by a signal: the rows above are the layouts finished before it; the rest were not run"
        } else if report.exact {
            "verify: the model predicted every connection exactly"
        } else if disagrees {
            "verify: DISAGREEMENT: the model is not exact here"
        } else {
            "verify: NOT VERIFIED: too few training events to recover the key (see above); the model was neither confirmed nor refuted"
        }
    )?;
    Ok(())
}

/// `verify --program FILE.o` ([`ebpf`]).
#[cfg(feature = "trace")]
fn live_ebpf(
    args: &VerifyArgs,
    program: &reuseport_model::reuseport::ebpf::EbpfProgram,
    profile: &'static reuseport_model::Profile,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<Report, VerifyError> {
    use reuseport_model::reuseport::ebpf::ProgKind;
    let mut program = program.clone();
    if let Some(k) = &args.ebpf_kind {
        program.kind = Some(match k.as_str() {
            "sk_reuseport" => ProgKind::SkReuseport,
            "sk_reuseport_migrate" => ProgKind::SkReuseportMigrate,
            "socket_filter" => ProgKind::SocketFilter,
            other => {
                return Err(VerifyError::Options(format!(
                    "--ebpf-kind {other}: give sk_reuseport, sk_reuseport_migrate or socket_filter"
                )))
            }
        });
    }
    if program.kind.is_none() {
        return Err(VerifyError::Options(format!(
            "section `{}` does not say the program's kind: give --ebpf-kind",
            program.section
        )));
    }
    let rep = ebpf::run(profile, &program, args.seed, err)?;
    if args.json {
        serde_json::to_writer(&mut out, &rep).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "ebpf {}: sent {}  compared {}  agreed {}  not compared (a random draw, or the hash without its key) {}  undecided {}",
            rep.program, rep.sent, rep.compared, rep.agreed, rep.not_compared, rep.undecided
        )?;
        match &rep.hash_key {
            Some(k) => writeln!(
                out,
                "  of them, the hash decided (key {k}): {}, agreed {}",
                rep.by_hash, rep.by_hash_agreed
            )?,
            None => writeln!(
                out,
                "  the hash key was not recovered: the hash's datagrams are not compared"
            )?,
        }
        for m in &rep.mismatches {
            writeln!(out, "  mismatch: {m}")?;
        }
    }
    Ok(Report::of_packets(rep.exact()))
}

/// What `--program FILE.o` and `--migrate` answer in a build without libbpf.
#[cfg(not(feature = "trace"))]
fn no_libbpf() -> Result<Report, VerifyError> {
    Err(VerifyError::Options(
        "this build has no libbpf (feature `trace`): it cannot load an ELF object".into(),
    ))
}

#[cfg(not(feature = "trace"))]
fn live_ebpf(
    _: &VerifyArgs,
    _: &reuseport_model::reuseport::ebpf::EbpfProgram,
    _: &'static reuseport_model::Profile,
    _: impl Write,
    _: &mut dyn Write,
) -> Result<Report, VerifyError> {
    no_libbpf()
}

/// `verify --migrate FILE.o` ([`migrate`]).
#[cfg(feature = "trace")]
fn live_migrate(
    args: &VerifyArgs,
    path: &std::path::Path,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<Report, VerifyError> {
    let profile =
        crate::kernel::resolve("auto").map_err(|e| VerifyError::Options(e.to_string()))?;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| {
            use std::io::Read as _;
            f.take(reuseport_model::reuseport::ebpf::MAX_ELF_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|e| VerifyError::Options(format!("--migrate {}: {e}", path.display())))?;
    let program = migrate::migrate_program(&bytes)
        .map_err(|e| VerifyError::Options(format!("--migrate {}: {e}", path.display())))?;
    let rep = migrate::run(profile, &program, args.seed, err)?;
    if args.json {
        serde_json::to_writer(&mut out, &rep).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "migrate {}: hash key {}",
            rep.program,
            rep.hash_key.as_deref().unwrap_or("not recovered")
        )?;
        for c in &rep.cases {
            writeln!(
                out,
                "  {}: children {}  compared {}  agreed {}  not compared (the hash, no key) {}  kernel accepted per socket, then reset {:?}",
                c.name, c.children, c.compared, c.agreed, c.not_compared, c.kernel
            )?;
            if let Some((k, m)) = &c.bss {
                writeln!(out, "    .bss kernel {k}  model {m}")?;
            }
            for m in &c.mismatches {
                writeln!(out, "    mismatch: {m}")?;
            }
        }
    }
    Ok(Report::of_packets(rep.exact()))
}

#[cfg(not(feature = "trace"))]
fn live_migrate(
    _: &VerifyArgs,
    _: &std::path::Path,
    _: impl Write,
    _: &mut dyn Write,
) -> Result<Report, VerifyError> {
    no_libbpf()
}

/// `verify --programs N` / `--program FILE` ([`programs`]).
fn live_programs(
    args: &VerifyArgs,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<Report, VerifyError> {
    use reuseport_model::reuseport::Program;
    let profile =
        crate::kernel::resolve("auto").map_err(|e| VerifyError::Options(e.to_string()))?;
    let given = match &args.program {
        Some(Program::Ebpf { program, .. }) => return live_ebpf(args, program, profile, out, err),
        Some(Program::Cbpf { insns }) => Some(insns.clone()),
        Some(_) => {
            return Err(VerifyError::Options(
                "--program checks classic BPF programs; this kind has no classic form".into(),
            ))
        }
        None => None,
    };
    if let Some(g) = &given {
        if let Err(e) = reuseport_model::reuseport::cbpf::check(g) {
            writeln!(err, "verify: the model refuses the program: {e}")?;
        }
    }
    let rep = programs::run(
        profile,
        args.programs.unwrap_or(1),
        args.seed,
        given.as_deref(),
        err,
    )?;
    if args.json {
        serde_json::to_writer(&mut out, &rep).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "programs {}  checker {}/{}",
            rep.programs, rep.checks_agreed, rep.checked
        )?;
        let payloads = if rep.syn_payloads {
            "SYNs with Fast Open payloads"
        } else {
            "SYNs (no payload: Fast Open could not be set)"
        };
        for (what, c) in [("UDP datagrams", &rep.udp), (payloads, &rep.tcp)] {
            writeln!(
                out,
                "  {what}: compared {}  agreed {}",
                c.compared, c.agreed
            )?;
            match &c.hash_key {
                Some(k) => writeln!(
                    out,
                    "    of them, index out of range (the hash decides, key {k}): {}, agreed {}",
                    c.fallback, c.fallback_agreed
                )?,
                None => writeln!(
                    out,
                    "    index out of range (the hash decides; its key was not recovered, not compared): {}",
                    c.fallback
                )?,
            }
        }
        for m in &rep.mismatches {
            writeln!(out, "  mismatch: {m}")?;
        }
    }
    Ok(Report::of_packets(rep.exact()))
}

/// Runs `verify`: writes the report to `out`, progress to `err`.
pub fn run(
    args: &VerifyArgs,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<Report, VerifyError> {
    args.check().map_err(VerifyError::Options)?;
    // Until the run ends, a terminating signal stops it; the rows finished
    // so far are printed (exit status 130).
    #[cfg(unix)]
    let _signals = crate::signals::Guard::install(crate::signals::Second::Ends)?;
    if let Some(LayoutsArg::Random(count)) = args.layouts {
        return random_layouts(args, count, out, err);
    }
    if args.programs.is_some() || args.program.is_some() {
        return live_programs(args, out, err);
    }
    if let Some(path) = &args.migrate {
        return live_migrate(args, path, out, err);
    }
    let layouts = args.named_layouts();
    let count = if args.quick { 300 } else { args.count };
    let mut results = Vec::new();
    let mut interrupted = false;
    for path in &args.traces {
        if stopping() {
            interrupted = true;
            break;
        }
        let trace = crate::trace::Trace::read(path)?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        writeln!(
            err,
            "verify: {name}: recovering the key from {} events, predicting the rest",
            args.train()
        )?;
        let r = check_trace(name, &trace, args, err);
        // A layout a signal cut short is not a row: its search or
        // recording is partial.
        if stopping() {
            interrupted = true;
            break;
        }
        results.push(r?);
    }
    let layouts = if args.traces.is_empty() {
        layouts
    } else {
        Vec::new()
    };
    for l in layouts {
        if stopping() || interrupted {
            interrupted = true;
            break;
        }
        writeln!(
            err,
            "verify: {}: recording {count} events, recovering the key from {}, predicting the rest",
            l.name(),
            args.train()
        )?;
        let r = check_layout(l, args, count, err);
        if stopping() {
            interrupted = true;
            break;
        }
        results.push(r?);
    }
    let mut report = Report::new(results);
    report.interrupted = interrupted;
    if args.json {
        serde_json::to_writer(&mut out, &report).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        write_table(&report, &mut out)?;
    }
    Ok(report)
}

impl crate::exit::Ending for Report {
    fn status(&self) -> crate::exit::Status {
        if self.interrupted {
            crate::exit::Status::Interrupted
        } else {
            crate::exit::all_or_partial(self.exact)
        }
    }
}

crate::exit::refusing!(VerifyError);

#[cfg(test)]
mod layout_tests {
    use super::*;
    use clap::Parser;

    /// The layouts the help text names, built in code, are the recordings
    /// these command lines ask for (the table `verify` had as argv).
    #[test]
    fn each_layout_records_the_group_its_help_describes() {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            args: RecordArgs,
        }
        for (name, group) in [
            (
                LayoutName::TcpSpecific,
                "--proto tcp --listeners 8 --bind 127.0.0.1",
            ),
            (
                LayoutName::TcpWildcard,
                "--proto tcp --listeners 8 --bind 0.0.0.0",
            ),
            (
                LayoutName::Udp,
                "--proto udp --listeners 8 --bind 127.0.0.1",
            ),
            (
                LayoutName::UdpWildcard,
                "--proto udp --listeners 8 --bind 0.0.0.0",
            ),
            (LayoutName::Closed, "--proto tcp --listeners 8 --closed 1,5"),
            (LayoutName::Large, "--proto tcp --listeners 130"),
        ] {
            let line = format!("record {group} --clients 64 --count 300 --seed 11");
            let typed = Only::try_parse_from(line.split(' ')).unwrap().args;
            assert_eq!(name.recorded(300, 11), typed, "{}", name.name());
        }
    }
}

#[cfg(test)]
mod ambiguity_tests {
    use super::*;
    use crate::exit::{Ending, Status};
    use clap::Parser;

    #[derive(Parser)]
    struct Only {
        #[command(flatten)]
        args: VerifyArgs,
    }

    /// Why: a trace too short to pin the key down must end as NOT VERIFIED
    /// with the number of events that would, never as a disagreement. Ten
    /// events of the checked-in 8-socket UDP trace train on five (at most
    /// half train), which about one key in 8^5 fits; the search runs over
    /// 2^20 keys rather than all 2^32 (minutes in a debug build), which
    /// leaves about 32 that fit, enough to show the refusal.
    #[test]
    fn too_few_events_say_the_key_is_ambiguous_and_how_many_are_needed() {
        let mut trace = crate::trace::Trace::parse(
            include_str!("../../../../public/traces/udp-v4-specific-8.json"),
            "udp-v4-specific-8.json",
        )
        .unwrap();
        trace.events.truncate(10);
        let args = Only::try_parse_from(["verify", "--threads", "2"])
            .unwrap()
            .args;
        let mut progress = Vec::new();
        let never = AtomicBool::new(false);
        let r = check_trace_among(
            "udp".into(),
            &trace,
            &args,
            0..1 << 20,
            &never,
            &mut progress,
        )
        .unwrap();
        assert_eq!(r.train, 5, "ten events, at most half of them train");
        assert!(r.candidates > 1, "{} keys fit", r.candidates);
        assert_eq!(r.secret, None);
        assert_eq!((r.tested, r.agreed), (5, 0), "nothing was predicted");
        let report = Report::new(vec![r]);
        assert_eq!(report.status(), Status::Partial, "exit status 1");
        let mut out = Vec::new();
        write_table(&report, &mut out).unwrap();
        let stdout = String::from_utf8(out).unwrap();
        // 8 members: 8^13 > 100 * 2^32 > 8^12, so 13 events, of 26.
        assert!(
            stdout.contains("udp: the key is ambiguous")
                && stdout.contains("5 training events")
                && stdout.contains("--train 13 with --count at least 26"),
            "{stdout}"
        );
        assert!(stdout.contains("NOT VERIFIED"), "{stdout}");
        assert!(!stdout.contains("DISAGREEMENT"), "{stdout}");
    }
}
