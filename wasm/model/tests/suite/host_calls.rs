//! The host is stepped by calls (`Host::apply`), one at a time or a whole
//! log at once, with the same answers.
//!
//! A group spec is a shorthand for the calls a program makes
//! (`CallLog::from_group`): the host that replays those calls holds a group
//! that picks as the group the spec builds directly
//! (`ReuseportGroup::build`), member for member, in every era. The hot
//! paths (batch selection, the secret search, the spread) ask that group.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reuseport_model::lookup::{Call, CallLog, Host, MAX_SOCKETS};
use reuseport_model::profile::{Selection, PROFILES};
use reuseport_model::reuseport::{CpuPin, PacketCtx};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};

fn keys() -> Keys {
    Keys {
        v4: 0x1a2b_3c4d,
        v6_outer: 0x5e6f_7a8b,
        v6_inner: 0x0c0f_fee0,
    }
}

fn specs() -> Vec<GroupSpec> {
    let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let any4 = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    let any6 = IpAddr::V6(Ipv6Addr::UNSPECIFIED);
    let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    vec![
        GroupSpec::new(Proto::Tcp, 4, v4, 8080, keys()),
        GroupSpec {
            closed: vec![2, 5],
            ..GroupSpec::new(Proto::Tcp, 8, any4, 8080, keys())
        },
        GroupSpec {
            v6only: true,
            shutdown: vec![1],
            tcp_migrate_req: true,
            ..GroupSpec::new(Proto::Tcp, 5, any6, 443, keys())
        },
        GroupSpec {
            shutdown: vec![0, 3],
            ..GroupSpec::new(Proto::Tcp, 6, v6, 443, keys())
        },
        GroupSpec {
            closed: vec![1],
            ..GroupSpec::new(Proto::Udp, 7, v4, 5353, keys())
        },
        GroupSpec {
            incoming_cpu: vec![
                CpuPin {
                    listener: 0,
                    cpu: 1,
                },
                CpuPin {
                    listener: 2,
                    cpu: 1,
                },
            ],
            ..GroupSpec::new(Proto::Tcp, 4, v4, 8080, keys())
        },
        GroupSpec {
            connected: vec![1, 3],
            ..GroupSpec::new(Proto::Udp, 5, v4, 5353, keys())
        },
        GroupSpec::new(Proto::Udp, 200, any4, 5353, keys()),
    ]
}

/// Packets to the group's port from many clients, some on other CPUs.
fn packets(spec: &GroupSpec) -> Vec<(Tuple, PacketCtx)> {
    let mut x: u32 = 0x9e37_79b9;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    (0..300)
        .map(|_| {
            let r = next();
            let (saddr, daddr): (IpAddr, IpAddr) = match spec.bind {
                IpAddr::V4(a) => {
                    let d = if a.is_unspecified() {
                        Ipv4Addr::new(127, 0, 0, 1)
                    } else {
                        a
                    };
                    (
                        Ipv4Addr::from(0x7f00_0000 | (r & 0x00ff_ffff)).into(),
                        d.into(),
                    )
                }
                IpAddr::V6(a) => {
                    let d = if a.is_unspecified() {
                        Ipv6Addr::LOCALHOST
                    } else {
                        a
                    };
                    (
                        Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, (r >> 16) as u16, r as u16).into(),
                        d.into(),
                    )
                }
            };
            let t = Tuple {
                saddr,
                sport: 1024 + (r % 60000) as u16,
                daddr,
                dport: spec.port,
            };
            (t, PacketCtx::on_cpu(next() % 4))
        })
        .collect()
}

