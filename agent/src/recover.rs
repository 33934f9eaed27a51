//! `recover`: finds the 32-bit key of the kernel's IPv4 reuseport hash
//! (`secret + net_hash_mix`, kernel-history.md §2.1, §2.5) from observed
//! selections, by trying every candidate in `0..2^32`.
//!
//! Observations come from trace files (`reuseport-agent record`; the group
//! and the kernel are in the file) or from plain lines
//! `SADDR SPORT DADDR DPORT LISTENER` (`--lines FILE|-`, with the group
//! described by the same options as `predict`). Each is turned into a
//! constraint by the model ([`reuseport_model::recover`]); a line or event
//! the model cannot use refuses the whole run, since one wrong observation
//! would silently exclude the true key.
//!
//! The search runs on every online CPU (`--threads`): workers take chunks of
//! [`CHUNK`] candidates in order from a shared counter, so when Ctrl-C stops
//! them the searched part is a prefix of the range, reported as such.
//! Progress (percent, candidates/s, ETA, found so far) goes to stderr every
//! half second.
//!
//! Output: one JSON object on stdout (see [`Report`]). Exit status: 0 when
//! exactly one candidate was found, 1 when none or several, 2 when the
//! input is refused, 130 when interrupted.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use reuseport_model::batch::Isa;
use reuseport_model::profile::{Selection, PROFILES};
use reuseport_model::recover::{isa_used, Found, Obs, Plan, RecoverError, SPACE};
use reuseport_model::tuple::parse_observed_line;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};
use serde::Serialize;
use thiserror::Error;

use crate::kernel;
use crate::predict::{GroupOptions, ProtoArg, MAX_LINE};
use crate::trace::{Trace, TraceError};

/// Candidates per unit of work handed to a thread.
pub const CHUNK: u64 = 1 << 22;
/// Candidates listed in `all` at most, the warning level of
/// `expectedFalseMatches` and the level it says how to reach: the model's,
/// which the page's in-browser search uses too.
pub use reuseport_model::recover::{LIST_CAP, TARGET, WARN_AT};

/// Which compiled copy of the search loop to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IsaArg {
    /// The widest the CPU supports (AVX-512 where present).
    Best,
    /// The AVX2 copy.
    Avx2,
    /// The baseline target's copy (SSE2 on x86-64).
    Portable,
}

impl From<IsaArg> for Isa {
    fn from(i: IsaArg) -> Isa {
        match i {
            IsaArg::Best => Isa::Best,
            IsaArg::Avx2 => Isa::Avx2,
            IsaArg::Portable => Isa::Portable,
        }
    }
}

/// Options of `recover`.
#[derive(Debug, Clone, Args)]
pub struct RecoverArgs {
    /// Trace files written by `reuseport-agent record`: each is validated against the trace schema, and its group and kernel release are used. Several traces must come from the same boot, protocol and network namespace (one key).
    #[arg(value_name = "TRACE")]
    pub traces: Vec<PathBuf>,

    /// Read observations as plain lines `SADDR SPORT DADDR DPORT LISTENER` (or `SADDR:SPORT DADDR:DPORT LISTENER`) from FILE, or from stdin with `-`. Needs --proto and --listeners; the group is described as for predict.
    #[arg(long, value_name = "FILE|-", conflicts_with = "traces")]
    pub lines: Option<String>,

    /// Kernel: a release such as 6.18 or 6.18.44-fc; `auto` (the default) for the trace's kernel.release, or the running kernel with --lines; `any` to search with every IPv4 hash form the group-era profiles use for the protocol and report which matched.
    #[arg(long, value_name = "RELEASE|auto|any")]
    pub kernel: Option<String>,

    /// Transport protocol of the group (with --lines).
    #[arg(long, value_enum)]
    pub proto: Option<ProtoArg>,

    /// How many sockets joined the group, numbered 0..N-1 in listen() order (bind() order for UDP) (with --lines).
    #[arg(long, value_name = "N")]
    pub listeners: Option<u32>,

    /// The group's address, closes and options (with --lines).
    #[command(flatten)]
    pub group: GroupOptions,

    /// Worker threads (default: one per online CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,

    /// Use only the first K observations (for experiments on how much evidence is needed); K from 1.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_observations: Option<u64>,

