//! Selection rules per era, checked against independent references and
//! against the structural facts measured on a real 6.18 kernel
//! (kernel-history.md §10).

use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;
use reuseport_model::batch::{Isa, V4Batch, NONE};
use reuseport_model::error::GroupError;
use reuseport_model::explain::Pick;
use reuseport_model::reuseport::CpuPin;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, SetupError, Tuple};

fn lo() -> IpAddr {
    Ipv4Addr::new(127, 0, 0, 1).into()
}

fn spec(proto: Proto, n: u32, bind: IpAddr) -> GroupSpec {
    GroupSpec::new(
        proto,
        n,
        bind,
        8080,
        Keys {
            v4: 0x5eed_1234,
            v6_outer: 0x0bad_cafe,
            v6_inner: 0x1357_9bdf,
        },
    )
}

fn group(kernel: &str, s: &GroupSpec) -> ReuseportGroup {
    ReuseportGroup::build(Profile::named(kernel).unwrap(), s).unwrap()
}

/// Client `127.x.y.z:port` for flow number `i`.
fn flow(i: u32) -> Tuple {
    let a = 0x7f00_0000 | (i.wrapping_mul(2_654_435_761) & 0x00ff_fffe) | 1;
    Tuple::v4(
        Ipv4Addr::from(a),
        32768 + (i % 28000) as u16,
        Ipv4Addr::new(127, 0, 0, 1),
        8080,
    )
}

/// The plain rule: reciprocal_scale written out independently.
fn scale(h: u32, n: u32) -> u32 {
    ((h as u128 * n as u128) / (1u128 << 32)) as u32
}

fn lcg(x: u32) -> u32 {
    x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223)
}

/// The 3.9 `__inet_lookup_listener` loop, transcribed step by step for a
/// chain whose sockets all score the same (one group, no CPU pins).
fn reservoir_reference(chain: &[u32], h: u32) -> u32 {
    let mut result = chain[0];
    let mut phash = h;
    let mut matches = 1u32;
    for &sk in &chain[1..] {
        matches += 1;
        if scale(phash, matches) == 0 {
            result = sk;
        }
        phash = lcg(phash);
    }
    result
}

#[test]
fn reservoir_two_listeners_pick_the_older_iff_the_hash_is_below_half() {
    // Chain [1, 0]: listener 1 is taken first, listener 0 replaces it when
    // reciprocal_scale(H, 2) == 0, that is H < 2^31.
    let g = group("3.9", &spec(Proto::Tcp, 2, lo()));
    for i in 0..400 {
        let c = g.select(&flow(i), 0).unwrap();
        let want = if c.hash < 0x8000_0000 { 0 } else { 1 };
        assert_eq!(c.listener, Some(want), "flow {i} hash {:08x}", c.hash);
        assert_eq!(c.slot, None, "no socks[] before 4.6");
    }
}

#[test]
fn reservoir_scan_matches_the_step_by_step_reference() {
    for (kernel, proto) in [
        ("3.9", Proto::Tcp),
        ("4.4", Proto::Tcp),
        ("4.5", Proto::Tcp),
        ("4.4", Proto::Udp),
    ] {
        for n in [1u32, 2, 3, 5, 17] {
            let mut s = spec(proto, n, lo());
            if n > 3 {
                s.closed = vec![1, n - 1];
            }
            let g = group(kernel, &s);
            let chain: Vec<u32> = (0..n).rev().filter(|l| !s.closed.contains(l)).collect();
            assert_eq!(
                g.chain().unwrap(),
                chain.as_slice(),
                "head insertion, newest first"
            );
            for i in 0..300 {
                let t = flow(i);
                let c = g.select(&t, 0).unwrap();
                assert_eq!(
                    c.listener,
                    Some(reservoir_reference(&chain, c.hash)),
                    "{kernel} {proto:?} n={n} flow {i}"
                );
                let e = g.explain(&t, 0).unwrap();
                let Pick::Reservoir { steps, .. } = &e.pick else {
                    panic!("reservoir era")
                };
                assert_eq!(steps.len(), chain.len());
                assert_eq!(
                    steps.iter().rev().find(|s| s.taken).map(|s| s.listener),
                    c.listener
                );
            }
        }
    }
}

