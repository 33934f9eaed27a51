//! Programs attached to a group, checked against the expectations of the
//! kernel selftests (kernel-history.md §3.6, §8.1, §8.2, §8.10), for every
//! profile each applies to. Test names carry the selftest's name.

use std::net::{IpAddr, Ipv4Addr};

use reuseport_model::explain::Pick;
use reuseport_model::profile::PROFILES;
use reuseport_model::reuseport::{PacketCtx, Program};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};

fn any() -> IpAddr {
    Ipv4Addr::UNSPECIFIED.into()
}

fn spec(proto: Proto, n: u32, program: Option<Program>) -> GroupSpec {
    GroupSpec {
        program,
        ..GroupSpec::new(
            proto,
            n,
            any(),
            8888,
            Keys {
                v4: 0x00dd_ba11,
                ..Keys::default()
            },
        )
    }
}

/// Profiles that have groups for this protocol (programs attach to groups).
fn group_era(proto: Proto) -> impl Iterator<Item = &'static Profile> {
    PROFILES.iter().filter(move |p| {
        let sel = if proto == Proto::Tcp {
            p.tcp_selection
        } else {
            p.udp_selection
        };
        sel == reuseport_model::profile::Selection::Group
    })
}

fn packet(i: u32) -> Tuple {
    Tuple::v4(
        Ipv4Addr::new(127, 0, 0, 1),
        20000 + i as u16,
        Ipv4Addr::new(127, 0, 0, 1),
        8888,
    )
}

fn scale(h: u32, n: u32) -> u32 {
    ((h as u64 * n as u64) >> 32) as u32
}

#[test]
fn reuseport_bpf_test_recv_order_payload_mod_then_reattach() {
    // reuseport_bpf.c: data % N lands on index data % N; after re-attaching
    // with N/2, on data % (N/2). UDP with N = 10 and 20, TCP with N = 10.
    for (proto, sizes) in [(Proto::Udp, vec![10u32, 20]), (Proto::Tcp, vec![10])] {
        for p in group_era(proto) {
            for &n in &sizes {
                let mut g = ReuseportGroup::build(
                    p,
                    &spec(proto, n, Some(Program::PayloadMod { modulus: n })),
                )
                .unwrap();
                for data in 0..2 * n {
                    let c = g
                        .select_ctx(&packet(data), &PacketCtx::with_word(0, data))
                        .unwrap();
                    assert_eq!(
                        c.listener,
                        Some(data % n),
                        "{} {proto:?} n={n} data={data}",
                        p.release
                    );
                }
                g.attach_program(Program::PayloadMod { modulus: n / 2 })
                    .unwrap();
                for data in 2 * n..4 * n {
                    let c = g
                        .select_ctx(&packet(data), &PacketCtx::with_word(0, data))
                        .unwrap();
                    assert_eq!(
                        c.listener,
                        Some(data % (n / 2)),
                        "{} re-attached",
                        p.release
                    );
                }
            }
        }
    }
}

#[test]
fn reuseport_bpf_cpu_each_cpu_lands_on_its_index() {
    // reuseport_bpf_cpu.c: one socket per CPU, program returns the CPU.
    for proto in [Proto::Udp, Proto::Tcp] {
        for p in group_era(proto) {
            let g = ReuseportGroup::build(p, &spec(proto, 4, Some(Program::Cpu))).unwrap();
            for cpu in [0u32, 1, 2, 3, 3, 2, 1, 0, 0, 2, 1, 3] {
                let c = g
                    .select_ctx(&packet(cpu * 7 + 1), &PacketCtx::on_cpu(cpu))
                    .unwrap();
                assert_eq!(c.listener, Some(cpu), "{} {proto:?}", p.release);
            }
        }
    }
}

#[test]
fn programs_need_groups_and_sk_reuseport_needs_4_19() {
    let p44 = Profile::named("4.4").unwrap();
    assert!(ReuseportGroup::build(p44, &spec(Proto::Udp, 2, Some(Program::Cpu))).is_err());
    let p45 = Profile::named("4.5").unwrap();
    assert!(ReuseportGroup::build(p45, &spec(Proto::Udp, 2, Some(Program::Cpu))).is_ok());
    assert!(
        ReuseportGroup::build(p45, &spec(Proto::Tcp, 2, Some(Program::Cpu))).is_err(),
        "TCP groups came in 4.6"
    );
    let p417 = Profile::named("4.17").unwrap();
    let e = ReuseportGroup::build(p417, &spec(Proto::Udp, 2, Some(Program::Drop))).unwrap_err();
    assert!(e.to_string().contains("4.19"), "{e}");
    assert!(ReuseportGroup::build(
        Profile::named("5.0").unwrap(),
        &spec(Proto::Udp, 2, Some(Program::Drop))
    )
    .is_ok());
}