    /// Search only START-END (hex, END exclusive, at most 0x100000000) instead of all 2^32 keys.
    #[arg(long, value_name = "START-END", value_parser = range_arg, hide = true)]
    pub range: Option<Range<u64>>,

    /// The compiled copy of the search loop to run (for measurements).
    #[arg(long, value_enum, default_value = "best", hide = true)]
    pub isa: IsaArg,

    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Parses `--range START-END`, both hex.
pub fn range_arg(s: &str) -> Result<Range<u64>, String> {
    let bad = || {
        format!("`{s}` is not a hex range START-END such as 0x1b000000-0x1c000000 (END exclusive, at most 0x100000000)")
    };
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    let hex = |x: &str| {
        let x = x.trim();
        let d = x
            .strip_prefix("0x")
            .or_else(|| x.strip_prefix("0X"))
            .unwrap_or(x);
        u64::from_str_radix(d, 16).map_err(|_| bad())
    };
    let (a, b) = (hex(a)?, hex(b)?);
    if a >= b || b > SPACE {
        return Err(bad());
    }
    Ok(a..b)
}

/// Why `recover` refused to run (exit status 2).
#[derive(Debug, Error)]
pub enum RecoverCliError {
    /// A kernel that names no profile, or `auto` that cannot be resolved.
    #[error(transparent)]
    Kernel(#[from] crate::Error),
    /// A trace that cannot be read or is invalid.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// No input named.
    #[error("no observations: give trace files, or --lines FILE (or --lines - for stdin) with --proto and --listeners")]
    NoInput,
    /// --lines without the group.
    #[error(
        "--lines needs {0}: the lines carry only tuples and listeners, the group must be described"
    )]
    MissingGroup(&'static str),
    /// Group options with traces.
    #[error("{0} describes a --lines group; a trace carries its own group (drop the option, or use --lines)")]
    GroupWithTraces(&'static str),
    /// The lines could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// A line that is not an observation.
    #[error("{at}: {problem}; every observation must be right, so nothing was searched")]
    Line {
        /// `line 7` or `trace t.json: events[3]`.
        at: String,
        /// What is wrong.
        problem: String,
    },
    /// The group the options or the trace describe cannot be built.
    #[error("{at}: the group cannot be built: {problem}")]
    Group {
        /// Which input.
        at: String,
        /// Why.
        problem: String,
    },
    /// The group is not selected by the hash alone.
    #[error("{at}: {source}")]
    Refused {
        /// Which input.
        at: String,
        /// Why.
        source: RecoverError,
    },
    /// Traces of different kernels or protocols.
    #[error("{0}")]
    Mixed(String),
    /// No observation at all after reading.
    #[error("{0} holds no observation")]
    Empty(String),
    /// `--kernel any` and every profile refused.
    #[error("no group-era profile can use these observations: {0}")]
    NoProfile(String),
    /// A found candidate that the model's select does not confirm (a bug).
    #[error("internal check failed: candidate {candidate:#010x} does not reproduce observation {index} through the model's select; please report this")]
    Unverified {
        /// The candidate.
        candidate: u32,
        /// The observation.
        index: usize,
    },
    /// Stdout.
    #[error("cannot write the result to standard output: {0}")]
    Output(#[source] io::Error),
}

impl RecoverCliError {
    /// Whether this is a write to a closed pipe.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, RecoverCliError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// One observation before the model sees it.
#[derive(Debug, Clone)]
struct Observed {
    /// Which input ([`Input::names`]).
    input: u32,
    /// The event's index in its trace, or the line's number.
    index: u64,
    /// Index into the input groups.
    group: usize,
    tuple: Tuple,
    listener: u32,
}

/// One group of the input: how to build it for a given profile.
#[derive(Debug, Clone)]
struct InputGroup {
    at: String,
    spec: GroupSpec,
}

/// Everything read: groups, observations, the kernel asked for.
#[derive(Debug)]
struct Input {
    groups: Vec<InputGroup>,
    observed: Vec<Observed>,
    /// The release to model, or `None` for `any`.
    kernel: Option<&'static Profile>,
    proto: Proto,
    /// Observations read before --max-observations.
    read: usize,
    /// Observations dropped as they arrived because an earlier one was the
    /// same packet to the same listener.
    duplicates: usize,
    /// The inputs' names (trace files, or the --lines file or `-`).
    names: Vec<String>,
    /// Whether the inputs are lines (else traces).
    lines: bool,
    warnings: Vec<String>,
}

impl Input {
    /// Where an observation came from: `t.json: events[3]`, `line 7` or
    /// `obs.txt: line 7`.
    fn at(&self, o: &Observed) -> String {
        let name = &self.names[o.input as usize];
        match (self.lines, name.as_str()) {
            (false, _) => format!("{name}: events[{}]", o.index),
            (true, "-") => format!("line {}", o.index),
            (true, _) => format!("{name}: line {}", o.index),
        }
    }
}

/// Keeps observations as they arrive: the first `max` are used, and a
/// repeat of an earlier one (same group, packet and listener) is counted and
/// dropped, so memory grows with the distinct observations only.
struct Keeper {
    seen: HashSet<(usize, Tuple, u32)>,
    max: u64,
    /// Observations read, all of them.
    read: u64,
    duplicates: usize,
    kept: Vec<Observed>,
}

impl Keeper {
    fn new(max: Option<u64>) -> Keeper {
        Keeper {
            seen: HashSet::new(),
            max: max.unwrap_or(u64::MAX),
            read: 0,
            duplicates: 0,
            kept: Vec::new(),
        }
    }

    fn add(&mut self, o: Observed) {
        self.read += 1;
        if self.read > self.max {
            return;
        }
        if self.seen.insert((o.group, o.tuple, o.listener)) {
            self.kept.push(o);
        } else {
            self.duplicates += 1;
        }
    }
}

fn bad_line(at: String, problem: impl ToString) -> RecoverCliError {
    RecoverCliError::Line {
        at,
        problem: problem.to_string(),
    }
}

fn resolve_kernel(
    arg: Option<&str>,
    recorded: Option<&str>,
) -> Result<Option<&'static Profile>, RecoverCliError> {
    match arg {
        Some("any") => Ok(None),
        None | Some("auto") => match recorded {
            Some(release) => Ok(Some(kernel::resolve(release)?)),
            None => Ok(Some(kernel::resolve("auto")?)),
        },
        Some(k) => Ok(Some(kernel::resolve(k)?)),
    }
}

fn read_traces(args: &RecoverArgs) -> Result<Input, RecoverCliError> {
    let g = &args.group;
    for (given, name) in [
        (args.proto.is_some(), "--proto"),
        (args.listeners.is_some(), "--listeners"),
        (g.bind.is_some(), "--bind"),
        (!g.closed.is_empty(), "--closed"),
        (!g.shutdown.is_empty(), "--shutdown"),
        (g.tcp_migrate_req, "--tcp-migrate-req"),
        (!g.incoming_cpu.is_empty(), "--incoming-cpu"),
        (!g.connected.is_empty(), "--connected"),
        (g.v6only, "--v6only"),
    ] {
        if given {
            return Err(RecoverCliError::GroupWithTraces(name));
        }
    }
    let mut input = Input {
        groups: Vec::new(),
        observed: Vec::new(),
        kernel: None,
        proto: Proto::Tcp,
        read: 0,
        duplicates: 0,
        names: Vec::new(),
        lines: false,
        warnings: Vec::new(),
    };
    let mut keeper = Keeper::new(args.max_observations);
    let mut first: Option<(String, String, Proto, Option<String>)> = None;
    for (ti, path) in args.traces.iter().enumerate() {
        // The events are checked and kept (once each) as they are read; a
        // trace is never held whole.
        let trace = Trace::read_streaming(path, &mut |i, e| {
            keeper.add(Observed {
                input: ti as u32,
                index: i as u64,
                group: ti,
                tuple: e.tuple(),
                listener: e.listener,
            })
        })?;
        let name = path.display().to_string();
        input.names.push(name.clone());
        let here = (
            name.clone(),
            trace.kernel.release.clone(),
            trace.group.proto,
            trace.machine.netns.clone(),
        );
        match &first {
            None => first = Some(here),
            Some((fname, release, proto, netns)) => {
                if *proto != here.2 || *release != here.1 {
                    return Err(RecoverCliError::Mixed(format!(
                        "{fname} ({release}, {proto:?}) and {name} ({}, {:?}) cannot share one key: each protocol has its own secret and each boot its own values; recover them separately",
                        here.1, here.2
                    )));
                }
                if *netns != here.3 || netns.as_deref().is_some_and(|n| n != "host") {
                    input.warnings.push(format!(
                        "{fname} and {name} were recorded in network namespaces {} and {}: each namespace mixes in its own net_hash_mix, so traces share a key only if they share the namespace",
                        netns.as_deref().unwrap_or("(unknown)"),
                        here.3.as_deref().unwrap_or("(unknown)")
                    ));
                }
            }
        }
        if let Some(bpf) = &trace.group.bpf {
            return Err(RecoverCliError::Refused {
                at: name,
                source: RecoverError::Setup(reuseport_model::SetupError::Group(
                    reuseport_model::error::GroupError::Unsupported {
                        what: format!("recovery from a group with a `{}` BPF program", bpf.kind),
                        why: "the program, not the hash, picks the member".into(),
                    },
                )),
            });
        }
        input.proto = trace.group.proto;
        input.groups.push(InputGroup {
            at: name.clone(),
            spec: trace.group.spec(Keys::default()),
        });
    }
    let (fname, release, ..) = first.ok_or(RecoverCliError::NoInput)?;
    input.read = keeper.read as usize;
    input.duplicates = keeper.duplicates;
    input.observed = keeper.kept;
    if input.observed.is_empty() {
        return Err(RecoverCliError::Empty(fname));
    }
    input.kernel = resolve_kernel(args.kernel.as_deref(), Some(&release))?;
    Ok(input)
}

fn read_lines(args: &RecoverArgs, path: &str, stdin: impl Read) -> Result<Input, RecoverCliError> {
    let proto: Proto = args
        .proto
        .ok_or(RecoverCliError::MissingGroup("--proto"))?
        .into();
    let listeners = args
        .listeners
        .ok_or(RecoverCliError::MissingGroup("--listeners"))?;
    let kernel = resolve_kernel(args.kernel.as_deref(), None)?;
    let reader: Box<dyn BufRead + '_> = if path == "-" {
        Box::new(BufReader::new(stdin))
    } else {
        let f = std::fs::File::open(path).map_err(|source| RecoverCliError::Read {
            path: path.into(),
            source,
        })?;
        Box::new(BufReader::new(f))
    };
    let what = if path == "-" { "standard input" } else { path };
    let mut keeper = Keeper::new(args.max_observations);
    let mut buf = Vec::new();
    let mut reader = reader;
    let mut line = 0u64;
    let at = |line: u64| {
        if path == "-" {
            format!("line {line}")
        } else {
            format!("{path}: line {line}")
        }
    };
    let read_err = |source| RecoverCliError::Read {
        path: what.into(),
        source,
    };
    while let Some(len) =
        crate::predict::read_capped_line(&mut reader, &mut buf, MAX_LINE).map_err(read_err)?
    {
        line += 1;
        if len > MAX_LINE {
            return Err(bad_line(at(line), crate::predict::too_long(len, &buf)));
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| bad_line(at(line), "the line is not UTF-8 text"))?;
        match parse_observed_line(text) {
            Ok(None) => {}
            Ok(Some((tuple, listener))) => keeper.add(Observed {
                input: 0,
                index: line,
                group: 0,
                tuple,
                listener,
            }),
            Err(e) => return Err(bad_line(at(line), e)),
        }
    }
    let observed = keeper.kept;
    let first = observed
        .first()
        .ok_or_else(|| RecoverCliError::Empty(what.into()))?;
    let bind = args.group.bind.map_or(first.tuple.daddr, |b| b.addr);
    let port = args
        .group
        .bind
        .and_then(|b| b.port)
        .unwrap_or(first.tuple.dport);
    let spec = args
        .group
        .spec(proto, listeners, Keys::default(), bind, port);
    Ok(Input {
        groups: vec![InputGroup {
            at: "the group of --proto, --listeners and --bind".into(),
            spec,
        }],
        read: keeper.read as usize,
        duplicates: keeper.duplicates,
        observed,
        kernel,
        proto,
        names: vec![path.to_string()],
        lines: true,
        warnings: Vec::new(),
    })
}

/// The observations as constraints under one profile.
fn plan_for(profile: &'static Profile, input: &Input) -> Result<Plan, RecoverCliError> {
    let mut plan: Option<Plan> = None;
    for g in &input.groups {
        let built =
            ReuseportGroup::build(profile, &g.spec).map_err(|e| RecoverCliError::Group {
                at: g.at.clone(),
                problem: e.to_string(),
            })?;
        let refused = |source| RecoverCliError::Refused {
            at: g.at.clone(),
            source,
        };
        match &mut plan {
            None => plan = Some(Plan::new(&built).map_err(refused)?),
            Some(p) => {
                p.add_group(&built).map_err(refused)?;
            }
        }
    }
    let mut plan = plan.expect("at least one group");
    for o in &input.observed {
        plan.add(o.group, &o.tuple, o.listener)
            .map_err(|e| match e {
                RecoverError::Contradiction { earlier, .. } => bad_line(
                    input.at(o),
                    format!(
                        "{e} (observation {earlier} is {})",
                        input.at(&input.observed[earlier])
                    ),
                ),
                e => bad_line(input.at(o), e),
            })?;
    }
    Ok(plan)
}

/// One distinct search: a plan and the profiles that give it.
struct Job {
    plan: Plan,
    profiles: Vec<&'static Profile>,
}

fn jobs(input: &Input) -> Result<(Vec<Job>, Vec<Skipped>), RecoverCliError> {
    if let Some(p) = input.kernel {
        return Ok((
            vec![Job {
                plan: plan_for(p, input)?,
                profiles: vec![p],
            }],
            Vec::new(),
        ));
    }
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: HashMap<(String, Vec<Obs>), usize> = HashMap::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    for p in PROFILES {
        let selection = match input.proto {
            Proto::Tcp => p.tcp_selection,
            Proto::Udp => p.udp_selection,
        };
        let outcome = if selection == Selection::Reservoir {
            Err("reservoir era: not selected by socks[reciprocal_scale(hash, n)]".to_string())
        } else {
            plan_for(p, input).map_err(|e| e.to_string())
        };
        match outcome {
            Ok(plan) => {
                let key = (form_name(&plan), plan.constraints().to_vec());
                match index.get(&key) {
                    Some(&i) => jobs[i].profiles.push(p),
                    None => {
                        index.insert(key, jobs.len());
                        jobs.push(Job {
                            plan,
                            profiles: vec![p],
                        });
                    }
                }
            }
            Err(reason) => match skipped.iter_mut().find(|s| s.reason == reason) {
                Some(s) => s.profiles.push(p.release.to_string()),
                None => skipped.push(Skipped {
                    profiles: vec![p.release.to_string()],
                    reason,
                }),
            },
        }
    }
    if jobs.is_empty() {
        let why = skipped
            .iter()
            .map(|s| format!("{}: {}", s.profiles.join(", "), s.reason))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(RecoverCliError::NoProfile(why));
    }
    Ok((jobs, skipped))
}

/// `lport_plus`, `classic`, `classic_numeric_fport`, with `/old_jhash` for
/// the ≤ 4.0 jhash body.
fn form_name(plan: &Plan) -> String {
    let (form, jh) = plan.form();
    let f = serde_json::to_value(form).expect("serializes");
    let f = f.as_str().expect("a string");
    match jh {
        reuseport_model::jhash::JhashForm::New => f.to_string(),
        reuseport_model::jhash::JhashForm::Old => format!("{f}/old_jhash"),
    }
}

/// Profiles that could not use the observations (`--kernel any`).
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The profiles.
    pub profiles: Vec<String>,
    /// Why.
    pub reason: String,
}

/// A searched range, hex.
#[derive(Debug, Clone, Serialize)]
pub struct HexRange {
    /// First key.
    pub start: String,
    /// One past the last key.
    pub end: String,
}

impl From<Range<u64>> for HexRange {
    fn from(r: Range<u64>) -> HexRange {
        HexRange {
            start: format!("{:#010x}", r.start),
            end: format!("{:#010x}", r.end),
        }
    }
}

fn hex(v: u32) -> String {
    format!("{v:#010x}")
}

/// The result of one distinct search.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchReport {
    /// Hash form: `lport_plus` (TCP 6.15+), `classic`, `classic_numeric_fport`.
    pub form: String,
    /// Profiles whose rules give these constraints.
    pub profiles: Vec<String>,
    /// Candidates found.
    pub candidates: u64,
    /// The first of them, hex.
    pub all: Vec<String>,
    /// `2^32 · Π p_i`.
    pub expected_false_matches: f64,
    /// Informative, distinct observations.
    pub constraints: usize,
    /// The part of the range searched.
    pub searched: HexRange,
    /// Seconds spent.
    pub seconds: f64,
}

