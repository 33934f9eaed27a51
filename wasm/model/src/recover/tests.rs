//! Unit tests of the key recovery: bands, plans and the search loop.

use std::net::Ipv4Addr;

use super::*;
use crate::reuseport::CpuPin;
use crate::GroupSpec;

/// xorshift32, for reproducible "random" keys and flows: the benchmarks'
/// generator.
#[path = "../../benches/common/xorshift.rs"]
mod xorshift;
use xorshift::Xorshift32;

fn group(kernel: &str, proto: Proto, n: u32, bind: &str, key: u32) -> ReuseportGroup {
    let spec = GroupSpec::new(
        proto,
        n,
        bind.parse().unwrap(),
        8080,
        Keys {
            v4: key,
            ..Keys::default()
        },
    );
    crate::lookup::Host::spec_group(Profile::named(kernel).unwrap(), &spec).unwrap()
}

fn flows(rng: &mut Xorshift32, count: usize, daddr: Ipv4Addr) -> Vec<Tuple> {
    (0..count)
        .map(|_| {
            let a = rng.next();
            Tuple::v4(
                Ipv4Addr::from(0x0a00_0000 | (a & 0x00ff_ffff)),
                (32768 + (a >> 20) % 28000) as u16,
                daddr,
                8080,
            )
        })
        .collect()
}

/// Observations made by the model's own `select` under the true key.
fn plan_from(g: &ReuseportGroup, ts: &[Tuple]) -> Plan {
    let mut plan = Plan::new(g).unwrap();
    for t in ts {
        let l = g.select(t, 0).unwrap().listener.unwrap();
        plan.add(0, t, l).unwrap();
    }
    plan
}

/// The slow oracle: every key of the window through `select`.
fn brute(g: &ReuseportGroup, ts: &[Tuple], window: Range<u64>) -> Vec<u32> {
    let want: Vec<_> = ts
        .iter()
        .map(|t| g.select(t, 0).unwrap().listener)
        .collect();
    let mut g = g.clone();
    window
        .map(|iv| iv as u32)
        .filter(|&iv| {
            g.set_keys(Keys { v4: iv, ..g.keys() });
            ts.iter()
                .zip(&want)
                .all(|(t, w)| g.select(t, 0).unwrap().listener == *w)
        })
        .collect()
}

fn window(key: u32, half: u64) -> Range<u64> {
    let k = key as u64;
    k.saturating_sub(half)..(k + half).min(SPACE)
}

fn every_isa(plan: &Plan, r: Range<u64>) -> Found {
    let mut results = [Isa::Best, Isa::Avx2, Isa::Portable].map(|isa| {
        let mut f = Found::new(1000);
        plan.search(isa, r.clone(), &mut f);
        f
    });
    assert_eq!(results[0], results[1], "avx2 copy differs");
    assert_eq!(results[0], results[2], "portable copy differs");
    std::mem::take(&mut results[0])
}

#[test]
fn bands_are_exactly_the_preimages_of_reciprocal_scale() {
    let mut rng = Xorshift32::new(7);
    for n in [1, 2, 3, 5, 7, 8, 64, 100, 129, 1000, 32768] {
        let mut total = 0u64;
        for slot in 0..n.min(200) {
            let b = Band::of(slot, n);
            total += b.width;
            let hi = b.lo as u64 + b.width - 1;
            assert_eq!(reciprocal_scale(b.lo, n), slot);
            assert_eq!(reciprocal_scale(hi as u32, n), slot);
            if b.lo > 0 {
                assert_eq!(reciprocal_scale(b.lo - 1, n), slot - 1);
            }
            if hi + 1 < SPACE {
                assert_eq!(reciprocal_scale(hi as u32 + 1, n), slot + 1);
            }
            for _ in 0..50 {
                let h = rng.next();
                assert_eq!(
                    b.contains(h),
                    reciprocal_scale(h, n) == slot,
                    "h={h:#x} n={n}"
                );
            }
        }
        if n <= 200 {
            assert_eq!(total, SPACE, "bands of n={n} cover every hash once");
        }
    }
    assert_eq!(Band::of(0, 2).width, 1 << 31);
    assert_eq!(Band::of(0, 1).width, SPACE);
}

