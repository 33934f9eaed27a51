//! The calibration: fits the simulator's free parameters to recorded
//! scenario runs (the agent's `calibrate` reads them from
//! `public/traces/scenario-*.json`, written by `reuseport-agent scenario`,
//! and writes `calibration.json`), says per scenario and variant how well the
//! simulation then agrees with the kernel and where it does not, and
//! extrapolates the fork-against-reuseport comparison past this machine.
//!
//! - **The fit.** Each recorded run is simulated with its scenario as run
//!   and the arrivals replayed from the run (`arrivalsUs`), so the two see
//!   the same load. The runs that saturated this machine (request p50 above
//!   ten service times plus 2 ms) are evaluated but left out of the fit. A
//!   coordinate search over `wakeUs`, `acceptUs`, `lockUs`
//!   (at most `acceptUs`), `connCpuUs` and `clientCpuUs` (the load
//!   generator's CPU per connection, on this machine's own CPUs; it starts
//!   at `CLIENT_CPU_START_US`, 50 µs) (multiplying each by 1/4 to 4, four
//!   rounds; a move must lower the objective by 0.5%, so a parameter the
//!   runs do not pin keeps its start) minimises the sum over runs of the share error plus the
//!   latency log-distance (below). The other parameters keep their defaults.
//! - **Agreement**, per run: the share error is the mean absolute difference
//!   of the per-worker accept shares, worker by worker for the models where
//!   which worker matters (shared sockets: the wake-up order picks it), and
//!   sorted for the hash-based reuseport models (the boot's key differs
//!   from the simulator's, so only the spread can agree); the latency
//!   distance is the mean relative difference `|sim - measured| / measured`
//!   of the request latency's p50, p90 and p99. A run disagrees when the
//!   share error passes [`SHARE_THRESHOLD`] or the distance passes
//!   [`LATENCY_THRESHOLD`]; each is listed in plain words.
//! - **Extrapolation**: the curated `fork-vs-reuseport` scenario (48
//!   workers), blocking accept against reuseport, with the calibrated
//!   parameters on 2, 8, 16 and 48 CPUs, at 70% of what the CPUs serve by
//!   the calibrated costs (latency ratio) and at 150% (time to finish, the
//!   articles' measure); then each parameter at 0.5 and 1.5 times its value,
//!   on 48 CPUs, to name the one that drives the ratio.
//!
//! Deterministic: the simulator is seeded; the same runs in the same order
//! give the same calibration.

use serde::{Deserialize, Serialize};

use super::{simulate, AcceptModel, Arrivals, Curated, Params, Scenario, SimReport};

/// A run disagrees when its share error is above this.
pub const SHARE_THRESHOLD: f64 = 0.10;
/// A run disagrees when its latency distance is above this.
pub const LATENCY_THRESHOLD: f64 = 0.5;
/// The CPU counts of the extrapolation.
pub const CPUS: [u32; 4] = [2, 8, 16, 48];

/// A simulation the fit needed was refused: which run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    /// The run (`scenario/variant`, or the extrapolation's point).
    pub run: String,
    /// The simulator's reason.
    pub message: String,
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "simulating {}: {}", self.run, self.message)
    }
}

impl std::error::Error for FitError {}

/// One run's agreement.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Agreement {
    /// The scenario.
    pub scenario: String,
    /// The variant.
    pub variant: String,
    /// Accept shares per worker, measured.
    pub measured_shares: Vec<f64>,
    /// Accept shares per worker, simulated.
    pub simulated_shares: Vec<f64>,
    /// `per-worker` or `sorted` (see the module docs).
    pub share_method: String,
    /// Mean absolute difference of the shares.
    pub share_error: f64,
    /// Request latency p50, p90, p99 measured (µs).
    pub measured_latency_us: [f64; 3],
    /// The same, simulated.
    pub simulated_latency_us: [f64; 3],
    /// Mean relative difference of the three.
    pub latency_distance: f64,
    /// Both within the thresholds.
    pub agrees: bool,
}

