//! `scenario NAME`: runs one of the gallery's curated scenarios
//! ([`reuseport_model::sim::CURATED`], the one list) on the running
//! kernel, over loopback, and writes what it measured in the shape of the
//! simulator's own report ([`SimReport`](reuseport_model::sim::SimReport)), so the two can be laid side by
//! side.
//!
//! For each variant: worker processes accept with the variant's model (a
//! listener shared by `fork()` with blocking `accept()`, epoll with and
//! without `EPOLLEXCLUSIVE`, nginx's `accept_mutex`, one `SO_REUSEPORT`
//! listener per worker, with `SO_INCOMING_CPU` and pinning, or with the
//! classic BPF program returning the CPU), serve each request by spinning
//! on the CPU for a service time drawn from the scenario's distribution
//! (times a slow worker's factor), and take the scenario's stalls
//! (SIGSTOP/SIGCONT), leaves and rejoins (the listener closed and a new one
//! opened; `net.ipv4.tcp_migrate_req` as the variant says, restored on
//! every way out, and after a SIGKILL by the next run) and added workers
//! at their times. Client processes bind
//! the scenario's client addresses (`127.0.1.1` up), open the connections
//! at the scenario's arrival times, send the requests with the think time
//! between them, and time each answer.
//!
//! The machine is not the scenario's: a scenario with more CPUs than this
//! machine has runs on all of them with the arrival rate lowered in
//! proportion (the same load per CPU), and `--scale` shortens a run (fewer
//! connections, events earlier), both recorded in the scenario as run, which
//! is what the simulator is compared with. `reuseport-least-loaded` needs an
//! eBPF `SK_REUSEPORT` program and a map, and variants for another kernel
//! need that kernel: both are listed as skipped, with the reason.
//!
//! Output: one JSON document (schema
//! `public/traces/schema/scenario-v1.schema.json`), [`ScenarioTrace`].

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::SystemTime;

use clap::Args;
use reuseport_model::sim::{AcceptModel, Arrivals, Curated, Event, Scenario, CURATED};
use serde::{Deserialize, Serialize};
use thiserror::Error;

mod guest;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub mod quic_reload;
mod report;

pub use report::{bucket_ns, build_report, no_latency, ConnOutcome, ConnRecord, Measured};

/// The trace schema, checked in beside the other traces'.
pub const SCHEMA: &str = include_str!("../../../../public/traces/schema/scenario-v1.schema.json");

/// Options of `scenario`.
#[derive(Debug, Clone, Args)]
pub struct ScenarioArgs {
    /// The curated scenario (`six-connections`, `fork-vs-reuseport`, …; `--list` names them all).
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,

    /// Run only this variant (repeatable). Default: every variant of the scenario.
    #[arg(long = "variant", value_name = "ID")]
    pub variants: Vec<String>,

    /// Write the trace here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The seed of the arrivals, the clients' choice and the service times (default: the scenario's).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Connections and event times multiplied by F (0.001 to 1). Default: the scenario's own, chosen so each variant runs in a few seconds on two CPUs.
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,

    /// Bound on each variant's run, in seconds: when it passes every child is killed and what was measured is kept (marked partial).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub timeout: u64,

    /// Client processes (each drives every K-th connection). Default: the CPUs, at most 4.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub client_procs: Option<u32>,

    /// List the curated scenarios and their variants, and exit.
    #[arg(long)]
    pub list: bool,

    /// Run inside this Debian kernel instead of the running one: 5.10, 6.1, 6.12, sid (or bullseye, bookworm, trixie), booted under QEMU with 4 vCPUs as `verify --kernels` boots it; the trace comes back to --output. Default --scale there: a tenth of the scenario's own.
    #[arg(long, value_name = "KERNEL")]
    pub kernel: Option<String>,

    /// With --kernel: where kernel images are cached (default: .cache/kernels in the source tree).
    #[arg(long, value_name = "DIR", requires = "kernel")]
    pub kernel_cache: Option<PathBuf>,

    /// With --kernel: the statically linked agent run inside the guest (default: built with cargo for x86_64-unknown-linux-musl; scripts/kernels/guest-agent.sh builds it).
    #[arg(long, value_name = "FILE", requires = "kernel")]
    pub guest_agent: Option<PathBuf>,

