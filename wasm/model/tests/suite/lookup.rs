//! The full listener lookup and the bind rules, checked against the
//! expectations of the kernel selftests (kernel-history.md §8) for every
//! profile each applies to. Test names carry the selftest's name.

use std::net::{IpAddr, SocketAddr};

use reuseport_model::lookup::{Family, Layout, Packet, SkLookup, SockState, SocketSpec};
use reuseport_model::message::{Errno, RefusalRule};
use reuseport_model::profile::PROFILES;
use reuseport_model::reuseport::PacketCtx;
use reuseport_model::{Keys, Profile, Proto, Release, Tuple};

fn sock(family: Family, proto: Proto, addr: &str, port: u16) -> SocketSpec {
    SocketSpec {
        family,
        proto,
        addr: addr.parse().unwrap(),
        port,
        v6only: false,
        reuseaddr: false,
        reuseport: true,
        uid: 0,
        device: None,
        state: SockState::Listen,
        peer: None,
        incoming_cpu: None,
        program: None,
        program_before_bind: false,
    }
}

fn layout(sockets: Vec<SocketSpec>) -> Layout {
    Layout {
        sockets,
        listen_order: None,
        sk_lookup: None,
        keys: Keys {
            v4: 0x1234_abcd,
            v6_outer: 0x5555_0001,
            v6_inner: 0x7777_0002,
        },
        ephemeral: None,
        closed: vec![],
    }
}

fn packet(proto: Proto, saddr: &str, sport: u16, daddr: &str, dport: u16) -> Packet {
    Packet {
        proto,
        tuple: Tuple {
            saddr: saddr.parse().unwrap(),
            sport,
            daddr: daddr.parse().unwrap(),
            dport,
        },
        device: None,
        ctx: PacketCtx::default(),
    }
}

fn since(major: u16, minor: u16) -> impl Iterator<Item = &'static Profile> {
    PROFILES
        .iter()
        .filter(move |p| p.release >= Release::new(major, minor))
}

/// reuseport_addr_any.c: 2 v4 any, 2 v6 any, the specific socket, 2 v4 any, 2 v6 any.
fn addr_any_layout(proto: Proto, specific: (Family, &str)) -> Layout {
    let mut v = Vec::new();
    for _ in 0..2 {
        v.push(sock(Family::Inet, proto, "0.0.0.0", 8888));
    }
    for _ in 0..2 {
        v.push(sock(Family::Inet6, proto, "::", 8888));
    }
    v.push(sock(specific.0, proto, specific.1, 8888));
    for _ in 0..2 {
        v.push(sock(Family::Inet, proto, "0.0.0.0", 8888));
    }
    for _ in 0..2 {
        v.push(sock(Family::Inet6, proto, "::", 8888));
    }
    layout(v)
}

#[test]
fn reuseport_addr_any_the_specific_socket_wins_from_5_0() {
    let cases = [
        ((Family::Inet, "127.0.0.1"), "127.0.0.1"),
        ((Family::Inet6, "::1"), "::1"),
        ((Family::Inet6, "::ffff:127.0.0.1"), "127.0.0.1"),
    ];
    for p in since(5, 0) {
        for proto in [Proto::Udp, Proto::Tcp] {
            for (specific, dest) in cases {
                let h = replay_layout(p, &addr_any_layout(proto, specific)).unwrap();
                assert!(
                    h.results()
                        .iter()
                        .all(|r| r.bind.is_none() && r.listen.is_none()),
                    "{} all binds succeed",
                    p.release
                );
                let src = if dest.contains(':') {
                    "::1"
                } else {
                    "127.0.0.1"
                };
                for sport in 40000..40040 {
                    let x = h.lookup(&packet(proto, src, sport, dest, 8888));
                    assert_eq!(
                        x.socket,
                        Some(4),
                        "{} {proto:?} {specific:?}: {:?}",
                        p.release,
                        x.reason
                    );
                }
            }
        }
    }
}