#[test]
fn finds_the_key_lport_plus_form_and_nothing_else_in_the_window() {
    let mut rng = Xorshift32::new(0x1b87_3593);
    for _ in 0..3 {
        let key = rng.next();
        let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", key);
        let ts = flows(&mut rng, 32, Ipv4Addr::LOCALHOST);
        let plan = plan_from(&g, &ts);
        assert_eq!(plan.form(), (V4Form::LportPlus, JhashForm::New));
        assert!(plan.expected_false_matches() < 1e-18);
        let r = window(key, 1 << 17);
        let f = every_isa(&plan, r.clone());
        assert_eq!((f.count, f.values.clone()), (1, vec![key]), "key {key:#x}");
        assert_eq!(plan.verify(&f.values), vec![None]);
    }
}

#[test]
fn finds_the_key_classic_form_specific_and_wildcard_binds() {
    let mut rng = Xorshift32::new(0x9e37_79b9);
    for (kernel, proto, bind) in [
        ("6.12", Proto::Tcp, "127.0.0.1"),
        ("6.12", Proto::Tcp, "0.0.0.0"),
        ("4.17", Proto::Tcp, "0.0.0.0"),
        ("6.18", Proto::Udp, "0.0.0.0"),
        ("4.6", Proto::Udp, "0.0.0.0"),
    ] {
        let key = rng.next();
        let g = group(kernel, proto, 5, bind, key);
        let ts = flows(&mut rng, 24, Ipv4Addr::new(127, 0, 0, 1));
        let plan = plan_from(&g, &ts);
        if bind == "0.0.0.0" && kernel.starts_with('6') {
            // 5.0+: the wildcard pass hashes laddr 0 (kernel-history.md §2.6).
            assert_eq!(plan.constraints()[0].laddr, 0, "{kernel} {proto:?}");
        }
        let f = every_isa(&plan, window(key, 1 << 16));
        assert_eq!(f.values, vec![key], "{kernel} {proto:?} {bind}");
    }
}

#[test]
fn agrees_with_brute_force_select_over_a_window() {
    // Few observations, so the window holds many false candidates: the
    // search must return exactly the keys `select` cannot tell apart.
    let mut rng = Xorshift32::new(0x0bad_cafe);
    for (kernel, n, obs) in [
        ("6.18", 8, 4),
        ("6.12", 3, 6),
        ("6.18", 64, 2),
        ("4.6", 2, 9),
    ] {
        let key = rng.next();
        let g = group(kernel, Proto::Tcp, n, "127.0.0.1", key);
        let ts = flows(&mut rng, obs, Ipv4Addr::LOCALHOST);
        let plan = plan_from(&g, &ts);
        let r = window(key, 3000);
        let f = every_isa(&plan, r.clone());
        let want = brute(&g, &ts, r);
        assert!(want.contains(&key));
        assert_eq!(f.count, want.len() as u64, "{kernel} n={n}");
        assert_eq!(f.values, want, "{kernel} n={n}");
    }
}

#[test]
fn one_observation_of_two_members_leaves_half_the_keys() {
    let g = group("6.18", Proto::Tcp, 2, "127.0.0.1", 0x1234_5678);
    let ts = flows(&mut Xorshift32::new(3), 1, Ipv4Addr::LOCALHOST);
    let plan = plan_from(&g, &ts);
    assert_eq!(plan.expected_false_matches(), (1u64 << 31) as f64);
    // 2^22 keys: expect 2^21, standard deviation 2^10.
    let mut f = Found::new(10);
    plan.search(Isa::Best, 0x4000_0000..0x4040_0000, &mut f);
    let dev = (f.count as i64 - (1 << 21)).abs();
    assert!(dev < 5 << 10, "{} candidates, {dev} from 2^21", f.count);
    assert_eq!(f.values.len(), 10);
    assert_eq!(plan.more_needed(0.001), Some(41), "2^31 · 2^-k < 0.001");
}