    /// With --kernel: seconds the guest may take to boot and run every variant before QEMU is killed (default: 120 plus --timeout per variant).
    #[arg(long, value_name = "SECS", requires = "kernel", value_parser = clap::value_parser!(u64).range(10..=7200))]
    pub boot_timeout: Option<u64>,

    /// With --kernel: QEMU's accelerator (tcg: emulation, works everywhere; kvm needs a usable /dev/kvm).
    #[arg(long, value_enum, default_value_t = crate::lab::Accel::Tcg)]
    pub accel: crate::lab::Accel,
}

/// An error that stops `scenario` (exit status 2).
#[derive(Debug, Error)]
pub enum ScenarioError {
    /// No such scenario.
    #[error("no curated scenario is named {0:?}; `reuseport-agent scenario --list` names them")]
    Unknown(String),
    /// No such variant.
    #[error("scenario {scenario} has no variant {variant:?}; it has {known}")]
    UnknownVariant {
        /// The scenario.
        scenario: &'static str,
        /// The variant asked for.
        variant: String,
        /// The ones it has.
        known: String,
    },
    /// A bad `--scale`.
    #[error("--scale {0} is out of range: give a factor from 0.001 to 1")]
    Scale(f64),
    /// Not Linux.
    #[error("scenario runs workers and clients on Linux loopback and needs Linux; this system is not Linux")]
    NotLinux,
    /// The scenario as adapted is refused by the simulator's checks.
    #[error("the scenario as run is not valid: {0}")]
    Invalid(String),
    /// A system call failed while a run was set up.
    #[error("cannot set up the run: {call} failed: {source}{hint}")]
    Setup {
        /// The call.
        call: String,
        /// Why.
        #[source]
        source: io::Error,
        /// What to change.
        hint: &'static str,
    },
    /// Another live run of this agent holds `net.ipv4.tcp_migrate_req`.
    #[error("another reuseport-agent run (pid {pid}) has changed net.ipv4.tcp_migrate_req and will restore it (state file {state}); wait until it ends, since two runs would each restore the other's value")]
    MigrateReqHeld {
        /// The other run.
        pid: i32,
        /// Its state file.
        state: String,
    },
    /// `--kernel`: the guest could not be booted, or ran nothing usable.
    #[error("--kernel {kernel}: {message}")]
    Guest {
        /// The kernel asked for.
        kernel: String,
        /// The step that failed and why.
        message: String,
    },
    /// The output could not be written.
    #[error("cannot write the trace to {path}: {source}")]
    Output {
        /// Where.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl ScenarioError {
    /// Whether this is a write to a closed pipe.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ScenarioError::Output { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// A variant that was not run, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Skipped {
    /// The variant's id.
    pub variant: String,
    /// Why it was not run here.
    pub reason: String,
}

/// One variant, run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Run {
    /// The variant's id.
    pub variant: String,
    /// The scenario exactly as run (the simulator takes it as is).
    #[cfg_attr(test, schemars(with = "serde_json::Value"))]
    pub scenario: Scenario,
    /// How the scenario was changed to fit this machine and `--scale`.
    pub adapted: Vec<String>,
    /// Wall time of the run, from the clients' release to the last answer.
    pub seconds: f64,
    /// Every connection ended (answered, reset or failed) before `--timeout`
    /// or a signal.
    pub complete: bool,
    /// `timeout` or `interrupted` when the run was cut short.
    // Always written (null when the run completed), so the schema requires it.
    #[cfg_attr(test, schemars(required))]
    pub stopped: Option<String>,
    /// What the kernel did, in the simulator's report shape.
    pub measured: serde_json::Value,
    /// When each connection's `connect()` was called, in microseconds from
    /// the start, in connection order (the simulator replays these).
    pub arrivals_us: Vec<f64>,
    /// What could not be measured, or is measured differently from the
    /// simulator.
    pub notes: Vec<String>,
}

