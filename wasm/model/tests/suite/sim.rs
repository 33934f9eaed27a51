//! The simulator: its invariants, and the shapes the published tests saw.

use std::net::IpAddr;

use reuseport_model::sim::{
    simulate, AcceptModel, Arrivals, Curated, Event, Params, Scenario, Service, ServiceDist,
    SimReport, Simulation, CURATED,
};
use reuseport_model::{GroupSpec, Profile, Proto, ReuseportGroup, SimError};

fn curated(name: &str, variant: &str) -> Scenario {
    let c = Curated::named(name).expect("a curated scenario");
    c.with(c.variant(variant).expect("a variant"))
}

fn run(s: Scenario) -> SimReport {
    simulate(s).expect("a valid scenario")
}

fn accepts(r: &SimReport) -> Vec<u64> {
    r.workers.iter().map(|w| w.accepts).collect()
}

#[test]
fn every_arrival_ends_in_exactly_one_outcome_for_every_curated_run() {
    for c in CURATED {
        for v in c.variants {
            let s = c.with(v);
            let n = s.connections as u64;
            let r = run(s);
            let o = r.outcomes;
            assert!(!r.partial, "{} {}", c.name, v.id);
            assert_eq!(
                o.arrived, n,
                "{} {}: every connection arrives",
                c.name, v.id
            );
            assert_eq!(
                o.done + o.in_service + o.queued + o.retrying + o.reset + o.failed,
                o.arrived,
                "{} {}: {o:?}",
                c.name,
                v.id
            );
            let accepted: u64 = accepts(&r).iter().sum();
            assert_eq!(accepted, o.done + o.in_service, "{} {}", c.name, v.id);
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let s = curated("shared-queue-under-load", "epoll");
    let a = run(s.clone());
    let b = run(s.clone());
    assert_eq!(a, b);
    let c = run(Scenario { seed: 2, ..s });
    assert_ne!(accepts(&a), accepts(&c));
}

#[test]
fn stepping_in_slices_gives_the_same_report_as_one_run() {
    let s = curated("reload", "reuseport-migrate");
    let whole = run(s.clone());
    let mut sim = Simulation::new(s.check().unwrap());
    let mut slices = 0;
    while !sim.step(997) {
        slices += 1;
        assert!(sim.report().partial);
    }
    assert!(slices > 10);
    assert_eq!(sim.report(), whole);
}

#[test]
fn reuseport_queues_each_connection_on_the_listener_the_group_selects() {
    let s = curated("shared-queue-under-load", "reuseport");
    let checked = s.clone().check().unwrap();
    let mut sim = Simulation::new(checked);
    sim.run();
    let keys = sim.report().keys;
    // The group `predict` builds for the same kernel, listeners and keys.
    let spec = GroupSpec::new(
        Proto::Tcp,
        s.workers,
        IpAddr::from([127, 0, 0, 1]),
        8080,
        keys,
    );
    let g = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
    let mut seen = vec![0u32; s.workers as usize];
    for i in 0..s.connections {
        let c = sim.connection(i).unwrap();
        let (t, queued) = (c.tuple, c.queue);
        let want = g.select(&t, 0).unwrap().listener;
        assert_eq!(queued, want, "connection {i}: {t:?}");
        seen[want.unwrap() as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n > 4000), "{seen:?}");
}

#[test]
fn blocking_accept_hands_idle_workers_connections_in_turn() {
    let r = run(curated("six-connections", "blocking"));
    assert_eq!(accepts(&r), vec![2, 2, 2]);
    let s = curated("six-connections", "blocking");
    let mut sim = Simulation::new(s.check().unwrap());
    sim.run();
    let order: Vec<u32> = (0..6)
        .map(|i| sim.connection(i).unwrap().worker.unwrap())
        .collect();
    assert_eq!(order, vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn epoll_exclusive_at_light_load_gives_every_connection_to_one_worker() {
    let r = run(curated("six-connections", "epoll-exclusive"));
    assert_eq!(accepts(&r), vec![6, 0, 0]);
    let herd = run(curated("six-connections", "epoll"));
    // Plain epoll wakes all three each time: two of them for nothing.
    let wasted: u64 = herd.workers.iter().map(|w| w.wasted_wakeups).sum();
    assert_eq!(wasted, 12);
}

#[test]
fn a_stalled_worker_under_reuseport_keeps_a_growing_queue_and_drops_syns() {
    let s = curated("stalled-worker", "reuseport");
    let width = 1_000_000.0 / 1.0; // microseconds in a second
    let r = run(s.clone());
    let stalled = r.listener_worker.iter().position(|&w| w == 2).unwrap();
    let at = |t_us: f64| (t_us / r.series.bucket_us) as usize;
    let depth = |b: usize| r.series.depth[b][stalled];
    assert!(depth(at(1.2 * width)) > 100, "{}", depth(at(1.2 * width)));
    // Full from soon after the stall until it ends (1 s to 2.5 s).
    for t in [1.2, 1.6, 2.0, 2.4] {
        assert!(
            depth(at(t * width)) > 250,
            "at {t} s: {}",
            depth(at(t * width))
        );
    }
    assert!(r.outcomes.syn_drops > 100, "{:?}", r.outcomes);
    // The other workers' queues stay short.
    for (l, &w) in r.listener_worker.iter().enumerate() {
        if w != 2 {
            assert!(r.series.depth.iter().all(|row| row[l] < 20), "listener {l}");
        }
    }
    // A shared queue lets the others take the stalled worker's share.
    let shared = run(curated("stalled-worker", "epoll-exclusive"));
    assert_eq!(shared.outcomes.syn_drops, 0);
    assert!(shared.request_latency.p99_us < r.request_latency.p99_us);
}

#[test]
fn a_reload_resets_the_closed_listeners_queue_unless_tcp_migrate_req_moves_it() {
    let off = run(curated("reload", "reuseport"));
    let on = run(curated("reload", "reuseport-migrate"));
    assert!(off.outcomes.reset > 50, "{:?}", off.outcomes);
    assert_eq!(off.outcomes.migrated, 0);
    assert_eq!(on.outcomes.reset, 0, "{:?}", on.outcomes);
    assert_eq!(on.outcomes.migrated, off.outcomes.reset);
    // The worker came back on a new listener, the group's fifth.
    assert_eq!(off.listener_worker, vec![0, 1, 2, 3, 1]);
}

#[test]
fn per_worker_queues_spread_latency_that_a_shared_queue_does_not() {
    let shared = run(curated("per-worker-queues-latency", "epoll-exclusive"));
    let reuse = run(curated("per-worker-queues-latency", "reuseport"));
    assert!(
        reuse.request_latency.stddev_us > 5.0 * shared.request_latency.stddev_us,
        "{} vs {}",
        reuse.request_latency.stddev_us,
        shared.request_latency.stddev_us
    );
}

#[test]
fn bounds_name_the_field() {
    let base = curated("six-connections", "reuseport");
    let cases: Vec<(Scenario, &str)> = vec![
        (
            Scenario {
                workers: 0,
                ..base.clone()
            },
            "workers",
        ),
        (
            Scenario {
                connections: 2_000_000,
                ..base.clone()
            },
            "connections",
        ),
        (
            Scenario {
                arrivals: Arrivals::Poisson {
                    rate_per_sec: f64::INFINITY,
                },
                ..base.clone()
            },
            "arrivals.ratePerSec",
        ),
        (
            Scenario {
                events: vec![Event::Leave {
                    worker: 9,
                    at_us: 0.0,
                }],
                ..base.clone()
            },
            "events.worker",
        ),
        (
            Scenario {
                kernel: "5.10".into(),
                tcp_migrate_req: true,
                ..base.clone()
            },
            "tcpMigrateReq",
        ),
    ];
    for (s, field) in cases {
        let e = s.check().unwrap_err();
        assert!(e.to_string().starts_with(field), "{field}: {e}");
    }
    let old = Scenario {
        kernel: "4.4".into(),
        accept: AcceptModel::EpollExclusive,
        ..base
    };
    assert!(matches!(old.check(), Err(SimError::Unsupported { .. })));
}

#[test]
fn so_incoming_cpu_keeps_connections_on_their_cpu_from_6_2_and_not_on_5_10() {
    let share = |variant: &str| {
        let r = run(curated("incoming-cpu", variant));
        r.outcomes.local as f64 / r.outcomes.arrived as f64
    };
    // Four CPUs: by hash alone, one connection in four lands on its CPU.
    let plain = share("reuseport");
    assert!((0.2..0.3).contains(&plain), "{plain}");
    // 6.2 (and 6.1.y by backport) made the group prefer the receiving CPU's listener
    // (net/core/sock_reuseport.c, reuseport_select_sock_by_hash).
    assert_eq!(share("reuseport-incoming-cpu"), 1.0);
    let old = share("reuseport-incoming-cpu-5.10");
    assert!((0.2..0.3).contains(&old), "{old}");
    assert_eq!(share("reuseport-bpf-cpu"), 1.0);
}

#[test]
fn the_matcher_puts_the_scenario_that_made_a_picture_first() {
    use reuseport_model::sim::matcher::{rank, Observed};
    let runs: Vec<(String, SimReport)> = CURATED
        .iter()
        .filter(|c| c.name != "fork-vs-reuseport")
        .flat_map(|c| {
            c.variants
                .iter()
                .map(move |v| (format!("{} {}", c.name, v.id), run(c.with(v))))
        })
        .collect();
    let reports: Vec<SimReport> = runs.iter().map(|(_, r)| r.clone()).collect();
    // Cloudflare's EPOLLEXCLUSIVE picture: all six to one of three workers.
    let (_, ranked) = rank(
        &Observed {
            counts: vec![6, 0, 0],
            p50_ms: None,
            p99_ms: None,
        },
        &reports,
    )
    .unwrap();
    assert_eq!(
        runs[ranked[0].run as usize].0,
        "six-connections epoll-exclusive"
    );
    assert_eq!(ranked[0].distance, 0.0);
    // A stalled worker's long tail with even counts: a reuseport run first.
    let obs = Observed {
        counts: vec![3000, 3010, 2990, 3005],
        p50_ms: Some(0.25),
        p99_ms: Some(1400.0),
    };
    let (_, ranked) = rank(&obs, &reports).unwrap();
    let best = &runs[ranked[0].run as usize].0;
    assert!(best.ends_with(" reuseport"), "{best}");
    // Bad input names the field.
    let bad = Observed {
        counts: vec![1, 2],
        p50_ms: Some(-1.0),
        p99_ms: None,
    };
    assert!(rank(&bad, &reports)
        .unwrap_err()
        .to_string()
        .starts_with("p50Ms"));
    assert!(rank(
        &Observed {
            counts: vec![5],
            p50_ms: None,
            p99_ms: None
        },
        &reports
    )
    .is_err());
}

/// One worker on one CPU, a connection every 1 ms, 100 µs of service, and no
/// other cost: the load generator's work for a connection runs first on the
/// CPU that sends the SYN, so each request waits behind it.
#[test]
fn a_local_load_generator_delays_the_workers_on_its_cpu_by_its_cost() {
    let base = Scenario {
        workers: 1,
        cpus: 1,
        accept: AcceptModel::Blocking,
        connections: 50,
        arrivals: Arrivals::Paced { gap_us: 1_000.0 },
        service: Service {
            mean_us: 100.0,
            dist: ServiceDist::Fixed,
            slow: Vec::new(),
        },
        params: Params {
            wake_us: 0.0,
            wake_jitter_us: 0.0,
            accept_us: 0.0,
            lock_us: 0.0,
            conn_cpu_us: 0.0,
            herd_us: 0.0,
            ..Params::default()
        },
        ..curated("six-connections", "blocking")
    };
    let remote = run(base.clone());
    let local = run(Scenario {
        params: Params {
            client_cpu_us: 300.0,
            ..base.params
        },
        ..base
    });
    // Request latency: 100 µs of service; with the client's 300 µs first, 400 µs.
    for (r, want) in [(&remote, 100.0), (&local, 400.0)] {
        assert_eq!(r.outcomes.done, 50);
        let l = &r.request_latency;
        assert!(
            (l.mean_us - want).abs() < 1e-6 && (l.max_us - want).abs() < 1e-6,
            "want {want} µs, got mean {} max {}",
            l.mean_us,
            l.max_us
        );
    }
}
