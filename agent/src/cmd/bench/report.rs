//! What `bench` measured: the `--json` object ([`Report`]) and the
//! fairness figures it carries.

use serde::Serialize;

use super::args::{Accept, Mode};

/// Why a run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// `--timeout` passed.
    Timeout,
    /// SIGINT (Ctrl-C) or SIGTERM.
    Interrupted,
}

/// The results of one mode.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    /// `"fork"` or `"reuseport"`.
    pub mode: Mode,
    /// The port listened on.
    pub port: u16,
    /// The process group of this mode's workers and clients (all of them
    /// were killed and reaped before the report was made).
    pub process_group: i32,
    /// Every client made all its connections, every connection was
    /// accepted, and nothing stopped the mode.
    pub complete: bool,
    /// Set when `--timeout` or a signal stopped this mode.
    pub stopped: Option<Stop>,
    /// Wall time from the release of the clients until the last one was
    /// done (or until the mode was stopped); `null` if clients never started.
    pub seconds: Option<f64>,
    /// Connections asked for: clients × connections.
    pub connections: u64,
    /// Connections the clients made.
    pub connected: u64,
    /// Connections the workers accepted (the sum of `per_worker`).
    pub accepted: u64,
    /// `connected / seconds`.
    pub connections_per_second: Option<f64>,
    /// Accepts of each worker, in worker order.
    pub per_worker: Vec<u64>,
    /// With `--epoll`: returns from `epoll_wait` of each worker after which
    /// `accept` found nothing (another worker took the connection first);
    /// `null` otherwise. The kernel checks readiness again before it
    /// returns, so workers woken for a connection that is already gone go
    /// back to sleep inside `epoll_wait` and are not counted here.
    pub empty_wakeups: Option<Vec<u64>>,
    /// Connections made by each client.
    pub per_client: Vec<u64>,
    /// Largest over smallest of `per_worker`; `null` when a worker got none.
    pub max_min_ratio: Option<f64>,
    /// Jain's fairness index of `per_worker`: (Σx)² / (n·Σx²), 1 when even,
    /// 1/n when one worker got everything; `null` when nothing was accepted.
    pub jain: Option<f64>,
    /// What went wrong in clients or workers, one message each.
    pub errors: Vec<String>,
}

/// The result of a run (the `--json` object).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// CPUs available to the agent (what `nproc` prints).
    pub nproc: usize,
    /// Server processes per mode.
    pub workers: u32,
    /// Client processes per mode.
    pub clients: u32,
    /// Connections each client makes.
    pub connections_per_client: u32,
    /// `"blocking"` or `"epoll"`.
    pub accept: Accept,
    /// The listening address.
    pub address: String,
    /// `--timeout`, in seconds.
    pub timeout_secs: u64,
    /// Every mode asked for ran and is complete.
    pub complete: bool,
    /// Set when `--timeout` or a signal stopped the run.
    pub stopped: Option<Stop>,
    /// One entry per mode run, in order (fork first).
    pub modes: Vec<ModeReport>,
    /// Fork time over reuseport time, when both modes ran and are complete.
    pub fork_over_reuseport: Option<f64>,
    /// How these numbers relate to the article's.
    pub note: String,
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²); `None` when all are 0.
pub fn jain(xs: &[u64]) -> Option<f64> {
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let squares: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    (squares > 0.0).then(|| sum * sum / (xs.len() as f64 * squares))
}

/// Largest over smallest of `xs`; `None` when empty or the smallest is 0.
pub fn max_min_ratio(xs: &[u64]) -> Option<f64> {
    let min = *xs.iter().min()?;
    let max = *xs.iter().max()?;
    (min > 0).then(|| max as f64 / min as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index() {
        assert_eq!(jain(&[5, 5, 5, 5]), Some(1.0));
        assert_eq!(jain(&[8, 0, 0, 0]), Some(0.25));
        assert_eq!(jain(&[0, 0]), None);
        let j = jain(&[1, 3]).unwrap();
        assert!((j - 16.0 / 20.0).abs() < 1e-12);
    }

    #[test]
    fn max_min() {
        assert_eq!(max_min_ratio(&[2, 4, 3]), Some(2.0));
        assert_eq!(max_min_ratio(&[2, 0]), None);
        assert_eq!(max_min_ratio(&[]), None);
    }
}
