//! "Which scenario looks like mine?": the curated runs ranked by how close
//! their picture is to what a user observed. The comparison is scale-free,
//! since the user's worker count and traffic differ from the scenario's:
//! how concentrated the accepts are, how many workers got nothing, and, when
//! latencies are given, how long the tail is against the median.

use serde::{Deserialize, Serialize};

use crate::error::ObservedError;
use crate::spread::Skew;

use super::report::SimReport;

/// What the user saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Observed {
    /// Connections (or requests) per worker: 2 to 4096 workers.
    pub counts: Vec<u64>,
    /// Median request latency, if known.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub p50_ms: Option<f64>,
    /// 99th percentile, if known.
    #[serde(default)]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub p99_ms: Option<f64>,
}

/// The scale-free picture of one set of counts (and latencies).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Shape {
    /// The busiest worker's share against an even one, from 0 (even) to 1
    /// (one worker has everything): `(maxShare·n − 1) / (n − 1)`.
    pub concentration: f64,
    /// Share of workers with nothing.
    pub empty_share: f64,
    /// Jain's index rescaled from `[1/n, 1]` to `[0, 1]` (1 even).
    pub evenness: f64,
    /// `log10(p99 / p50)`, when both are known and positive.
    #[cfg_attr(feature = "ts", ts(optional))]
    pub tail: Option<f64>,
}

fn shape(counts: &[u64], p50: Option<f64>, p99: Option<f64>) -> Shape {
    let n = counts.len() as f64;
    let s = Skew::of(counts);
    let tail = match (p50, p99) {
        (Some(a), Some(b)) if a > 0.0 && b > 0.0 => Some((b / a).log10()),
        _ => None,
    };
    Shape {
        concentration: ((s.max_share * n - 1.0) / (n - 1.0)).clamp(0.0, 1.0),
        empty_share: s.empty_share,
        evenness: ((s.jain - 1.0 / n) / (1.0 - 1.0 / n)).clamp(0.0, 1.0),
        tail,
    }
}

impl Observed {
    /// Its shape, or what is wrong with it.
    pub fn shape(&self) -> Result<Shape, ObservedError> {
        if !(2..=4096).contains(&self.counts.len()) {
            return Err(ObservedError::Workers(self.counts.len()));
        }
        if self.counts.iter().all(|&c| c == 0) {
            return Err(ObservedError::Empty);
        }
        for (field, v) in [("p50Ms", self.p50_ms), ("p99Ms", self.p99_ms)] {
            if let Some(x) = v {
                if !(x.is_finite() && x > 0.0) {
                    return Err(ObservedError::Latency {
                        field,
                        value: x.to_string(),
                    });
                }
            }
        }
        Ok(shape(&self.counts, self.p50_ms, self.p99_ms))
    }
}

impl SimReport {
    /// The shape of this run's accepts and request latency.
    pub fn shape(&self) -> Shape {
        let counts: Vec<u64> = self.workers.iter().map(|w| w.accepts).collect();
        let l = &self.request_latency;
        shape(&counts, Some(l.p50_us / 1e3), Some(l.p99_us / 1e3))
    }
}

/// One candidate, ranked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Match {
    /// Index of the run in the list given.
    pub run: u32,
    /// Distance to the observation: the sum of the differences of the shape's
    /// figures (the tail counts only when the user gave latencies).
    pub distance: f64,
    /// The run's shape.
    pub shape: Shape,
}

/// The runs ordered from the closest to the observation to the farthest.
pub fn rank(observed: &Observed, runs: &[SimReport]) -> Result<(Shape, Vec<Match>), ObservedError> {
    let o = observed.shape()?;
    let mut out: Vec<Match> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let s = r.shape();
            let tail = match (o.tail, s.tail) {
                (Some(a), Some(b)) => (a - b).abs().min(1.0),
                _ => 0.0,
            };
            let distance = (o.concentration - s.concentration).abs()
                + (o.empty_share - s.empty_share).abs()
                + (o.evenness - s.evenness).abs()
                + tail;
            Match {
                run: i as u32,
                distance,
                shape: s,
            }
        })
        .collect();
    out.sort_by(|a, b| a.distance.total_cmp(&b.distance).then(a.run.cmp(&b.run)));
    Ok((o, out))
}