#[test]
fn closed_listeners_use_the_slot_after_the_swap() {
    // Close 1 of 6: listener 5 moves into slot 1 (kernel-history.md §10 E4).
    let key = 0x7777_1234;
    let spec = GroupSpec {
        closed: vec![1, 3],
        ..GroupSpec::new(
            Proto::Tcp,
            6,
            "127.0.0.1".parse().unwrap(),
            8080,
            Keys {
                v4: key,
                ..Keys::default()
            },
        )
    };
    let g = crate::lookup::Host::spec_group(Profile::named("6.18").unwrap(), &spec).unwrap();
    let ts = flows(&mut Xorshift32::new(11), 30, Ipv4Addr::LOCALHOST);
    let plan = plan_from(&g, &ts);
    assert!(plan.observations().iter().all(|o| o.members == 4));
    let moved = plan
        .observations()
        .iter()
        .find(|o| o.listener == 5)
        .expect("5 gets traffic");
    assert_eq!(moved.slot, 1);
    let f = every_isa(&plan, window(key, 1 << 15));
    assert_eq!(f.values, vec![key]);
    let e = observe(&g, &ts[0], 3).unwrap_err();
    assert!(e.to_string().contains("listener 3 is closed"), "{e}");
    let e = observe(&g, &ts[0], 9).unwrap_err();
    assert!(e.to_string().contains("has 6 listener(s)"), "{e}");
}

#[test]
fn several_groups_of_one_key_combine() {
    let key = 0xfeed_f00d;
    let a = group("6.18", Proto::Tcp, 4, "127.0.0.1", key);
    let spec = GroupSpec::new(
        Proto::Tcp,
        16,
        "0.0.0.0".parse().unwrap(),
        9090,
        Keys {
            v4: key,
            ..Keys::default()
        },
    );
    let b = crate::lookup::Host::spec_group(Profile::named("6.18").unwrap(), &spec).unwrap();
    let mut plan = Plan::new(&a).unwrap();
    let gb = plan.add_group(&b).unwrap();
    let mut rng = Xorshift32::new(5);
    for t in flows(&mut rng, 10, Ipv4Addr::LOCALHOST) {
        plan.add(0, &t, a.select(&t, 0).unwrap().listener.unwrap())
            .unwrap();
        let t = Tuple { dport: 9090, ..t };
        plan.add(gb, &t, b.select(&t, 0).unwrap().listener.unwrap())
            .unwrap();
    }
    // The 16-member group's constraints are the most selective: first.
    assert!(plan.constraints()[..10].iter().all(|o| o.lport == 9090));
    let f = every_isa(&plan, window(key, 1 << 15));
    assert_eq!(f.values, vec![key]);
    let udp = group("6.18", Proto::Udp, 4, "127.0.0.1", key);
    assert!(matches!(
        plan.add_group(&udp),
        Err(RecoverError::Mixed { .. })
    ));
}

#[test]
fn duplicates_add_nothing_and_contradictions_are_refused() {
    let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", 42);
    let t = flows(&mut Xorshift32::new(9), 1, Ipv4Addr::LOCALHOST)[0];
    let l = g.select(&t, 0).unwrap().listener.unwrap();
    let mut plan = Plan::new(&g).unwrap();
    assert_eq!(plan.add(0, &t, l).unwrap(), Added::New);
    assert_eq!(plan.add(0, &t, l).unwrap(), Added::Duplicate);
    assert_eq!(plan.constraints().len(), 1);
    // A new packet after the constraints were read is in the next read.
    let u = Tuple {
        sport: t.sport ^ 1,
        ..t
    };
    let lu = g.select(&u, 0).unwrap().listener.unwrap();
    assert_eq!(plan.add(0, &u, lu).unwrap(), Added::New);
    assert_eq!(plan.constraints().len(), 2);
    assert_eq!(plan.constraints()[1].sport, u.sport);
    let e = plan.add(0, &t, (l + 1) % 8).unwrap_err();
    assert!(
        matches!(e, RecoverError::Contradiction { earlier: 0, .. }),
        "{e}"
    );
}