#[test]
fn reservoir_on_4_4_prefers_the_member_pinned_to_the_receiving_cpu() {
    // 4.4 adds 1 to compute_score when sk_incoming_cpu matches (70da268b569d).
    let mut s = spec(Proto::Tcp, 4, lo());
    s.incoming_cpu = vec![CpuPin {
        listener: 2,
        cpu: 1,
    }];
    let g = group("4.4", &s);
    for i in 0..200 {
        assert_eq!(g.select(&flow(i), 1).unwrap().listener, Some(2));
    }
    // On 4.1 the option cannot be set at all.
    let err = ReuseportGroup::build(Profile::named("4.1").unwrap(), &s).unwrap_err();
    assert!(err.to_string().contains("ENOPROTOOPT"), "{err}");
}

#[test]
fn so_incoming_cpu_is_ignored_before_6_2_and_honoured_from_6_2() {
    // so_incoming_cpu.c: server i pinned to CPU i; every connection from CPU i
    // lands on server i from 6.2 on.
    let mut s = spec(Proto::Tcp, 4, lo());
    s.incoming_cpu = (0..4)
        .map(|i| CpuPin {
            listener: i,
            cpu: i,
        })
        .collect();
    let old = group("5.15", &s);
    let new = group("6.2", &s);
    let mut old_mismatch = 0;
    for i in 0..400 {
        let cpu = i % 4;
        let c = new.select(&flow(i), cpu).unwrap();
        assert_eq!(c.listener, Some(cpu));
        let o = old.select(&flow(i), cpu).unwrap();
        assert_eq!(
            o.listener,
            Some(scale(o.hash, 4)),
            "5.15 selects by hash alone"
        );
        old_mismatch += (o.listener != Some(cpu)) as u32;
    }
    assert!(
        old_mismatch > 200,
        "before 6.2 most connections miss their CPU's server ({old_mismatch}/400)"
    );
}

#[test]
fn so_incoming_cpu_test3_an_unpinned_extra_server_receives_nothing() {
    // so_incoming_cpu.c test3: an extra server with CPU -1 stays in the group.
    let mut s = spec(Proto::Tcp, 5, lo());
    s.incoming_cpu = (0..4)
        .map(|i| CpuPin {
            listener: i,
            cpu: i,
        })
        .collect();
    let g = group("6.18", &s);
    for i in 0..400 {
        assert_ne!(g.select(&flow(i), i % 4).unwrap().listener, Some(4));
    }
    // From a CPU nobody is pinned to, the first valid member from the hash slot wins.
    for i in 0..100 {
        let c = g.select(&flow(i), 7).unwrap();
        assert_eq!(c.slot, Some(scale(c.hash, 5)));
    }
}

#[test]
fn connected_udp_members_are_skipped_from_5_4_and_picked_before() {
    let mut s = spec(Proto::Udp, 4, lo());
    s.connected = vec![1, 2];
    let new = group("5.4", &s);
    let old = group("4.6", &s);
    for i in 0..300 {
        let c = new.select(&flow(i), 0).unwrap();
        let start = scale(c.hash, 4);
        let want = match start {
            1 | 2 => 3,
            x => x,
        };
        assert_eq!(c.listener, Some(want), "ring step past connected members");
        assert_eq!(
            old.select(&flow(i), 0).unwrap().listener,
            Some(start),
            "4.6 returns socks[i] even if connected"
        );
    }
    s.connected = vec![0, 1, 2, 3];
    let all = group("5.4", &s);
    assert_eq!(all.select(&flow(1), 0).unwrap().listener, None);
    assert!(all.explain(&flow(1), 0).unwrap().fallback.is_some());
}

#[test]
fn the_group_cap_is_32768_with_the_kernels_errors() {
    // §10 E5 on 6.18: member 32769 fails, TCP listen() ENOMEM, UDP bind() EADDRINUSE.
    let ok = ReuseportGroup::build(
        Profile::named("6.18").unwrap(),
        &spec(Proto::Tcp, 32768, lo()),
    )
    .unwrap();
    assert_eq!(ok.sock_array().unwrap().max_socks(), 32768);
    for (proto, errno, call) in [
        (Proto::Tcp, "ENOMEM", "listen"),
        (Proto::Udp, "EADDRINUSE", "bind"),
    ] {
        let e = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec(proto, 32769, lo()))
            .unwrap_err();
        assert_eq!(
            e,
            SetupError::Group(GroupError::Full {
                listener: 32768,
                call,
                errno
            })
        );
    }
    // No socks[] before groups: 4.4 has no cap; 4.5 caps UDP only.
    assert!(ReuseportGroup::build(
        Profile::named("4.4").unwrap(),
        &spec(Proto::Tcp, 32769, lo())
    )
    .is_ok());
    assert!(ReuseportGroup::build(
        Profile::named("4.5").unwrap(),
        &spec(Proto::Tcp, 32769, lo())
    )
    .is_ok());
    assert!(ReuseportGroup::build(
        Profile::named("4.5").unwrap(),
        &spec(Proto::Udp, 32769, lo())
    )
    .is_err());
}

