//! The spread over random boots ("What holds without the secret"):
//! each expectation is derived here from the counting argument it pins
//! (uniform placement, binomial counts), not read off the code's output.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::xorshift::Xorshift32;
use reuseport_model::batch::NONE;
use reuseport_model::reuseport::CpuPin;
use reuseport_model::spread::{
    boot_keys, by_listeners, SpreadError, SpreadRun, Verdict, LISTENER_SIZES, MAX_BOOTS,
};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, ReuseportGroup, Tuple};

fn lo() -> IpAddr {
    Ipv4Addr::new(127, 0, 0, 1).into()
}

fn spec(n: u32, bind: IpAddr) -> GroupSpec {
    GroupSpec::new(Proto::Tcp, n, bind, 8080, Keys::default())
}

fn group(kernel: &str, s: &GroupSpec) -> ReuseportGroup {
    ReuseportGroup::build(Profile::named(kernel).unwrap(), s).unwrap()
}

/// Why: these tests, the key-recovery unit tests and the benchmarks draw
/// their clients from one xorshift32 (benches/common/xorshift.rs) and rely
/// on its sequence. The values are xorshift32's published start from seed
/// 1 (Marsaglia, "Xorshift RNGs", 2003: shifts 13, 17, 5).
#[test]
fn xorshift32_from_seed_1_starts_270369_67634689_2647435461() {
    let mut r = Xorshift32::new(1);
    assert_eq!(
        [r.next(), r.next(), r.next()],
        [270369, 67634689, 2647435461]
    );
    // 0 is the generator's fixed point: a zero seed starts as seed 1.
    assert_eq!(Xorshift32::new(0).next(), 270369);
}

/// `n` distinct IPv4 clients of 127.0.0.1:8080 from xorshift32.
fn random_v4(n: usize, seed: u32) -> Vec<Tuple> {
    let mut rng = Xorshift32::new(seed | 1);
    (0..n)
        .map(|i| {
            Tuple::v4(
                Ipv4Addr::from(0x0a00_0000 | (rng.next() & 0x00ff_ffff)),
                32768 + (i % 28000) as u16,
                Ipv4Addr::new(127, 0, 0, 1),
                8080,
            )
        })
        .collect()
}

fn random_v6(n: usize) -> Vec<Tuple> {
    (0..n as u32)
        .map(|i| Tuple {
            saddr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, (i >> 16) as u16, i as u16).into(),
            sport: 40000 + (i % 20000) as u16,
            daddr: Ipv6Addr::LOCALHOST.into(),
            dport: 8080,
        })
        .collect()
}

/// The counts the model itself gives under one key set.
fn counts_under(g: &ReuseportGroup, tuples: &[Tuple], keys: Keys) -> Vec<u64> {
    let mut g = g.clone();
    g.set_keys(keys);
    let mut counts = vec![0u64; g.members().len()];
    for t in tuples {
        let l = g.select(t, 0).unwrap().listener.unwrap_or(NONE);
        counts[l as usize] += 1;
    }
    counts
}

/// Reproducibility is what lets a page show the same figures on every load:
/// one seed, one answer.
#[test]
fn same_seed_gives_the_same_spread() {
    let g = group("6.18", &spec(8, lo()));
    let tuples = random_v4(500, 7);
    let mut a = SpreadRun::new(g.clone(), &tuples, 42).unwrap();
    let mut b = SpreadRun::new(g, &tuples, 42).unwrap();
    a.step(100);
    b.step(60);
    b.step(40);
    assert_eq!(a.summary(), b.summary());
    assert_eq!(boot_keys(42, 17), boot_keys(42, 17));
}

/// A seed must change the draws, and every boot of a stream must get fresh
/// keys in all three words.
#[test]
fn different_seeds_draw_different_keys() {
    for boot in 0..200 {
        let (a, b) = (boot_keys(1, boot), boot_keys(2, boot));
        assert_ne!(a.v4, b.v4, "boot {boot}");
        assert_ne!(a.v6_outer, b.v6_outer, "boot {boot}");
        assert_ne!(a.v6_inner, b.v6_inner, "boot {boot}");
        assert_ne!(boot_keys(1, boot), boot_keys(1, boot + 1));
    }
    let g = group("6.18", &spec(8, lo()));
    let tuples = random_v4(500, 7);
    let mut a = SpreadRun::new(g.clone(), &tuples, 1).unwrap();
    let mut b = SpreadRun::new(g, &tuples, 2).unwrap();
    a.step(50);
    b.step(50);
    assert_ne!(a.summary(), b.summary());
}

