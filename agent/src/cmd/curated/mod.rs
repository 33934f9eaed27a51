//! The curated recordings behind `public/traces/`: one list of what is
//! recorded, with which options, and what each shows. `verify` checks the
//! groups of [`LayoutName`]; the traces here record the same groups
//! ([`LayoutName::group`]) and a few that only a recording can show (a
//! program, SO_INCOMING_CPU, IPv6). `scripts/record-traces.sh` reads the
//! list from `reuseport-agent curated`, records each entry and writes its
//! manifest entry; a test checks the checked-in manifest against it. The
//! gallery's scenarios are listed by the model's
//! [`reuseport_model::sim::Curated`] (`reuseport-agent scenario --list`).

use std::io::{self, Write};

use serde::Serialize;

use crate::cmd::predict::ProtoArg;
use crate::cmd::record::{Bpf, RecordArgs};
use crate::cmd::verify::LayoutName;

/// One curated recording.
#[derive(Debug, Clone, Serialize)]
pub struct Recording {
    /// `trace` (a `record` run) or `bench`.
    pub kind: &'static str,
    /// The file in `public/traces/`.
    pub file: String,
    /// What it shows, for the manifest and the site.
    pub shows: &'static str,
    /// The agent's arguments that make it (without `--output`).
    pub args: Vec<String>,
}

/// A curated `record` run: its file stem, what it shows, its options.
pub struct CuratedTrace {
    /// File stem (`tcp-v4-specific-8`).
    pub name: &'static str,
    /// What it shows.
    pub shows: &'static str,
    /// The options.
    pub args: RecordArgs,
}

/// The curated traces, in the manifest's order.
pub fn traces() -> Vec<CuratedTrace> {
    let driven = |group: RecordArgs, clients, count, seed| RecordArgs {
        clients: Some(clients),
        count,
        seed,
        ..group
    };
    let t = |name, shows, args| CuratedTrace { name, shows, args };
    vec![
        t(
            "tcp-v4-specific-8",
            "TCP group of 8 on 127.0.0.1: the hash spreads 1000 connections from 64 clients",
            driven(LayoutName::TcpSpecific.group(), 64, 1000, 1),
        ),
        t(
            "tcp-v4-wildcard-8",
            "TCP group of 8 on 0.0.0.0: from 5.0 the hash sees local address 0",
            driven(LayoutName::TcpWildcard.group(), 64, 1000, 2),
        ),
        t(
            "udp-v4-specific-8",
            "UDP group of 8 on 127.0.0.1: UDP keeps lport inside the hash",
            driven(LayoutName::Udp.group(), 64, 1000, 3),
        ),
        t(
            "tcp-v4-closed-1-5",
            "TCP group of 8 with listeners 1 then 5 closed before traffic: the last member moves into each hole",
            driven(LayoutName::Closed.group(), 64, 1000, 4),
        ),
        t(
            "tcp-v4-130",
            "TCP group of 130: past 128 members socks[] doubles to 256",
            RecordArgs {
                sample: 3,
                ..driven(LayoutName::Large.group(), 64, 3000, 5)
            },
        ),
        t(
            "tcp-v4-incoming-cpu",
            "TCP group of 4 with SO_INCOMING_CPU on every listener and the client pinned round-robin: from 6.2 each connection lands on a listener of its CPU",
            RecordArgs {
                incoming_cpu_all: true,
                pin_cpu: true,
                ..driven(RecordArgs::new(ProtoArg::Tcp, 4), 32, 400, 6)
            },
        ),
        t(
            "udp-v4-bpf-cpu",
            "UDP group of 64 with a classic BPF program returning the CPU: the program, not the hash, chooses",
            RecordArgs {
                bpf: Some(Bpf::Cpu),
                pin_cpu: true,
                ..driven(RecordArgs::new(ProtoArg::Udp, 64), 32, 400, 7)
            },
        ),
        t(
            "udp-v4-bpf-payload-mod-4",
            "UDP group of 8 with a program returning payload mod 4: datagram k lands on listener k mod 4",
            RecordArgs {
                bpf: Some(Bpf::PayloadMod(4)),
                ..driven(RecordArgs::new(ProtoArg::Udp, 8), 32, 400, 8)
            },
        ),
        t(
            "tcp-v6-wildcard-netns",
            "TCP group of 8 on [::] in a private network namespace, clients from fd00::/112",
            RecordArgs {
                bind: std::net::Ipv6Addr::UNSPECIFIED.into(),
                netns: true,
                ..driven(RecordArgs::new(ProtoArg::Tcp, 8), 64, 1000, 9)
            },
        ),
    ]
}

