//! Spread speed: boots × tuples per second for [`SpreadRun`], on the
//! sizes a reader asks for (10,000 boots of 10,000 IPv4 connections, 1,000 boots
//! of 10,000 IPv6 ones). Prints numbers; asserts nothing about time.
//!
//! `cargo bench -p reuseport-model --bench spread`; `--json` prints JSON Lines.

mod common;

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Instant;

use reuseport_model::spread::SpreadRun;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};

/// `n` connections from the benchmarks' clients to port 8080 of the
/// loopback address of the family.
fn generate(n: usize, v6: bool) -> Vec<Tuple> {
    let mut rng = common::clients();
    (0..n)
        .map(|_| {
            let (a, sport) = common::next_client(&mut rng);
            if v6 {
                Tuple {
                    saddr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, (a >> 16) as u16, a as u16)
                        .into(),
                    sport,
                    daddr: Ipv6Addr::LOCALHOST.into(),
                    dport: 8080,
                }
            } else {
                Tuple::v4(
                    Ipv4Addr::from(0x7f00_0000 | (a & 0x00ff_ffff)),
                    sport,
                    Ipv4Addr::new(127, 0, 0, 1),
                    8080,
                )
            }
        })
        .collect()
}

/// Seconds for one run of `boots` boots, stepped 100 at a time as a worker would.
fn time_run(run: SpreadRun, boots: u32) -> (f64, SpreadRun) {
    let mut run = run;
    let t = Instant::now();
    while run.done() < boots {
        run.step(100.min(boots - run.done()));
    }
    black_box(run.summary());
    (t.elapsed().as_secs_f64(), run)
}

fn main() {
    let json = common::flag("--json");
    let cases: [(&str, bool, u32, u32, bool); 5] = [
        // kernel, IPv6, boots, listeners, one at a time
        ("6.18", false, 10_000, 64, false),
        ("6.12", false, 10_000, 64, false),
        ("6.18", false, 1_000, 64, true),
        ("6.18", true, 1_000, 64, true),
        ("6.12", true, 1_000, 64, true),
    ];
    let tuples = 10_000usize;
    for (kernel, v6, boots, listeners, one) in cases {
        let bind: IpAddr = if v6 {
            Ipv6Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::new(127, 0, 0, 1).into()
        };
        let spec = GroupSpec::new(Proto::Tcp, listeners, bind, 8080, Keys::default());
        let g = common::group_of(Profile::named(kernel).unwrap(), &spec);
        let t = generate(tuples, v6);
        let run = SpreadRun::new(g, &t, 1).unwrap();
        let run = if one { run.one_at_a_time() } else { run };
        let path = if run.vectorised() {
            "batch"
        } else {
            "one-at-a-time"
        };
        let family = if v6 { "ipv6" } else { "ipv4" };
        let (secs, run) = time_run(run, boots);
        let s = run.summary();
        let rate = boots as f64 * tuples as f64 / secs;
        if json {
            println!("{{\"family\":\"{family}\",\"path\":\"{path}\",\"kernel\":\"{kernel}\",\"boots\":{boots},\"tuples\":{tuples},\"listeners\":{listeners},\"seconds\":{secs:.4},\"perSecond\":{rate:.0}}}");
        } else {
            println!(
                "{family} {path:<14} kernel {kernel:<5} {boots:>6} boots × {tuples} tuples, {listeners} listeners: {secs:>7.3} s  {:>7.1} M selections/s  (max/min p95 {:.3})",
                rate / 1e6,
                s.max_min.p95.unwrap_or(f64::INFINITY)
            );
        }
    }
}
