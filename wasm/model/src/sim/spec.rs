//! What a scenario is: the workload, the accept model and the events, as one
//! typed value read from JSON (the same shape on the command line, at the
//! wasm boundary and in the curated gallery), with a bound on every field.
//!
//! Times are in microseconds, as `f64`, in the JSON; the engine works in
//! whole nanoseconds.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::profile::Profile;
use crate::release::{ProfileError, Release};

use super::accept::Steering;

/// Workers (processes or threads serving the port).
pub const MAX_WORKERS: u32 = 256;
/// CPUs the workers run on.
pub const MAX_CPUS: u32 = 256;
/// Connections one run simulates.
pub const MAX_CONNECTIONS: u32 = 1_000_000;
/// Requests one run simulates (connections × requests per connection).
pub const MAX_REQUESTS: u64 = 10_000_000;
/// Requests on one keep-alive connection.
pub const MAX_REQUESTS_PER_CONNECTION: u32 = 10_000;
/// Scheduled events (stalls, reloads, added workers).
pub const MAX_EVENTS: usize = 64;
/// Points of the time series.
pub const MAX_BUCKETS: u32 = 1000;
/// Client addresses.
pub const MAX_CLIENTS: u32 = 1 << 16;
/// The accept queue's length: `somaxconn` is a u32 sysctl, but `listen()`
/// keeps the backlog in `sk_max_ack_backlog`, and 65535 was the sysctl's
/// ceiling until 5.4 (net/core/sysctl_net_core.c).
pub const MAX_BACKLOG: u32 = 65_535;
/// Any time in a scenario: one simulated hour.
pub const MAX_TIME_US: f64 = 3_600e6;

/// One scenario: everything the simulator needs, and nothing else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// The kernel profile whose selection the reuseport models use (`6.18`).
    pub kernel: String,
    /// How many workers serve the port (1 to 256).
    pub workers: u32,
    /// How many CPUs they share (1 to 256); worker `w` runs on CPU `w % cpus`.
    pub cpus: u32,
    /// How connections reach workers.
    pub accept: AcceptModel,
    /// How many connections arrive in all (1 to 1,000,000).
    pub connections: u32,
    /// When they arrive.
    pub arrivals: Arrivals,
    /// Where they come from.
    pub clients: Clients,
    /// What each connection asks for.
    #[serde(default)]
    pub requests: Requests,
    /// How long a request takes to serve.
    pub service: Service,
    /// Stalls, reloads and added workers, at given times.
    #[serde(default)]
    pub events: Vec<Event>,
    /// The accept queue's length per listening socket (the `listen()`
    /// backlog, capped by `somaxconn`; 4096 by default since 5.4).
    #[serde(default = "default_backlog")]
    pub backlog: u32,
    /// `net.ipv4.tcp_migrate_req` (5.14+): a closed listener's queued
    /// connections move to a sibling instead of being reset.
    #[serde(default)]
    pub tcp_migrate_req: bool,
    /// The free parameters (calibrated by `npm run calibrate`).
    #[serde(default)]
    pub params: Params,
    /// The seed: of the boot's hash keys, the arrivals, the clients' ports
    /// and the service times.
    #[serde(default)]
    pub seed: u64,
    /// Points in the time series (1 to 1000).
    #[serde(default = "default_buckets")]
    pub buckets: u32,
}

fn default_backlog() -> u32 {
    4096
}

fn default_buckets() -> u32 {
    60
}

pub use super::accept::AcceptModel;

/// When connections arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Arrivals {
    /// A Poisson process: exponential gaps with this mean rate.
    Poisson {
        /// Connections per second.
        rate_per_sec: f64,
    },
    /// Bursts of `burst` connections at once, the bursts a Poisson process
    /// with the same mean connection rate.
    Bursty {
        /// Connections per second, on average.
        rate_per_sec: f64,
        /// Connections per burst (1 to 10,000).
        burst: u32,
    },
    /// One connection every `gap_us`, exactly: the lightest load, as in
    /// Cloudflare's six-connection test.
    Paced {
        /// Microseconds between connections.
        gap_us: f64,
    },
    /// Replayed from a trace: each connection's arrival time.
    Replay {
        /// Microseconds from the start, not decreasing, one per connection.
        at_us: Vec<f64>,
    },
}

