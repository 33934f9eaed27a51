//! Batch selection speed: selections per second over a batch of IPv4
//! packets, for each compiled copy of the vectorised loop and for the
//! one-packet-at-a-time path. Prints numbers; asserts nothing about time.
//!
//! `cargo bench -p reuseport-model --bench select` generates its own batch.
//! `npm run bench` passes `--tuples FILE` (a batch written by scripts/bench.mjs,
//! little-endian u32 saddr[], u16 sport[], u32 daddr[], u16 dport[] after a
//! u32 count) and `--json`, so native and wasm run the very same packets and
//! their output checksums can be compared.

mod common;

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

use reuseport_model::batch::{Isa, V4Batch};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};

struct Packets {
    saddr: Vec<u32>,
    sport: Vec<u16>,
    daddr: Vec<u32>,
    dport: Vec<u16>,
}

/// `n` packets from the benchmarks' clients to 127.0.0.1:8080.
fn generate(n: usize) -> Packets {
    let mut rng = common::clients();
    let mut p = Packets {
        saddr: vec![],
        sport: vec![],
        daddr: vec![],
        dport: vec![],
    };
    for _ in 0..n {
        let (low, sport) = common::next_client(&mut rng);
        p.saddr.push(0x7f00_0000 | (low & 0x00ff_ffff));
        p.sport.push(sport);
        p.daddr.push(0x7f00_0001);
        p.dport.push(8080);
    }
    p
}

fn read(path: &str) -> Packets {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let n = u32::from_le_bytes(b[0..4].try_into().unwrap()) as usize;
    let mut off = 4;
    let u32s = |count: usize, off: &mut usize| -> Vec<u32> {
        let v = (0..count)
            .map(|i| u32::from_le_bytes(b[*off + 4 * i..*off + 4 * i + 4].try_into().unwrap()))
            .collect();
        *off += 4 * count;
        v
    };
    let saddr = u32s(n, &mut off);
    let sport: Vec<u16> = (0..n)
        .map(|i| u16::from_le_bytes(b[off + 2 * i..off + 2 * i + 2].try_into().unwrap()))
        .collect();
    off += 2 * n;
    let daddr = u32s(n, &mut off);
    let dport = (0..n)
        .map(|i| u16::from_le_bytes(b[off + 2 * i..off + 2 * i + 2].try_into().unwrap()))
        .collect();
    Packets {
        saddr,
        sport,
        daddr,
        dport,
    }
}

fn checksum(out: &[u32]) -> u64 {
    out.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &v| {
        (h ^ v as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Best of `rounds` timings of `f`, in seconds.
fn best_of(rounds: usize, mut f: impl FnMut()) -> f64 {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let json = common::flag("--json");
    let file: Option<String> = common::option("--tuples");
    let p = match &file {
        Some(f) => read(f),
        None => generate(1_000_000),
    };
    let n = p.saddr.len();
    let batch = V4Batch {
        saddr: &p.saddr,
        sport: &p.sport,
        daddr: &p.daddr,
        dport: &p.dport,
    };
    let mut rows = Vec::new();
    for (kernel, listeners) in [("6.18", 64u32), ("6.12", 64)] {
        let spec = GroupSpec::new(
            Proto::Tcp,
            listeners,
            Ipv4Addr::new(127, 0, 0, 1).into(),
            8080,
            Keys {
                v4: 0x1234_5678,
                ..Keys::default()
            },
        );
        let g = common::group_of(Profile::named(kernel).unwrap(), &spec);
        let mut out = vec![0u32; n];
        for (name, isa) in [
            (Isa::best_name(), Isa::Best),
            ("avx2", Isa::Avx2),
            ("baseline sse2", Isa::Portable),
        ] {
            if name == Isa::best_name() && isa != Isa::Best {
                continue;
            }
            let secs = best_of(15, || {
                g.select_batch_v4_on(isa, black_box(batch), 0, &mut out)
                    .unwrap()
            });
            rows.push((
                format!("native {name}"),
                kernel,
                n as f64 / secs,
                checksum(&out),
            ));
        }
        // One packet at a time through the general path, on a tenth of the batch.
        let m = n / 10;
        let secs = best_of(3, || {
            for i in 0..m {
                let t = Tuple::v4(p.saddr[i].into(), p.sport[i], p.daddr[i].into(), p.dport[i]);
                black_box(g.select(&t, 0).unwrap());
            }
        });
        rows.push(("native one-at-a-time".into(), kernel, m as f64 / secs, 0));
    }
    for (path, kernel, rate, sum) in rows {
        if json {
            println!("{{\"path\":\"{path}\",\"kernel\":\"{kernel}\",\"packets\":{n},\"perSecond\":{rate:.0},\"checksum\":\"{sum:016x}\"}}");
        } else {
            println!(
                "{path:<24} kernel {kernel:<5} {:>8.3} G selections/s  checksum {sum:016x}",
                rate / 1e9
            );
        }
    }
}
