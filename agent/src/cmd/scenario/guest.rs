//! `scenario NAME --kernel K`: the scenario run inside another kernel.
//! Debian's image of that kernel is booted under QEMU with
//! [`SCENARIO_GUEST_CPUS`] vCPUs in the QEMU lab ([`crate::lab`]: the cached
//! image, a busybox initramfs with the static agent), the guest runs `reuseport-agent scenario NAME`
//! with this run's options, and its trace comes back over the second serial
//! port. On the host the trace is checked (the schema, the guest's release)
//! and each run says in its `adapted` list where it ran.
//!
//! The point is a kernel whose rules differ from the running one's: in
//! `incoming-cpu`, 5.10 picks a listener by the hash alone whatever
//! SO_INCOMING_CPU says, and 6.1 prefers the listener of the SYN's CPU
//! (b261eda84ec1, net/core/sock_reuseport.c). Under TCG emulation a guest
//! is many times slower than the host, so by default the connection count
//! is a tenth of the host run's ([`SCALE`]).

use std::io::Write;

use reuseport_model::sim::Curated;

use super::{command_line, ScenarioArgs, ScenarioError, ScenarioTrace};
use std::fs;
use std::time::Instant;

use crate::lab::{self, Image, LabOptions};

/// The default `--scale` in a guest, as a factor of the scenario's own
/// default: a TCG guest on a 2-CPU host runs a variant of `incoming-cpu`
/// (400 connections) in well under a minute.
pub const SCALE: f64 = 0.1;

/// Seconds of a guest's boot and power-off allowed on top of the variants'
/// `--timeout`s, when `--boot-timeout` is not given.
const BOOT_ALLOWANCE: u64 = 120;

/// The command the guest runs (its `--output` is added by `/init`).
pub fn guest_argv(args: &ScenarioArgs, name: &str, scale: f64) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "scenario".into(),
        name.into(),
        "--scale".into(),
        scale.to_string(),
        "--timeout".into(),
        args.timeout.to_string(),
    ];
    for v in &args.variants {
        argv.extend(["--variant".into(), v.clone()]);
    }
    if let Some(seed) = args.seed {
        argv.extend(["--seed".into(), seed.to_string()]);
    }
    if let Some(k) = args.client_procs {
        argv.extend(["--client-procs".into(), k.to_string()]);
    }
    argv
}

/// Boots `kernel`, runs the scenario there, and returns its trace.
pub(super) fn run(
    args: &ScenarioArgs,
    c: &'static Curated,
    kernel: &str,
    scale: f64,
) -> Result<ScenarioTrace, ScenarioError> {
    let guest_err = |message: String| ScenarioError::Guest {
        kernel: kernel.to_string(),
        message,
    };
    let variants = if args.variants.is_empty() {
        c.variants.len()
    } else {
        args.variants.len()
    } as u64;
    let opts = LabOptions {
        who: format!("scenario --kernel {kernel}"),
        cache: args.kernel_cache.clone(),
        guest_agent: args.guest_agent.clone(),
        refresh: false,
        mirror: lab::MIRROR.into(),
        accel: args.accel,
        boot_timeout: args
            .boot_timeout
            .unwrap_or(BOOT_ALLOWANCE + args.timeout * variants),
    };
    let argv = guest_argv(args, c.name, scale);
    let mut err = std::io::stderr();
    let g = in_guest(kernel, &opts, &argv, &mut err).map_err(guest_err)?;
    let mut trace: ScenarioTrace = serde_json::from_str(&g.trace)
        .map_err(|e| guest_err(format!("the guest's trace is not a scenario trace: {e}")))?;
    if trace.kernel.release != g.release {
        return Err(guest_err(format!(
            "the trace says kernel {} but the guest reported {}",
            trace.kernel.release, g.release
        )));
    }
    if trace.scenario != c.name {
        return Err(guest_err(format!(
            "the guest ran scenario {}, not {}",
            trace.scenario, c.name
        )));
    }
    let host = crate::cmd::bench::nproc();
    let where_ = format!(
        "run inside Debian's {} {} (uname -r {}) booted under QEMU {} with {} vCPUs, on a host with {host} CPUs: the guest's clock and CPUs are emulated, so its times are not the host's",
        g.image.package,
        g.image.version,
        g.release,
        args.accel.name(),
        g.cpus.unwrap_or(SCENARIO_GUEST_CPUS),
    );
    for r in &mut trace.runs {
        r.adapted.push(where_.clone());
    }
    trace.command = command_line();
    let _ = writeln!(
        err,
        "scenario --kernel {kernel}: {} ran {} variant(s) in {:.0} s",
        g.release,
        trace.runs.len(),
        g.seconds
    );
    Ok(trace)
}