/// The trace file of one scenario (schema `scenario-v1`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ScenarioTrace {
    /// `reuseport-lab-scenario`.
    pub format: String,
    /// 1.
    pub version: u32,
    /// The curated scenario's name.
    pub scenario: String,
    /// UTC time the run started, RFC 3339.
    pub recorded: String,
    /// The command line.
    pub command: String,
    /// The agent's version.
    pub agent: String,
    /// `uname -r` and the model profile it maps to.
    pub kernel: KernelInfo,
    /// CPUs of this machine (`nproc`).
    pub nproc: u32,
    /// The `--scale` used.
    pub scale: f64,
    /// One per variant run, in the scenario's order.
    pub runs: Vec<Run>,
    /// Variants not run here.
    pub skipped: Vec<Skipped>,
}

/// The running kernel.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct KernelInfo {
    /// `uname -r`.
    pub release: String,
    /// The model profile it maps to.
    pub profile: String,
}

/// The default scale of each curated scenario: each variant takes a few
/// seconds on two CPUs.
pub fn default_scale(name: &str) -> f64 {
    match name {
        "shared-queue-under-load" => 0.5,
        "per-worker-queues-latency" => 0.05,
        "slow-worker" => 0.4,
        "stalled-worker" | "reload" | "incoming-cpu" => 0.5,
        "long-lived-favourite" => 0.25,
        "fork-vs-reuseport" => 0.25,
        _ => 1.0,
    }
}

/// The scenario `variant` of `c` as this machine runs it: at most `nproc`
/// CPUs with the arrival rate lowered in proportion, `scale` times the
/// connections (at least the smaller of the scenario's and 12) and event
/// times, the running kernel's profile. Returns it and what changed.
pub fn adapt(
    base: &Scenario,
    nproc: u32,
    profile: &str,
    scale: f64,
    seed: Option<u64>,
) -> (Scenario, Vec<String>) {
    let mut s = base.clone();
    let mut notes = Vec::new();
    if s.kernel != profile {
        notes.push(format!(
            "kernel {} -> {profile} (the running kernel's profile)",
            s.kernel
        ));
        s.kernel = profile.to_string();
    }
    if s.cpus > nproc {
        let f = nproc as f64 / s.cpus as f64;
        notes.push(format!(
            "cpus {} -> {nproc} (this machine), arrival rate x{f:.4} (the same load per CPU)",
            s.cpus
        ));
        s.cpus = nproc;
        s.arrivals = match s.arrivals {
            Arrivals::Poisson { rate_per_sec } => Arrivals::Poisson {
                rate_per_sec: rate_per_sec * f,
            },
            Arrivals::Bursty {
                rate_per_sec,
                burst,
            } => Arrivals::Bursty {
                rate_per_sec: rate_per_sec * f,
                burst,
            },
            Arrivals::Paced { gap_us } => Arrivals::Paced { gap_us: gap_us / f },
            other => other,
        };
    }
    if scale < 1.0 {
        let n = ((s.connections as f64 * scale).round() as u32).max(s.connections.min(12));
        if n != s.connections {
            notes.push(format!(
                "connections {} -> {n}, event times x{scale} (--scale {scale})",
                s.connections
            ));
            s.connections = n;
        }
        for e in &mut s.events {
            match e {
                Event::Stall { at_us, for_us, .. } => {
                    *at_us *= scale;
                    *for_us *= scale;
                }
                Event::Leave { at_us, .. }
                | Event::Rejoin { at_us, .. }
                | Event::AddWorker { at_us } => *at_us *= scale,
            }
        }
    }
    if let Some(seed) = seed {
        s.seed = seed;
    }
    (s, notes)
}

