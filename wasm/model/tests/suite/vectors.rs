//! Every IPv4 hash vector (tests/fixtures/vectors/ipv4-hash.jsonl, computed
//! from the kernel's formulas; see tests/fixtures/README.md) reproduced
//! through the whole model: a group of n listeners bound to the vector's
//! local address, the packet from its foreign address, the chosen slot.
//!
//! Each group size is built once per era and protocol, then moved to each
//! vector's address and keys ([`ReuseportGroup::rebind`], `set_keys`): 500
//! builds of 32,768 joins per era were half the model suite's time.

use std::collections::BTreeMap;
use std::net::IpAddr;

use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};
use serde_json::Value;

fn vectors() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/vectors/ipv4-hash.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn hex(v: &Value) -> u32 {
    u32::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// Runs every vector through `profile`/`proto`, checking the hash against
/// `hash_field` and each group size's slot against `index_field`.
fn check(profile: &str, proto: Proto, hash_field: &str, index_field: &str) {
    let p = Profile::named(profile).unwrap();
    let all = vectors();
    assert_eq!(all.len(), 500, "the vector file should hold 500 cases");
    // One group per size, built on the first vector that asks for it.
    let mut groups: BTreeMap<u32, ReuseportGroup> = BTreeMap::new();
    for (line, v) in all.iter().enumerate() {
        let laddr: IpAddr = v["laddr"].as_str().unwrap().parse().unwrap();
        let faddr: IpAddr = v["faddr"].as_str().unwrap().parse().unwrap();
        let lport = v["lport"].as_u64().unwrap() as u16;
        let fport = v["fport"].as_u64().unwrap() as u16;
        let keys = Keys {
            v4: hex(&v["initval"]),
            ..Keys::default()
        };
        let t = Tuple {
            saddr: faddr,
            sport: fport,
            daddr: laddr,
            dport: lport,
        };
        for (n, want) in v[index_field].as_object().unwrap() {
            let n: u32 = n.parse().unwrap();
            let g = groups.entry(n).or_insert_with(|| {
                ReuseportGroup::build(p, &GroupSpec::new(proto, n, laddr, lport, keys)).unwrap()
            });
            g.rebind(laddr, lport);
            g.set_keys(keys);
            let c = g.select(&t, 0).unwrap();
            assert_eq!(
                c.hash,
                hex(&v[hash_field]),
                "line {} hash ({profile} {proto:?})",
                line + 1
            );
            // Members are numbered in join order and nothing closed, so slot == listener.
            assert_eq!(
                c.slot,
                Some(want.as_u64().unwrap() as u32),
                "line {} n={n} ({profile} {proto:?})",
                line + 1
            );
            assert_eq!(c.listener, c.slot);
        }
    }
}

#[test]
fn tcp_before_6_15_uses_the_classic_form() {
    for profile in ["4.6", "5.10", "6.12"] {
        check(profile, Proto::Tcp, "hash_classic", "index_classic");
    }
}

#[test]
fn tcp_from_6_15_adds_lport_outside() {
    for profile in ["6.15", "6.18", "7.2"] {
        check(profile, Proto::Tcp, "hash_lport_plus", "index_lport_plus");
    }
}

#[test]
fn udp_keeps_the_classic_form_in_every_group_era() {
    for profile in ["4.6", "5.4", "6.18", "7.2"] {
        check(profile, Proto::Udp, "hash_classic", "index_classic");
    }
}