#[test]
fn reuseport_addr_any_fails_between_4_6_and_4_20_for_tcp() {
    // A later-listened wildcard group sits ahead of the specific socket in
    // the port list and its group returns at once (kernel-history.md §4.2).
    for name in ["4.6", "4.17"] {
        let h = replay_layout(
            Profile::named(name).unwrap(),
            &addr_any_layout(Proto::Tcp, (Family::Inet, "127.0.0.1")),
        )
        .unwrap();
        let x = h.lookup(&packet(Proto::Tcp, "127.0.0.1", 40000, "127.0.0.1", 8888));
        assert_ne!(x.socket, Some(4), "{name}: {:?}", x.reason);
    }
    // Before groups, the +4 of a bound address decides: the specific socket wins.
    for name in ["3.9", "4.4"] {
        let h = replay_layout(
            Profile::named(name).unwrap(),
            &addr_any_layout(Proto::Tcp, (Family::Inet, "127.0.0.1")),
        )
        .unwrap();
        assert_eq!(
            h.lookup(&packet(Proto::Tcp, "127.0.0.1", 40000, "127.0.0.1", 8888))
                .socket,
            Some(4),
            "{name}"
        );
    }
}

#[test]
fn reuseport_dualstack_an_ipv4_packet_reaches_an_af_inet_socket() {
    // reuseport_dualstack.c: AF_INET on 0.0.0.0 and AF_INET6 on [::] (not
    // v6only), in either creation order; 5 + 5 for TCP, 16 + 16 for UDP.
    for p in since(4, 6) {
        for (proto, n) in [(Proto::Tcp, 5), (Proto::Udp, 16)] {
            for v4_first in [true, false] {
                let v4 = (0..n).map(|_| sock(Family::Inet, proto, "0.0.0.0", 8888));
                let v6 = (0..n).map(|_| sock(Family::Inet6, proto, "::", 8888));
                let sockets: Vec<_> = if v4_first {
                    v4.chain(v6).collect()
                } else {
                    v6.chain(v4).collect()
                };
                let families: Vec<Family> = sockets.iter().map(|s| s.family).collect();
                let h = replay_layout(p, &layout(sockets)).unwrap();
                for sport in 30000..30050 {
                    let x = h.lookup(&packet(proto, "127.0.0.1", sport, "127.0.0.1", 8888));
                    let got = x.socket.expect("received");
                    assert_eq!(
                        families[got],
                        Family::Inet,
                        "{} {proto:?} v4_first={v4_first}",
                        p.release
                    );
                }
            }
        }
    }
}

#[test]
fn reuseaddr_conflict_bind_answers() {
    // reuseaddr_conflict.c, SO_REUSEADDR only, port 9999: listen on
    // 127.0.0.1; 0.0.0.0 fails; [::] v6only succeeds; 0.0.0.0 fails again.
    let ra = |family, addr: &str, state| SocketSpec {
        reuseaddr: true,
        reuseport: false,
        state,
        ..sock(family, Proto::Tcp, addr, 9999)
    };
    for p in PROFILES {
        let v6only = SocketSpec {
            v6only: true,
            ..ra(Family::Inet6, "::", SockState::Bound)
        };
        let l = layout(vec![
            ra(Family::Inet, "127.0.0.1", SockState::Listen),
            ra(Family::Inet, "0.0.0.0", SockState::Bound),
            v6only,
            ra(Family::Inet, "0.0.0.0", SockState::Bound),
        ]);
        let h = replay_layout(p, &l).unwrap();
        let r = h.results();
        assert!(r[0].bind.is_none() && r[0].listen.is_none());
        assert_eq!(
            r[1].bind.as_ref().map(|x| x.errno),
            Some(Errno::Eaddrinuse),
            "{}",
            p.release
        );
        assert!(r[2].bind.is_none(), "{}", p.release);
        assert_eq!(r[3].bind.as_ref().map(|x| x.errno), Some(Errno::Eaddrinuse));
    }
}

