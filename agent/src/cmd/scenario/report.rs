//! What a scenario run measured ([`Measured`], one [`ConnRecord`] per
//! connection) in the simulator's report shape ([`build_report`]), so the
//! site draws a measured run and a simulated one the same way.

use reuseport_model::sim::report::Histogram;
use reuseport_model::sim::{Latency, Outcomes, Scenario, Series, SimReport, WorkerReport};
use reuseport_model::spread::Skew;
use reuseport_model::Keys;

/// One connection as measured: times in nanoseconds from the start (0 when
/// it did not happen).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnRecord {
    /// `connect()` called.
    pub start: u64,
    /// The handshake completed (the client saw it).
    pub connected: u64,
    /// `accept()` returned it (0 if never).
    pub accepted: u64,
    /// The worker that accepted it (`None` if none).
    pub worker: Option<u32>,
    /// How it ended.
    pub outcome: ConnOutcome,
    /// Accepted on the CPU that received its packets (`SO_INCOMING_CPU` of
    /// the accepted socket equals the worker's CPU).
    pub local: bool,
}

/// How a connection ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ConnOutcome {
    /// Still going when the run stopped.
    #[default]
    Open,
    /// Every request answered.
    Done,
    /// Reset by the server, or refused.
    Reset,
    /// `connect()` failed otherwise (timed out).
    Failed,
}

/// Everything the run measured, for [`build_report`].
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Per connection.
    pub conns: Vec<ConnRecord>,
    /// Per request (`conn * perConnection + k`): (sent, answered), ns from
    /// the start, 0 when it did not happen.
    pub requests: Vec<(u64, u64)>,
    /// Per worker: accepts, requests served, CPU ns, accepts that found nothing.
    pub workers: Vec<[u64; 4]>,
    /// Which worker owns each listener, in join order, with the time it
    /// joined (per-worker models only).
    pub listeners: Vec<(u64, u32)>,
    /// `TcpExt: ListenOverflows` during the run.
    pub syn_drops: u64,
    /// `TcpExt: TCPMigrateReqSuccess` during the run.
    pub migrated: u64,
    /// The run was cut short.
    pub partial: bool,
    /// The end, ns from the start.
    pub end: u64,
}

/// The width of a time bucket, in ns, as the simulator chooses it (its
/// `Simulation::new`) for these arrivals and events, so the two series align.
pub fn bucket_ns(s: &Scenario, arrivals_ns: &[u64]) -> u64 {
    let last = arrivals_ns.iter().copied().max().unwrap_or(0);
    let last_event = s
        .events
        .iter()
        .map(|e| (e.at_us() * 1e3).round() as u64)
        .max()
        .unwrap_or(0);
    let horizon = last.max(last_event);
    (horizon + horizon / 4 + 1_000_000)
        .div_ceil(s.buckets as u64)
        .max(1)
}