/// Why a variant cannot run on a kernel of model profile `profile`, if it
/// cannot. A variant made for another kernel needs that kernel; on the
/// kernel a variant is made for, that variant runs and its sibling of the
/// same accept model without a kernel of its own (made for the scenario's
/// kernel) does not, since both would measure the same thing.
pub fn cannot_run(c: &Curated, id: &str, profile: &str) -> Option<String> {
    let v = c.variant(id)?;
    if let Some(k) = v.kernel.filter(|&k| k != profile) {
        return Some(format!(
            "needs kernel {k}; this one runs {} (run `reuseport-agent scenario {} --kernel {k}`, which boots Debian's {k} under QEMU and runs the agent there)",
            crate::kernel::running_release().unwrap_or_else(|_| "another".into()),
            c.name
        ));
    }
    if v.kernel.is_none() {
        if let Some(own) = c
            .variants
            .iter()
            .find(|o| o.accept == v.accept && o.kernel == Some(profile))
        {
            return Some(format!(
                "on this kernel (profile {profile}) the variant {} measures the same accept model",
                own.id
            ));
        }
    }
    if v.accept == AcceptModel::ReuseportLeastLoaded {
        return Some("needs an eBPF SK_REUSEPORT program and a map the workers update; the agent only loads classic BPF (not measured)".into());
    }
    None
}

/// Checks a scenario trace against the schema: the problems, one line each.
pub fn schema_problems(value: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value =
        serde_json::from_str(SCHEMA).expect("the checked-in schema is JSON");
    let v =
        jsonschema::validator_for(&schema).expect("the checked-in schema is a valid JSON Schema");
    v.iter_errors(value)
        .map(|e| format!("{}: {}", e.instance_path(), e))
        .collect()
}

/// Prints the curated scenarios and their variants.
pub fn list(mut out: impl Write) -> io::Result<()> {
    let profile = running_profile().unwrap_or_default();
    for c in CURATED {
        let ids: Vec<String> = c
            .variants
            .iter()
            .map(|v| match cannot_run(c, v.id, &profile) {
                Some(_) => format!("({})", v.id),
                None => v.id.to_string(),
            })
            .collect();
        writeln!(
            out,
            "{:<28} scale {:<5} {}",
            c.name,
            default_scale(c.name),
            ids.join(" ")
        )?;
    }
    writeln!(
        out,
        "{:<28} the UDP group of a QUIC server across a reload: no-program cid-program",
        "quic-reload"
    )?;
    writeln!(
        out,
        "(variants in parentheses cannot be measured here and are listed as skipped)"
    )
}

/// Runs `scenario quic-reload` ([`quic_reload`]) and writes its trace to
/// `--output` or `out`.
#[cfg(target_os = "linux")]
pub fn run_quic_reload(
    args: &ScenarioArgs,
    mut out: impl Write,
) -> Result<quic_reload::QuicReloadTrace, ScenarioError> {
    let sink = sink_of(args)?;
    let trace = quic_reload::run(running_kernel()?, command_line(), io::stderr())?;
    let mut text = serde_json::to_string(&trace).expect("the trace serializes");
    text.push('\n');
    write_text(sink, &text, &mut out)?;
    Ok(trace)
}