/// One point of the extrapolation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Extrapolated {
    /// CPUs.
    pub cpus: u32,
    /// Connections per second offered at 70% load.
    pub rate_per_sec: f64,
    /// Mean request latency, blocking accept over reuseport, at 70% load.
    pub latency_ratio: f64,
    /// p99 request latency, blocking over reuseport, at 70% load.
    pub p99_ratio: f64,
    /// Time to finish every connection, blocking over reuseport, at 150%
    /// load (the articles' measure: fork time over reuseport time).
    pub time_ratio: f64,
}

/// How the 48-CPU ratios move when one parameter moves.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sensitivity {
    /// The parameter.
    pub param: String,
    /// Its calibrated value.
    pub value: f64,
    /// Time ratio with the parameter at 0.5x and 1.5x.
    pub time_ratio: [f64; 2],
    /// Mean latency ratio with the parameter at 0.5x and 1.5x.
    pub latency_ratio: [f64; 2],
}

/// The file `calibrate` writes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    /// `reuseport-lab-calibration`.
    pub format: String,
    /// 1.
    pub version: u32,
    /// The traces fitted, with the kernel and CPUs they were recorded on.
    pub traces: Vec<String>,
    /// `uname -r` of the recording.
    pub kernel: String,
    /// CPUs of the recording machine.
    pub nproc: u32,
    /// How the fit and the agreement are computed.
    pub method: String,
    /// The share error above which a run disagrees.
    pub share_threshold: f64,
    /// The latency distance above which a run disagrees.
    pub latency_threshold: f64,
    /// The simulator's defaults.
    pub default_params: Params,
    /// The fitted parameters.
    pub params: Params,
    /// The fit's objective (over the runs fitted) with the defaults and
    /// with the fitted values.
    pub objective: [f64; 2],
    /// Per run, with the fitted parameters.
    pub runs: Vec<Agreement>,
    /// Runs left out of the fit, and why.
    pub left_out: Vec<String>,
    /// Where simulation and kernel disagree beyond the thresholds, in words.
    pub disagrees: Vec<String>,
    /// Fork (blocking accept) against reuseport past this machine.
    pub extrapolation: Vec<Extrapolated>,
    /// What drives the 48-CPU ratio.
    pub sensitivity: Vec<Sensitivity>,
    /// The parameter whose ±50% moves the 48-CPU ratios most (the time
    /// ratio's change plus the latency ratio's).
    pub driver: String,
    /// The smallest `lockUs` (with `acceptUs` at least as large) that makes
    /// the 48-CPU time ratio reach the articles' 2.95, trying 1, 2, 4, …,
    /// 4096 µs; `null` if none does.
    pub lock_us_for_article_ratio: Option<f64>,
}

/// One complete recorded run, as the fit uses it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The scenario's name.
    pub scenario: String,
    /// The variant's name.
    pub variant: String,
    /// The scenario as run, with its arrivals replayed
    /// ([`Arrivals::Replay`]).
    pub sim: Scenario,
    /// Accepts per worker, measured.
    pub accepts: Vec<u64>,
    /// Request latency p50, p90, p99 measured (µs).
    pub latency: [f64; 3],
}

fn shares(xs: &[u64]) -> Vec<f64> {
    let total: u64 = xs.iter().sum();
    xs.iter()
        .map(|&x| {
            if total == 0 {
                0.0
            } else {
                x as f64 / total as f64
            }
        })
        .collect()
}

