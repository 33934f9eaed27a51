//! Key search speed: candidate initvals per second on one core, for each
//! compiled copy of the search loop, for 32 observations of an 8- and a
//! 64-member 6.18 TCP group. Prints numbers; asserts only that the key is
//! found.
//!
//! `cargo bench -p reuseport-model --bench recover [-- --log2 N]` searches
//! 2^N candidates around the key per run (default 2^28).

mod common;

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

use reuseport_model::batch::Isa;
use reuseport_model::recover::{isa_used, Found, Plan, SPACE};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};

fn main() {
    let log2: u32 = common::option("--log2").unwrap_or(28);
    let key = 0x1b87_3593u32;
    for n in [8u32, 64] {
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
        let g = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
        let mut plan = Plan::new(&g).unwrap();
        for i in 0..32u32 {
            let t = Tuple::v4(
                Ipv4Addr::from(0x0a00_0000 | i.wrapping_mul(2_654_435_761) & 0xffffff),
                (40000 + i) as u16,
                Ipv4Addr::LOCALHOST,
                8080,
            );
            plan.add(0, &t, g.select(&t, 0).unwrap().listener.unwrap())
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
}