/// vCPUs of a `scenario --kernel` guest: the four CPUs of the curated
/// scenarios (`incoming-cpu` pins a worker and a client to each).
pub const SCENARIO_GUEST_CPUS: u32 = 4;

/// A scenario run inside a booted guest ([`in_guest`]).
#[derive(Debug, Clone)]
pub struct GuestScenario {
    /// The trace the guest's agent wrote (JSON text, not yet checked).
    pub trace: String,
    /// The image booted.
    pub image: Image,
    /// The guest's `uname -r`.
    pub release: String,
    /// CPUs the guest saw.
    pub cpus: Option<u32>,
    /// From starting QEMU until the guest powered off.
    pub seconds: f64,
}

/// Boots `kernel` on [`SCENARIO_GUEST_CPUS`] vCPUs and runs
/// `reuseport-agent` there with `guest_argv` (without `--output`), bringing
/// its trace back: fetch (or the cache), the static guest agent, an
/// initramfs whose `/init` runs that one command, the boot, and the data
/// port. Err: the step that failed and why.
pub fn in_guest(
    kernel: &str,
    opts: &LabOptions,
    guest_argv: &[String],
    err: &mut dyn Write,
) -> Result<GuestScenario, String> {
    let reqs = lab::requests(&[kernel.to_string()]).map_err(|u| u.to_string())?;
    let [req] = reqs.as_slice() else {
        return Err(format!(
            "--kernel names one kernel to boot; `{kernel}` names {}",
            reqs.len()
        ));
    };
    let cache = lab::cache_dir(opts).map_err(|(what, e)| format!("{what}: {e}"))?;
    let run = lab::run_dir(&cache)?;
    let dir = run.path.join(format!("scenario-{}", req.suite));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let image = lab::fetch(req, opts, &cache, err).map_err(|e| format!("fetch: {e}"))?;
    let scratch = dir.join("initramfs");
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let name = "scenario".to_string();
    let initrd = lab::guest_agent(opts, &scratch, err)
        .and_then(|a| lab::initramfs(&a, &[(name.clone(), guest_argv.to_vec())], &scratch))
        .map_err(|e| format!("initramfs: {e}"))?;
    let _ = writeln!(
        err,
        "{}: booting {} under QEMU ({}, {SCENARIO_GUEST_CPUS} vCPUs, at most {} s): reuseport-agent {}",
        opts.who,
        image.release,
        opts.accel.name(),
        opts.boot_timeout,
        guest_argv.join(" ")
    );
    let t0 = Instant::now();
    let run = lab::boot(
        &image.vmlinuz,
        &initrd,
        &dir,
        opts.boot_timeout,
        opts.accel,
        SCENARIO_GUEST_CPUS,
    );
    let seconds = t0.elapsed().as_secs_f64();
    // Judged as every lab guest is (booted, reported its release, the
    // command's output between its markers); the trace is only kept, there
    // is nothing to recover and predict.
    let (release, out) = lab::guest::booted(&run).map_err(|why| format!("boot: {why}"))?;
    match out.traces.into_iter().find(|(n, _)| *n == name) {
        Some((_, Ok(trace))) => Ok(GuestScenario {
            trace,
            image,
            release,
            cpus: out.cpus,
            seconds,
        }),
        Some((_, Err(e))) => Err(format!("record: {e}")),
        None if out.done => Err("record: the guest did not run the scenario".into()),
        None => {
            let (how, tail) = lab::guest::ending(&run);
            Err(format!(
                "record: the guest stopped before running the scenario ({how}){tail}"
            ))
        }
    }
}
