//! Key search speed: candidate initvals per second on one core, for each
//! compiled copy of the search loop, for 32 observations of an 8- and a
//! 64-member 6.18 TCP group. Prints numbers; asserts only that the key is
//! found. Then the labelled search (owners instead of listener numbers,
//! `LabelledPlan`) for 4- and 32-member groups with 60 and 400 connections,
//! next to the numbered search over the same connections in the same run.
//!
//! `cargo bench -p reuseport-model --bench recover [-- --log2 N]` searches
//! 2^N candidates around the key per run (default 2^28).

mod common;

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

use reuseport_model::batch::Isa;
use reuseport_model::recover::{isa_used, Found, LabelledPlan, Plan, SPACE};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};

fn main() {
    let log2: u32 = common::option("--log2").unwrap_or(28);
    let key = 0x1b87_3593u32;
    for n in [8u32, 64] {
        let (g, tuples) = group_and_flows(n, 32, key);
        let mut plan = Plan::new(&g).unwrap();
        for t in &tuples {
            plan.add(0, t, g.select(t, 0).unwrap().listener.unwrap())
                .unwrap();
        }
        let len = 1u64 << log2;
        let start = (key as u64).saturating_sub(len / 2).min(SPACE - len);
        for isa in [Isa::Best, Isa::Avx2, Isa::Portable] {
            let mut best = f64::INFINITY;
            let mut found = Found::new(10);
            for _ in 0..3 {
                found = Found::new(10);
                let t = Instant::now();
                plan.search(isa, black_box(start..start + len), &mut found);
                best = best.min(t.elapsed().as_secs_f64());
            }
            assert_eq!(found.values, vec![key]);
            let rate = len as f64 / best;
            println!(
                "n={n:<3} {:<14} {:>6.2}e9 candidates/s per core, full 2^32 on one core {:>6.2} s",
                isa_used(isa),
                rate / 1e9,
                SPACE as f64 / rate
            );
        }
    }
    labelled(log2, key);
}

/// A 6.18 TCP group of `n` under `key`, and `count` flows from 10.0.0.0/8.
fn group_and_flows(n: u32, count: u32, key: u32) -> (ReuseportGroup, Vec<Tuple>) {
    let spec = GroupSpec::new(
        Proto::Tcp,
        n,
        Ipv4Addr::LOCALHOST.into(),
        8080,
        Keys {
            v4: key,
            ..Keys::default()
        },
    );
    let g = common::group_of(Profile::named("6.18").unwrap(), &spec);
    let tuples = (0..count)
        .map(|i| {
            Tuple::v4(
                Ipv4Addr::from(0x0a00_0000 | i.wrapping_mul(2_654_435_761) & 0xffffff),
                (40000 + i) as u16,
                Ipv4Addr::LOCALHOST,
                8080,
            )
        })
        .collect();
    (g, tuples)
}

/// The labelled search beside the numbered one, same connections, one core.
fn labelled(log2: u32, key: u32) {
    for (n, count) in [(4u32, 60u32), (32, 400)] {
        let (g, tuples) = group_and_flows(n, count, key);
        let mut plan = Plan::new(&g).unwrap();
        let mut lab = LabelledPlan::new(&g).unwrap();
        for t in &tuples {
            let l = g.select(t, 0).unwrap().listener.unwrap();
            plan.add(0, t, l).unwrap();
            lab.add(t, &format!("pid{}", 1000 + 7 * l)).unwrap();
        }
        let len = 1u64 << log2;
        let start = (key as u64).saturating_sub(len / 2).min(SPACE - len);
        let time = |f: &dyn Fn(&mut Found)| {
            let mut best = f64::INFINITY;
            for _ in 0..3 {
                let mut found = Found::new(10);
                let t = Instant::now();
                f(&mut found);
                best = best.min(t.elapsed().as_secs_f64());
                assert_eq!(found.values, vec![key]);
            }
            len as f64 / best
        };
        let numbered = time(&|f| plan.search(Isa::Best, black_box(start..start + len), f));
        let labelled = time(&|f| lab.search(Isa::Best, black_box(start..start + len), f));
        println!(
            "n={n:<3} {count} connections: numbered {:>5.2}e9/s, labelled {:>5.2}e9/s per core ({:.2}x the numbered time), full 2^32 labelled on one core {:>6.2} s",
            numbered / 1e9,
            labelled / 1e9,
            numbered / labelled,
            SPACE as f64 / labelled
        );
    }
}