/// The variants to run: those asked for (checked), or all.
pub fn variants(c: &'static Curated, asked: &[String]) -> Result<Vec<&'static str>, ScenarioError> {
    if asked.is_empty() {
        return Ok(c.variants.iter().map(|v| v.id).collect());
    }
    asked
        .iter()
        .map(|id| {
            c.variant(id)
                .map(|v| v.id)
                .ok_or_else(|| ScenarioError::UnknownVariant {
                    scenario: c.name,
                    variant: id.clone(),
                    known: c
                        .variants
                        .iter()
                        .map(|v| v.id)
                        .collect::<Vec<_>>()
                        .join(", "),
                })
        })
        .collect()
}

/// The running kernel's release and model profile.
fn running_kernel() -> Result<KernelInfo, ScenarioError> {
    let release = crate::kernel::running_release().map_err(|e| ScenarioError::Setup {
        call: "reading the kernel release".into(),
        source: io::Error::other(e.to_string()),
        hint: "",
    })?;
    let profile = crate::kernel::resolve(&release)
        .map(|p| p.release.to_string())
        .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
    Ok(KernelInfo { release, profile })
}

/// The running kernel's model profile, if it has one.
fn running_profile() -> Option<String> {
    running_kernel().ok().map(|k| k.profile)
}

/// This process's command line as the trace records it.
fn command_line() -> String {
    crate::trace::bounded_command(
        std::env::args()
            .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
            .collect::<Vec<_>>()
            .join(" ")
            .replacen(
                &std::env::args().next().unwrap_or_default(),
                "reuseport-agent",
                1,
            ),
    )
}

/// Runs `scenario` (see the module docs). Progress goes to stderr, one
/// line per variant; the trace to `--output` or `out`.
pub fn run(args: &ScenarioArgs, out: impl Write) -> Result<ScenarioTrace, ScenarioError> {
    let name = args.name.clone().unwrap_or_default();
    let c = Curated::named(&name).ok_or_else(|| ScenarioError::Unknown(name.clone()))?;
    let ids = variants(c, &args.variants)?;
    let scale = args.scale.unwrap_or_else(|| {
        default_scale(c.name)
            * if args.kernel.is_some() {
                guest::SCALE
            } else {
                1.0
            }
    });
    if !(scale.is_finite() && (0.001..=1.0).contains(&scale)) {
        return Err(ScenarioError::Scale(scale));
    }
    // Checked before anything runs: a path that cannot take the trace
    // fails now, not after the measurement.
    let sink = sink_of(args)?;
    if let Some(kernel) = &args.kernel {
        let trace = guest::run(args, c, kernel, scale)?;
        write_trace(sink, &trace, out)?;
        return Ok(trace);
    }
    if !cfg!(target_os = "linux") {
        return Err(ScenarioError::NotLinux);
    }
    let nproc = crate::cmd::bench::nproc() as u32;
    let mut trace = ScenarioTrace {
        format: "reuseport-lab-scenario".into(),
        version: 1,
        scenario: c.name.into(),
        recorded: crate::cmd::record::rfc3339(SystemTime::now()),
        command: command_line(),
        agent: env!("CARGO_PKG_VERSION").into(),
        kernel: running_kernel()?,
        nproc,
        scale,
        runs: Vec::new(),
        skipped: Vec::new(),
    };
    run_variants(args, c, &ids, scale, &mut trace)?;
    write_trace(sink, &trace, out)?;
    Ok(trace)
}

/// `--output`, checked before anything runs: a path that cannot take the
/// trace fails now, not after the measurement.
fn sink_of(args: &ScenarioArgs) -> Result<Option<crate::output::Output>, ScenarioError> {
    args.output
        .as_deref()
        .map(|p| {
            crate::output::Output::prepare(p).map_err(|source| ScenarioError::Output {
                path: p.display().to_string(),
                source,
            })
        })
        .transpose()
}

/// Writes a trace's text to `--output` (`sink`) or `out`.
fn write_text(
    sink: Option<crate::output::Output>,
    text: &str,
    out: &mut impl Write,
) -> Result<(), ScenarioError> {
    match sink {
        Some(sink) => {
            sink.commit_or_stdout(text.as_bytes(), "scenario")
                .map_err(|(path, source)| ScenarioError::Output { path, source })?;
            Ok(())
        }
        None => out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|source| ScenarioError::Output {
                path: "standard output".into(),
                source,
            }),
    }
}