#[test]
fn migration_keeps_shut_down_listeners_in_the_closed_tail_and_evicts_at_the_cap() {
    let mut s = spec(Proto::Tcp, 32768, lo());
    s.tcp_migrate_req = true;
    s.shutdown = vec![3, 7];
    let mut g = group("6.18", &s);
    assert_eq!(g.sock_array().unwrap().closed(), &[7, 3]);
    assert_eq!(g.summary().closed_tail, 2);
    // The 32769th join evicts the most recently shut-down listener instead of failing.
    g.join().unwrap();
    assert_eq!(g.sock_array().unwrap().closed(), &[3]);
    // Before 5.14 there is no sysctl.
    let e = ReuseportGroup::build(Profile::named("5.10").unwrap(), &s).unwrap_err();
    assert!(e.to_string().contains("5.14"), "{e}");
}

#[test]
fn e4_closing_listener_1_of_4_moves_listener_3_into_its_slot() {
    // §10 E4, measured on 6.18: old 3 -> new 2 always; old 0 -> 0; old 1 -> {0, 3}; old 2 -> {2, 3}.
    let before = group("6.18", &spec(Proto::Tcp, 4, lo()));
    let mut s = spec(Proto::Tcp, 4, lo());
    s.closed = vec![1];
    let after = group("6.18", &s);
    assert_eq!(after.listening(), &[0, 3, 2]);
    for i in 0..2000 {
        let (b, a) = (
            before.select(&flow(i), 0).unwrap().listener.unwrap(),
            after.select(&flow(i), 0).unwrap().listener.unwrap(),
        );
        let allowed: &[u32] = match b {
            0 => &[0],
            1 => &[0, 3],
            2 => &[2, 3],
            _ => &[2],
        };
        assert!(allowed.contains(&a), "flow {i}: {b} -> {a}");
    }
}

#[test]
fn e3_wildcard_groups_hash_with_laddr_zero_from_5_0() {
    for proto in [Proto::Tcp, Proto::Udp] {
        let any: IpAddr = Ipv4Addr::UNSPECIFIED.into();
        let new = group("6.18", &spec(proto, 8, any));
        let old = group("4.17", &spec(proto, 8, any));
        let mut old_same = 0;
        for i in 0..200 {
            let a = flow(i);
            let b = Tuple {
                daddr: Ipv4Addr::new(127, 0, 0, 2).into(),
                ..a
            };
            assert_eq!(new.select(&a, 0).unwrap(), new.select(&b, 0).unwrap());
            old_same +=
                (old.select(&a, 0).unwrap().listener == old.select(&b, 0).unwrap().listener) as u32;
        }
        assert!(
            old_same < 60,
            "4.17 hashes the real destination: {old_same}/200 alike"
        );
    }
}

#[test]
fn udp_wildcard_on_4_6_hashes_zero_only_past_ten_sockets() {
    let any: IpAddr = Ipv4Addr::UNSPECIFIED.into();
    let other = |t: Tuple| Tuple {
        daddr: Ipv4Addr::new(127, 0, 0, 2).into(),
        ..t
    };
    let eleven = group("4.6", &spec(Proto::Udp, 11, any));
    let ten = group("4.6", &spec(Proto::Udp, 10, any));
    let mut ten_same = 0;
    for i in 0..200 {
        assert_eq!(
            eleven.select(&flow(i), 0).unwrap().hash,
            eleven.select(&other(flow(i)), 0).unwrap().hash
        );
        ten_same += (ten.select(&flow(i), 0).unwrap().hash
            == ten.select(&other(flow(i)), 0).unwrap().hash) as u32;
    }
    assert_eq!(ten_same, 0);
}