/// The JSON object `recover` prints.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The key, `0x%08x`, when at least one candidate was found (the first).
    pub secret: Option<String>,
    /// How many keys satisfy every observation.
    pub candidates: u64,
    /// The candidates, hex, at most 1000.
    pub all: Vec<String>,
    /// Whether `all` was cut at 1000.
    pub all_truncated: bool,
    /// The hash form of the search that found `secret` (or the only one searched).
    pub form: Option<String>,
    /// The profile(s) of that search, comma-separated.
    pub profile: Option<String>,
    /// Protocol.
    pub proto: Proto,
    /// Observations used (after --max-observations).
    pub observations: usize,
    /// Observations read.
    pub observations_read: usize,
    /// Distinct informative observations (constraints).
    pub constraints: usize,
    /// Observations that repeated an earlier packet.
    pub duplicates: usize,
    /// Keys expected to satisfy every observation by chance: `2^32 · Π p_i`
    /// (of the search that found `secret`, or the first).
    pub expected_false_matches: f64,
    /// Observations to add, of the selectivity seen so far, to bring that
    /// below 0.001.
    pub more_observations_needed: Option<u64>,
    /// The range asked for.
    pub range: HexRange,
    /// Whether the whole range was searched (false after Ctrl-C).
    pub complete: bool,
    /// Wall-clock seconds of the search.
    pub seconds: f64,
    /// Keys tried per second.
    pub candidates_per_second: f64,
    /// Worker threads.
    pub threads: u32,
    /// The compiled copy of the search loop that ran.
    pub isa: &'static str,
    /// Whether every listed candidate was re-checked through the model's select.
    pub verified: bool,
    /// Every distinct search (one unless `--kernel any`).
    pub searches: Vec<SearchReport>,
    /// Profiles left out with `--kernel any`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// Things to know about the answer.
    pub warnings: Vec<String>,
}

