//! Building the group a page holds (the visualizer's `Group`, the paste
//! page's answers): the direct build (`ReuseportGroup::build`, every
//! listener joined in one pass) against the host's replay of the calls the
//! spec stands for (`Host::spec_group`: socket, SO_REUSEPORT, bind, listen
//! per listener, each answered), in one run, for TCP and UDP in the group
//! era (6.18) and the chain era (4.4), with and without closed listeners.
//! Prints milliseconds, best of three; asserts only that both builds give a
//! group of the same size.
//!
//! `cargo bench -p reuseport-model --bench group [-- --max N]`.

mod common;

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

use reuseport_model::lookup::Host;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup};

fn best_of(rounds: usize, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut size = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        size = black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best * 1e3, size)
}

fn main() {
    let max: u32 = common::option("--max").unwrap_or(32_768);
    println!(
        "{:<6} {:<4} {:>7} {:>7} {:>12} {:>12} {:>8}",
        "kernel", "", "members", "closed", "build ms", "host ms", "host/bld"
    );
    for kernel in ["6.18", "4.4"] {
        let profile = Profile::named(kernel).unwrap();
        for proto in [Proto::Tcp, Proto::Udp] {
            for n in [8u32, 1024, 8192, 32_768].into_iter().filter(|&n| n <= max) {
                for closing in [false, true] {
                    let mut spec =
                        GroupSpec::new(proto, n, Ipv4Addr::LOCALHOST.into(), 8080, Keys::default());
                    if closing {
                        // Every eighth listener closed, from the first.
                        spec.closed = (0..n).step_by(8).collect();
                    }
                    let (direct, a) = best_of(3, || {
                        ReuseportGroup::build(profile, &spec)
                            .unwrap()
                            .members()
                            .len()
                    });
                    let (hosted, b) = best_of(3, || {
                        Host::spec_group(profile, &spec).unwrap().members().len()
                    });
                    let live = n as usize - spec.closed.len();
                    assert!(
                        a == n as usize && (b == a || b == live),
                        "{kernel} {proto:?} {n}: {a} against {b} members"
                    );
                    println!(
                        "{kernel:<6} {:<4} {n:>7} {:>7} {direct:>12.3} {hosted:>12.3} {:>8.1}",
                        format!("{proto:?}").to_lowercase(),
                        spec.closed.len(),
                        hosted / direct
                    );
                }
            }
        }
    }
}