#[test]
fn a_group_spec_writes_one_socket_bind_and_listen_per_listener_then_the_rest() {
    let spec = GroupSpec {
        closed: vec![1],
        shutdown: vec![0],
        incoming_cpu: vec![CpuPin {
            listener: 2,
            cpu: 3,
        }],
        ..GroupSpec::new(Proto::Tcp, 3, IpAddr::V4(Ipv4Addr::LOCALHOST), 8080, keys())
    };
    let log = CallLog::from_group(&spec);
    let names: Vec<String> = log
        .calls
        .iter()
        .map(|c| match c {
            Call::Socket { .. } => "socket".to_string(),
            Call::Setsockopt { fd, .. } => format!("setsockopt {fd}"),
            Call::Bind { fd, .. } => format!("bind {fd}"),
            Call::Listen { fd } => format!("listen {fd}"),
            Call::Connect { fd, .. } => format!("connect {fd}"),
            Call::Shutdown { fd } => format!("shutdown {fd}"),
            Call::Close { fd } => format!("close {fd}"),
        })
        .collect();
    // Written out by hand from the spec: three sockets, each made, given
    // SO_REUSEPORT, bound and listening; the pin, the close, the shutdown.
    let expected = [
        "socket",
        "setsockopt 0",
        "bind 0",
        "listen 0",
        "socket",
        "setsockopt 1",
        "bind 1",
        "listen 1",
        "socket",
        "setsockopt 2",
        "bind 2",
        "listen 2",
        "setsockopt 2",
        "close 1",
        "shutdown 0",
    ];
    assert_eq!(names, expected);
    assert_eq!(log.keys, keys());
}

#[test]
fn the_host_a_group_spec_stands_for_picks_as_the_spec_built_directly() {
    let mut compared = 0;
    for profile in PROFILES.iter() {
        let profile: &'static Profile = profile;
        for spec in specs() {
            if spec.tcp_migrate_req && !profile.closed_tail {
                // net.ipv4.tcp_migrate_req is a sysctl of 5.14+, not a
                // call: a call log carries it as a setting, not an answer.
                continue;
            }
            let Ok(direct) = ReuseportGroup::build(profile, &spec) else {
                // An option this era lacks (SO_INCOMING_CPU before 4.4,
                // migration before 5.14): the host answers that call with
                // a refusal instead.
                let host = Host::from_group(profile, &spec).unwrap();
                assert!(
                    host.answers().iter().any(Option::is_some),
                    "{} {spec:?}: the direct build refuses, the calls all succeed",
                    profile.release
                );
                continue;
            };
            let host = Host::from_group(profile, &spec).unwrap();
            if direct.selection() == Selection::Reservoir {
                // Before the group array (TCP 4.6, UDP 4.5) the kernel keeps
                // no group: the lookup's reservoir scan over the listener
                // chain picks, and the host holds none to hand out.
                assert!((0..host.sockets()).all(|fd| host.group_of(fd).is_none()));
                // It hands out the listener chain the scan walks instead,
                // which picks as the spec's own chain, fd for listener.
                let Some((chain, fds)) = (0..host.sockets()).find_map(|fd| host.chain_of(fd))
                else {
                    panic!("{} {spec:?}: no receiving socket", profile.release);
                };
                for (t, ctx) in packets(&spec) {
                    let a = direct.select_ctx(&t, &ctx).map(|c| (c.listener, c.hash));
                    let b = chain
                        .select_ctx(&t, &ctx)
                        .map(|c| (c.listener.map(|m| fds[m as usize] as u32), c.hash));
                    assert_eq!(a, b, "{} {spec:?} {t:?}", profile.release);
                }
                compared += 1;
                continue;
            }
            let g = host
                .group_of(0)
                .or_else(|| (0..host.sockets()).find_map(|fd| host.group_of(fd)));
            let g = host
                .group(g.unwrap_or_else(|| {
                    panic!(
                        "{} {spec:?}: no member in a group: {:?}",
                        profile.release,
                        host.answers()
                    )
                }))
                .unwrap();
            for (t, ctx) in packets(&spec) {
                let a = direct.select_ctx(&t, &ctx).map(|c| (c.listener, c.hash));
                let b = g.select_ctx(&t, &ctx).map(|c| (c.listener, c.hash));
                assert_eq!(a, b, "{} {spec:?} {t:?}", profile.release);
            }
            compared += 1;
        }
    }
    // Every era builds most of the specs.
    assert!(compared >= PROFILES.len() * 3, "only {compared} compared");
}

