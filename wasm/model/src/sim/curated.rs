//! The gallery's scenarios: one list, which the site simulates, the agent
//! runs on the real kernel (`reuseport-agent scenario NAME`) and
//! `npm run calibrate` fits. Each is a workload and the variants shown side
//! by side over it; the words are in the site's pages, per language.

use serde::Serialize;

use super::spec::{
    AcceptModel as A, Arrivals, Clients, Event, Params, Requests, Scenario, Service, ServiceDist,
    SlowWorker,
};

/// One variant of a scenario: the accept model, and what else differs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Variant {
    /// A short name, unique in the scenario (`reuseport-migrate`).
    pub id: &'static str,
    /// The accept model.
    pub accept: A,
    /// `net.ipv4.tcp_migrate_req`.
    pub tcp_migrate_req: bool,
    /// Another kernel than the scenario's.
    #[cfg_attr(feature = "ts", ts(optional))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<&'static str>,
}

const fn v(id: &'static str, accept: A) -> Variant {
    Variant {
        id,
        accept,
        tcp_migrate_req: false,
        kernel: None,
    }
}

/// One scenario of the gallery.
#[derive(Debug, Clone, Copy)]
pub struct Curated {
    /// Its name: the page's slug and `reuseport-agent scenario NAME`.
    pub name: &'static str,
    /// What is compared.
    pub variants: &'static [Variant],
    /// The published figures it relates to (keys the pages cite).
    pub published: &'static [&'static str],
    base: fn() -> Scenario,
}

impl Curated {
    /// The scenario as its first variant runs it.
    pub fn base(&self) -> Scenario {
        self.with(&self.variants[0])
    }

    /// The scenario as `variant` runs it.
    pub fn with(&self, variant: &Variant) -> Scenario {
        let mut s = (self.base)();
        s.accept = variant.accept;
        s.tcp_migrate_req = variant.tcp_migrate_req;
        if let Some(k) = variant.kernel {
            s.kernel = k.to_string();
        }
        s
    }

    /// The variant with this id.
    pub fn variant(&self, id: &str) -> Option<&'static Variant> {
        self.variants.iter().find(|v| v.id == id)
    }

    /// The scenario named `name`.
    pub fn named(name: &str) -> Option<&'static Curated> {
        CURATED.iter().find(|c| c.name == name)
    }
}

fn scenario(
    workers: u32,
    cpus: u32,
    connections: u32,
    arrivals: Arrivals,
    service: Service,
) -> Scenario {
    Scenario {
        kernel: "6.18".into(),
        workers,
        cpus,
        accept: A::Reuseport,
        connections,
        arrivals,
        clients: Clients {
            count: 64,
            port_lo: 32768,
            port_hi: 60999,
            port: 8080,
        },
        requests: Requests::default(),
        service,
        events: Vec::new(),
        backlog: 4096,
        tcp_migrate_req: false,
        params: Params::default(),
        seed: 1,
        buckets: 60,
    }
}

fn exp(mean_us: f64) -> Service {
    Service {
        mean_us,
        dist: ServiceDist::Exponential,
        slow: Vec::new(),
    }
}

fn fixed(mean_us: f64) -> Service {
    Service {
        mean_us,
        dist: ServiceDist::Fixed,
        slow: Vec::new(),
    }
}

fn poisson(rate_per_sec: f64) -> Arrivals {
    Arrivals::Poisson { rate_per_sec }
}

/// Cloudflare's test: six connections, one at a time, to three idle workers.
fn six_connections() -> Scenario {
    Scenario {
        buckets: 6,
        clients: Clients {
            count: 1,
            ..scenario(1, 1, 1, poisson(1.0), fixed(1.0)).clients
        },
        ..scenario(
            3,
            3,
            6,
            Arrivals::Paced { gap_us: 100_000.0 },
            fixed(1_000.0),
        )
    }
}

/// Four workers on two CPUs at about 80% load: the scheduler decides.
fn shared_queue_under_load() -> Scenario {
    scenario(4, 2, 20_000, poisson(5_000.0), exp(300.0))
}

/// Cloudflare's latency test: twelve workers, CPU-heavy requests, half load.
fn per_worker_queues_latency() -> Scenario {
    scenario(12, 12, 4_000, poisson(200.0), fixed(30_000.0))
}

/// One worker stops for 1.5 s (a garbage-collection pause, a blocking call).
fn stalled_worker() -> Scenario {
    Scenario {
        backlog: 256,
        events: vec![Event::Stall {
            worker: 2,
            at_us: 1_000_000.0,
            for_us: 1_500_000.0,
        }],
        ..scenario(4, 4, 12_000, poisson(4_000.0), exp(200.0))
    }
}

/// A worker is reloaded: busy just before, it closes its listener with
/// connections waiting, and comes back half a second later.
fn reload() -> Scenario {
    Scenario {
        events: vec![
            Event::Stall {
                worker: 1,
                at_us: 900_000.0,
                for_us: 300_000.0,
            },
            Event::Leave {
                worker: 1,
                at_us: 1_100_000.0,
            },
            Event::Rejoin {
                worker: 1,
                at_us: 1_600_000.0,
            },
        ],
        ..scenario(4, 4, 12_000, poisson(4_000.0), exp(200.0))
    }
}

/// Twelve long keep-alive connections from three clients with four ports.
fn few_clients() -> Scenario {
    Scenario {
        clients: Clients {
            count: 3,
            port_lo: 50_000,
            port_hi: 50_003,
            port: 8080,
        },
        requests: Requests {
            per_connection: 1_000,
            think_us: 1_000.0,
        },
        ..scenario(8, 4, 12, poisson(100.0), exp(100.0))
    }
}