#[test]
fn the_range_end_is_exact() {
    // No constraint: the range itself, to the last key.
    let mut f = Found::new(5);
    search(
        Isa::Best,
        V4Form::Classic,
        JhashForm::New,
        &[],
        SPACE - 3..SPACE,
        &mut f,
    );
    assert_eq!(
        (f.count, f.values),
        (3, vec![u32::MAX - 2, u32::MAX - 1, u32::MAX])
    );
    // A key at the very end of 2^32, searched with a partial last block.
    let key = u32::MAX - 1;
    let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", key);
    let plan = plan_from(
        &g,
        &flows(&mut Xorshift32::new(13), 32, Ipv4Addr::LOCALHOST),
    );
    for r in [SPACE - 5000..SPACE, SPACE - 2..SPACE - 1, SPACE - 1..SPACE] {
        let f = every_isa(&plan, r.clone());
        let want = u64::from(r.contains(&(key as u64)));
        assert_eq!(f.count, want, "{r:?}");
    }
    let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", 0);
    let plan = plan_from(
        &g,
        &flows(&mut Xorshift32::new(17), 32, Ipv4Addr::LOCALHOST),
    );
    assert_eq!(every_isa(&plan, 0..1).values, vec![0]);
    assert_eq!(every_isa(&plan, 1..3000).count, 0);
}

#[test]
fn ipv6_reservoir_and_cpu_pins_are_refused() {
    let spec = GroupSpec::new(Proto::Tcp, 4, "::".parse().unwrap(), 8080, Keys::default());
    let g = crate::lookup::Host::spec_group(Profile::named("6.18").unwrap(), &spec).unwrap();
    let t6 = Tuple {
        saddr: "fd00::2".parse().unwrap(),
        sport: 40000,
        daddr: "fd00::1".parse().unwrap(),
        dport: 8080,
    };
    let e = observe(&g, &t6, 0).unwrap_err();
    assert!(matches!(e, RecoverError::Ipv6 { .. }));
    assert!(e.to_string().contains("2^64"), "{e}");
    // An IPv4 client of the dual-stack wildcard group is fine.
    let t4 = Tuple::v4(
        Ipv4Addr::new(10, 0, 0, 2),
        40000,
        Ipv4Addr::new(10, 0, 0, 1),
        8080,
    );
    assert!(observe(&g, &t4, g.select(&t4, 0).unwrap().listener.unwrap()).is_ok());

    for (kernel, proto) in [
        ("4.4", Proto::Tcp),
        ("4.5", Proto::Tcp),
        ("4.4", Proto::Udp),
        ("3.9", Proto::Udp),
    ] {
        let g = group(kernel, proto, 4, "127.0.0.1", 0);
        let e = Plan::new(&g).unwrap_err();
        assert!(
            matches!(e, RecoverError::Reservoir { .. }),
            "{kernel} {proto:?}"
        );
        assert!(e.to_string().contains("reservoir"), "{e}");
    }

    let spec = GroupSpec {
        incoming_cpu: vec![CpuPin {
            listener: 1,
            cpu: 0,
        }],
        ..GroupSpec::new(
            Proto::Tcp,
            4,
            "127.0.0.1".parse().unwrap(),
            8080,
            Keys::default(),
        )
    };
    let pinned =
        |k: &str| crate::lookup::Host::spec_group(Profile::named(k).unwrap(), &spec).unwrap();
    let e = Plan::new(&pinned("6.18")).unwrap_err();
    assert!(
        matches!(e, RecoverError::IncomingCpu { count: 1, .. }),
        "{e}"
    );
    // Before the 6.2 ring scan the pin does not change a group's pick.
    assert!(Plan::new(&pinned("5.15")).is_ok());

    let spec = GroupSpec {
        program: Some(crate::reuseport::Program::Cpu),
        ..GroupSpec::new(
            Proto::Udp,
            4,
            "127.0.0.1".parse().unwrap(),
            8080,
            Keys::default(),
        )
    };
    let e = Plan::new(
        &crate::lookup::Host::spec_group(Profile::named("6.18").unwrap(), &spec).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, RecoverError::Program { .. }), "{e}");

    let spec = GroupSpec {
        connected: vec![2],
        ..GroupSpec::new(
            Proto::Udp,
            4,
            "127.0.0.1".parse().unwrap(),
            8080,
            Keys::default(),
        )
    };
    // 5.4 - 6.12: the connected member stays in socks[] and is stepped over.
    // From 6.13 it leaves the group as it connects (udp_lib_hash4), and the
    // three left are a plain group (seen on 6.18.44).
    assert!(Plan::new(
        &crate::lookup::Host::spec_group(Profile::named("6.18").unwrap(), &spec).unwrap()
    )
    .is_ok());
    let e = Plan::new(
        &crate::lookup::Host::spec_group(Profile::named("6.12").unwrap(), &spec).unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(e, RecoverError::Connected { listener: 2, .. }),
        "{e}"
    );
}