/// Over random keys one connection is equally likely to reach any listener:
/// a chi-square test of the hits per listener against boots/n each
/// (7 degrees of freedom; 24.32 is the 0.999 quantile).
#[test]
fn one_tuple_lands_on_each_listener_about_boots_over_n() {
    for kernel in ["6.18", "6.12", "4.4"] {
        let n = 8u32;
        let boots = 8000u32;
        let g = group(kernel, &spec(n, lo()));
        let mut run = SpreadRun::new(g, &random_v4(1, 3), 9).unwrap();
        assert_eq!(run.step(boots), boots);
        let s = run.summary();
        assert_eq!(s.per_listener.len(), n as usize);
        let expected = boots as f64 / n as f64;
        let chi2: f64 = s
            .per_listener
            .iter()
            .map(|b| {
                let hits = b.band.mean * boots as f64;
                (hits - expected).powi(2) / expected
            })
            .sum();
        assert!(chi2 < 24.32, "{kernel}: chi-square {chi2} over 7 dof");
        let total_hits: f64 = s.per_listener.iter().map(|b| b.band.mean).sum();
        assert!(
            (total_hits - 1.0).abs() < 1e-9,
            "the tuple lands once per boot"
        );
    }
}

/// One connection fills exactly one of eight listeners in every boot: the
/// other seven are empty, max/min is unbounded and that one holds it all.
#[test]
fn one_tuple_and_eight_listeners_leave_exactly_seven_eighths_empty() {
    let g = group("6.18", &spec(8, lo()));
    let mut run = SpreadRun::new(g, &random_v4(1, 5), 11).unwrap();
    run.step(500);
    let s = run.summary();
    for v in [s.empty_share.mean, s.empty_share.p5, s.empty_share.p95] {
        assert_eq!(v, 7.0 / 8.0);
    }
    assert_eq!(s.max_min.unbounded, 1.0);
    assert_eq!(s.max_min.p5, None);
    assert_eq!(s.max_min.mean, None);
    assert_eq!(s.max_share.p5, 1.0);
    assert_eq!(s.band.p50, 0, "seven of eight listener-boots are empty");
    assert_eq!(s.band.p95, 1);
}

/// Identical connections hash alike, so one listener takes all of them in
/// every boot: max share 1 and Jain (N)²/(n·N²) = 1/n.
#[test]
fn identical_tuples_put_everything_on_one_listener() {
    let n = 16;
    let g = group("6.18", &spec(n, lo()));
    let tuples = vec![random_v4(1, 99)[0]; 1000];
    let mut run = SpreadRun::new(g, &tuples, 5).unwrap();
    run.step(300);
    let s = run.summary();
    assert_eq!(s.max_share.p5, 1.0);
    assert_eq!(s.max_share.mean, 1.0);
    assert!((s.jain.p95 - 1.0 / n as f64).abs() < 1e-12);
    assert!((s.jain.p5 - 1.0 / n as f64).abs() < 1e-12);
    assert_eq!(s.empty_share.p5, (n - 1) as f64 / n as f64);
    // 15 of 16 listener-boots (93.75%) are empty: the median count is 0,
    // the 95th percentile already the full 1000.
    assert_eq!(s.band.p50, 0);
    assert_eq!(s.band.p95, 1000);
}