#[test]
fn reuseaddr_ports_exhausted_autobind_answers() {
    // reuseaddr_ports_exhausted.c: ip_local_port_range 32768 32768,
    // ip_autobind_reuse 1, bind(127.0.0.1:0) twice, all option pairs.
    let eph = reuseport_model::lookup::Ephemeral {
        low: 32768,
        high: 32768,
        autobind_reuse: true,
    };
    let p = Profile::named("6.18").unwrap();
    for bits in 0..16u32 {
        let (a_ra, a_rp, b_ra, b_rp) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0, bits & 8 != 0);
        let mk = |ra, rp| SocketSpec {
            reuseaddr: ra,
            reuseport: rp,
            state: SockState::Bound,
            ..sock(Family::Inet, Proto::Tcp, "127.0.0.1", 0)
        };
        let l = Layout {
            ephemeral: Some(eph),
            ..layout(vec![mk(a_ra, a_rp), mk(b_ra, b_rp)])
        };
        let h = replay_layout(p, &l).unwrap();
        assert!(h.results()[0].bind.is_none());
        let both_ra = a_ra && b_ra;
        let second_ok = both_ra && !(a_rp && b_rp);
        assert_eq!(
            h.results()[1].bind.is_none(),
            second_ok,
            "options {bits:04b}"
        );
    }
    // Both SO_REUSEADDR and SO_REUSEPORT with different owners: both bind,
    // the second listen() fails.
    let mk = |uid| SocketSpec {
        reuseaddr: true,
        reuseport: true,
        uid,
        ..sock(Family::Inet, Proto::Tcp, "127.0.0.1", 0)
    };
    let h = replay_layout(
        p,
        &Layout {
            ephemeral: Some(eph),
            listen_order: Some(vec![0, 1]),
            ..layout(vec![mk(1000), mk(1001)])
        },
    )
    .unwrap();
    assert!(h.results()[1].bind.is_none());
    assert_eq!(
        h.results()[1].listen.as_ref().map(|x| x.errno),
        Some(Errno::Eaddrinuse)
    );
}

#[test]
fn sk_lookup_redir_with_reuseport_and_no_reuseport() {
    // prog_tests/sk_lookup.c: the program assigns socket A; the group then
    // chooses B, unless BPF_SK_LOOKUP_F_NO_REUSEPORT.
    for p in since(5, 9) {
        for proto in [Proto::Tcp, Proto::Udp] {
            let mut l = layout(vec![
                sock(Family::Inet, proto, "127.0.0.1", 7007),
                sock(Family::Inet, proto, "127.0.0.1", 7007),
            ]);
            l.sk_lookup = Some(SkLookup::Assign {
                socket: 0,
                no_reuseport: false,
            });
            let h = replay_layout(p, &l).unwrap();
            let mut chosen = [0u32; 2];
            for sport in 50000..50200 {
                let x = h.lookup(&packet(proto, "127.0.0.2", sport, "10.0.0.5", 80));
                let g = x.group.as_ref().expect("the group re-selects");
                assert_eq!(
                    Some(g.members[g.explain.listener.unwrap() as usize]),
                    x.socket
                );
                chosen[x.socket.unwrap()] += 1;
            }
            assert!(
                chosen[1] > 50,
                "{} {proto:?}: the group picks B too: {chosen:?}",
                p.release
            );
            l.sk_lookup = Some(SkLookup::Assign {
                socket: 0,
                no_reuseport: true,
            });
            let h = replay_layout(p, &l).unwrap();
            for sport in 50000..50050 {
                assert_eq!(
                    h.lookup(&packet(proto, "127.0.0.2", sport, "10.0.0.5", 80))
                        .socket,
                    Some(0)
                );
            }
        }
    }
    // Not before 5.9.
    let mut l = layout(vec![sock(Family::Inet, Proto::Tcp, "127.0.0.1", 7007)]);
    l.sk_lookup = Some(SkLookup::Drop);
    assert!(replay_layout(Profile::named("5.4").unwrap(), &l).is_err());
}

#[test]
fn a_device_bound_group_that_listened_earlier_loses_to_a_later_unbound_one() {
    // kernel-history.md §4.5: the first socket in lhash2 order whose score
    // beats the best so far hands over to its group, even if a later one
    // would score higher (netdev "lookup the best matched listen socket", 2025).
    let bound = SocketSpec {
        device: Some("lo".into()),
        ..sock(Family::Inet, Proto::Tcp, "0.0.0.0", 9000)
    };
    let l = layout(vec![
        bound.clone(),
        bound,
        sock(Family::Inet, Proto::Tcp, "0.0.0.0", 9000),
        sock(Family::Inet, Proto::Tcp, "0.0.0.0", 9000),
    ]);
    for p in since(5, 15) {
        let h = replay_layout(p, &l).unwrap();
        for sport in 1000..1100 {
            let x = h.lookup(&packet(Proto::Tcp, "127.0.0.3", sport, "127.0.0.1", 9000));
            assert!(x.socket.unwrap() >= 2, "{}: {:?}", p.release, x.reason);
            let walk = &x.tables.last().unwrap().candidates;
            assert_eq!(walk.len(), 1, "the scan stops at the first socket");
        }
    }
}