/// The measurements in the simulator's report shape.
pub fn build_report(s: &Scenario, m: &Measured) -> SimReport {
    let buckets = s.buckets as usize;
    let arrivals: Vec<u64> = m.conns.iter().map(|c| c.start).collect();
    let bw = bucket_ns(s, &arrivals);
    let bucket = |t: u64| ((t / bw) as usize).min(buckets - 1);
    let n = m.workers.len();
    let per_worker_queues = s.accept.per_worker_queues();
    let queues = if per_worker_queues {
        m.listeners.len().max(1)
    } else {
        1
    };
    let mut series = Series {
        bucket_us: bw as f64 / 1e3,
        accepts: vec![vec![0; n]; buckets],
        depth: vec![vec![0; queues]; buckets],
        drops: vec![0; buckets],
        p50_us: vec![0.0; buckets],
        p99_us: vec![0.0; buckets],
    };
    let mut outcomes = Outcomes::default();
    let mut accept_lat = Histogram::fine();
    let mut request_lat = Histogram::fine();
    let mut worker_lat: Vec<Histogram> = (0..n).map(|_| Histogram::fine()).collect();
    let mut series_lat: Vec<Histogram> = (0..buckets).map(|_| Histogram::coarse()).collect();
    let per = s.requests.per_connection as usize;
    // Queue membership intervals for the depth series: +1 at connected,
    // -1 at accepted, per queue.
    let mut marks: Vec<Vec<(u64, i32)>> = vec![Vec::new(); queues];
    for (i, c) in m.conns.iter().enumerate() {
        if c.start == 0 && c.connected == 0 && c.outcome == ConnOutcome::Open {
            continue; // never started (the run was cut short first)
        }
        outcomes.arrived += 1;
        match c.outcome {
            ConnOutcome::Done => outcomes.done += 1,
            ConnOutcome::Reset => outcomes.reset += 1,
            ConnOutcome::Failed => outcomes.failed += 1,
            ConnOutcome::Open => {
                if c.accepted > 0 {
                    outcomes.in_service += 1;
                } else if c.connected > 0 {
                    outcomes.queued += 1;
                } else {
                    outcomes.retrying += 1;
                }
            }
        }
        if let Some(w) = c.worker {
            let w = w as usize;
            if c.accepted > 0 {
                accept_lat.add(c.accepted.saturating_sub(c.start));
                if w < n {
                    series.accepts[bucket(c.accepted)][w] += 1;
                }
            }
            outcomes.local += c.local as u64;
            let q = if per_worker_queues {
                // The worker's listener at the time of the accept.
                m.listeners
                    .iter()
                    .enumerate()
                    .filter(|(_, &(t, o))| o as usize == w && t <= c.accepted)
                    .map(|(q, _)| q)
                    .next_back()
                    .unwrap_or(0)
            } else {
                0
            };
            if c.connected > 0 && c.accepted >= c.connected {
                marks[q].push((c.connected, 1));
                marks[q].push((c.accepted, -1));
            }
            for k in 0..per {
                let (sent, done) = m.requests.get(i * per + k).copied().unwrap_or((0, 0));
                if done == 0 || done < sent {
                    continue;
                }
                let lat = done - sent;
                request_lat.add(lat);
                if w < n {
                    worker_lat[w].add(lat);
                }
                series_lat[bucket(done)].add(lat);
            }
        }
    }
    for (q, mk) in marks.iter_mut().enumerate() {
        mk.sort_unstable();
        let mut depth = 0i64;
        for &(t, d) in mk.iter() {
            depth += d as i64;
            let b = bucket(t);
            let row = &mut series.depth[b][q];
            *row = (*row).max(depth.max(0) as u32);
        }
    }
    outcomes.syn_drops = m.syn_drops;
    outcomes.migrated = m.migrated;
    series.p50_us = series_lat
        .iter()
        .map(|h| h.quantile(0.5) as f64 / 1e3)
        .collect();
    series.p99_us = series_lat
        .iter()
        .map(|h| h.quantile(0.99) as f64 / 1e3)
        .collect();
    let total_cpu: u64 = m.workers.iter().map(|w| w[2]).sum();
    let workers: Vec<WorkerReport> = m
        .workers
        .iter()
        .zip(&worker_lat)
        .map(|(w, lat)| WorkerReport {
            accepts: w[0],
            requests: w[1],
            busy_us: w[2] as f64 / 1e3,
            cpu_share: if total_cpu == 0 {
                0.0
            } else {
                w[2] as f64 / total_cpu as f64
            },
            wasted_wakeups: w[3],
            latency: lat.summary(),
        })
        .collect();
    let accepts: Vec<u64> = workers.iter().map(|w| w.accepts).collect();
    SimReport {
        partial: m.partial,
        end_us: m.end as f64 / 1e3,
        events: 0,
        keys: Keys::default(),
        workers,
        listener_worker: if per_worker_queues {
            m.listeners.iter().map(|&(_, w)| w).collect()
        } else {
            Vec::new()
        },
        skew: Skew::of(&accepts),
        outcomes,
        accept_latency: accept_lat.summary(),
        request_latency: request_lat.summary(),
        series,
    }
}

/// A latency with nothing measured.
pub fn no_latency() -> Latency {
    Latency::default()
}
