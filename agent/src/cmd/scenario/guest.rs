//! `scenario NAME --kernel K`: the scenario run inside another kernel.
//! Debian's image of that kernel is booted under QEMU with
//! [`SCENARIO_GUEST_CPUS`] vCPUs, exactly as `verify --kernels` boots it
//! ([`crate::cmd::verify::kernels::run_scenario`]: the cached image, a busybox initramfs
//! with the static agent), the guest runs `reuseport-agent scenario NAME`
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
use crate::cmd::verify::kernels::{KernelsArgs, SCENARIO_GUEST_CPUS};

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
    let kargs = KernelsArgs {
        kernels: Some(vec![kernel.to_string()]),
        kernel_cache: args.kernel_cache.clone(),
        guest_agent: args.guest_agent.clone(),
        boot_timeout: args
            .boot_timeout
            .unwrap_or(BOOT_ALLOWANCE + args.timeout * variants),
        refresh: false,
        accel: args.accel,
        mirror: crate::cmd::verify::kernels::MIRROR.into(),
        write_record: None,
    };
    let argv = guest_argv(args, c.name, scale);
    let mut err = std::io::stderr();
    let g =
        crate::cmd::verify::kernels::run_scenario(&kargs, &argv, &mut err).map_err(guest_err)?;
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
