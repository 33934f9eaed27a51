//! Simulator speed and what each curated run gives: simulated connections
//! and events per second, and the headline figures of every variant of the
//! gallery. Prints numbers; asserts nothing about time.
//!
//! `cargo bench -p reuseport-model --bench sim`.

use std::time::Instant;

use reuseport_model::sim::{simulate, Arrivals, Scenario, CURATED};

fn main() {
    println!(
        "{:<26} {:<28} {:>8} {:>7} {:>9} {:>9} {:>7} {:>6} {:>10}",
        "scenario", "variant", "conns", "jain", "p99 ms", "sd ms", "drops", "reset", "conns/s"
    );
    for c in CURATED {
        for v in c.variants {
            let s = c.with(v);
            let n = s.connections;
            let t = Instant::now();
            let r = simulate(s).expect("curated scenarios are valid");
            let secs = t.elapsed().as_secs_f64();
            println!(
                "{:<26} {:<28} {:>8} {:>7.3} {:>9.2} {:>9.2} {:>7} {:>6} {:>10.0}",
                c.name,
                v.id,
                n,
                r.skew.jain,
                r.request_latency.p99_us / 1e3,
                r.request_latency.stddev_us / 1e3,
                r.outcomes.syn_drops,
                r.outcomes.reset,
                n as f64 / secs
            );
        }
    }
    // Speed at the bound: a million short connections.
    for accept in ["epoll", "reuseport"] {
        let c = reuseport_model::sim::Curated::named("shared-queue-under-load").unwrap();
        let mut s: Scenario = c.with(c.variant(accept).unwrap());
        s.connections = 1_000_000;
        s.arrivals = Arrivals::Poisson {
            rate_per_sec: 5_000.0,
        };
        let t = Instant::now();
        let r = simulate(s).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let accepts: Vec<String> = r.workers.iter().map(|w| w.accepts.to_string()).collect();
        println!(
            "native 1,000,000 connections, {accept}: {:.2} s, {:.0} connections/s, {:.0} events/s; accepts {}",
            secs,
            1e6 / secs,
            r.events as f64 / secs,
            accepts.join(" ")
        );
    }
}