/// Many distinct connections make each listener's count Binomial(N, 1/n):
/// within 5 standard deviations of N/n, which bounds max/min above by
/// (μ+5σ)/(μ−5σ) and Jain = 1/(1+CV²) below by 1/(1+25σ²/μ²).
#[test]
fn many_distinct_tuples_spread_close_to_even() {
    let n = 8u32;
    let big_n = 100_000usize;
    let g = group("6.18", &spec(n, lo()));
    let mut run = SpreadRun::new(g, &random_v4(big_n, 12345), 77).unwrap();
    assert!(run.vectorised());
    run.step(30);
    let s = run.summary();
    let p = 1.0 / n as f64;
    let mu = big_n as f64 * p;
    let sigma = (big_n as f64 * p * (1.0 - p)).sqrt();
    let max_min_bound = (mu + 5.0 * sigma) / (mu - 5.0 * sigma);
    let jain_bound = 1.0 / (1.0 + 25.0 * sigma * sigma / (mu * mu));
    let p95 = s.max_min.p95.expect("no listener is empty");
    assert!(
        p95 > 1.0 && p95 < max_min_bound,
        "max/min p95 {p95} vs {max_min_bound}"
    );
    assert!(
        s.jain.mean > jain_bound && s.jain.mean < 1.0,
        "Jain {} vs {jain_bound}",
        s.jain.mean
    );
    assert_eq!(s.empty_share.p95, 0.0);
    assert!(
        (s.band.mean - mu).abs() < 1e-9,
        "the counts add up to N every boot"
    );
    assert!((s.band.p5 as f64) > mu - 5.0 * sigma && (s.band.p95 as f64) < mu + 5.0 * sigma);
    assert_eq!(s.unrouted, 0);
}

/// Counts the model gives under keys the run never drew are, by
/// construction, what hashing alone produces: compare must call nearly all
/// of them WithinHashing (the 95th/5th percentile rules reject at most about
/// 10% of them; 40 key sets, at least 32 must pass).
#[test]
fn compare_says_within_hashing_for_counts_the_model_draws() {
    let g = group("6.18", &spec(8, lo()));
    let tuples = random_v4(1000, 21);
    let mut run = SpreadRun::new(g.clone(), &tuples, 3).unwrap();
    run.step(2000);
    let mut within = 0;
    for k in 0..40u32 {
        let keys = Keys {
            v4: k.wrapping_mul(0x9e37_79b9) ^ 0xdead_beef,
            ..Keys::default()
        };
        let c = run.compare(&counts_under(&g, &tuples, keys)).unwrap();
        assert_eq!(c.observed_total, 1000);
        if matches!(c.verdict, Verdict::WithinHashing { .. }) {
            within += 1;
        }
    }
    assert!(within >= 32, "{within} of 40 within hashing");
}

/// One listener holding ~93% of the connections is far beyond anything a
/// hash over 1070 distinct connections gives.
#[test]
fn compare_says_beyond_hashing_for_a_grossly_skewed_observation() {
    let g = group("6.18", &spec(8, lo()));
    let mut run = SpreadRun::new(g, &random_v4(1070, 4), 8).unwrap();
    run.step(1000);
    let c = run.compare(&[1000, 10, 10, 10, 10, 10, 10, 10]).unwrap();
    assert_eq!(c.verdict, Verdict::BeyondHashing { percentile: 100.0 });
    assert_eq!(c.max_min_percentile, 100.0);
    assert_eq!(c.jain_percentile, 0.0);
    assert_eq!(c.observed.max_min, Some(100.0));
}

/// compare needs one count per listening member and at least one boot.
#[test]
fn compare_refuses_a_wrong_number_of_counts_or_no_boots() {
    let g = group("6.18", &spec(8, lo()));
    let mut run = SpreadRun::new(g, &random_v4(100, 4), 8).unwrap();
    assert_eq!(run.compare(&[1; 8]), Err(SpreadError::NoBoots));
    run.step(10);
    assert_eq!(
        run.compare(&[1; 7]),
        Err(SpreadError::ObservedLength {
            given: 7,
            listeners: 8
        })
    );
}

/// The vectorised loop and one select per tuple are the same selection, so
/// the spread must be identical, for specific and wildcard groups and for
/// both IPv4 hash forms.
#[test]
fn batch_and_one_at_a_time_give_the_same_spread() {
    let tuples = random_v4(2000, 31);
    for kernel in ["6.18", "6.12", "5.10"] {
        for bind in [lo(), Ipv4Addr::UNSPECIFIED.into()] {
            let g = group(kernel, &spec(12, bind));
            let mut batch = SpreadRun::new(g.clone(), &tuples, 6).unwrap();
            let mut one = SpreadRun::new(g, &tuples, 6).unwrap().one_at_a_time();
            assert!(batch.vectorised(), "{kernel} {bind}");
            assert!(!one.vectorised());
            batch.step(40);
            one.step(40);
            assert_eq!(batch.summary(), one.summary(), "{kernel} {bind}");
        }
    }
}