/// How a run ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Candidates found.
    pub candidates: u64,
    /// The whole range was searched.
    pub complete: bool,
}

/// Makes the stop signals (Ctrl-C, SIGTERM, SIGHUP, …,
/// [`crate::STOP_SIGNALS`]) set the returned flag, which [`run`] polls:
/// workers finish their chunk and stop, and the report says how far the
/// search got. A second signal ends the process at once (status 130).
/// Keep the guard for the length of the run; `None` (with a warning on
/// stderr) when the handlers could not be installed.
#[cfg(unix)]
pub fn stop_on_signals() -> (Option<crate::signals::Guard>, &'static AtomicBool) {
    use crate::signals::{Guard, Second, STOP};
    match Guard::install(Second::Ends) {
        Ok(guard) => (Some(guard), &STOP),
        Err(e) => {
            crate::note!("warning: a signal will end recover without a report: {e}");
            (None, &STOP)
        }
    }
}

/// What one parallel search returns.
pub(crate) struct Searched {
    /// The candidates.
    pub(crate) found: Found,
    /// The part of the range searched (all of it unless stopped).
    pub(crate) searched: Range<u64>,
    /// Wall time.
    pub(crate) seconds: f64,
}

fn fmt_rate(r: f64) -> String {
    format!("{:.2}e9/s", r / 1e9)
}