/// Writes the trace to `--output` (or, when that fails, to standard
/// output, said on standard error) or `out`, and then checks it against
/// the schema (written either way, so nothing measured is lost).
fn write_trace(
    sink: Option<crate::output::Output>,
    trace: &ScenarioTrace,
    mut out: impl Write,
) -> Result<(), ScenarioError> {
    let mut text = serde_json::to_string(trace).expect("the trace serializes");
    text.push('\n');
    let value: serde_json::Value = serde_json::from_str(&text).expect("just written");
    let problems = schema_problems(&value);
    write_text(sink, &text, &mut out)?;
    if !problems.is_empty() {
        // Written anyway (the measurements are not lost): the schema and
        // the simulator's report have drifted apart.
        return Err(ScenarioError::Invalid(format!(
            "the trace was written but breaks public/traces/schema/scenario-v1.schema.json (has the simulator's report changed?): {}",
            problems.join("; ")
        )));
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn run_variants(
    args: &ScenarioArgs,
    c: &'static Curated,
    ids: &[&'static str],
    scale: f64,
    trace: &mut ScenarioTrace,
) -> Result<(), ScenarioError> {
    let _signals =
        crate::signals::Guard::install(crate::signals::Second::Waits).map_err(|source| {
            linux::setup(crate::process::SysError {
                call: "sigaction",
                source,
            })
        })?;
    for &id in ids {
        if let Some(reason) = cannot_run(c, id, &trace.kernel.profile) {
            crate::note!("scenario {} {id}: skipped: {reason}", c.name);
            trace.skipped.push(Skipped {
                variant: id.into(),
                reason,
            });
            continue;
        }
        let v = c.variant(id).expect("checked");
        let (s, adapted) = adapt(
            &c.with(v),
            trace.nproc,
            &trace.kernel.profile,
            scale,
            args.seed,
        );
        s.clone()
            .check()
            .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
        let procs = args.client_procs.unwrap_or_else(|| trace.nproc.clamp(1, 4));
        let r = linux::run_one(&s, procs, std::time::Duration::from_secs(args.timeout))?;
        let report = build_report(&s, &r.measured);
        let shares: Vec<String> = report
            .workers
            .iter()
            .map(|w| w.accepts.to_string())
            .collect();
        crate::note!(
            "scenario {} {id}: {:.2} s, {} of {} connections done, accepts {}, request p50 {:.0} us p99 {:.0} us{}",
            c.name,
            r.seconds,
            report.outcomes.done,
            s.connections,
            shares.join(","),
            report.request_latency.p50_us,
            report.request_latency.p99_us,
            r.stopped.map(|s| format!(" (stopped: {s})")).unwrap_or_default()
        );
        trace.runs.push(Run {
            variant: id.into(),
            scenario: s,
            adapted,
            seconds: r.seconds,
            complete: r.stopped.is_none() && !r.measured.partial,
            stopped: r.stopped.map(str::to_string),
            measured: serde_json::to_value(&report).expect("the report serializes"),
            arrivals_us: r
                .measured
                .conns
                .iter()
                .map(|c| (c.start as f64 / 1e3).round())
                .collect(),
            notes: r.notes,
        });
        if r.stopped == Some("interrupted") {
            break;
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn run_variants(
    _: &ScenarioArgs,
    _: &'static Curated,
    _: &[&'static str],
    _: f64,
    _: &mut ScenarioTrace,
) -> Result<(), ScenarioError> {
    Err(ScenarioError::NotLinux)
}

impl crate::exit::Ending for ScenarioTrace {
    fn status(&self) -> crate::exit::Status {
        let interrupted = |r: &Run| r.stopped.as_deref() == Some("interrupted");
        if self.runs.iter().any(interrupted) {
            crate::exit::Status::Interrupted
        } else {
            crate::exit::all_or_partial(self.runs.iter().all(|r| r.complete))
        }
    }
}

crate::exit::refusing!(ScenarioError);

#[cfg(test)]
mod tests {
    use super::*;

    /// `scenario-v1.schema.json` against the trace types
    /// ([`crate::schema_check`]); the scenario as run and what was measured
    /// are the simulator's shapes, kept as JSON values here and described
    /// by the schema alone.
    #[test]
    fn the_checked_in_scenario_schema_has_the_fields_of_the_types() {
        let generated = serde_json::to_value(schemars::schema_for!(ScenarioTrace)).unwrap();
        let checked_in: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
        let opaque = [".runs[].scenario", ".runs[].measured"];
        crate::schema_check::assert_same(&generated, &checked_in, &opaque);
    }

    /// A scenario for more CPUs than the machine has keeps its load per CPU:
    /// the rate falls in proportion, and `--scale` moves the events with
    /// the connection count.
    #[test]
    fn adapting_keeps_the_load_per_cpu_and_scales_events() {
        let c = Curated::named("stalled-worker").unwrap();
        let (s, notes) = adapt(&c.base(), 2, "6.18", 0.5, Some(7));
        assert_eq!(s.cpus, 2);
        assert_eq!(
            s.arrivals,
            Arrivals::Poisson {
                rate_per_sec: 2000.0
            }
        );
        assert_eq!(s.connections, 6000);
        assert_eq!(s.seed, 7);
        assert!(matches!(
            s.events[0],
            Event::Stall { at_us, for_us, .. } if at_us == 500_000.0 && for_us == 750_000.0
        ));
        assert_eq!(notes.len(), 2, "{notes:?}");
        // Already small: at least 12 connections (or all of them) are kept.
        let six = Curated::named("six-connections").unwrap();
        assert_eq!(adapt(&six.base(), 2, "6.18", 0.01, None).0.connections, 6);
    }

    /// A variant made for another kernel runs only there, and on that
    /// kernel it replaces its sibling of the same accept model.
    #[test]
    fn a_kernels_own_variant_runs_on_that_kernel_instead_of_its_sibling() {
        let c = Curated::named("incoming-cpu").unwrap();
        let old = "reuseport-incoming-cpu-5.10";
        let new = "reuseport-incoming-cpu";
        for p in ["6.1", "6.18"] {
            assert!(cannot_run(c, old, p).unwrap().contains("--kernel 5.10"));
            assert_eq!(cannot_run(c, new, p), None, "{p}");
        }
        assert_eq!(cannot_run(c, old, "5.10"), None);
        assert!(cannot_run(c, new, "5.10").unwrap().contains(old));
        // The other accept models run everywhere.
        for p in ["5.10", "6.1"] {
            assert_eq!(cannot_run(c, "reuseport", p), None);
            assert_eq!(cannot_run(c, "reuseport-bpf-cpu", p), None);
        }
    }

    /// The guest runs the same scenario with this run's scale, bound,
    /// variants, seed and client processes.
    #[test]
    fn the_guest_runs_the_scenario_with_this_runs_options() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            args: ScenarioArgs,
        }
        let a = Cli::parse_from([
            "x",
            "incoming-cpu",
            "--kernel",
            "5.10",
            "--variant",
            "reuseport",
            "--seed",
            "9",
            "--timeout",
            "40",
        ])
        .args;
        assert_eq!(
            guest::guest_argv(&a, "incoming-cpu", 0.05).join(" "),
            "scenario incoming-cpu --scale 0.05 --timeout 40 --variant reuseport --seed 9"
        );
        assert!(Cli::try_parse_from(["x", "six-connections", "--guest-agent", "a"]).is_err());
    }

    /// The measured report accounts for every connection once, and its
    /// series has the scenario's bucket count.
    #[test]
    fn a_measured_report_accounts_for_every_connection_once() {
        let c = Curated::named("six-connections").unwrap();
        let s = c.base();
        let ms = 1_000_000;
        let conn = |i: u64, worker: Option<u32>, outcome| ConnRecord {
            start: (i + 1) * 100 * ms,
            connected: (i + 1) * 100 * ms + 50_000,
            accepted: if worker.is_some() {
                (i + 1) * 100 * ms + 80_000
            } else {
                0
            },
            worker,
            outcome,
            local: true,
        };
        let m = Measured {
            conns: vec![
                conn(0, Some(0), ConnOutcome::Done),
                conn(1, Some(1), ConnOutcome::Done),
                conn(2, Some(2), ConnOutcome::Open),
                conn(3, None, ConnOutcome::Open),
                conn(4, None, ConnOutcome::Reset),
                ConnRecord::default(),
            ],
            requests: (0..6)
                .map(|i| ((i + 1) * 100 * ms, (i + 1) * 100 * ms + 1_200_000))
                .collect(),
            workers: vec![[1, 1, 2_000_000, 0], [1, 1, 2_000_000, 0], [1, 0, 0, 0]],
            listeners: Vec::new(),
            syn_drops: 0,
            migrated: 0,
            partial: true,
            end: 700 * ms,
        };
        let r = build_report(&s, &m);
        let o = r.outcomes;
        assert_eq!(o.arrived, 5, "the one never started is not counted");
        assert_eq!(
            o.done + o.in_service + o.queued + o.retrying + o.reset + o.failed,
            o.arrived
        );
        assert_eq!((o.done, o.in_service, o.queued, o.reset), (2, 1, 1, 1));
        assert_eq!(r.series.accepts.len(), s.buckets as usize);
        assert_eq!(r.request_latency.count, 3);
        assert_eq!(r.accept_latency.count, 3);
        assert_eq!(r.workers[0].cpu_share, 0.5);
        assert!(r.listener_worker.is_empty());
    }
}