#[test]
fn a_host_stepped_call_by_call_answers_as_the_whole_log_replayed() {
    let profile = Profile::named("6.18").unwrap();
    let spec = GroupSpec {
        closed: vec![1],
        shutdown: vec![2],
        ..GroupSpec::new(Proto::Tcp, 4, IpAddr::V4(Ipv4Addr::LOCALHOST), 8080, keys())
    };
    let mut log = CallLog::from_group(&spec);
    // A fifth socket that the group's port refuses: no SO_REUSEPORT.
    log.calls.push(Call::Socket {
        family: reuseport_model::lookup::Family::Inet,
        proto: Proto::Tcp,
        uid: 0,
    });
    log.calls.push(Call::Bind {
        fd: 4,
        addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 8080,
    });
    let whole = Host::run(profile, &log).unwrap();
    let mut stepped = Host::run(
        profile,
        &CallLog {
            calls: Vec::new(),
            ..log.clone()
        },
    )
    .unwrap();
    let answers: Vec<_> = log
        .calls
        .iter()
        .map(|c| stepped.apply(c.clone()).unwrap())
        .collect();
    assert_eq!(answers, whole.answers());
    // The last bind is refused (EADDRINUSE), every other call succeeds.
    let refused: Vec<usize> = (0..answers.len())
        .filter(|&i| answers[i].is_some())
        .collect();
    assert_eq!(refused, vec![log.calls.len() - 1]);
    assert_eq!(stepped.log(), log);
    for (t, ctx) in packets(&spec) {
        let p = tcp(t, ctx);
        assert_eq!(whole.lookup(&p).socket, stepped.lookup(&p).socket);
    }
}

#[test]
fn a_call_the_model_cannot_replay_is_an_error_and_changes_nothing() {
    let profile = Profile::named("6.18").unwrap();
    let spec = GroupSpec::new(Proto::Udp, 2, IpAddr::V4(Ipv4Addr::LOCALHOST), 53, keys());
    let mut host = Host::from_group(profile, &spec).unwrap();
    let before = host.log();
    let e = host
        .apply(Call::Listen { fd: 7 })
        .expect_err("fd 7 was never made");
    assert!(e.to_string().contains("socket 7 does not exist yet"), "{e}");
    assert_eq!(host.log(), before);
    assert_eq!(host.answers().len(), before.calls.len());
}

/// Six TCP listeners on 127.0.0.1:8080 (fds 0 to 5), one group.
fn six() -> Host {
    let spec = GroupSpec::new(Proto::Tcp, 6, IpAddr::V4(Ipv4Addr::LOCALHOST), 8080, keys());
    Host::from_group(Profile::resolve("6.18", None).unwrap(), &spec).unwrap()
}