#[test]
fn e2_tcp_adds_lport_outside_from_6_15_and_udp_does_not() {
    // §10 E2: the same flow to port P and P+1 picks the same member on 6.18 TCP.
    let p = Profile::named("6.18").unwrap();
    for (proto, outside) in [(Proto::Tcp, true), (Proto::Udp, false)] {
        let g1 = ReuseportGroup::build(
            p,
            &GroupSpec {
                port: 8080,
                ..spec(proto, 8, lo())
            },
        )
        .unwrap();
        let g2 = ReuseportGroup::build(
            p,
            &GroupSpec {
                port: 8081,
                ..spec(proto, 8, lo())
            },
        )
        .unwrap();
        for i in 0..200 {
            let a = flow(i);
            let b = Tuple { dport: 8081, ..a };
            let (ha, hb) = (
                g1.select(&a, 0).unwrap().hash,
                g2.select(&b, 0).unwrap().hash,
            );
            assert_eq!(hb.wrapping_sub(ha) == 1, outside, "{proto:?} flow {i}");
        }
    }
}

#[test]
fn e1_ipv6_hashes_only_the_last_local_word_until_7_2() {
    let keys = Keys {
        v4: 0,
        v6_outer: 0x4444_4444,
        v6_inner: 0x2222_2222,
    };
    let t = |d: &str| Tuple {
        saddr: "fd02::5".parse().unwrap(),
        sport: 40000,
        daddr: d.parse().unwrap(),
        dport: 8080,
    };
    for (kernel, same) in [("6.18", true), ("6.5", true), ("7.2", false)] {
        let p = Profile::named(kernel).unwrap();
        let g1 = ReuseportGroup::build(
            p,
            &GroupSpec::new(Proto::Tcp, 8, "fd00::1".parse().unwrap(), 8080, keys),
        )
        .unwrap();
        let g2 = ReuseportGroup::build(
            p,
            &GroupSpec::new(Proto::Tcp, 8, "fd01::1".parse().unwrap(), 8080, keys),
        )
        .unwrap();
        let (h1, h2) = (
            g1.select(&t("fd00::1"), 0).unwrap().hash,
            g2.select(&t("fd01::1"), 0).unwrap().hash,
        );
        assert_eq!(h1 == h2, same, "{kernel}");
    }
}

#[test]
fn a_packet_for_another_address_or_port_is_refused_with_the_reason() {
    let g = group("6.18", &spec(Proto::Tcp, 4, lo()));
    let e = g
        .select(
            &Tuple {
                dport: 9,
                ..flow(1)
            },
            0,
        )
        .unwrap_err();
    assert!(e.to_string().contains("RST"), "{e}");
    let v6only = GroupSpec {
        v6only: true,
        ..spec(Proto::Tcp, 4, "::".parse().unwrap())
    };
    assert!(group("6.18", &v6only).select(&flow(1), 0).is_err());
    let dual = spec(Proto::Tcp, 4, "::".parse().unwrap());
    assert!(
        group("6.18", &dual).select(&flow(1), 0).is_ok(),
        "a dual-stack group receives IPv4"
    );
}

#[test]
fn explain_agrees_with_select_in_every_profile() {
    for p in reuseport_model::profile::PROFILES {
        for proto in [Proto::Tcp, Proto::Udp] {
            let g = ReuseportGroup::build(p, &spec(proto, 7, lo())).unwrap();
            for i in 0..50 {
                let c = g.select(&flow(i), 0).unwrap();
                let e = g.explain(&flow(i), 0).unwrap();
                assert_eq!(
                    (e.listener, e.slot, e.hash.hash),
                    (c.listener, c.slot, c.hash),
                    "{} {proto:?}",
                    p.release
                );
                if let Pick::ByHash {
                    scaled, num_socks, ..
                } = e.pick
                {
                    assert_eq!((num_socks, scaled), (7, scale(c.hash, 7)));
                }
            }
        }
    }
}

proptest! {
    // Any closes, in any order: the choice is the reference list's entry at
    // reciprocal_scale(hash, len), where the list swaps its last into a hole.
    #[test]
    fn closes_follow_the_swap_with_last_reference(n in 1u32..300, closes in prop::collection::vec(0u32..300, 0..40), kernel in prop::sample::select(vec!["4.6", "5.10", "6.18", "7.2"])) {
        let mut reference: Vec<u32> = (0..n).collect();
        let mut closed = Vec::new();
        for c in closes {
            if reference.len() > 1 {
                let l = reference[(c as usize) % reference.len()];
                let i = reference.iter().position(|&x| x == l).unwrap();
                reference.swap_remove(i);
                closed.push(l);
            }
        }
        let g = group(kernel, &GroupSpec { closed, ..spec(Proto::Tcp, n, lo()) });
        for i in 0..20 {
            let c = g.select(&flow(i), 0).unwrap();
            prop_assert_eq!(c.listener, Some(reference[scale(c.hash, reference.len() as u32) as usize]));
        }
    }
}