/// Where connections come from: `count` client addresses from
/// `127.0.1.1` up, each connecting from ports in `[portLo, portHi]` to the
/// server at `127.0.0.1:port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Clients {
    /// Client addresses (1 to 65536).
    pub count: u32,
    /// The lowest source port.
    #[serde(default = "default_port_lo")]
    pub port_lo: u16,
    /// The highest source port.
    #[serde(default = "default_port_hi")]
    pub port_hi: u16,
    /// The server's port.
    #[serde(default = "default_port")]
    pub port: u16,
}

fn default_port_lo() -> u16 {
    32768
}

fn default_port_hi() -> u16 {
    60999
}

fn default_port() -> u16 {
    8080
}

/// What one connection asks for: `perConnection` requests, the next sent
/// `thinkUs` after the answer to the last (1 is a short connection; more
/// is keep-alive).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Requests {
    /// Requests per connection (1 to 10,000).
    pub per_connection: u32,
    /// The client's pause between an answer and its next request.
    #[serde(default)]
    pub think_us: f64,
}

impl Default for Requests {
    fn default() -> Self {
        Requests {
            per_connection: 1,
            think_us: 0.0,
        }
    }
}

/// How long one request keeps its worker's CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Service {
    /// The mean service time.
    pub mean_us: f64,
    /// Its distribution.
    #[serde(default)]
    pub dist: ServiceDist,
    /// Workers that are slower than the rest: each request takes `factor`
    /// times as long.
    #[serde(default)]
    pub slow: Vec<SlowWorker>,
}

/// The distribution of service times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum ServiceDist {
    /// Every request takes the mean.
    Fixed,
    /// Exponential with that mean.
    #[default]
    Exponential,
}

/// A worker that serves slowly (a busier neighbour, a heavier code path).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SlowWorker {
    /// The worker.
    pub worker: u32,
    /// Its service times are multiplied by this (1 to 1000).
    pub factor: f64,
}

/// Something that happens at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Event {
    /// The worker stops running for `forUs` (a garbage-collection pause, a
    /// blocking call): it neither accepts nor serves, and its listener stays
    /// in the group.
    Stall {
        /// The worker.
        worker: u32,
        /// When.
        at_us: f64,
        /// For how long.
        for_us: f64,
    },
    /// The worker stops accepting (a reload): with a per-worker listener it
    /// closes it, and what waits in its queue is reset, or moved to a
    /// sibling with `tcpMigrateReq`; it finishes the connections it has.
    Leave {
        /// The worker.
        worker: u32,
        /// When.
        at_us: f64,
    },
    /// A worker that left accepts again, on a new listener that joins the
    /// group at the end.
    Rejoin {
        /// The worker.
        worker: u32,
        /// When.
        at_us: f64,
    },
    /// One more worker (and listener) starts.
    AddWorker {
        /// When.
        at_us: f64,
    },
}

impl Event {
    /// When it happens.
    pub fn at_us(&self) -> f64 {
        match *self {
            Event::Stall { at_us, .. }
            | Event::Leave { at_us, .. }
            | Event::Rejoin { at_us, .. }
            | Event::AddWorker { at_us } => at_us,
        }
    }
}

/// The simulator's free parameters: what this machine's recorded runs fit
/// (`npm run calibrate`), not kernel rules.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Params {
    /// From a wake-up to the woken worker running.
    pub wake_us: f64,
    /// A random extra on each wake-up, uniform in `[0, wakeJitterUs)`: who
    /// of several woken workers runs first.
    pub wake_jitter_us: f64,
    /// The CPU one `accept()` takes.
    pub accept_us: f64,
    /// The part of it spent holding the listening socket's lock: accepts on
    /// one socket run one at a time for this long.
    pub lock_us: f64,
    /// The CPU a connection costs besides its requests (setup and close).
    pub conn_cpu_us: f64,
    /// The CPU a worker spends when woken for nothing (`EAGAIN`).
    pub herd_us: f64,
    /// nginx's `accept_mutex_delay`: an idle worker that failed to take the
    /// mutex tries again after this long (500 ms by default).
    pub mutex_delay_us: f64,
    /// The CPU one update of the least-loaded program's map costs.
    pub map_update_us: f64,
    /// The CPU the load generator spends per connection on the server's own
    /// CPUs (connect, the request, close), on the CPU that sends the SYN:
    /// 0 for remote clients, as in the gallery; a recording on one machine,
    /// with its clients on loopback, pays it (`npm run calibrate` fits it).
    pub client_cpu_us: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            wake_us: 20.0,
            wake_jitter_us: 10.0,
            accept_us: 6.0,
            lock_us: 1.0,
            conn_cpu_us: 15.0,
            herd_us: 4.0,
            mutex_delay_us: 500_000.0,
            map_update_us: 0.5,
            client_cpu_us: 0.0,
        }
    }
}