/// A page draws what a close or a join did to `socks[]` from the host it
/// steps, with no second group beside it: the host hands back the group's own
/// record of the call.
#[test]
fn the_last_call_s_change_is_the_group_s_own_record() {
    use reuseport_model::group::AddEffect;
    use reuseport_model::reuseport::Change;
    let mut h = six();
    let mut g = ReuseportGroup::build(
        Profile::resolve("6.18", None).unwrap(),
        &GroupSpec::new(Proto::Tcp, 6, IpAddr::V4(Ipv4Addr::LOCALHOST), 8080, keys()),
    )
    .unwrap();
    assert_eq!(h.apply(Call::Close { fd: 1 }).unwrap(), None);
    // By hand (reuseport_detach_sock): slot 1 freed, the last member (5) moved into it.
    let expected = Change::Left {
        listener: 1,
        slot: Some(1),
        moved: Some(5),
    };
    assert_eq!(h.last_change().map(|(_, c)| c), Some(expected));
    assert_eq!(g.close(1).unwrap(), expected);
    // A new listener after the close: socket, SO_REUSEPORT, bind, listen.
    let fd = h.sockets();
    h.apply(Call::Socket {
        family: reuseport_model::lookup::Family::Inet,
        proto: Proto::Tcp,
        uid: 0,
    })
    .unwrap();
    assert!(h.last_change().is_none(), "socket() changes no group");
    h.apply(Call::Setsockopt {
        fd,
        opt: reuseport_model::lookup::SockOpt::Reuseport(true),
    })
    .unwrap();
    h.apply(Call::Bind {
        fd,
        addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 8080,
    })
    .unwrap();
    h.apply(Call::Listen { fd }).unwrap();
    let (gi, c) = h.last_change().expect("listen() joined the group");
    assert_eq!(
        c,
        Change::Joined {
            listener: 6,
            slot: Some(5),
            effect: AddEffect::Appended
        }
    );
    assert_eq!(h.group_members(gi).unwrap()[6], fd);
    assert_eq!(g.join().unwrap(), c);
}

/// SO_INCOMING_CPU takes an int: -1 (4294967295 as the call's u32) unsets
/// it, and the 6.2+ group count goes down again.
#[test]
fn incoming_cpu_minus_one_unsets_it() {
    use reuseport_model::lookup::SockOpt;
    let mut h = six();
    let g = h.group_of(0).unwrap();
    h.apply(Call::Setsockopt {
        fd: 3,
        opt: SockOpt::IncomingCpu(2),
    })
    .unwrap();
    assert_eq!(h.group(g).unwrap().members()[3].incoming_cpu, 2);
    assert_eq!(h.group(g).unwrap().summary().incoming_cpu, 1);
    h.apply(Call::Setsockopt {
        fd: 3,
        opt: SockOpt::IncomingCpu(u32::MAX),
    })
    .unwrap();
    assert_eq!(h.group(g).unwrap().members()[3].incoming_cpu, -1);
    assert_eq!(h.group(g).unwrap().summary().incoming_cpu, 0);
}

/// A new boot's keys reach the host's lookups and its groups alike: every
/// answer is then that of a host built with those keys from the start.
#[test]
fn new_keys_answer_as_a_host_built_with_them() {
    let mut h = six();
    let other = Keys {
        v4: 0x0bad_f00d,
        ..keys()
    };
    h.set_keys(other);
    let spec = GroupSpec::new(Proto::Tcp, 6, IpAddr::V4(Ipv4Addr::LOCALHOST), 8080, other);
    let fresh = Host::from_group(Profile::resolve("6.18", None).unwrap(), &spec).unwrap();
    let mut differs = 0;
    let before = six();
    for (t, ctx) in packets(&spec) {
        let p = tcp(t, ctx);
        assert_eq!(h.lookup(&p).socket, fresh.lookup(&p).socket);
        if h.lookup(&p).socket != before.lookup(&p).socket {
            differs += 1;
        }
    }
    assert!(
        differs > 0,
        "the new keys moved no packet: the test would pass with the old ones"
    );
}

/// A TCP packet with this tuple and context, arriving on `lo`.
fn tcp(tuple: Tuple, ctx: PacketCtx) -> reuseport_model::lookup::Packet {
    reuseport_model::lookup::Packet {
        proto: Proto::Tcp,
        tuple,
        device: None,
        ctx,
    }
}

