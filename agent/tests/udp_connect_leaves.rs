//! Where a UDP member that `connect()`s goes, asked of the running kernel:
//! from 6.13 it leaves its reuseport group (`udp_lib_hash4` ->
//! `reuseport_detach_sock`, net/ipv4/udp.c, 78c91ae2c6de), the last member
//! moving into its slot; from 5.4 to 6.12 it stays in `socks[]` and select
//! by hash steps over it (acdcecc61285). The model once held both rules at
//! once for 6.13+ (the host let the member leave, the group built from a
//! spec kept it), so this pins which one the kernel follows.
//!
//! Four sockets on 127.0.0.1:8080 made by the group shorthand's calls
//! (`CallLog::from_group`), member 1 connected to a peer that never sends;
//! then datagrams from other clients. Left: the other three receive a third
//! each. Stepped over: member 2 receives member 1's slot as well, half of
//! all. The bound between the two, 0.42, is more than four standard
//! deviations from either at 600 datagrams. The model's group, from the
//! host and from the spec, must hold the members the kernel's rule leaves.
//! Needs root for a private network namespace; otherwise `SKIPPED`.
//!
//! Every test here asks the kernel it runs on, so it also runs inside
//! Debian's kernels: `bash scripts/kernels/test-in-guest.sh
//! udp_connect_leaves`. On 2026-11-28 all three passed on 5.10.262
//! (5.10.0-46), 6.1.0-56, 6.12.118 and 6.18.44: a specific-address member
//! stepped over up to 6.12 (member 2 took 0.47 - 0.53), a wildcard one
//! gone on every kernel (0.29 - 0.35), and the `has_conns` probe 120 of 120
//! to the device-bound socket for the specific address, 0 for the wildcard.

use std::net::{IpAddr, Ipv4Addr};

use reuseport_model::lookup::{CallLog, Host};
use reuseport_model::{GroupSpec, Keys, Proto, ReuseportGroup};

mod common;

/// Datagrams sent; each from a fresh ephemeral port of one of several
/// loopback sources.
const DATAGRAMS: usize = 600;