#[test]
fn packets_for_another_group_are_refused() {
    let g = group("6.18", Proto::Tcp, 4, "127.0.0.1", 0);
    let t = Tuple::v4(
        Ipv4Addr::new(10, 0, 0, 2),
        1,
        Ipv4Addr::new(127, 0, 0, 2),
        8080,
    );
    let e = observe(&g, &t, 0).unwrap_err();
    assert!(e.to_string().contains("does not reach the group"), "{e}");
}

/// tests/fixtures/vectors/ipv4-hash.jsonl: hashes and indices computed
/// by independent Python and C code from kernel-history.md §1–§3. Each
/// vector's indices for 200, 1000 and 32768 members, as observations of
/// three groups sharing the key, must be satisfied by the vector's
/// initval, in both TCP forms.
#[test]
fn independent_vectors_are_satisfied_by_their_initval() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/vectors/ipv4-hash.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()).step_by(10) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let iv = crate::tuple::parse_hex32(v["initval"].as_str().unwrap()).unwrap();
        let laddr: IpAddr = v["laddr"].as_str().unwrap().parse().unwrap();
        let lport = v["lport"].as_u64().unwrap() as u16;
        let t = Tuple {
            saddr: v["faddr"].as_str().unwrap().parse().unwrap(),
            sport: v["fport"].as_u64().unwrap() as u16,
            daddr: laddr,
            dport: lport,
        };
        for (kernel, key) in [("6.12", "index_classic"), ("6.18", "index_lport_plus")] {
            let mut plan: Option<Plan> = None;
            for n in [200u32, 1000, 32768] {
                let spec = GroupSpec::new(Proto::Tcp, n, laddr, lport, Keys::default());
                let g = crate::lookup::Host::spec_group(Profile::named(kernel).unwrap(), &spec)
                    .unwrap();
                let gi = match &mut plan {
                    None => {
                        plan = Some(Plan::new(&g).unwrap());
                        0
                    }
                    Some(p) => p.add_group(&g).unwrap(),
                };
                let want = v[key][n.to_string()].as_u64().unwrap() as u32;
                plan.as_mut().unwrap().add(gi, &t, want).unwrap();
            }
            let plan = plan.unwrap();
            let f = every_isa(&plan, window(iv, 1 << 12));
            assert!(f.values.contains(&iv), "{kernel} {line}: {:?}", f.values);
            assert_eq!(plan.verify(&[iv]), vec![None]);
            checked += 1;
        }
    }
    assert_eq!(checked, 100);
}

#[test]
fn expected_false_matches_and_more_needed() {
    let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", 1);
    let ts = flows(&mut Xorshift32::new(21), 10, Ipv4Addr::LOCALHOST);
    let plan = plan_from(&g, &ts);
    let e = plan.expected_false_matches();
    // Each band of 8 is 2^29 or 2^29 + 1 wide: 2^32 · 8^-10 = 2^2, a hair more.
    assert!((4.0..4.0001).contains(&e), "{e}");
    // 4 · 8^-k < 0.001 needs k = 4 (8^4 = 4096).
    assert_eq!(plan.more_needed(0.001), Some(4));
    let one = group("6.18", Proto::Tcp, 1, "127.0.0.1", 1);
    let mut p1 = Plan::new(&one).unwrap();
    assert_eq!(p1.add(0, &ts[0], 0).unwrap(), Added::Uninformative);
    assert_eq!(p1.expected_false_matches(), SPACE as f64);
    assert_eq!(p1.more_needed(0.001), None);
}
