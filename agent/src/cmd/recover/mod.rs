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

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, ValueEnum};
use reuseport_model::batch::Isa;
use reuseport_model::recover::{isa_used, Found, RecoverError, SPACE};
use reuseport_model::Proto;
use serde::Serialize;
use thiserror::Error;

use crate::cmd::predict::{GroupOptions, ProtoArg};
use crate::trace::TraceError;

mod input;
mod search;

use input::{form_name, jobs, read_lines, read_traces};
pub(crate) use search::parallel_search;
use search::{fmt_rate, Searched};

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
    /// A terminating signal while the observations were read.
    #[error("interrupted while reading the observations; nothing was searched")]
    Interrupted,
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
                &|r, f| job.plan.search(isa, r, f),
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

impl crate::exit::Ending for Outcome {
    fn status(&self) -> crate::exit::Status {
        if !self.complete {
            crate::exit::Status::Interrupted
        } else {
            crate::exit::all_or_partial(self.candidates == 1)
        }
    }
}

crate::exit::interruptible!(RecoverCliError => RecoverCliError::Interrupted);

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