fn spec() -> GroupSpec {
    spec_on(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

fn spec_on(bind: IpAddr) -> GroupSpec {
    GroupSpec {
        connected: vec![1],
        ..GroupSpec::new(Proto::Udp, 4, bind, 8080, Keys::default())
    }
}

/// Datagrams received per fd, on this kernel, in a private namespace.
#[cfg(target_os = "linux")]
fn received(spec: GroupSpec) -> Vec<usize> {
    use reuseport_agent::calllog::{self, source};
    use std::time::Duration;
    std::thread::spawn(move || {
        assert!(
            calllog::private_netns(),
            "a private network namespace could not be made"
        );
        let log = CallLog::from_group(&spec);
        let run = calllog::replay(&log);
        assert!(
            run.answers.iter().all(Option::is_none),
            "every call of the shorthand succeeds: {:?}",
            run.answers
        );
        let to = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut counts = vec![0; 4];
        for k in 0..DATAGRAMS {
            // The first source is the group's own address; the peer is
            // 127.0.0.1:9, which these probes never come from.
            let from = source(to, k + 1);
            if let Some(fd) = run.probe(Proto::Udp, from, to, 8080, Duration::from_secs(2)) {
                counts[fd] += 1;
            }
        }
        counts
    })
    .join()
    .expect("the probe thread panicked")
}

/// What this kernel did with member 1 of `spec` once it connected:
/// `(profile, release, left)`, where `left` is whether the other three
/// took a third each of other clients' datagrams (member 2 near a half
/// means it was stepped over); `None` (said `SKIPPED`) without root or a
/// profile for this kernel, or before 5.4 when `needs_has_conns`.
#[cfg(target_os = "linux")]
fn measured(
    spec: &GroupSpec,
    needs_has_conns: bool,
) -> Option<(&'static reuseport_model::Profile, String, bool)> {
    if !common::is_root() {
        common::skip(
            "udp_connect_leaves",
            "needs root for a private network namespace",
        );
        return None;
    }
    let release = reuseport_agent::kernel::running_release().unwrap();
    let Ok(profile) = reuseport_agent::kernel::resolve("auto") else {
        common::skip_fact(
            "udp_connect_leaves",
            &format!("no model profile for {release}"),
        );
        return None;
    };
    if needs_has_conns && !profile.lookup.udp_has_conns {
        common::skip_fact(
            "udp_connect_leaves",
            &format!("{release} predates 5.4: a connected member is not told apart"),
        );
        return None;
    }
    let counts = received(spec.clone());
    let total: usize = counts.iter().sum();
    assert!(
        total >= DATAGRAMS * 9 / 10,
        "few datagrams arrived: {counts:?}"
    );
    assert_eq!(
        counts[1], 0,
        "the connected member receives only from its peer"
    );
    let share2 = counts[2] as f64 / total as f64;
    println!(
        "{release}, bound to {}: {counts:?}, member 2 {share2:.3}",
        spec.bind
    );
    Some((profile, release, share2 < 0.42))
}

#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "builds a UDP group on Linux")]
fn a_connected_udp_member_leaves_its_group_from_6_13_and_is_stepped_over_before() {
    #[cfg(target_os = "linux")]
    {
        let Some((profile, release, leaves)) = measured(&spec(), true) else {
            return;
        };
        assert_eq!(
            leaves,
            profile.lookup.udp_connect_leaves_group,
            "{release}: the model's profile {} says the connected member {}",
            profile.release,
            if profile.lookup.udp_connect_leaves_group {
                "leaves"
            } else {
                "is stepped over"
            }
        );
        // The model, both ways in: the members its group still holds.
        let want: Vec<u32> = if leaves {
            vec![0, 3, 2]
        } else {
            vec![0, 1, 2, 3]
        };
        let host = Host::from_group(profile, &spec()).unwrap();
        let from_host = host.group(0).unwrap().listening().to_vec();
        let built = ReuseportGroup::build(profile, &spec()).unwrap();
        assert_eq!(from_host, want, "the host's group");
        assert_eq!(
            built.listening().to_vec(),
            want,
            "the group built from the spec"
        );
    }
}

/// A member bound to the wildcard leaves as it connects in every era with
/// UDP groups: `connect()` gives it the route's source address
/// (`__ip4_datagram_connect`, net/ipv4/datagram.c) and the rehash takes it
/// out of its group (`udp_lib_rehash` -> `reuseport_detach_sock`,
/// net/ipv4/udp.c; read in 4.6.2, 6.1.192 and 6.12.117). The model once
/// kept it, stepped over, up to 6.12. The same four members on 0.0.0.0,
/// the same datagrams to 127.0.0.1: on this kernel it must leave, and the
/// model's group, built from the spec, must hold the other three as the
/// detach leaves them (the last member in its slot). The host cannot
/// replay this spec: it does not choose the source address a wildcard
/// socket's connect() takes.
#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "builds a UDP group on Linux")]
fn a_connected_wildcard_udp_member_leaves_its_group() {
    #[cfg(target_os = "linux")]
    {
        let spec = spec_on(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let Some((profile, release, leaves)) = measured(&spec, false) else {
            return;
        };
        assert!(
            leaves,
            "{release}: member 2 took about half: the connected member was stepped over, not gone"
        );
        let built = ReuseportGroup::build(profile, &spec).unwrap();
        assert_eq!(
            built.listening().to_vec(),
            vec![0, 3, 2],
            "the group built from the spec on profile {}",
            profile.release
        );
    }
}

/// The calls of the `has_conns` probe: socket 0 bound to `bind`:8080 with
/// SO_REUSEPORT and SO_BINDTODEVICE lo (a group of its own: members share
/// a bound device), then four group members on `bind`:8080 without a
/// device, and member 2 (fd 2) connected to 127.0.0.1:9.
fn device_probe(bind: IpAddr) -> CallLog {
    use reuseport_model::lookup::{Call, Family, SockOpt};
    let mut calls = Vec::new();
    for fd in 0..5 {
        calls.push(Call::Socket {
            family: Family::Inet,
            proto: Proto::Udp,
            uid: 0,
        });
        calls.push(Call::Setsockopt {
            fd,
            opt: SockOpt::Reuseport(true),
        });
        if fd == 0 {
            calls.push(Call::Setsockopt {
                fd,
                opt: SockOpt::Bindtodevice(Some("lo".into())),
            });
        }
        calls.push(Call::Bind {
            fd,
            addr: bind,
            port: 8080,
        });
    }
    calls.push(Call::Connect {
        fd: 2,
        addr: Ipv4Addr::LOCALHOST.into(),
        port: 9,
    });
    CallLog {
        calls,
        ..CallLog::default()
    }
}

/// Whether the group's `has_conns` was set, seen from outside. A group
/// whose `has_conns` is clear ends the hash2 scan as soon as a member
/// scores (`udp4_lib_lookup2`, net/ipv4/udp.c 5.4+); one whose flag is
/// set scans on, so socket 0, bound to lo (+4 over a member's 2) and
/// later in the chain (hash2 inserts at the head), takes every datagram
/// from other clients. With a specific address, connect() sets the flag
/// (`reuseport_has_conns_set`, net/ipv4/datagram.c), and the member stays
/// (to 6.12) or leaves in the 6.13 hash4 detach after it; with the
/// wildcard, the rehash (`udp_lib_rehash`) has already
/// taken the member out, the flag finds no group and stays clear, and the
/// group keeps every datagram. The model's group must say the same, and
/// for the specific address (a call log the model replays) its host must
/// hand every datagram to socket 0 as the kernel does.
#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "builds UDP sockets on Linux")]
fn a_wildcard_member_leaves_before_it_can_mark_the_group_connected() {
    #[cfg(target_os = "linux")]
    {
        use reuseport_agent::calllog::{self, source};
        use reuseport_model::lookup::Packet;
        use reuseport_model::reuseport::PacketCtx;
        use reuseport_model::Tuple;
        use std::time::Duration;

        if !common::is_root() {
            common::skip(
                "udp_connect_leaves",
                "needs root for a private network namespace and SO_BINDTODEVICE",
            );
            return;
        }
        let release = reuseport_agent::kernel::running_release().unwrap();
        let Ok(profile) = reuseport_agent::kernel::resolve("auto") else {
            common::skip_fact(
                "udp_connect_leaves",
                &format!("no model profile for {release}"),
            );
            return;
        };
        if !profile.lookup.udp_has_conns {
            common::skip_fact(
                "udp_connect_leaves",
                &format!("{release} predates has_conns (5.4)"),
            );
            return;
        }
        const SENT: usize = 120;
        let to = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let to_socket_0 = |bind: IpAddr| {
            std::thread::spawn(move || {
                assert!(calllog::private_netns(), "no private network namespace");
                let run = calllog::replay(&device_probe(bind));
                assert!(
                    run.answers.iter().all(Option::is_none),
                    "every call succeeds: {:?}",
                    run.answers
                );
                let mut counts = [0usize; 5];
                for k in 1..=SENT {
                    let from = source(to, k);
                    if let Some(fd) = run.probe(Proto::Udp, from, to, 8080, Duration::from_secs(2))
                    {
                        counts[fd] += 1;
                    }
                }
                counts
            })
            .join()
            .expect("the probe thread panicked")
        };
        let specific = to_socket_0(to);
        let wildcard = to_socket_0(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        println!("{release}: specific {specific:?}, wildcard {wildcard:?}");
        for (what, c) in [("specific", specific), ("wildcard", wildcard)] {
            assert!(
                c.iter().sum::<usize>() >= SENT * 9 / 10,
                "{what}: few datagrams arrived: {c:?}"
            );
            assert_eq!(
                c[2], 0,
                "{what}: the connected member takes only its peer's"
            );
        }
        assert_eq!(
            specific[1] + specific[3] + specific[4],
            0,
            "specific: has_conns set"
        );
        assert_eq!(wildcard[0], 0, "wildcard: has_conns clear");

        // The model: the group's flag, both ways.
        let spec = |bind: IpAddr| GroupSpec {
            connected: vec![1],
            ..GroupSpec::new(Proto::Udp, 4, bind, 8080, Keys::default())
        };
        let flag = |bind| {
            ReuseportGroup::build(profile, &spec(bind))
                .unwrap()
                .summary()
                .has_conns
        };
        assert!(flag(to), "the model's specific group has has_conns");
        assert!(
            !flag(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            "the model's wildcard group has no has_conns"
        );
        // And the host, on the log it replays.
        let host = Host::run(profile, &device_probe(to)).unwrap();
        for k in 1..=SENT {
            let t = Tuple {
                saddr: source(to, k),
                sport: 40000 + k as u16,
                daddr: to,
                dport: 8080,
            };
            let got = host
                .lookup(&Packet {
                    proto: Proto::Udp,
                    tuple: t,
                    device: None,
                    ctx: PacketCtx::default(),
                })
                .socket;
            assert_eq!(got, Some(0), "the model's host, datagram {k}");
        }
    }
}
