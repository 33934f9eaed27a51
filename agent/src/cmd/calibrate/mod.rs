//! `calibrate`: reads this machine's recorded scenario runs
//! (`public/traces/scenario-*.json`, written by `reuseport-agent
//! scenario`), hands the complete ones to the model's fit
//! ([`reuseport_model::sim::calibrate`], which says how the fit, the
//! agreement and the extrapolation are computed), and writes
//! `calibration.json`; with `--check` it compares a file's figures with what
//! the simulator gives now. Deterministic: the files are read in name order.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use reuseport_model::sim::calibrate::{calibrate, check, evaluate, FitError, Recorded};
pub use reuseport_model::sim::calibrate::{
    Agreement, Calibration, Extrapolated, Sensitivity, CPUS, LATENCY_THRESHOLD, SHARE_THRESHOLD,
};
use reuseport_model::sim::Arrivals;
use thiserror::Error;

use crate::cmd::scenario::{schema_problems, ScenarioTrace};

/// Options of `calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// The directory of the scenario traces (scenario-*.json).
    #[arg(long, value_name = "DIR", default_value = "public/traces")]
    pub traces: PathBuf,

    /// Where to write the result. Default: calibration.json in --traces.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Do not fit: re-simulate every run with the parameters of this
    /// calibration file and check that each agreement figure it states is
    /// what the simulator gives (exit 1 if not).
    #[arg(long, value_name = "FILE")]
    pub check: Option<PathBuf>,
}

/// An error that stops `calibrate`.
#[derive(Debug, Error)]
pub enum CalibrateError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// Which.
        path: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A trace is not a scenario trace.
    #[error("{path} is not a valid scenario trace: {problems}")]
    Invalid {
        /// Which.
        path: String,
        /// What is wrong.
        problems: String,
    },
    /// No traces.
    #[error("no scenario-*.json traces in {0}; record them with `reuseport-agent scenario NAME -o {0}/scenario-NAME.json`")]
    NoTraces(String),
    /// The simulator refused a scenario the fit needed.
    #[error("{}: the simulator refused the scenario: {}", .0.run, .0.message)]
    Sim(#[from] FitError),
}

/// The largest scenario trace `calibrate` reads (the committed ones are
/// under 1 MiB).
pub const MAX_TRACE_BYTES: u64 = 256 << 20;
/// The largest calibration file `calibrate --check` reads (the committed
/// one is under 64 KiB).
pub const MAX_CALIBRATION_BYTES: u64 = 16 << 20;

fn read(path: &Path, cap: u64, what: &str) -> Result<String, CalibrateError> {
    crate::read_capped(path, cap, what).map_err(|source| CalibrateError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// The scenario traces in `dir`, in name order.
pub fn load(dir: &Path) -> Result<Vec<(String, ScenarioTrace)>, CalibrateError> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| CalibrateError::Io {
            path: dir.display().to_string(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("scenario-") && n.ends_with(".json"))
        })
        .collect();
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let text = read(&p, MAX_TRACE_BYTES, "a scenario trace")?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| CalibrateError::Invalid {
                path: p.display().to_string(),
                problems: e.to_string(),
            })?;
        let problems = schema_problems(&value);
        if !problems.is_empty() {
            return Err(CalibrateError::Invalid {
                path: p.display().to_string(),
                problems: problems.join("; "),
            });
        }
        let t: ScenarioTrace =
            serde_json::from_value(value).map_err(|e| CalibrateError::Invalid {
                path: p.display().to_string(),
                problems: e.to_string(),
            })?;
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        out.push((name, t));
    }
    if out.is_empty() {
        return Err(CalibrateError::NoTraces(dir.display().to_string()));
    }
    Ok(out)
}

/// The complete runs (to evaluate), and those left out with why.
fn recorded(traces: &[(String, ScenarioTrace)]) -> (Vec<Recorded>, Vec<String>) {
    let mut runs = Vec::new();
    let mut left = Vec::new();
    for (_, t) in traces {
        for r in &t.runs {
            let id = format!("{}/{}", t.scenario, r.variant);
            if !r.complete {
                left.push(format!(
                    "{id}: the run was cut short ({})",
                    r.stopped.as_deref().unwrap_or("incomplete")
                ));
                continue;
            }
            let m = &r.measured;
            let accepts: Vec<u64> = m["workers"]
                .as_array()
                .map(|ws| {
                    ws.iter()
                        .map(|w| w["accepts"].as_u64().unwrap_or(0))
                        .collect()
                })
                .unwrap_or_default();
            let l = &m["requestLatency"];
            let lat = ["p50Us", "p90Us", "p99Us"].map(|k| l[k].as_f64().unwrap_or(0.0));
            let mut sim = r.scenario.clone();
            let mut at = r.arrivals_us.clone();
            at.sort_by(|a, b| a.total_cmp(b));
            sim.arrivals = Arrivals::Replay { at_us: at };
            runs.push(Recorded {
                scenario: t.scenario.clone(),
                variant: r.variant.clone(),
                sim,
                accepts,
                latency: lat,
            });
        }
    }
    (runs, left)
}

