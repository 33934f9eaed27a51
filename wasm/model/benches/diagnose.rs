//! The diagnosis of a large snapshot without the key search: grouping,
//! labelling, the plan, every connection predicted under a key and the
//! spread among boots, for 100,000 connections over 8 workers. Prints
//! numbers; asserts only the verdict.
//!
//! `cargo bench -p reuseport-model --bench diagnose [-- --connections N]`

mod common;

use std::net::Ipv4Addr;
use std::time::Instant;

use reuseport_model::diagnose::{prepare, Connection, Listener, Owner, Snapshot, VerdictKind};
use reuseport_model::recover::Found;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};

fn main() {
    let count: u32 = common::option("--connections").unwrap_or(100_000);
    let (n, key, port) = (8u32, 0x0bad_cafe_u32, 8080u16);
    let spec = GroupSpec::new(
        Proto::Tcp,
        n,
        Ipv4Addr::LOCALHOST.into(),
        port,
        Keys {
            v4: key,
            ..Keys::default()
        },
    );
    let g = common::group_of(Profile::named("6.18").unwrap(), &spec);
    let pid = |l: u32| 2000 + l;
    let owner = |p| Owner {
        pid: p,
        comm: "w".into(),
    };
    let listeners = (0..n)
        .map(|l| Listener {
            id: format!("{}", 900 + l),
            local: format!("127.0.0.1:{port}"),
            owners: vec![owner(pid(l))],
            accepting: Some(vec![pid(l)]),
            epoll_sets: Some(1),
            queue: 0,
            backlog: 511,
            drops: Some(0),
        })
        .collect();
    let connections = (0..count)
        .map(|i| {
            let a = Ipv4Addr::from(0x0a00_0000 | i.wrapping_mul(2_654_435_761) & 0xff_ffff);
            let sport = (32768 + i % 28000) as u16;
            let t = Tuple::v4(a, sport, Ipv4Addr::LOCALHOST, port);
            let l = g.select(&t, 0).unwrap().listener.unwrap();
            Connection {
                client: format!("{a}:{sport}"),
                server: format!("127.0.0.1:{port}"),
                owners: vec![owner(pid(l))],
            }
        })
        .collect();
    let snap = Snapshot {
        proto: Proto::Tcp,
        port,
        listeners,
        connections,
        samples: vec![],
    };
    let t = Instant::now();
    let p = prepare(Profile::named("6.18").unwrap(), &snap).unwrap();
    let prepared = t.elapsed().as_secs_f64();
    // The search itself is benches/recover.rs; here the key's one candidate is given.
    let mut found = Found::new(10);
    p.search(key as u64..key as u64 + 1, &mut found);
    let t = Instant::now();
    let d = p.finish(Some(&found));
    let finished = t.elapsed().as_secs_f64();
    assert_eq!(d.verdict.kind, VerdictKind::HashSpread);
    println!(
        "diagnose {count} connections over {n} workers: prepare {:.3} s, finish (every connection predicted, {} boots of spread) {:.3} s",
        prepared,
        d.spread.as_ref().map_or(0, |s| s.boots),
        finished
    );
}