#[test]
fn batch_selection_equals_one_packet_at_a_time() {
    let any: IpAddr = Ipv4Addr::UNSPECIFIED.into();
    let n = 5000;
    let mut tuples: Vec<Tuple> = (0..n).map(flow).collect();
    // Some packets that do not reach a specific-address group, or any group.
    for i in (0..n as usize).step_by(97) {
        tuples[i].dport = 9;
    }
    for i in (0..n as usize).step_by(89) {
        tuples[i].daddr = Ipv4Addr::new(127, 0, 0, 3).into();
    }
    let num = |a: IpAddr| match a {
        IpAddr::V4(v) => u32::from(v),
        _ => unreachable!(),
    };
    let saddr: Vec<u32> = tuples.iter().map(|t| num(t.saddr)).collect();
    let daddr: Vec<u32> = tuples.iter().map(|t| num(t.daddr)).collect();
    let sport: Vec<u16> = tuples.iter().map(|t| t.sport).collect();
    let dport: Vec<u16> = tuples.iter().map(|t| t.dport).collect();
    let batch = V4Batch {
        saddr: &saddr,
        sport: &sport,
        daddr: &daddr,
        dport: &dport,
    };
    let mut cases = Vec::new();
    for p in reuseport_model::profile::PROFILES {
        for proto in [Proto::Tcp, Proto::Udp] {
            for bind in [lo(), any] {
                cases.push((p, spec(proto, 13, bind)));
                cases.push((
                    p,
                    GroupSpec {
                        closed: vec![0, 5],
                        ..spec(proto, 200, bind)
                    },
                ));
            }
        }
    }
    let p618 = Profile::named("6.18").unwrap();
    cases.push((
        p618,
        GroupSpec {
            connected: vec![2],
            ..spec(Proto::Udp, 6, lo())
        },
    ));
    cases.push((
        p618,
        GroupSpec {
            incoming_cpu: vec![CpuPin {
                listener: 1,
                cpu: 0,
            }],
            ..spec(Proto::Tcp, 6, lo())
        },
    ));
    let mut vectorised = 0;
    for (p, s) in cases {
        let g = ReuseportGroup::build(p, &s).unwrap();
        vectorised += g.batch_is_vectorised() as u32;
        for isa in [Isa::Best, Isa::Avx2, Isa::Portable] {
            let mut out = vec![0u32; n as usize];
            g.select_batch_v4_on(isa, batch, 0, &mut out).unwrap();
            for (i, t) in tuples.iter().enumerate() {
                let want = g
                    .select(t, 0)
                    .map(|c| c.listener.unwrap_or(NONE))
                    .unwrap_or(NONE);
                assert_eq!(
                    out[i], want,
                    "{} {:?} bind {} packet {i}",
                    p.release, s.proto, s.bind
                );
            }
        }
    }
    assert!(
        vectorised > 20,
        "most group-era cases take the vectorised path ({vectorised})"
    );
}

#[test]
fn a_rebound_group_answers_as_one_built_at_its_new_address() {
    // tests/suite/vectors.rs builds each size once and moves it to each vector's address.
    let there: IpAddr = Ipv4Addr::new(10, 1, 2, 3).into();
    for kernel in ["3.9", "4.6", "6.18"] {
        for proto in [Proto::Tcp, Proto::Udp] {
            let mut moved = group(kernel, &spec(proto, 37, lo()));
            moved.rebind(there, 9090);
            let mut fresh_spec = spec(proto, 37, there);
            fresh_spec.port = 9090;
            let fresh = group(kernel, &fresh_spec);
            for i in 0..200 {
                let f = flow(i);
                let t = Tuple {
                    daddr: there,
                    dport: 9090,
                    ..f
                };
                assert_eq!(
                    moved.select(&t, 0).unwrap(),
                    fresh.select(&t, 0).unwrap(),
                    "{kernel} {proto:?} flow {i}"
                );
            }
            // The old address is no longer this group's.
            assert!(moved.select(&flow(0), 0).is_err(), "{kernel} {proto:?}");
        }
    }
}