/// Whether which worker gets a connection is the kernel's hash of a key
/// the simulator cannot know.
fn hashed(m: AcceptModel) -> bool {
    matches!(
        m,
        AcceptModel::Reuseport | AcceptModel::ReuseportIncomingCpu
    )
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The agreement of a simulated report with a recorded run, and the fit's
/// objective term (share error + mean |ln(sim/measured)| of the latencies).
fn agreement(r: &Recorded, sim: &SimReport) -> (Agreement, f64) {
    let ms = shares(&r.accepts);
    let sim_accepts: Vec<u64> = sim.workers.iter().map(|w| w.accepts).collect();
    let ss = shares(&sim_accepts);
    let sorted = hashed(r.sim.accept);
    let (mut a, mut b) = (ms.clone(), ss.clone());
    let n = a.len().max(b.len());
    a.resize(n, 0.0);
    b.resize(n, 0.0);
    if sorted {
        a.sort_by(|x, y| y.total_cmp(x));
        b.sort_by(|x, y| y.total_cmp(x));
    }
    let share_error = if n == 0 {
        0.0
    } else {
        a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() / n as f64
    };
    let l = &sim.request_latency;
    let sl = [l.p50_us, l.p90_us, l.p99_us];
    let ml = r.latency;
    let dist = (0..3)
        .map(|i| (sl[i] - ml[i]).abs() / ml[i].max(1.0))
        .sum::<f64>()
        / 3.0;
    let logd = (0..3)
        .map(|i| (sl[i].max(1.0) / ml[i].max(1.0)).ln().abs())
        .sum::<f64>()
        / 3.0;
    let ag = Agreement {
        scenario: r.scenario.clone(),
        variant: r.variant.clone(),
        measured_shares: ms.iter().map(|&x| round(x, 4)).collect(),
        simulated_shares: ss.iter().map(|&x| round(x, 4)).collect(),
        share_method: if sorted { "sorted" } else { "per-worker" }.into(),
        share_error: round(share_error, 4),
        measured_latency_us: ml.map(|x| round(x, 1)),
        simulated_latency_us: sl.map(|x| round(x, 1)),
        latency_distance: round(dist, 4),
        agrees: share_error <= SHARE_THRESHOLD && dist <= LATENCY_THRESHOLD,
    };
    (ag, share_error + logd)
}

/// Whether a measured run saturated this machine: its request p50 is more
/// than ten service times (of the slowest worker) plus 2 ms. There the
/// kernel's figures are set by CPU contention the simulator does not see
/// (the clients' own CPU, other work on the machine), not by the costs the
/// parameters stand for.
pub fn saturated(r: &Recorded) -> bool {
    let slow = r
        .sim
        .service
        .slow
        .iter()
        .map(|s| s.factor)
        .fold(1.0, f64::max);
    r.latency[0] > 10.0 * r.sim.service.mean_us * slow + 2_000.0
}

fn run_sim(s: &Scenario, id: &str) -> Result<SimReport, FitError> {
    simulate(s.clone()).map_err(|e| FitError {
        run: id.into(),
        message: e.to_string(),
    })
}

/// Every run's agreement under `p`, and the objective.
pub fn evaluate(runs: &[Recorded], p: &Params) -> Result<(Vec<Agreement>, f64), FitError> {
    let mut out = Vec::with_capacity(runs.len());
    let mut total = 0.0;
    for r in runs {
        let mut s = r.sim.clone();
        s.params = *p;
        let rep = run_sim(&s, &format!("{}/{}", r.scenario, r.variant))?;
        let (a, obj) = agreement(r, &rep);
        total += obj;
        out.push(a);
    }
    Ok((out, total))
}

const FITTED: [&str; 5] = ["wakeUs", "acceptUs", "lockUs", "connCpuUs", "clientCpuUs"];

/// Where the search starts `clientCpuUs`: the simulator's default is 0
/// (remote clients), from which no factor moves; every recorded run has its
/// load generator on this machine's own CPUs.
const CLIENT_CPU_START_US: f64 = 50.0;

fn get(p: &Params, name: &str) -> f64 {
    match name {
        "wakeUs" => p.wake_us,
        "wakeJitterUs" => p.wake_jitter_us,
        "acceptUs" => p.accept_us,
        "lockUs" => p.lock_us,
        "connCpuUs" => p.conn_cpu_us,
        "herdUs" => p.herd_us,
        "clientCpuUs" => p.client_cpu_us,
        _ => unreachable!("a parameter name"),
    }
}

fn set(p: &Params, name: &str, v: f64) -> Params {
    let mut q = *p;
    match name {
        "wakeUs" => q.wake_us = v,
        "wakeJitterUs" => q.wake_jitter_us = v,
        "acceptUs" => q.accept_us = v,
        "lockUs" => q.lock_us = v,
        "connCpuUs" => q.conn_cpu_us = v,
        "herdUs" => q.herd_us = v,
        "clientCpuUs" => q.client_cpu_us = v,
        _ => unreachable!("a parameter name"),
    }
    q.lock_us = q.lock_us.min(q.accept_us);
    q
}

/// The coordinate search (see the module docs).
fn fit(runs: &[Recorded], note: &mut impl FnMut(&str)) -> Result<(Params, f64, f64), FitError> {
    let mut best = Params {
        client_cpu_us: CLIENT_CPU_START_US,
        ..Params::default()
    };
    let (_, start) = evaluate(runs, &best)?;
    let mut best_obj = start;
    for round_no in 0..4 {
        let mut moved = false;
        for name in FITTED {
            let v = get(&best, name);
            for f in [0.25, 0.5, 0.71, 1.41, 2.0, 4.0] {
                let cand = set(&best, name, round(v * f, 3));
                if cand == best {
                    continue;
                }
                let (_, obj) = evaluate(runs, &cand)?;
                // A move must gain 0.5%: a parameter the runs hardly
                // depend on stays where it was instead of drifting on noise.
                if obj < best_obj * 0.995 {
                    best = cand;
                    best_obj = obj;
                    moved = true;
                }
            }
        }
        note(&format!(
            "calibrate: round {}: objective {best_obj:.4} (defaults {start:.4}), wakeUs {} acceptUs {} lockUs {} connCpuUs {} clientCpuUs {}",
            round_no + 1,
            best.wake_us,
            best.accept_us,
            best.lock_us,
            best.conn_cpu_us,
            best.client_cpu_us
        ));
        if !moved {
            break;
        }
    }
    Ok((best, start, best_obj))
}

/// The fork-against-reuseport ratios at `cpus` under `p`, at loads set by
/// `cost_us` (the calibrated CPU per connection).
fn ratios(p: &Params, cpus: u32, cost_us: f64) -> Result<Extrapolated, FitError> {
    let c = Curated::named("fork-vs-reuseport").expect("a curated scenario");
    let run = |accept: AcceptModel, load: f64| -> Result<SimReport, FitError> {
        let mut s = c.base();
        s.accept = accept;
        s.cpus = cpus;
        // The article's clients ran on another machine.
        s.params = Params {
            client_cpu_us: 0.0,
            ..*p
        };
        s.connections = 12_000;
        s.backlog = 65_535;
        s.arrivals = Arrivals::Poisson {
            rate_per_sec: load * cpus as f64 * 1e6 / cost_us,
        };
        run_sim(&s, &format!("fork-vs-reuseport at {cpus} CPUs"))
    };
    let b70 = run(AcceptModel::Blocking, 0.7)?;
    let r70 = run(AcceptModel::Reuseport, 0.7)?;
    let b150 = run(AcceptModel::Blocking, 1.5)?;
    let r150 = run(AcceptModel::Reuseport, 1.5)?;
    let div = |a: f64, b: f64| if b > 0.0 { round(a / b, 3) } else { 0.0 };
    Ok(Extrapolated {
        cpus,
        rate_per_sec: round(0.7 * cpus as f64 * 1e6 / cost_us, 0),
        latency_ratio: div(b70.request_latency.mean_us, r70.request_latency.mean_us),
        p99_ratio: div(b70.request_latency.p99_us, r70.request_latency.p99_us),
        time_ratio: div(b150.end_us, r150.end_us),
    })
}

/// The calibrated CPU one connection of fork-vs-reuseport costs.
fn cost(p: &Params) -> f64 {
    let c = Curated::named("fork-vs-reuseport").expect("a curated scenario");
    c.base().service.mean_us + p.accept_us + p.conn_cpu_us
}

/// Fits the parameters to `runs` (the complete runs of the traces named
/// `traces`, recorded on `kernel` with `nproc` CPUs; `left_out` says which
/// runs were not complete), evaluates every run, extrapolates and finds
/// the driver (see the module docs). Progress lines go to `note`.
pub fn calibrate(
    traces: Vec<String>,
    kernel: String,
    nproc: u32,
    runs: &[Recorded],
    left_out: Vec<String>,
    mut note: impl FnMut(&str),
) -> Result<Calibration, FitError> {
    let (fitted, saturated_runs): (Vec<&Recorded>, Vec<&Recorded>) =
        runs.iter().partition(|r| !saturated(r));
    let saturated_ids: Vec<String> = saturated_runs
        .iter()
        .map(|r| format!("{}/{}", r.scenario, r.variant))
        .collect();
    let mut left_out = left_out;
    for r in &saturated_runs {
        left_out.push(format!(
            "{}/{}: left out of the fit (evaluated below): saturated on this machine, request p50 {:.0} us against a {:.0} us service time",
            r.scenario, r.variant, r.latency[0], r.sim.service.mean_us
        ));
    }
    let fit_set: Vec<Recorded> = if fitted.is_empty() {
        runs.to_vec()
    } else {
        fitted.into_iter().cloned().collect()
    };
    let (params, start, obj) = fit(&fit_set, &mut note)?;
    let (agreements, _) = evaluate(runs, &params)?;
    let mut disagrees = Vec::new();
    for a in &agreements {
        let mut why = Vec::new();
        if a.share_error > SHARE_THRESHOLD {
            why.push(format!(
                "accept shares differ by {:.3} on average ({}; measured {:?}, simulated {:?})",
                a.share_error, a.share_method, a.measured_shares, a.simulated_shares
            ));
        }
        if a.latency_distance > LATENCY_THRESHOLD {
            why.push(format!(
                "request latency p50/p90/p99 measured {:?} us, simulated {:?} us ({:.0}% apart on average)",
                a.measured_latency_us,
                a.simulated_latency_us,
                a.latency_distance * 100.0
            ));
        }
        let id = format!("{}/{}", a.scenario, a.variant);
        if !why.is_empty() && saturated_ids.contains(&id) {
            why.push("this run saturated the machine (left out of the fit): the kernel's figures there include the CPU of the load generator on the same CPUs and the scheduler's time slices, which the simulator does not model".into());
        }
        if !why.is_empty() {
            disagrees.push(format!("{id}: {}", why.join("; ")));
        }
    }
    let unit = cost(&params);
    let mut extrapolation = Vec::new();
    for cpus in CPUS {
        extrapolation.push(ratios(&params, cpus, unit)?);
    }
    let mut sensitivity = Vec::new();
    for name in [
        "wakeUs",
        "wakeJitterUs",
        "acceptUs",
        "lockUs",
        "connCpuUs",
        "herdUs",
    ] {
        let v = get(&params, name);
        let mut t = [0.0; 2];
        let mut l = [0.0; 2];
        for (i, f) in [0.5, 1.5].into_iter().enumerate() {
            let mut q = set(&params, name, v * f);
            if name == "lockUs" {
                // lockUs lives inside acceptUs: raise that with it if needed.
                q.accept_us = q.accept_us.max(q.lock_us);
                q.lock_us = v * f;
            }
            let e = ratios(&q, 48, unit)?;
            t[i] = e.time_ratio;
            l[i] = e.latency_ratio;
        }
        sensitivity.push(Sensitivity {
            param: name.into(),
            value: v,
            time_ratio: t,
            latency_ratio: l,
        });
    }
    let driver = sensitivity
        .iter()
        .max_by(|a, b| {
            let d = |s: &Sensitivity| {
                (s.time_ratio[1] - s.time_ratio[0]).abs()
                    + (s.latency_ratio[1] - s.latency_ratio[0]).abs()
            };
            d(a).total_cmp(&d(b))
        })
        .map(|s| s.param.clone())
        .unwrap_or_default();
    let mut lock_us_for_article_ratio = None;
    let mut lock = 1.0;
    while lock <= 4096.0 {
        let mut q = params;
        q.lock_us = lock;
        q.accept_us = q.accept_us.max(lock);
        if ratios(&q, 48, unit)?.time_ratio >= 2.95 {
            lock_us_for_article_ratio = Some(lock);
            break;
        }
        lock *= 2.0;
    }
    Ok(Calibration {
        format: "reuseport-lab-calibration".into(),
        version: 1,
        traces,
        kernel,
        nproc,
        method: "Each complete recorded run is simulated with its scenario as run and its arrivals replayed. The fit uses the runs that did not saturate this machine (request p50 at most ten service times of the slowest worker plus 2 ms; the others are listed in leftOut and still evaluated). Coordinate search over wakeUs, acceptUs, lockUs (<= acceptUs), connCpuUs and clientCpuUs (the load generator's CPU per connection on this machine's own CPUs; it starts at 50 us, the others at their defaults) (each x0.25 to x4, up to four rounds, a move kept only if it lowers the objective by 0.5% or more, so a parameter the runs do not pin stays where it started), minimising the sum over runs of the share error plus the mean |ln(simulated/measured)| of the request latency p50, p90, p99. Share error: mean absolute difference of per-worker accept shares, sorted for reuseport and reuseport-incoming-cpu (the boot's hash key is not the simulator's), worker by worker otherwise. Latency distance: mean of |simulated - measured| / measured over p50, p90, p99. Extrapolation: fork-vs-reuseport (48 workers, 12000 connections, backlog 65535, clients on another machine: clientCpuUs 0), blocking accept over reuseport, at 70% (latency) and 150% (time to finish) of cpus / (service + acceptUs + connCpuUs); sensitivity: each parameter at 0.5x and 1.5x on 48 CPUs; the driver is the one that moves the time ratio plus the latency ratio most.".into(),
        share_threshold: SHARE_THRESHOLD,
        latency_threshold: LATENCY_THRESHOLD,
        default_params: Params::default(),
        params,
        objective: [round(start, 4), round(obj, 4)],
        runs: agreements,
        left_out,
        disagrees,
        extrapolation,
        sensitivity,
        driver,
        lock_us_for_article_ratio,
    })
}

/// The runs whose figures `claimed` states differ from `now`'s (beyond
/// rounding), in words: `calibrate --check`.
pub fn check(claimed: &Calibration, now: &Calibration) -> Vec<String> {
    let mut out = Vec::new();
    for a in &claimed.runs {
        match now
            .runs
            .iter()
            .find(|b| b.scenario == a.scenario && b.variant == a.variant)
        {
            None => out.push(format!(
                "{}/{}: no such run in the traces",
                a.scenario, a.variant
            )),
            Some(b) => {
                if (a.share_error - b.share_error).abs() > 1e-3
                    || (a.latency_distance - b.latency_distance).abs() > 1e-3
                    || a.agrees != b.agrees
                {
                    out.push(format!(
                        "{}/{}: the file says share error {} and latency distance {} (agrees: {}), the simulator now gives {} and {} (agrees: {})",
                        a.scenario, a.variant, a.share_error, a.latency_distance, a.agrees,
                        b.share_error, b.latency_distance, b.agrees
                    ));
                }
            }
        }
    }
    out
}