/// Runs `calibrate`: the model's fit over the complete runs of the traces
/// in `--traces`, or with `--check` the file's parameters evaluated again;
/// progress goes to `err`.
pub fn run(args: &CalibrateArgs, err: impl Write) -> Result<Calibration, CalibrateError> {
    match &args.check {
        Some(path) => rerun(args, &read_calibration(path)?),
        None => fit(args, err),
    }
}

/// `claimed` with its runs' agreement evaluated again under its own
/// parameters, over the traces in `--traces` (`--check`).
fn rerun(args: &CalibrateArgs, claimed: &Calibration) -> Result<Calibration, CalibrateError> {
    let (runs, _) = recorded(&load(&args.traces)?);
    let (agreements, _) = evaluate(&runs, &claimed.params)?;
    Ok(Calibration {
        runs: agreements,
        ..claimed.clone()
    })
}

/// The model's fit over the complete runs of the traces in `--traces`.
fn fit(args: &CalibrateArgs, mut err: impl Write) -> Result<Calibration, CalibrateError> {
    let traces = load(&args.traces)?;
    let (runs, left_out) = recorded(&traces);
    let (_, first) = &traces[0];
    Ok(calibrate(
        traces.iter().map(|(n, _)| n.clone()).collect(),
        first.kernel.release.clone(),
        first.nproc,
        &runs,
        left_out,
        |s| {
            let _ = writeln!(err, "{s}");
        },
    )?)
}

/// A calibration file (`--check FILE`).
fn read_calibration(path: &Path) -> Result<Calibration, CalibrateError> {
    serde_json::from_str(&read(path, MAX_CALIBRATION_BYTES, "a calibration file")?).map_err(|e| {
        CalibrateError::Invalid {
            path: path.display().to_string(),
            problems: e.to_string(),
        }
    })
}

/// What `calibrate` did, for the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// With `--check`: the figures the file states that the simulator no
    /// longer gives (empty when all agree, and without `--check`).
    pub differences: Vec<String>,
    /// The file could not be written, and the calibration went to
    /// standard output instead.
    pub diverted: bool,
}

/// The whole subcommand: fits and writes the calibration, or with
/// `--check` compares the file's figures with the simulator's now and
/// lists the differences on `err`.
pub fn command(args: &CalibrateArgs, mut err: impl Write) -> Result<Done, CalibrateError> {
    // Checked before the fit: a path that cannot take the file fails now.
    let sink = match &args.check {
        Some(_) => None,
        None => {
            let path = output_path(args);
            Some(
                crate::output::Output::prepare(&path).map_err(|source| CalibrateError::Io {
                    path: path.display().to_string(),
                    source,
                })?,
            )
        }
    };
    // With --check the file is read once: re-evaluated, then compared.
    let claimed = args.check.as_deref().map(read_calibration).transpose()?;
    let now = match &claimed {
        Some(c) => rerun(args, c)?,
        None => fit(args, &mut err)?,
    };
    let mut diverted = false;
    let differences = match &claimed {
        Some(claimed) => {
            let differences = check(claimed, &now);
            for d in &differences {
                let _ = writeln!(err, "calibrate --check: {d}");
            }
            differences
        }
        None => {
            let path = output_path(args);
            diverted = write(sink.expect("prepared above"), &now)?;
            let _ = writeln!(
                err,
                "calibrate: wrote {} ({} runs, {} disagree; driver of the 48-CPU ratio: {})",
                if diverted {
                    "the calibration to standard output".to_string()
                } else {
                    path.display().to_string()
                },
                now.runs.len(),
                now.disagrees.len(),
                now.driver
            );
            Vec::new()
        }
    };
    Ok(Done {
        differences,
        diverted,
    })
}

/// Where the calibration goes: `--output`, or calibration.json beside the
/// traces.
pub fn output_path(args: &CalibrateArgs) -> PathBuf {
    args.output
        .clone()
        .unwrap_or_else(|| args.traces.join("calibration.json"))
}

/// Writes the calibration, pretty-printed, to `sink` (prepared from
/// [`output_path`]): a whole new file renamed over the old one, or, when
/// that fails, standard output (`Ok(true)`).
pub fn write(sink: crate::output::Output, c: &Calibration) -> Result<bool, CalibrateError> {
    let mut text = serde_json::to_string_pretty(c).expect("serializes");
    text.push('\n');
    sink.commit_or_stdout(text.as_bytes(), "calibrate")
        .map_err(|(path, source)| CalibrateError::Io { path, source })
}

impl crate::exit::Ending for Done {
    fn status(&self) -> crate::exit::Status {
        crate::exit::all_or_partial(self.differences.is_empty() && !self.diverted)
    }
}

impl crate::exit::Failure for CalibrateError {
    fn broken_pipe(&self) -> bool {
        false
    }
}