#[test]
fn so_incoming_cpu_is_refused_with_enoprotoopt_before_4_4() {
    // sock_setsockopt (net/core/sock.c) learnt to set SO_INCOMING_CPU in 4.4
    // (70da268b569d); before, the option falls to its default case,
    // ENOPROTOOPT, and the socket keeps sk_incoming_cpu = -1.
    use reuseport_model::lookup::SockOpt;
    use reuseport_model::message::Errno;
    for (kernel, refused) in [
        ("3.9", true),
        ("4.1", true),
        ("4.4", false),
        ("6.18", false),
    ] {
        let profile = Profile::named(kernel).unwrap();
        let spec = GroupSpec::new(Proto::Tcp, 1, IpAddr::V4(Ipv4Addr::LOCALHOST), 80, keys());
        let mut host = Host::from_group(profile, &spec).unwrap();
        let a = host
            .apply(Call::Setsockopt {
                fd: 0,
                opt: SockOpt::IncomingCpu(1),
            })
            .unwrap();
        assert_eq!(
            a.as_ref().map(|r| r.errno),
            refused.then_some(Errno::Enoprotoopt),
            "{kernel}: {a:?}"
        );
    }
}

/// The group a shorthand stands for (`Host::shorthand_group`: the visualizer's `Group`,
/// the paste page's answers) goes through the host wherever the host holds
/// it; either way it must give the packet the listener the spec's own build
/// gives, and the whole explain record the page shows, in every era.
#[test]
fn the_group_a_page_holds_explains_as_the_spec_built_directly_in_every_era() {
    let mut hosted = 0;
    for profile in PROFILES.iter() {
        let profile: &'static Profile = profile;
        for spec in specs() {
            if spec.tcp_migrate_req && !profile.closed_tail {
                continue;
            }
            let page = Host::shorthand_group(profile, &spec);
            let Ok(direct) = ReuseportGroup::build(profile, &spec) else {
                assert!(
                    page.is_err(),
                    "{} {spec:?}: the direct build refuses, the page's does not",
                    profile.release
                );
                continue;
            };
            let page = page.unwrap_or_else(|e| panic!("{} {spec:?}: {e}", profile.release));
            hosted += usize::from(Host::holds_spec(profile, &spec));
            for (t, ctx) in packets(&spec) {
                let cpu = ctx.cpu;
                assert_eq!(
                    direct.explain(&t, cpu).ok(),
                    page.explain(&t, cpu).ok(),
                    "{} {spec:?} {t:?}",
                    profile.release
                );
            }
        }
    }
    // The host holds most of them: every group-era spec, and the chain's without closes.
    assert!(
        hosted >= PROFILES.len() * 3,
        "only {hosted} through the host"
    );
}

/// A chain-era group the host cannot hand out with the spec's listener
/// numbers (a listener closed), or cannot hold at all (past `MAX_SOCKETS`),
/// is still the page's: built directly, numbered as the spec numbers it.
#[test]
fn a_chain_with_a_close_or_past_the_hosts_bound_keeps_the_specs_listener_numbers() {
    let profile = Profile::named("4.4").unwrap();
    let spec = GroupSpec {
        closed: vec![1],
        ..GroupSpec::new(Proto::Tcp, 4, IpAddr::V4(Ipv4Addr::LOCALHOST), 8080, keys())
    };
    assert!(!Host::holds_spec(profile, &spec));
    let g = Host::shorthand_group(profile, &spec).unwrap();
    // Counted by hand: listeners 0, 2 and 3 receive, listener 1 was closed.
    let mut seen = [0u32; 4];
    for (t, ctx) in packets(&spec) {
        let l = g.select_ctx(&t, &ctx).unwrap().listener.unwrap();
        seen[l as usize] += 1;
    }
    assert_eq!(seen[1], 0, "{seen:?}");
    assert!(seen[0] > 0 && seen[2] > 0 && seen[3] > 0, "{seen:?}");

    let big = GroupSpec::new(
        Proto::Tcp,
        MAX_SOCKETS as u32 + 1,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        8080,
        keys(),
    );
    assert!(!Host::holds_spec(profile, &big));
    assert!(
        Host::spec_group(profile, &big).is_err(),
        "a host holds at most MAX_SOCKETS sockets"
    );
    assert_eq!(
        Host::shorthand_group(profile, &big)
            .unwrap()
            .members()
            .len(),
        MAX_SOCKETS + 1
    );
}