/// Searches `range` with `threads` workers, writing progress to `err`
/// every half second unless `quiet`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn parallel_search(
    plan: &Plan,
    isa: Isa,
    range: Range<u64>,
    threads: u32,
    stop: &AtomicBool,
    label: &str,
    quiet: bool,
    err: &mut dyn Write,
) -> Searched {
    let len = range.end - range.start;
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let hits = AtomicU64::new(0);
    let running = AtomicUsize::new(threads as usize);
    let parts: Mutex<Vec<(u64, Found)>> = Mutex::new(Vec::new());
    let started = Instant::now();
    let tty = io::stderr().is_terminal();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let at = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if at >= len {
                        break;
                    }
                    let r = range.start + at..range.start + (at + CHUNK).min(len);
                    let n = r.end - r.start;
                    let mut f = Found::new(LIST_CAP);
                    plan.search(isa, r, &mut f);
                    if f.count > 0 {
                        hits.fetch_add(f.count, Ordering::Relaxed);
                        mine.push((at, f));
                    }
                    done.fetch_add(n, Ordering::Relaxed);
                }
                parts.lock().expect("no worker panicked").extend(mine);
                running.fetch_sub(1, Ordering::Release);
            });
        }
        let mut last = Instant::now();
        while running.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(20));
            if quiet || last.elapsed() < Duration::from_millis(500) {
                continue;
            }
            last = Instant::now();
            let d = done.load(Ordering::Relaxed);
            let secs = started.elapsed().as_secs_f64();
            let rate = d as f64 / secs.max(1e-9);
            let eta = (len - d.min(len)) as f64 / rate.max(1.0);
            let line = format!(
                "recover{label}: {:5.1}%  {}  ETA {:.1} s  {} found",
                100.0 * d as f64 / len as f64,
                fmt_rate(rate),
                eta,
                hits.load(Ordering::Relaxed)
            );
            let _ = if tty {
                write!(err, "\r{line}\x1b[K")
            } else {
                writeln!(err, "{line}")
            };
            let _ = err.flush();
        }
        if tty && !quiet && last != started {
            let _ = writeln!(err);
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let mut parts = parts.into_inner().expect("no worker panicked");
    parts.sort_by_key(|(at, _)| *at);
    let mut found = Found::new(LIST_CAP);
    for (_, f) in &parts {
        found.merge(f);
    }
    // Every claimed chunk was finished, so the searched part is a prefix.
    let claimed = next.load(Ordering::Relaxed).min(len);
    Searched {
        found,
        searched: range.start..range.start + claimed,
        seconds,
    }
}