#[test]
fn a_connected_udp_member_receives_its_peer_from_5_4() {
    let peer: SocketAddr = "127.0.0.9:5000".parse().unwrap();
    let mut socks: Vec<SocketSpec> = (0..4)
        .map(|_| sock(Family::Inet, Proto::Udp, "127.0.0.1", 6000))
        .collect();
    socks[2].state = SockState::Connected;
    socks[2].peer = Some(peer);
    for p in since(5, 4) {
        let h = replay_layout(p, &layout(socks.clone())).unwrap();
        let x = h.lookup(&packet(Proto::Udp, "127.0.0.9", 5000, "127.0.0.1", 6000));
        assert_eq!(x.socket, Some(2), "{}: {:?}", p.release, x.reason);
        for sport in 7000..7200 {
            let y = h.lookup(&packet(Proto::Udp, "127.0.0.8", sport, "127.0.0.1", 6000));
            assert_ne!(
                y.socket,
                Some(2),
                "{}: others never reach the connected member",
                p.release
            );
        }
    }
}

#[test]
fn second_listener_with_another_owner_fails_at_listen() {
    // kernel-history.md §7.1: SO_REUSEPORT with a different UID fails.
    let a = sock(Family::Inet, Proto::Tcp, "127.0.0.1", 8080);
    let b = SocketSpec {
        uid: 1000,
        ..a.clone()
    };
    for p in PROFILES {
        let h = replay_layout(p, &layout(vec![a.clone(), b.clone()])).unwrap();
        let r = &h.results()[1];
        assert_eq!(
            r.bind.as_ref().map(|x| x.errno),
            Some(Errno::Eaddrinuse),
            "{}",
            p.release
        );
    }
}

#[test]
fn without_so_reuseport_the_second_bind_fails() {
    let a = SocketSpec {
        reuseport: false,
        ..sock(Family::Inet, Proto::Udp, "0.0.0.0", 53)
    };
    for p in PROFILES {
        let h = replay_layout(p, &layout(vec![a.clone(), a.clone()])).unwrap();
        assert!(h.results()[1].bind.is_some(), "{}", p.release);
    }
}

#[test]
fn lookup_agrees_with_the_single_group_model() {
    // One group alone: the full lookup picks what ReuseportGroup picks.
    use reuseport_model::{GroupSpec, ReuseportGroup};
    let keys = Keys {
        v4: 0x1234_abcd,
        ..Keys::default()
    };
    for p in PROFILES {
        for proto in [Proto::Tcp, Proto::Udp] {
            for bind in ["127.0.0.1", "0.0.0.0"] {
                let n = 12;
                let l = Layout {
                    keys,
                    ..layout(
                        (0..n)
                            .map(|_| sock(Family::Inet, proto, bind, 8080))
                            .collect(),
                    )
                };
                let h = replay_layout(p, &l).unwrap();
                let g = ReuseportGroup::build(
                    p,
                    &GroupSpec::new(proto, n, bind.parse::<IpAddr>().unwrap(), 8080, keys),
                )
                .unwrap();
                for sport in 20000..20100 {
                    let pk = packet(proto, "127.0.0.7", sport, "127.0.0.1", 8080);
                    let x = h.lookup(&pk);
                    let want = g.select(&pk.tuple, 0).unwrap().listener.map(|l| l as usize);
                    assert_eq!(x.socket, want, "{} {proto:?} {bind}", p.release);
                }
            }
        }
    }
}

