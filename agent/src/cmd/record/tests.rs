//! `record`'s unit tests: the options and the plan, without a kernel.

use std::time::UNIX_EPOCH;

use clap::Parser;

use super::*;
use crate::{Cli, Command};

fn args(argv: &str) -> RecordArgs {
    let argv = ["reuseport-agent", "record"]
        .into_iter()
        .chain(argv.split_whitespace());
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Record(a) => a,
        _ => unreachable!("parsed a record command line"),
    }
}

fn planned(argv: &str) -> Result<Plan, RecordError> {
    plan(&args(argv), &[0, 1])
}

fn refusal(argv: &str) -> String {
    planned(argv).unwrap_err().to_string()
}

#[test]
fn defaults_plan_a_loopback_group_with_16_generated_clients() {
    let p = planned("--proto tcp --listeners 8").unwrap();
    assert_eq!(p.setup.bind, "127.0.0.1".parse::<IpAddr>().unwrap());
    assert_eq!(p.dest, p.setup.bind);
    assert_eq!(p.setup.port, 0);
    assert_eq!(p.pairs.clients().len(), 16);
    assert_eq!(p.pairs.len(), 16 * 10_000);
    assert_eq!((p.count, p.sample), (1000, 1));
    assert_eq!(p.duration, Duration::from_secs(30));
    assert!(p.pin_cpus.is_empty() && p.netns_addrs.is_empty());
}

#[test]
fn wildcard_groups_are_reached_through_loopback() {
    assert_eq!(
        planned("--proto udp --listeners 2 --bind 0.0.0.0")
            .unwrap()
            .dest
            .to_string(),
        "127.0.0.1"
    );
    let p = planned("--proto tcp --listeners 2 --bind ::").unwrap();
    assert_eq!(p.dest.to_string(), "::1");
    assert_eq!(p.pairs.clients(), &["::1".parse::<IpAddr>().unwrap()]);
    let p = planned("--proto tcp --listeners 2 --bind :: --client 127.0.0.5").unwrap();
    assert_eq!(
        p.dest.to_string(),
        "127.0.0.1",
        "IPv4 clients reach a dual-stack group"
    );
}

#[test]
fn the_private_namespace_gets_every_address_lo_lacks() {
    let p = planned("--proto tcp --listeners 2 --bind fd01::1 --netns --clients 3").unwrap();
    assert_eq!(p.netns_addrs.len(), 4);
    assert_eq!(p.netns_addrs[0].to_string(), "fd01::1");
    assert!(p.netns_addrs[1..]
        .iter()
        .all(|a| a.to_string().starts_with("fd00::")));
    let p =
        planned("--proto tcp --listeners 2 --netns --client 127.0.0.9 --client 10.1.1.1").unwrap();
    assert_eq!(p.netns_addrs, vec!["10.1.1.1".parse::<IpAddr>().unwrap()]);
}

#[test]
fn incoming_cpu_all_pins_listeners_round_robin() {
    let p = planned("--proto tcp --listeners 5 --incoming-cpu-all --pin-cpu").unwrap();
    let cpus: Vec<u32> = p.setup.pins.iter().map(|p| p.cpu).collect();
    assert_eq!(cpus, vec![0, 1, 0, 1, 0]);
    assert_eq!(p.pin_cpus, vec![0, 1]);
}

#[test]
fn impossible_options_are_refused_with_the_fix() {
    assert!(refusal("--proto tcp --listeners 0").contains("at least one listener"));
    assert!(refusal("--proto tcp --listeners 4 --closed 9")
        .contains("has 4 listener(s), numbered from 0"));
    assert!(refusal("--proto tcp --listeners 4 --closed 1,1").contains("twice"));
    assert!(refusal("--proto tcp --listeners 2 --closed 0,1").contains("leave at least one"));
    assert!(refusal("--proto udp --listeners 2 --incoming-cpu 2=0")
        .contains("--incoming-cpu names listener 2"));
    assert!(refusal("--proto tcp --listeners 2 --bpf payload-mod:2").contains("TCP_FASTOPEN"));
    assert!(refusal("--proto udp --listeners 2 --tcp-migrate-req").contains("TCP listeners only"));
    assert!(refusal("--proto tcp --listeners 2 --duration 0").contains("positive"));
    assert!(refusal("--proto tcp --listeners 2 --duration 1e300").contains("positive"));
    assert!(refusal("--proto tcp --listeners 2 --bind ::1 --clients 5").contains("--netns"));
    assert!(refusal("--proto tcp --listeners 2 --bind ::1 --client 127.0.0.2").contains("IPv4"));
    assert!(refusal("--proto tcp --listeners 2 --client ::1")
        .contains("IPv6 client cannot reach an IPv4 group"));
    assert!(
        refusal("--proto tcp --listeners 2 --bind :: --v6only --client 127.0.0.2")
            .contains("--v6only")
    );
    assert!(
        refusal("--proto tcp --listeners 2 --clients 2 --sport-range 20000-20009 --count 21")
            .contains("give only 20")
    );
    assert!(refusal("--proto tcp --listeners 2 --clients 0").contains("at least one client"));
}

#[test]
fn bad_option_values_are_usage_errors() {
    for bad in [
        "--bpf payload-mod:0",
        "--bpf mod:3",
        "--sport-range 30000-20000",
        "--sport-range 0-10",
        "--sample 0",
        "--incoming-cpu 1",
        "--clients 3 --client 127.0.0.2",
        "--incoming-cpu 0=1 --incoming-cpu-all",
    ] {
        let argv = format!("reuseport-agent record --proto udp --listeners 2 {bad}");
        let e = Cli::try_parse_from(argv.split_whitespace()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{bad}");
    }
}

#[test]
fn the_model_gives_the_slots_after_closes() {
    let p = planned("--proto tcp --listeners 8 --closed 1").unwrap();
    let slots = model_slots(Profile::named("6.18").ok(), &p.setup, 8080).unwrap();
    assert_eq!(slots, vec![0, 7, 2, 3, 4, 5, 6]);
    let p = planned("--proto udp --listeners 4 --closed 0,3").unwrap();
    let slots = model_slots(Profile::named("6.18").ok(), &p.setup, 8080).unwrap();
    assert_eq!(slots, vec![2, 1]);
}

#[test]
fn rfc3339_formats_utc_dates() {
    let at = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
    assert_eq!(at(0), "1970-01-01T00:00:00Z");
    assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
}

/// Why: `record --proto udp --bind 224.0.0.1` (or 239.x, or a broadcast
/// address) was accepted, and its datagrams went to a multicast group
/// routed out of the real interface. Off loopback is refused unless the
/// run makes its own namespace.
#[test]
fn multicast_and_broadcast_binds_are_refused_without_netns() {
    for (argv, named) in [
        (
            "--proto udp --listeners 2 --bind 224.0.0.1",
            "--bind 224.0.0.1",
        ),
        (
            "--proto udp --listeners 2 --bind 239.1.2.3",
            "--bind 239.1.2.3",
        ),
        (
            "--proto udp --listeners 2 --bind 255.255.255.255",
            "--bind 255.255.255.255",
        ),
        ("--proto udp --listeners 2 --bind ff02::1", "--bind ff02::1"),
        (
            "--proto udp --listeners 2 --bind 0.0.0.0 --client 224.0.0.9",
            "--client 224.0.0.9",
        ),
    ] {
        let e = refusal(argv);
        assert!(e.starts_with(named) && e.contains("--netns"), "{argv}: {e}");
    }
    assert!(planned("--proto udp --listeners 2 --bind 224.0.0.1 --netns").is_ok());
}
