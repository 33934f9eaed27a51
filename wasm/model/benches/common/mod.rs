//! What the model's benchmarks share: reading their options and drawing
//! their clients. Each benchmark uses a part, so unused items are allowed.
#![allow(dead_code)]

pub mod xorshift;

use std::str::FromStr;

use reuseport_model::lookup::Host;
use reuseport_model::{GroupSpec, Profile, ReuseportGroup};
use xorshift::Xorshift32;

/// The group a spec stands for, as the hot paths take it: handed out of
/// the host that replays the spec's calls (`Host::spec_group`).
pub fn group_of(profile: &'static Profile, spec: &GroupSpec) -> ReuseportGroup {
    Host::spec_group(profile, spec).expect("the benchmarks' groups replay, every call answered ok")
}

/// Whether `name` (`--json`) is on the command line.
pub fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

/// The value after `name` (`--lines N`) on the command line, read as a `T`;
/// `None` when the option is absent. A missing or unreadable value stops
/// the benchmark with a message naming the option.
pub fn option<T: FromStr>(name: &str) -> Option<T> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    let value = args
        .get(at + 1)
        .unwrap_or_else(|| panic!("{name} needs a value"));
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} {value}: not a value {name} takes")),
    )
}

/// The generator of the benchmarks' clients: one sequence, so `select` and
/// `spread` measure the same connections (and scripts/bench.mjs writes
/// `select`'s with the same recipe).
pub fn clients() -> Xorshift32 {
    Xorshift32::new(0x2545_f491)
}

/// The next client: a random word for its address (its low 24 bits in
/// 127.0.0.0/8 for IPv4), then a source port in 32768–60999.
pub fn next_client(rng: &mut Xorshift32) -> (u32, u16) {
    let low = rng.next();
    let sport = (rng.next() % 28232 + 32768) as u16;
    (low, sport)
}