/// A checked scenario: its kernel resolved and every bound held.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The scenario as given.
    pub scenario: Scenario,
    /// Its kernel.
    pub profile: &'static Profile,
}

fn time(field: &'static str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && (0.0..=MAX_TIME_US).contains(&v) {
        Ok(())
    } else {
        Err(SimError::Range {
            field,
            value: v.to_string(),
            range: "0 to 3600000000 (one hour, in microseconds)",
        })
    }
}

fn count(
    field: &'static str,
    v: u64,
    lo: u64,
    hi: u64,
    range: &'static str,
) -> Result<(), SimError> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(SimError::Range {
            field,
            value: v.to_string(),
            range,
        })
    }
}

fn rate(field: &'static str, v: f64) -> Result<(), SimError> {
    if v.is_finite() && v > 0.0 && v <= 1e9 {
        Ok(())
    } else {
        Err(SimError::Range {
            field,
            value: v.to_string(),
            range: "more than 0, up to 1000000000 per second",
        })
    }
}

impl Scenario {
    /// Checks every bound, and resolves the kernel.
    pub fn check(self) -> Result<Checked, SimError> {
        let s = &self;
        let profile = Profile::named(&s.kernel).map_err(SimError::Kernel)?;
        if !s.accept.runs_on(profile) {
            return Err(SimError::Unsupported {
                model: s.accept,
                release: profile.release,
                since: s
                    .accept
                    .since()
                    .expect("a newer profile runs every accept model"),
            });
        }
        if s.tcp_migrate_req && !profile.closed_tail {
            return Err(SimError::Range {
                field: "tcpMigrateReq",
                value: "true".into(),
                range: "false before Linux 5.14, which added net.ipv4.tcp_migrate_req",
            });
        }
        count(
            "workers",
            s.workers.into(),
            1,
            MAX_WORKERS.into(),
            "1 to 256",
        )?;
        count("cpus", s.cpus.into(), 1, MAX_CPUS.into(), "1 to 256")?;
        count(
            "connections",
            s.connections.into(),
            1,
            MAX_CONNECTIONS.into(),
            "1 to 1000000",
        )?;
        count(
            "requests.perConnection",
            s.requests.per_connection.into(),
            1,
            MAX_REQUESTS_PER_CONNECTION.into(),
            "1 to 10000",
        )?;
        let total = s.connections as u64 * s.requests.per_connection as u64;
        if total > MAX_REQUESTS {
            return Err(SimError::TooManyRequests { total });
        }
        time("requests.thinkUs", s.requests.think_us)?;
        time("service.meanUs", s.service.mean_us)?;
        count(
            "clients.count",
            s.clients.count.into(),
            1,
            MAX_CLIENTS.into(),
            "1 to 65536",
        )?;
        if s.clients.port_lo == 0 || s.clients.port_lo > s.clients.port_hi {
            return Err(SimError::Range {
                field: "clients.portLo",
                value: s.clients.port_lo.to_string(),
                range: "1 to clients.portHi",
            });
        }
        count(
            "clients.port",
            s.clients.port.into(),
            1,
            65535,
            "1 to 65535",
        )?;
        count(
            "backlog",
            s.backlog.into(),
            1,
            MAX_BACKLOG.into(),
            "1 to 65535",
        )?;
        count(
            "buckets",
            s.buckets.into(),
            1,
            MAX_BUCKETS.into(),
            "1 to 1000",
        )?;
        match &s.arrivals {
            Arrivals::Poisson { rate_per_sec } => rate("arrivals.ratePerSec", *rate_per_sec)?,
            Arrivals::Bursty {
                rate_per_sec,
                burst,
            } => {
                rate("arrivals.ratePerSec", *rate_per_sec)?;
                count("arrivals.burst", (*burst).into(), 1, 10_000, "1 to 10000")?;
            }
            Arrivals::Paced { gap_us } => time("arrivals.gapUs", *gap_us)?,
            Arrivals::Replay { at_us } => {
                if at_us.len() != s.connections as usize {
                    return Err(SimError::ReplayLength {
                        given: at_us.len(),
                        connections: s.connections,
                    });
                }
                let mut last = 0.0;
                for (i, &t) in at_us.iter().enumerate() {
                    time("arrivals.atUs", t)?;
                    if t < last {
                        return Err(SimError::ReplayOrder { index: i });
                    }
                    last = t;
                }
            }
        }
        for slow in &s.service.slow {
            count(
                "service.slow.worker",
                slow.worker.into(),
                0,
                (s.workers - 1).into(),
                "a worker number, from 0",
            )?;
            if !(slow.factor.is_finite() && (1.0..=1000.0).contains(&slow.factor)) {
                return Err(SimError::Range {
                    field: "service.slow.factor",
                    value: slow.factor.to_string(),
                    range: "1 to 1000",
                });
            }
        }
        if s.events.len() > MAX_EVENTS {
            return Err(SimError::TooManyEvents {
                given: s.events.len(),
            });
        }
        let added = s
            .events
            .iter()
            .filter(|e| matches!(e, Event::AddWorker { .. }))
            .count() as u32;
        if s.workers + added > MAX_WORKERS {
            return Err(SimError::Range {
                field: "events",
                value: format!("{} workers with the added ones", s.workers + added),
                range: "at most 256 workers in all",
            });
        }
        for e in &s.events {
            time("events.atUs", e.at_us())?;
            match *e {
                Event::Stall { worker, for_us, .. } => {
                    time("events.forUs", for_us)?;
                    count(
                        "events.worker",
                        worker.into(),
                        0,
                        (s.workers + added - 1).into(),
                        "a worker number, from 0",
                    )?;
                }
                Event::Leave { worker, .. } | Event::Rejoin { worker, .. } => {
                    count(
                        "events.worker",
                        worker.into(),
                        0,
                        (s.workers + added - 1).into(),
                        "a worker number, from 0",
                    )?;
                }
                Event::AddWorker { .. } => {}
            }
        }
        let p = &s.params;
        for (field, v) in [
            ("params.wakeUs", p.wake_us),
            ("params.wakeJitterUs", p.wake_jitter_us),
            ("params.acceptUs", p.accept_us),
            ("params.lockUs", p.lock_us),
            ("params.connCpuUs", p.conn_cpu_us),
            ("params.herdUs", p.herd_us),
            ("params.mutexDelayUs", p.mutex_delay_us),
            ("params.mapUpdateUs", p.map_update_us),
            ("params.clientCpuUs", p.client_cpu_us),
        ] {
            time(field, v)?;
        }
        if p.lock_us > p.accept_us {
            return Err(SimError::Range {
                field: "params.lockUs",
                value: p.lock_us.to_string(),
                range: "0 to params.acceptUs (the lock is held inside accept())",
            });
        }
        if s.accept.rules().steering == Steering::BpfCpu && s.workers < s.cpus {
            return Err(SimError::Range {
                field: "workers",
                value: s.workers.to_string(),
                range: "at least one per CPU: the CPU program returns the CPU as the index into socks[]",
            });
        }
        Ok(Checked {
            scenario: self,
            profile,
        })
    }
}