/// Closed members are never selected; counting them would make every boot
/// unbounded. They are left out, and the rest stay exchangeable.
#[test]
fn closed_members_are_left_out_of_the_counts() {
    let mut s = spec(8, lo());
    s.closed = vec![3, 5];
    let g = group("6.18", &s);
    let mut run = SpreadRun::new(g, &random_v4(3000, 8), 2).unwrap();
    run.step(50);
    let sum = run.summary();
    assert_eq!(sum.listeners, 6);
    let ids: Vec<u32> = sum.per_listener.iter().map(|b| b.listener).collect();
    assert_eq!(ids, [0, 1, 2, 4, 6, 7]);
    assert!(sum.exchangeable);
    assert_eq!(sum.max_min.unbounded, 0.0);
}

/// From 6.2 a member with SO_INCOMING_CPU equal to the receiving CPU wins the
/// ring scan (kernel-history.md §3.4): pinned to CPU 0, listener 2 takes
/// every packet received on CPU 0, and the members are no longer alike.
/// On CPU 1 nobody matches and the scan returns its first slot again.
#[test]
fn incoming_cpu_pin_takes_everything_on_its_cpu_and_breaks_exchangeability() {
    let mut s = spec(4, lo());
    s.incoming_cpu = vec![CpuPin {
        listener: 2,
        cpu: 0,
    }];
    let g = group("6.18", &s);
    let tuples = random_v4(400, 17);
    let mut run = SpreadRun::new(g.clone(), &tuples, 2).unwrap();
    run.step(20);
    let sum = run.summary();
    assert!(!sum.exchangeable);
    assert_eq!(sum.max_share.p5, 1.0);
    assert_eq!(sum.per_listener[2].band.p5, 400);
    assert_eq!(sum.per_listener[0].band.p95, 0);

    let mut other = SpreadRun::new(g, &tuples, 2).unwrap().on_cpu(1);
    other.step(20);
    assert_eq!(other.summary().empty_share.p95, 0.0);
}

/// IPv6 has no batch loop; the one-at-a-time path must still spread distinct
/// connections over every listener.
#[test]
fn ipv6_tuples_go_one_at_a_time() {
    let s = GroupSpec::new(
        Proto::Udp,
        4,
        Ipv6Addr::LOCALHOST.into(),
        8080,
        Keys::default(),
    );
    let g = group("6.18", &s);
    let mut run = SpreadRun::new(g, &random_v6(2000), 4).unwrap();
    assert!(!run.vectorised());
    run.step(20);
    let sum = run.summary();
    assert_eq!(sum.empty_share.p95, 0.0);
    assert!((sum.band.mean - 500.0).abs() < 1e-9);
}

/// Tuples for another address or port never reach a listener, whatever the
/// keys: they are counted apart and left out of the per-listener counts.
#[test]
fn unaddressed_tuples_are_counted_as_unrouted() {
    let g = group("6.18", &spec(4, lo()));
    let mut tuples = random_v4(100, 1);
    for t in &mut tuples[..30] {
        t.dport = 9090;
    }
    let mut run = SpreadRun::new(g, &tuples, 1).unwrap();
    run.step(10);
    let s = run.summary();
    assert_eq!(s.tuples, 100);
    assert_eq!(s.unrouted, 30);
    assert!((s.band.mean - 70.0 / 4.0).abs() < 1e-9);
}

/// Runs are capped so that the per-boot figures stay bounded in memory.
#[test]
fn step_stops_at_max_boots() {
    let g = group("6.18", &spec(2, lo()));
    let mut run = SpreadRun::new(g, &random_v4(1, 1), 1).unwrap();
    assert_eq!(run.step(MAX_BOOTS - 5), MAX_BOOTS - 5);
    assert_eq!(run.step(100), 5);
    assert_eq!(run.step(100), 0);
    assert_eq!(run.done(), MAX_BOOTS);
}