#[test]
fn reuseport_bpf_test_extra_filter_and_filter_no_reuseport() {
    use reuseport_model::reuseport::Program;
    // Two unbound SO_REUSEPORT sockets, each with its own program attached
    // before bind: the first bind succeeds, the second fails (4.6+).
    let with_prog = SocketSpec {
        program: Some(Program::Cpu),
        program_before_bind: true,
        state: SockState::Bound,
        ..sock(Family::Inet, Proto::Udp, "0.0.0.0", 8889)
    };
    for p in since(4, 6) {
        for proto in [Proto::Udp, Proto::Tcp] {
            let a = SocketSpec {
                proto,
                ..with_prog.clone()
            };
            let h = replay_layout(p, &layout(vec![a.clone(), a])).unwrap();
            assert!(h.results()[0].bind.is_none(), "{}", p.release);
            let results = h.results();
            let r = results[1].bind.as_ref().expect("second bind refused");
            assert_eq!(r.errno, Errno::Eaddrinuse);
            assert_eq!(r.rule, RefusalRule::OwnsGroupBeforeBind, "{r:?}");
        }
    }
    // A bound socket without SO_REUSEPORT: attaching gives EINVAL.
    let plain = SocketSpec {
        reuseport: false,
        program: Some(Program::Cpu),
        ..sock(Family::Inet, Proto::Udp, "0.0.0.0", 8890)
    };
    let h = replay_layout(Profile::named("6.18").unwrap(), &layout(vec![plain])).unwrap();
    assert_eq!(
        h.results()[0].attach.as_ref().map(|r| r.errno),
        Some(Errno::Einval)
    );
    // A program attached after all joined steers the whole group (selftest order).
    let mut socks: Vec<SocketSpec> = (0..4)
        .map(|_| sock(Family::Inet, Proto::Udp, "0.0.0.0", 8891))
        .collect();
    socks[0].program = Some(Program::Cpu);
    let h = replay_layout(Profile::named("6.18").unwrap(), &layout(socks)).unwrap();
    let mut pk = packet(Proto::Udp, "127.0.0.1", 1234, "127.0.0.1", 8891);
    pk.ctx.cpu = 3;
    assert_eq!(h.lookup(&pk).socket, Some(3));
}

#[test]
fn closing_sockets_in_a_layout_matches_the_single_group_model() {
    // E4's rule through the full lookup: the last member moves into the hole.
    use reuseport_model::{GroupSpec, ReuseportGroup};
    let keys = Keys {
        v4: 0x0bad_f00d,
        ..Keys::default()
    };
    for p in since(4, 6) {
        for proto in [Proto::Tcp, Proto::Udp] {
            let l = Layout {
                keys,
                closed: vec![1, 4],
                ..layout(
                    (0..6)
                        .map(|_| sock(Family::Inet, proto, "127.0.0.1", 8080))
                        .collect(),
                )
            };
            let h = replay_layout(p, &l).unwrap();
            assert!(h.results()[1].closed && !h.results()[1].receiving);
            let g = ReuseportGroup::build(
                p,
                &GroupSpec {
                    closed: vec![1, 4],
                    ..GroupSpec::new(proto, 6, "127.0.0.1".parse::<IpAddr>().unwrap(), 8080, keys)
                },
            )
            .unwrap();
            for sport in 20000..20200 {
                let pk = packet(proto, "127.0.0.7", sport, "127.0.0.1", 8080);
                let want = g.select(&pk.tuple, 0).unwrap().listener.map(|l| l as usize);
                assert_eq!(h.lookup(&pk).socket, want, "{} {proto:?}", p.release);
            }
        }
    }
}

#[test]
fn a_program_the_era_lacks_is_an_attach_refusal_not_a_listen_one() {
    // SK_REUSEPORT programs arrived in 4.19: on 4.17 the setsockopt fails,
    // while the socket itself listens and receives.
    use reuseport_model::reuseport::Program;
    let s = SocketSpec {
        program: Some(Program::Drop),
        ..sock(Family::Inet, Proto::Tcp, "127.0.0.1", 8892)
    };
    let h = replay_layout(Profile::named("4.17").unwrap(), &layout(vec![s])).unwrap();
    let r = &h.results()[0];
    assert!(r.listen.is_none() && r.receiving);
    assert!(
        r.attach
            .as_ref()
            .is_some_and(|a| a.rule == RefusalRule::NoSkReuseportProgram),
        "{r:?}"
    );
}

/// The host a socket-list layout stands for: its calls, replayed (the
/// reader's conversion, then the one replay).
fn replay_layout(
    p: &'static reuseport_model::Profile,
    l: &reuseport_model::lookup::Layout,
) -> Result<reuseport_model::lookup::Host, reuseport_model::lookup::LayoutError> {
    reuseport_model::lookup::Host::run(p, &reuseport_model::lookup::CallLog::from_layout(l)?)
}