/// A scenario the simulator will not run ([`crate::sim`]). Each names the
/// field, in the scenario's JSON spelling.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SimError {
    /// The kernel names no profile.
    #[error("kernel: {0}")]
    Kernel(ProfileError),
    /// A value out of its range.
    #[error("{field} is {value}; it must be {range}")]
    Range {
        /// The field, as in the JSON (`requests.perConnection`).
        field: &'static str,
        /// What was given.
        value: String,
        /// What is allowed.
        range: &'static str,
    },
    /// The accept model needs a later kernel.
    #[error(
        "accept: {model:?} needs Linux {since} or later, and the scenario's kernel is {release}"
    )]
    Unsupported {
        /// The model.
        model: AcceptModel,
        /// The scenario's kernel.
        release: Release,
        /// The first release that has it.
        since: Release,
    },
    /// connections × requests per connection past the bound.
    #[error("connections × requests.perConnection is {total}; the simulator runs at most 10000000 requests")]
    TooManyRequests {
        /// The product.
        total: u64,
    },
    /// A replayed trace whose length is not the number of connections.
    #[error(
        "arrivals.atUs has {given} times for {connections} connections; give one per connection"
    )]
    ReplayLength {
        /// Times given.
        given: usize,
        /// Connections.
        connections: u32,
    },
    /// A replayed time earlier than the one before it.
    #[error(
        "arrivals.atUs[{index}] is earlier than the time before it; the times must not decrease"
    )]
    ReplayOrder {
        /// The index of the first time out of order.
        index: usize,
    },
    /// Too many events.
    #[error("events has {given} entries; at most 64")]
    TooManyEvents {
        /// How many were given.
        given: usize,
    },
}