/// A group with nothing listening, or no tuples, has no spread.
#[test]
fn empty_inputs_are_refused() {
    let g = group("6.18", &spec(2, lo()));
    assert_eq!(
        SpreadRun::new(g.clone(), &[], 1).err(),
        Some(SpreadError::NoTuples)
    );
    let mut s = spec(2, lo());
    s.closed = vec![0, 1];
    let closed = group("6.18", &s);
    assert_eq!(
        SpreadRun::new(closed, &random_v4(3, 1), 1).err(),
        Some(SpreadError::NoListeners)
    );
}

/// With T distinct tuples placed uniformly, a listener is empty with
/// probability (1 − 1/n)^T, so the mean empty share of each row must be
/// close to it; rows come one per size, ascending, the user's marked.
#[test]
fn by_listeners_follows_the_expected_empty_share() {
    let t = 200usize;
    let tuples = random_v4(t, 41);
    let rows = by_listeners(
        Profile::named("6.18").unwrap(),
        &spec(10, lo()),
        &tuples,
        5,
        400,
    )
    .unwrap();
    let sizes: Vec<u32> = rows.iter().map(|r| r.listeners).collect();
    let mut want: Vec<u32> = LISTENER_SIZES.to_vec();
    want.push(10);
    want.sort();
    assert_eq!(sizes, want);
    assert_eq!(
        rows.iter()
            .filter(|r| r.yours)
            .map(|r| r.listeners)
            .collect::<Vec<_>>(),
        [10]
    );
    for r in &rows {
        let n = r.listeners as f64;
        let expected = (1.0 - 1.0 / n).powi(t as i32);
        assert!(
            (r.empty_share.mean - expected).abs() < 0.02,
            "n {n}: {} vs {expected}",
            r.empty_share.mean
        );
        assert_eq!(r.boots, 400);
    }
}

/// The wire shape the worker and the sentence tables rely on: camelCase
/// fields, unbounded max/min as null, the verdict tagged by `kind`.
#[test]
fn spread_and_comparison_serialize_with_camel_case_and_a_kind_tag() {
    let g = group("6.18", &spec(8, lo()));
    let mut run = SpreadRun::new(g, &random_v4(4, 1), 1).unwrap();
    run.step(10);
    let v = serde_json::to_value(run.summary()).unwrap();
    for key in [
        "boots",
        "tuples",
        "listeners",
        "unrouted",
        "maxMin",
        "jain",
        "emptyShare",
        "maxShare",
        "exchangeable",
        "band",
        "perListener",
    ] {
        assert!(v.get(key).is_some(), "{key} missing in {v}");
    }
    assert!(
        v["maxMin"]["p95"].is_null(),
        "4 tuples over 8 listeners leave some empty"
    );
    assert_eq!(v["maxMin"]["unbounded"], 1.0);
    assert!(v["perListener"][0].get("listener").is_some());
    assert!(v["perListener"][0].get("p95").is_some());
    let c = run.compare(&[4, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    let v = serde_json::to_value(&c).unwrap();
    assert!(v["verdict"]["kind"] == "within_hashing" || v["verdict"]["kind"] == "beyond_hashing");
    assert!(v["verdict"].get("percentile").is_some());
    assert!(v.get("maxMinPercentile").is_some() && v.get("jainPercentile").is_some());
}

/// The worker's TypeScript types come from these records; each must export
/// (flattened bands and nullable ratios included). Only the verdict is a
/// message the sentence tables say, so only it goes to `message/`.
#[cfg(feature = "ts")]
#[test]
fn spread_records_export_to_typescript() {
    use reuseport_model::spread::{Comparison, ListenerRow, Spread};
    use ts_rs::{Config, TS};
    let dir = std::env::temp_dir().join("reuseport-ts-check-spread");
    let _ = std::fs::remove_dir_all(&dir);
    let cfg = Config::new().with_large_int("number").with_out_dir(&dir);
    Spread::export_all(&cfg).unwrap();
    Comparison::export_all(&cfg).unwrap();
    ListenerRow::export_all(&cfg).unwrap();
    let band = std::fs::read_to_string(dir.join("ListenerBand.ts")).unwrap();
    assert!(
        band.contains("listener: number") && band.contains("p95"),
        "{band}"
    );
    assert!(dir.join("message/Verdict.ts").exists());
    assert!(!dir.join("message/Spread.ts").exists());
}
