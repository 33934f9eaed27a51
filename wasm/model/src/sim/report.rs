//! What a run reports: per-worker counts and CPU, what became of every
//! connection, latency percentiles, and the same over time. Numbers only;
//! the site and the agent put them into words.

use serde::{Deserialize, Serialize};

use crate::hash::Keys;
use crate::spread::Skew;

/// Sub-buckets per power of two in the latency histograms: values are kept
/// to within 1/64 (1.6%).
const SUB: u32 = 64;
/// Coarser histograms, one per time bucket: within 1/8 (12.5%).
const SUB_COARSE: u32 = 8;

/// A log-linear histogram of durations in nanoseconds.
#[derive(Debug, Clone)]
pub struct Histogram {
    sub: u32,
    counts: Vec<u32>,
    n: u64,
    sum: f64,
    sum_sq: f64,
    max: u64,
}

impl Histogram {
    /// Fine (1.6%).
    pub fn fine() -> Histogram {
        Histogram::with(SUB)
    }

    /// Coarse (12.5%), for one time bucket.
    pub fn coarse() -> Histogram {
        Histogram::with(SUB_COARSE)
    }

    fn with(sub: u32) -> Histogram {
        Histogram {
            sub,
            counts: Vec::new(),
            n: 0,
            sum: 0.0,
            sum_sq: 0.0,
            max: 0,
        }
    }

    fn index(&self, v: u64) -> usize {
        let sub = self.sub as u64;
        if v < sub {
            return v as usize;
        }
        let octave = 63 - v.leading_zeros() as u64; // v >= sub
        let shift = octave - sub.trailing_zeros() as u64;
        let mantissa = (v >> shift) - sub; // 0..sub
        ((shift + 1) * sub + mantissa) as usize
    }

    fn lower(&self, i: usize) -> u64 {
        let sub = self.sub as u64;
        let i = i as u64;
        if i < sub {
            return i;
        }
        let shift = i / sub - 1;
        (sub + i % sub) << shift
    }

    /// Counts one duration.
    pub fn add(&mut self, v: u64) {
        let i = self.index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.n += 1;
        let x = v as f64;
        self.sum += x;
        self.sum_sq += x * x;
        self.max = self.max.max(v);
    }

    /// How many durations.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The smallest value with at least `q` of the counts at or below it,
    /// as the lower edge of its bucket, never above the maximum; the
    /// maximum itself for the last of the counts.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let want = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        if want == self.n {
            return self.max;
        }
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= want {
                return self.lower(i).min(self.max);
            }
        }
        self.max
    }

    /// The figures in microseconds.
    pub fn summary(&self) -> Latency {
        let n = self.n.max(1) as f64;
        let mean = self.sum / n;
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        let us = |v: u64| v as f64 / 1e3;
        Latency {
            count: self.n,
            mean_us: mean / 1e3,
            stddev_us: var.sqrt() / 1e3,
            p50_us: us(self.quantile(0.5)),
            p90_us: us(self.quantile(0.9)),
            p99_us: us(self.quantile(0.99)),
            p999_us: us(self.quantile(0.999)),
            max_us: us(self.max),
        }
    }
}

/// Latency figures, in microseconds. Percentiles are kept to within 1.6%
/// (12.5% in the time series); mean, standard deviation and maximum are
/// exact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Latency {
    /// How many durations.
    pub count: u64,
    /// Their mean.
    pub mean_us: f64,
    /// Their standard deviation.
    pub stddev_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// The largest.
    pub max_us: f64,
}

/// One worker over the whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    /// Connections it accepted.
    pub accepts: u64,
    /// Requests it served.
    pub requests: u64,
    /// Its CPU time, in microseconds (serving, accepting, waking for
    /// nothing, spinning on the socket lock).
    pub busy_us: f64,
    /// Its share of all workers' CPU time.
    pub cpu_share: f64,
    /// Times it was woken and found nothing to accept.
    pub wasted_wakeups: u64,
    /// Its request latency.
    pub latency: Latency,
}

/// What became of every connection. `arrived` is the sum of the next six.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Outcomes {
    /// Connections whose first SYN arrived.
    pub arrived: u64,
    /// Served to the end.
    pub done: u64,
    /// Accepted and still being served when the run stopped.
    pub in_service: u64,
    /// Waiting in an accept queue when the run stopped.
    pub queued: u64,
    /// Their last SYN dropped, a retransmission still to come.
    pub retrying: u64,
    /// Reset: queued on a listener that closed (without `tcp_migrate_req`,
    /// or with no sibling left), or refused with no listener at all.
    pub reset: u64,
    /// Given up after the last SYN retransmission was dropped.
    pub failed: u64,
    /// SYNs dropped on a full accept queue (`ListenOverflows`), counting
    /// retransmissions.
    pub syn_drops: u64,
    /// Queued connections moved to a sibling by `tcp_migrate_req`.
    pub migrated: u64,
    /// Accepted by a worker running on the CPU that received the SYN (what
    /// `SO_INCOMING_CPU` and the CPU program are for).
    pub local: u64,
}

/// The run over time, in `buckets` equal slices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Series {
    /// The width of one slice, in microseconds.
    pub bucket_us: f64,
    /// Accepts per slice per worker: `accepts[slice][worker]`.
    pub accepts: Vec<Vec<u32>>,
    /// The deepest each accept queue got in each slice:
    /// `depth[slice][queue]` (one queue when the socket is shared, one per
    /// listener otherwise, in join order).
    pub depth: Vec<Vec<u32>>,
    /// SYNs dropped per slice.
    pub drops: Vec<u32>,
    /// Request latency per slice (of requests finished in it): 50th and 99th
    /// percentiles, in microseconds, within 12.5%.
    pub p50_us: Vec<f64>,
    /// See `p50Us`.
    pub p99_us: Vec<f64>,
}

/// The whole report of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SimReport {
    /// Whether the run was stopped before its end.
    pub partial: bool,
    /// Simulated time at the end, in microseconds.
    pub end_us: f64,
    /// Events processed.
    pub events: u64,
    /// The hash keys of the simulated boot.
    pub keys: Keys,
    /// Per worker, in worker order.
    pub workers: Vec<WorkerReport>,
    /// Which worker owns each listener (join order); empty when the socket
    /// is shared.
    pub listener_worker: Vec<u32>,
    /// Skew of accepts over the workers that were ever accepting.
    pub skew: Skew,
    /// What became of the connections.
    pub outcomes: Outcomes,
    /// From the connection's arrival to `accept()` returning it.
    pub accept_latency: Latency,
    /// From a request's arrival (the first one's: the connection's) to its
    /// answer.
    pub request_latency: Latency,
    /// Over time.
    pub series: Series,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_its_precision() {
        let mut h = Histogram::fine();
        for v in 1..=100_000u64 {
            h.add(v * 10);
        }
        for (q, exact) in [(0.5, 500_000.0), (0.9, 900_000.0), (0.99, 990_000.0)] {
            let got = h.quantile(q) as f64;
            assert!(
                got <= exact && got > exact * (1.0 - 1.0 / 64.0) - 1.0,
                "q{q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), 1_000_000);
        let s = h.summary();
        assert!((s.mean_us - 500.005).abs() < 1e-6);
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::coarse();
        for v in [0u64, 1, 2, 3, 7] {
            h.add(v);
        }
        assert_eq!(h.quantile(0.2), 0);
        assert_eq!(h.quantile(0.4), 1);
        assert_eq!(h.quantile(1.0), 7);
    }
}