#[test]
fn an_invalid_index_falls_back_to_the_hash_from_4_16() {
    for p in group_era(Proto::Tcp).filter(|p| p.release >= reuseport_model::Release::new(4, 16)) {
        let plain = ReuseportGroup::build(p, &spec(Proto::Tcp, 4, None)).unwrap();
        let bad = ReuseportGroup::build(p, &spec(Proto::Tcp, 4, Some(Program::Index { index: 9 })))
            .unwrap();
        for i in 0..200 {
            let ctx = PacketCtx::on_cpu(0);
            assert_eq!(
                bad.select_ctx(&packet(i), &ctx).unwrap(),
                plain.select_ctx(&packet(i), &ctx).unwrap(),
                "{}",
                p.release
            );
        }
        let e = bad.explain(&packet(1), 0).unwrap();
        let Pick::Program {
            then: Some(then), ..
        } = e.pick
        else {
            panic!("program then hash")
        };
        assert!(matches!(*then, Pick::ByHash { .. }));
    }
}

#[test]
fn an_invalid_index_falls_back_to_the_reservoir_before_4_16() {
    // 4.6 – 4.15: reuseport_select_sock returns NULL; the caller's reservoir
    // scan walks listening_hash, newest IPv4 listener first.
    let p = Profile::named("4.6").unwrap();
    let g =
        ReuseportGroup::build(p, &spec(Proto::Tcp, 3, Some(Program::Index { index: 7 }))).unwrap();
    for i in 0..300 {
        let c = g.select(&packet(i), 0).unwrap();
        // Chain [2, 1, 0]: 2 taken; 1 replaces when scale(H, 2) == 0; 0 when scale(lcg(H), 3) == 0.
        let lcg = c.hash.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let mut want = 2;
        if scale(c.hash, 2) == 0 {
            want = 1;
        }
        if scale(lcg, 3) == 0 {
            want = 0;
        }
        assert_eq!(c.listener, Some(want), "packet {i}");
        assert_eq!(
            c.slot,
            Some(want),
            "slot of the reservoir's pick in socks[]"
        );
    }
}

#[test]
fn select_reuseport_test_pass_sockarray_and_failures() {
    // select_reuseport.c: sk_fds[] filled from the back, so sockarray is the
    // reverse of socks[]; cmd.reuseport_index = i lands on map entry i.
    let p = Profile::named("6.18").unwrap();
    let n = 32;
    let sockarray: Vec<u32> = (0..n).rev().collect();
    for proto in [Proto::Tcp, Proto::Udp] {
        let g = ReuseportGroup::build(
            p,
            &spec(
                proto,
                n,
                Some(Program::SockArray {
                    sockarray: sockarray.clone(),
                    pass_on_failure: false,
                }),
            ),
        )
        .unwrap();
        for i in 0..n {
            let c = g
                .select_ctx(&packet(i), &PacketCtx::with_word(0, i))
                .unwrap();
            assert_eq!(c.listener, Some(sockarray[i as usize]));
        }
        // An index past the map: SK_DROP, nothing received.
        let c = g
            .select_ctx(&packet(1), &PacketCtx::with_word(0, n))
            .unwrap();
        assert_eq!(c.listener, None);
        // pass_on_failure: received on the hash-chosen socket.
        let pass = ReuseportGroup::build(
            p,
            &spec(
                proto,
                n,
                Some(Program::SockArray {
                    sockarray: sockarray.clone(),
                    pass_on_failure: true,
                }),
            ),
        )
        .unwrap();
        let c = pass
            .select_ctx(&packet(5), &PacketCtx::with_word(0, n + 3))
            .unwrap();
        assert_eq!(c.listener, Some(scale(c.hash, n)));
    }
}