/// Runs `recover`: reads the observations (from the traces, or the
/// `--lines` file or `stdin`), searches, writes one JSON object to `out` and
/// progress to `err`. `stop` set (by Ctrl-C) ends the search early.
pub fn run(
    args: &RecoverArgs,
    stdin: impl Read,
    mut out: impl Write,
    err: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<Outcome, RecoverCliError> {
    let input = match (&args.lines, args.traces.is_empty()) {
        (Some(path), _) => read_lines(args, path, stdin)?,
        (None, false) => read_traces(args)?,
        (None, true) => return Err(RecoverCliError::NoInput),
    };
    let (jobs, skipped) = jobs(&input)?;
    let range = args.range.clone().unwrap_or(0..SPACE);
    let isa: Isa = args.isa.into();
    let threads = args
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let mut warnings = input.warnings.clone();
    let mut searches = Vec::new();
    let mut total = Found::new(LIST_CAP);
    let mut first_hit: Option<usize> = None;
    let mut complete = true;
    let mut seconds = 0.0;
    let mut tried = 0u64;
    for (i, job) in jobs.iter().enumerate() {
        let form = form_name(&job.plan);
        let label = if jobs.len() > 1 {
            format!(" [{form} {}/{}]", i + 1, jobs.len())
        } else {
            String::new()
        };
        let s = if stop.load(Ordering::Relaxed) {
            Searched {
                found: Found::new(LIST_CAP),
                searched: range.start..range.start,
                seconds: 0.0,
            }
        } else {
            parallel_search(
                &job.plan,
                isa,
                range.clone(),
                threads,
                stop,
                &label,
                args.quiet,
                err,
            )
        };
        if s.searched.end != range.end {
            complete = false;
        }
        for (v, bad) in s.found.values.iter().zip(job.plan.verify(&s.found.values)) {
            if let Some(index) = bad {
                return Err(RecoverCliError::Unverified {
                    candidate: *v,
                    index,
                });
            }
        }
        if s.found.count > 0 && first_hit.is_none() {
            first_hit = Some(i);
        }
        seconds += s.seconds;
        tried += s.searched.end - s.searched.start;
        total.merge(&s.found);
        searches.push(SearchReport {
            form,
            profiles: job.profiles.iter().map(|p| p.release.to_string()).collect(),
            candidates: s.found.count,
            all: s.found.values.iter().map(|&v| hex(v)).collect(),
            expected_false_matches: job.plan.expected_false_matches(),
            constraints: job.plan.constraints().len(),
            searched: s.searched.into(),
            seconds: s.seconds,
        });
    }
    let lead = first_hit.unwrap_or(0);
    let plan = &jobs[lead].plan;
    let e = plan.expected_false_matches();
    let more = plan.more_needed(TARGET);
    if e >= WARN_AT {
        let how = match more {
            Some(k) => format!("about {k} more observation(s) would bring it below {TARGET}"),
            None => "every observation came from a one-member group, which carries no information; observe a group of two or more".into(),
        };
        warnings.push(format!(
            "more evidence is needed: {} keys are expected to match every observation by chance; {how}",
            if e >= 1000.0 {
                format!("{e:.3e}")
            } else {
                format!("{e:.3}")
            }
        ));
    }
    if !complete {
        warnings.push(
            "interrupted: only part of the range was searched (see searches[].searched); keys outside it were not tried".into(),
        );
    }
    let show_search = first_hit.is_some() || jobs.len() == 1;
    let report = Report {
        secret: total.values.first().map(|&v| hex(v)),
        candidates: total.count,
        all_truncated: total.count > total.values.len() as u64,
        all: total.values.iter().map(|&v| hex(v)).collect(),
        form: show_search.then(|| searches[lead].form.clone()),
        profile: show_search.then(|| searches[lead].profiles.join(", ")),
        proto: input.proto,
        observations: input.observed.len() + input.duplicates,
        observations_read: input.read,
        constraints: plan.constraints().len(),
        duplicates: input.duplicates + plan.duplicates(),
        expected_false_matches: e,
        more_observations_needed: more,
        range: range.clone().into(),
        complete,
        seconds,
        candidates_per_second: tried as f64 / seconds.max(1e-9),
        threads,
        isa: isa_used(isa),
        verified: true,
        searches,
        skipped,
        warnings,
    };
    for w in &report.warnings {
        let _ = writeln!(err, "warning: {w}");
    }
    let mut text = serde_json::to_string_pretty(&report).expect("a report serializes");
    text.push('\n');
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(RecoverCliError::Output)?;
    if !args.quiet {
        let _ = writeln!(
            err,
            "recover: searched {} keys in {:.2} s ({}, {} on {} thread(s)): {} candidate(s){}",
            tried,
            seconds,
            fmt_rate(report.candidates_per_second),
            report.isa,
            threads,
            total.count,
            report
                .secret
                .as_ref()
                .map(|s| format!(", first {s}"))
                .unwrap_or_default()
        );
    }
    let mut summary = String::new();
    match total.count {
        1 => {}
        0 if !complete => {
            // Not a verdict on the observations: keys were left untried.
            summary.push_str("no key found in the part searched before the interruption; the rest of the range was not tried: run it to the end");
        }
        0 => {
            let _ = write!(
                summary,
                "no key satisfies every observation: the observations mix boots, protocols or namespaces, the group options (--listeners, --closed, --bind) do not match how it was set up, or the kernel's hash form differs{}",
                if input.kernel.is_some() {
                    " (try --kernel any)"
                } else {
                    " from every form --kernel any tried"
                }
            );
        }
        n => {
            let _ = write!(
                summary,
                "{n} keys satisfy every observation: give more observations to single one out"
            );
        }
    }
    if !summary.is_empty() {
        let _ = writeln!(err, "recover: {summary}");
    }
    Ok(Outcome {
        candidates: total.count,
        complete,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_hex_and_end_exclusive() {
        assert_eq!(
            range_arg("0x1b800000-0x1b900000").unwrap(),
            0x1b80_0000..0x1b90_0000
        );
        assert_eq!(range_arg("0-100000000").unwrap(), 0..SPACE);
        for bad in ["5-5", "6-5", "0-0x100000001", "x-1", "12"] {
            assert!(range_arg(bad).is_err(), "{bad}");
        }
    }
}