/// The benchmarks: file, what it shows, `bench` arguments.
const BENCHES: [(&str, &str, &[&str]); 2] = [
    (
        "bench-fork-vs-reuseport.json",
        "The fork-against-reuseport article's benchmark on this machine: workers sharing one listener after fork() against one SO_REUSEPORT listener each; times and per-worker accepts",
        &["bench", "--workers", "4", "--clients", "4", "--connections", "5000", "--json"],
    ),
    (
        "bench-fork-vs-reuseport-epoll.json",
        "The same benchmark with epoll workers: in fork mode every worker waits in epoll on the one shared listener; per-worker accepts show the skew",
        &[
            "bench",
            "--workers",
            "4",
            "--clients",
            "4",
            "--connections",
            "5000",
            "--epoll",
            "--json",
        ],
    ),
];

/// Every curated recording: the traces, then the benchmarks.
pub fn recordings() -> Vec<Recording> {
    let traces = traces().into_iter().map(|t| Recording {
        kind: "trace",
        file: format!("{}.json", t.name),
        shows: t.shows,
        args: t.args.argv(),
    });
    let benches = BENCHES.iter().map(|&(file, shows, args)| Recording {
        kind: "bench",
        file: file.into(),
        shows,
        args: args.iter().map(|a| a.to_string()).collect(),
    });
    traces.chain(benches).collect()
}

/// `reuseport-agent curated`: the list as JSON Lines.
pub fn run(mut out: impl Write) -> io::Result<()> {
    for r in recordings() {
        serde_json::to_writer(&mut out, &r)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The checked-in manifest describes the list: every curated recording
    /// has its entry, saying the same and made by the same options (an
    /// entry's command is parsed, so an option written in another order or
    /// at its default still matches).
    #[test]
    fn the_manifest_holds_every_curated_recording_as_listed() {
        let text = include_str!("../../../../public/traces/manifest.json");
        let manifest: serde_json::Value = serde_json::from_str(text).unwrap();
        let entries = manifest["traces"].as_array().unwrap();
        for r in recordings() {
            let e = entries
                .iter()
                .find(|e| e["file"] == r.file.as_str())
                .unwrap_or_else(|| panic!("{}: no manifest entry", r.file));
            assert_eq!(e["kind"], r.kind, "{}", r.file);
            assert_eq!(e["shows"], r.shows, "{}", r.file);
            let command = e["command"].as_str().unwrap();
            let words: Vec<&str> = command.split_whitespace().collect();
            assert_eq!(words[0], "reuseport-agent", "{command}");
            let parsed = crate::Cli::try_parse_from(&words).unwrap_or_else(|e| panic!("{e}"));
            let listed = crate::Cli::try_parse_from(
                std::iter::once("reuseport-agent").chain(r.args.iter().map(String::as_str)),
            )
            .unwrap();
            assert_eq!(
                format!("{:?}", parsed.command),
                format!("{:?}", listed.command),
                "{}",
                r.file
            );
        }
    }

    /// The traces that record a layout `verify` checks record that group.
    #[test]
    fn verify_layouts_and_their_traces_share_the_group() {
        let all = traces();
        let of = |name: &str| &all.iter().find(|t| t.name == name).unwrap().args;
        for (trace, layout) in [
            ("tcp-v4-specific-8", LayoutName::TcpSpecific),
            ("tcp-v4-wildcard-8", LayoutName::TcpWildcard),
            ("udp-v4-specific-8", LayoutName::Udp),
            ("tcp-v4-closed-1-5", LayoutName::Closed),
            ("tcp-v4-130", LayoutName::Large),
        ] {
            let (t, g) = (of(trace), layout.group());
            assert_eq!(
                (t.proto, t.listeners, t.bind, &t.closed),
                (g.proto, g.listeners, g.bind, &g.closed),
                "{trace}"
            );
        }
    }
}
