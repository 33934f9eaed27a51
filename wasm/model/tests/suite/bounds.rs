//! Input bounds of group building (issue: `predict --kernel 4.4 --listeners
//! 1000000` took 54 s, and 4294967295 never ended).

use std::net::{IpAddr, Ipv4Addr};

use reuseport_model::error::SetupError;
use reuseport_model::reuseport::MAX_LISTENERS;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup};

fn spec(n: u32, closed: Vec<u32>) -> GroupSpec {
    let bind: IpAddr = Ipv4Addr::new(10, 0, 0, 1).into();
    GroupSpec {
        closed,
        ..GroupSpec::new(
            Proto::Tcp,
            n,
            bind,
            8080,
            Keys {
                v4: 0x2f39_23d9,
                ..Keys::default()
            },
        )
    }
}

fn p44() -> &'static Profile {
    Profile::resolve("4.4", None).unwrap()
}

/// Building the 3.9–4.5 chain at once leaves it exactly as joining one by one
/// does (each `listen()` puts its socket at the head), also with closes after.
#[test]
fn a_chain_built_at_once_equals_one_join_at_a_time() {
    for (n, closed) in [(1, vec![]), (7, vec![2, 6]), (40, vec![0, 39, 17])] {
        let built = ReuseportGroup::build(p44(), &spec(n, closed.clone())).unwrap();
        let mut one = ReuseportGroup::build_empty(p44(), &spec(n, vec![]));
        for _ in 0..n {
            one.join().unwrap();
        }
        for &l in &closed {
            one.close(l).unwrap();
        }
        assert_eq!(
            built.chain(),
            one.chain(),
            "{n} listeners, closed {closed:?}"
        );
        // Head first: the last to listen is at the head.
        let expect: Vec<u32> = (0..n).rev().filter(|l| !closed.contains(l)).collect();
        assert_eq!(built.chain().unwrap(), &expect[..]);
    }
}

/// A chain of a million members is built (it was quadratic); one past the
/// bound is refused with the bound named, before any work.
#[test]
fn a_million_member_chain_builds_and_past_the_bound_is_refused() {
    let g = ReuseportGroup::build(p44(), &spec(1_000_000, vec![])).unwrap();
    assert_eq!(g.chain().unwrap().len(), 1_000_000);
    assert_eq!(g.chain().unwrap()[0], 999_999);
    for n in [MAX_LISTENERS + 1, u32::MAX] {
        match ReuseportGroup::build(p44(), &spec(n, vec![])) {
            Err(SetupError::TooManyListeners { given, max }) => {
                assert_eq!((given, max), (n, 1 << 20))
            }
            other => panic!("{n} listeners: {:?}", other.map(|_| ())),
        }
    }
}

/// Large layouts (issue: 32,768 sockets took 8.3 s, 100,000 took over 100 s):
/// the bind bucket is indexed by address and by what the conflict rules
/// read, so these build at once; the answers are the same as for a small
/// layout of the same shape.
#[test]
fn a_full_group_on_one_address_and_many_addresses_on_one_port_build() {
    use reuseport_model::lookup::Layout;
    let sock = |addr: String, uid: u32| {
        format!(
            r#"{{"family":"inet","proto":"tcp","addr":"{addr}","port":8080,"reuseport":true,"uid":{uid}}}"#
        )
    };
    let mut socks: Vec<String> = (0..32_768).map(|_| sock("127.0.0.1".into(), 0)).collect();
    // A different owner on the same address: refused, naming the first socket.
    socks.push(sock("127.0.0.1".into(), 1000));
    socks.extend((0..20_000u32).map(|i| sock(format!("127.1.{}.{}", i >> 8, (i & 255) | 1), 0)));
    let layout: Layout =
        serde_json::from_str(&format!(r#"{{"sockets":[{}]}}"#, socks.join(","))).unwrap();
    let host = replay_layout(Profile::named("6.18").unwrap(), &layout).unwrap();
    let results = host.results();
    assert_eq!(host.group_members(0).unwrap().len(), 32_768);
    let refused = serde_json::to_value(&results[32_768]).unwrap();
    assert_eq!(refused["bind"]["with"], 0, "{refused}");
    assert_eq!(refused["bind"]["errno"], "EADDRINUSE", "{refused}");
    assert!(results[32_769..]
        .iter()
        .all(|r| serde_json::to_value(r).unwrap()["bind"]["errno"].is_null()));
}

/// The explain record of a million-member chain is bounded (issue: one line
/// on the lookup page at kernel 4.4 with 1,000,000 listeners made a 197 MB
/// record and froze the tab): the first EXPLAIN_STEPS steps, then only the
/// steps that took the lead, so the chosen listener is still the last taken
/// one, and `omitted` makes up the rest of the chain.
#[test]
fn a_million_member_chain_explains_with_a_bounded_record() {
    use reuseport_model::explain::{Pick, EXPLAIN_STEPS};
    let n = 1_000_000u32;
    let g = ReuseportGroup::build(p44(), &spec(n, vec![])).unwrap();
    for sport in [40_000u16, 40_001, 51_234] {
        let t = reuseport_model::Tuple::v4(
            Ipv4Addr::new(10, 9, 8, 7),
            sport,
            Ipv4Addr::new(10, 0, 0, 1),
            8080,
        );
        let chosen = g.select(&t, 0).unwrap().listener;
        let e = g.explain(&t, 0).unwrap();
        let Pick::Reservoir { steps, omitted, .. } = &e.pick else {
            panic!("4.4 selects by reservoir scan")
        };
        assert_eq!(steps.len() as u32 + omitted, n);
        // All listeners score alike, so each one past the first is taken with
        // probability 1/matches: about ln(n) = 14 takes, far under 100.
        let past: Vec<_> = steps
            .iter()
            .filter(|s| s.position >= EXPLAIN_STEPS)
            .collect();
        assert!(
            past.iter().all(|s| s.taken) && past.len() < 100,
            "{} steps past the bound",
            past.len()
        );
        assert!(steps[..EXPLAIN_STEPS as usize]
            .iter()
            .enumerate()
            .all(|(i, s)| s.position == i as u32));
        assert_eq!(
            steps.iter().rev().find(|s| s.taken).map(|s| s.listener),
            chosen
        );
        assert_eq!(e.listener, chosen);
    }
}

/// The host a socket-list layout stands for: its calls, replayed (the
/// reader's conversion, then the one replay).
fn replay_layout(
    p: &'static reuseport_model::Profile,
    l: &reuseport_model::lookup::Layout,
) -> Result<reuseport_model::lookup::Host, reuseport_model::lookup::LayoutError> {
    reuseport_model::lookup::Host::run(p, &reuseport_model::lookup::CallLog::from_layout(l)?)
}