/// Keep-alive connections opened while traffic is light stay where they
/// landed.
fn long_lived_favourite() -> Scenario {
    Scenario {
        requests: Requests {
            per_connection: 200,
            think_us: 20_000.0,
        },
        ..scenario(8, 8, 400, Arrivals::Paced { gap_us: 5_000.0 }, exp(300.0))
    }
}

/// Pinning workers to CPUs, and asking the kernel for the CPU's listener.
fn incoming_cpu() -> Scenario {
    scenario(4, 4, 8_000, poisson(4_000.0), exp(200.0))
}

/// The fork-against-reuseport article's benchmark: 48 processes, short connections at about
/// 70% of what two CPUs serve.
fn fork_vs_reuseport() -> Scenario {
    Scenario {
        clients: Clients {
            count: 256,
            ..scenario(1, 1, 1, poisson(1.0), fixed(1.0)).clients
        },
        ..scenario(48, 2, 48_000, poisson(20_000.0), exp(50.0))
    }
}

/// A slow worker: every request it serves takes four times as long.
fn slow_worker() -> Scenario {
    Scenario {
        service: Service {
            slow: vec![SlowWorker {
                worker: 0,
                factor: 4.0,
            }],
            ..exp(1_000.0)
        },
        ..scenario(4, 4, 8_000, poisson(2_000.0), exp(1_000.0))
    }
}

/// The gallery, in the order its index lists it.
pub static CURATED: &[Curated] = &[
    Curated {
        name: "six-connections",
        variants: &[
            v("blocking", A::Blocking),
            v("epoll", A::Epoll),
            v("epoll-exclusive", A::EpollExclusive),
            v("reuseport", A::Reuseport),
        ],
        published: &["cloudflare-six"],
        base: six_connections,
    },
    Curated {
        name: "shared-queue-under-load",
        variants: &[
            v("blocking", A::Blocking),
            v("epoll", A::Epoll),
            v("epoll-exclusive", A::EpollExclusive),
            v("accept-mutex", A::AcceptMutex),
            v("reuseport", A::Reuseport),
        ],
        published: &["herbert-3-to-1"],
        base: shared_queue_under_load,
    },
    Curated {
        name: "per-worker-queues-latency",
        variants: &[
            v("epoll-exclusive", A::EpollExclusive),
            v("blocking", A::Blocking),
            v("reuseport", A::Reuseport),
        ],
        published: &["cloudflare-latency"],
        base: per_worker_queues_latency,
    },
    Curated {
        name: "slow-worker",
        variants: &[
            v("epoll-exclusive", A::EpollExclusive),
            v("reuseport", A::Reuseport),
            v("reuseport-least-loaded", A::ReuseportLeastLoaded),
        ],
        published: &["cloudflare-latency"],
        base: slow_worker,
    },
    Curated {
        name: "stalled-worker",
        variants: &[
            v("epoll-exclusive", A::EpollExclusive),
            v("reuseport", A::Reuseport),
            v("reuseport-least-loaded", A::ReuseportLeastLoaded),
        ],
        published: &[],
        base: stalled_worker,
    },
    Curated {
        name: "reload",
        variants: &[
            v("reuseport", A::Reuseport),
            Variant {
                tcp_migrate_req: true,
                ..v("reuseport-migrate", A::Reuseport)
            },
            v("epoll-exclusive", A::EpollExclusive),
        ],
        published: &[],
        base: reload,
    },
    Curated {
        name: "few-clients",
        variants: &[
            v("reuseport", A::Reuseport),
            v("epoll", A::Epoll),
            v("reuseport-least-loaded", A::ReuseportLeastLoaded),
        ],
        published: &[],
        base: few_clients,
    },
    Curated {
        name: "long-lived-favourite",
        variants: &[
            v("epoll-exclusive", A::EpollExclusive),
            v("epoll", A::Epoll),
            v("reuseport", A::Reuseport),
        ],
        published: &["nginx-favourite"],
        base: long_lived_favourite,
    },
    Curated {
        name: "incoming-cpu",
        variants: &[
            v("reuseport", A::Reuseport),
            v("reuseport-incoming-cpu", A::ReuseportIncomingCpu),
            Variant {
                kernel: Some("5.10"),
                ..v("reuseport-incoming-cpu-5.10", A::ReuseportIncomingCpu)
            },
            v("reuseport-bpf-cpu", A::ReuseportBpfCpu),
        ],
        published: &[],
        base: incoming_cpu,
    },
    Curated {
        name: "fork-vs-reuseport",
        variants: &[
            v("blocking", A::Blocking),
            v("epoll", A::Epoll),
            v("reuseport", A::Reuseport),
        ],
        published: &["seed-benchmark"],
        base: fork_vs_reuseport,
    },
];

/// A curated scenario as the site and the agent read it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CuratedView {
    /// Its name.
    pub name: &'static str,
    /// Its variants.
    pub variants: Vec<Variant>,
    /// The published figures it relates to.
    pub published: Vec<&'static str>,
    /// The scenario as each variant runs it, in the order of `variants`.
    pub scenarios: Vec<Scenario>,
}

impl From<&Curated> for CuratedView {
    fn from(c: &Curated) -> Self {
        CuratedView {
            name: c.name,
            variants: c.variants.to_vec(),
            published: c.published.to_vec(),
            scenarios: c.variants.iter().map(|v| c.with(v)).collect(),
        }
    }
}
