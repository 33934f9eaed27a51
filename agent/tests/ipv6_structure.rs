//! IPv6 on the running kernel. Two independent 32-bit values key the IPv6
//! hash, so the secret cannot be recovered by search; instead these tests
//! check the structure the model claims, with the same flows recorded
//! against several groups on the same port of the same boot (so the same
//! hash): the choices of groups of 2, 4 and 8 nest (reciprocal_scale), and
//! moving the group from port P to P+1 changes TCP's choice only where lport,
//! added outside the hash from 6.15, carries the hash over a band edge.

use std::collections::HashMap;
use std::net::TcpListener;
use std::process::Command;

use reuseport_agent::trace::Trace;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");

fn linux_with_ipv6() -> bool {
    cfg!(target_os = "linux") && TcpListener::bind("[::1]:0").is_ok()
}

fn release() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut it = r.trim().split(['.', '-']).map(|x| x.parse().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

fn free_port() -> u16 {
    TcpListener::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Records `n` listeners on [::1]:port and returns flow (sport) -> listener.
fn choices(proto: &str, n: u32, port: u16) -> HashMap<u16, u32> {
    let out = Command::new(BIN)
        .args([
            "record",
            "--proto",
            proto,
            "--listeners",
            &n.to_string(),
            "--bind",
            "::1",
            "--port",
            &port.to_string(),
            "--count",
            "300",
            "--seed",
            "5",
            "--duration",
            "10",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = Trace::parse(&String::from_utf8(out.stdout).unwrap(), "stdout").unwrap();
    t.events.iter().map(|e| (e.sport, e.listener)).collect()
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "records on the running Linux kernel"
)]
fn ipv6_choices_of_groups_of_2_4_8_nest() {
    if !linux_with_ipv6() {
        common::skip_fact("ipv6_choices_nest", "needs Linux with IPv6 on lo");
        return;
    }
    for proto in ["tcp", "udp"] {
        let port = free_port();
        let (c2, c4, c8) = (
            choices(proto, 2, port),
            choices(proto, 4, port),
            choices(proto, 8, port),
        );
        let mut compared = 0;
        for (sport, l8) in &c8 {
            if let (Some(l4), Some(l2)) = (c4.get(sport), c2.get(sport)) {
                // slot = (h * n) >> 32, so the slot of n/2 is the slot of n halved.
                assert_eq!(*l4, l8 / 2, "{proto} flow {sport}");
                assert_eq!(*l2, l8 / 4, "{proto} flow {sport}");
                compared += 1;
            }
        }
        assert!(compared > 200, "{proto}: only {compared} flows in common");
    }
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "records on the running Linux kernel"
)]
fn ipv6_tcp_adds_lport_outside_the_hash_from_6_15_and_udp_does_not() {
    if !linux_with_ipv6() || release() < (6, 15) {
        common::skip_fact("ipv6_tcp_lport", "needs Linux 6.15+ with IPv6 on lo");
        return;
    }
    let port = loop {
        let p = free_port();
        if p < 65535 && TcpListener::bind(("::1", p + 1)).is_ok() {
            break p;
        }
    };
    let same = |proto: &str| {
        let (a, b) = (choices(proto, 8, port), choices(proto, 8, port + 1));
        let common: Vec<_> = a.keys().filter(|k| b.contains_key(k)).collect();
        let equal = common.iter().filter(|k| a[k] == b[k]).count();
        (equal, common.len())
    };
    let (tcp_eq, tcp_n) = same("tcp");
    let (udp_eq, udp_n) = same("udp");
    // TCP: h(P+1) = h(P) + 1, so the slot changes only at a band edge (never, in practice).
    assert_eq!(
        tcp_eq, tcp_n,
        "TCP keeps its choice when only lport moves by 1"
    );
    // UDP hashes lport inside: about 1 in 8 flows keep their listener.
    assert!(
        udp_eq * 3 < udp_n,
        "UDP choices move with lport ({udp_eq}/{udp_n} alike)"
    );
}