#[test]
fn sk_drop_refuses_and_sk_pass_hands_over_to_the_hash() {
    let p = Profile::named("6.12").unwrap();
    let drop = ReuseportGroup::build(p, &spec(Proto::Tcp, 4, Some(Program::Drop))).unwrap();
    let e = drop.explain(&packet(3), 0).unwrap();
    assert_eq!(e.listener, None);
    assert_eq!(e.fallback, Some(reuseport_model::message::Fallback::SkDrop));
    let pass = ReuseportGroup::build(p, &spec(Proto::Tcp, 4, Some(Program::Pass))).unwrap();
    let c = pass.select(&packet(3), 0).unwrap();
    assert_eq!(c.listener, Some(scale(c.hash, 4)));
}

#[test]
fn detaching_needs_5_3() {
    let mut old = ReuseportGroup::build(
        Profile::named("5.0").unwrap(),
        &spec(Proto::Udp, 2, Some(Program::Cpu)),
    )
    .unwrap();
    assert!(old.attach_program(None).is_err());
    let mut new = ReuseportGroup::build(
        Profile::named("5.4").unwrap(),
        &spec(Proto::Udp, 2, Some(Program::Cpu)),
    )
    .unwrap();
    new.attach_program(None).unwrap();
    let c = new.select(&packet(1), 1).unwrap();
    assert_eq!(
        c.listener,
        Some(scale(c.hash, 2)),
        "after detach the hash decides"
    );
}

#[test]
fn a_payload_program_on_an_empty_packet_returns_index_0() {
    // A classic BPF load past the end of the packet ends the program with 0.
    let g = ReuseportGroup::build(
        Profile::named("6.18").unwrap(),
        &spec(Proto::Tcp, 4, Some(Program::PayloadMod { modulus: 4 })),
    )
    .unwrap();
    for i in 0..20 {
        assert_eq!(g.select(&packet(i), 0).unwrap().listener, Some(0));
    }
}

#[test]
fn migrate_reuseport_requests_of_closed_listeners_move_by_hash_with_the_real_address() {
    // migrate_reuseport.c (5.14+): servers 0–3 shut down with migration on;
    // every request moves to a listening member.
    use reuseport_model::reuseport::ebpf::MigrateStage;
    use reuseport_model::reuseport::Migration;
    let p = Profile::named("6.18").unwrap();
    let mut s = spec(Proto::Tcp, 5, None);
    s.tcp_migrate_req = true;
    s.shutdown = vec![0, 1, 2, 3];
    let g = ReuseportGroup::build(p, &s).unwrap();
    for i in 0..25 {
        match g
            .migrate(0, &packet(i), MigrateStage::AcceptQueue, 0)
            .unwrap()
        {
            Migration::To { listener, .. } => assert_eq!(listener, 4),
            m => panic!("{m:?}"),
        }
    }
    // With several left, the request's own hash (real destination, even for
    // a wildcard group) picks among the listening members.
    let mut s = spec(Proto::Tcp, 6, None);
    s.tcp_migrate_req = true;
    s.shutdown = vec![1];
    let g = ReuseportGroup::build(p, &s).unwrap();
    let listening = g.listening().to_vec();
    for i in 0..100 {
        let t = packet(i);
        let Migration::To { listener, hash, .. } =
            g.migrate(1, &t, MigrateStage::AcceptQueue, 0).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            listener,
            listening[scale(hash, listening.len() as u32) as usize]
        );
        assert_ne!(
            hash,
            g.select(&t, 0).unwrap().hash,
            "the lookup hashes laddr 0 for a wildcard group; the request hashes 127.0.0.1"
        );
    }
    // Off: reset. Before 5.14: reset.
    let mut off = spec(Proto::Tcp, 3, None);
    off.shutdown = vec![0];
    let g = ReuseportGroup::build(p, &off).unwrap();
    assert!(matches!(
        g.migrate(0, &packet(1), MigrateStage::AcceptQueue, 0)
            .unwrap(),
        Migration::Reset { .. }
    ));
    let g =
        ReuseportGroup::build(Profile::named("5.10").unwrap(), &spec(Proto::Tcp, 3, None)).unwrap();
    assert!(matches!(
        g.migrate(0, &packet(1), MigrateStage::AcceptQueue, 0)
            .unwrap(),
        Migration::Reset { .. }
    ));
}
