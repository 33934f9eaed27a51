//! `reuseport-agent scenario incoming-cpu --kernel K`: the scenario run
//! inside Debian's 5.10 and 6.1 kernels booted under QEMU (4 vCPUs, a
//! worker pinned to each with SO_INCOMING_CPU set to its CPU, the clients
//! pinned round robin).
//!
//! The kernel fact asserted: 5.10's `reuseport_select_sock` picks a
//! listener by the hash alone, so with four listeners about a quarter of
//! the connections land on the worker of the CPU that received them; 6.1
//! has b261eda84ec1 ("soreuseport: Fix socket selection for
//! SO_INCOMING_CPU", 6.2, backported to 6.1.y; net/core/sock_reuseport.c),
//! which prefers the listener whose SO_INCOMING_CPU is that CPU, so all of
//! them do.
//!
//! Needs QEMU, both kernel images in the cache (`npm run verify:kernels`
//! or `reuseport-agent verify --kernels 5.10,6.1` fetches them) and the
//! static guest agent (`scripts/kernels/guest-agent.sh` builds it). It is
//! ignored in a plain `cargo test` (so in `npm test`, which fetches only
//! 6.1); run with `-- --ignored`, it says SKIPPED when one is missing. It
//! boots two guests, one after the other: about a minute under TCG on two
//! host CPUs, bounded by `--boot-timeout`.

use std::path::{Path, PathBuf};
use std::process::Command;

use reuseport_agent::cmd::scenario::schema_problems;
use reuseport_agent::lab::is_static_x86_64_elf;
use serde_json::Value;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_reuseport-agent");
/// 8000 connections x 0.02: 160 per guest. At a true share of 1/4 the
/// 5.10 share has a standard deviation of about 3.4 points.
const SCALE: &str = "0.02";
const CONNECTIONS: u64 = 160;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Why the guests cannot be booted here, if they cannot.
fn missing(cache: &Path, agent: &Path) -> Option<String> {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("qemu-system-x86_64").is_file()));
    if !on_path {
        return Some("qemu-system-x86_64 is not installed (scripts/setup.sh installs it)".into());
    }
    for suite in ["bullseye", "bookworm"] {
        let meta = cache.join(suite).join("image.json");
        let image = std::fs::read_to_string(&meta)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v["vmlinuz"].as_str().map(|f| cache.join(suite).join(f)));
        if !image.is_some_and(|f| f.is_file()) {
            return Some(format!(
                "Debian's {suite} kernel is not cached in {} (`reuseport-agent verify --kernels 5.10,6.1` fetches it)",
                cache.display()
            ));
        }
    }
    match std::fs::read(agent) {
        Ok(bytes) if is_static_x86_64_elf(&bytes).is_ok() => None,
        _ => Some(format!(
            "no static guest agent at {} (scripts/kernels/guest-agent.sh builds it)",
            agent.display()
        )),
    }
}

/// The one run of `variant` in a guest of `kernel`: its measured outcomes,
/// after checking the trace says where it ran.
fn run_in_guest(kernel: &str, variant: &str, cache: &Path, agent: &Path) -> Value {
    let out = std::env::temp_dir().join(format!(
        "rl-scenario-kernels-{}-{kernel}.json",
        std::process::id()
    ));
    let r = Command::new(BIN)
        .args([
            "scenario",
            "incoming-cpu",
            "--kernel",
            kernel,
            "--variant",
            variant,
        ])
        .args(["--scale", SCALE, "--timeout", "60", "--boot-timeout", "170"])
        .arg("--kernel-cache")
        .arg(cache)
        .arg("--guest-agent")
        .arg(agent)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{kernel}: {stderr}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).ok();
    assert_eq!(schema_problems(&t), Vec::<String>::new(), "{kernel}");
    let release = t["kernel"]["release"].as_str().unwrap();
    assert!(
        release.starts_with(&format!("{kernel}.")),
        "{kernel}: the trace is from {release}"
    );
    assert_eq!(t["nproc"], 4, "{kernel}: four vCPUs");
    let runs = t["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{kernel}: {stderr}");
    let run = &runs[0];
    assert_eq!(run["variant"], variant);
    assert_eq!(run["complete"], true, "{kernel}");
    assert!(
        run["adapted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str().unwrap().contains("booted under QEMU")),
        "{kernel}: the run says it ran in a guest"
    );
    run["measured"]["outcomes"].clone()
}

fn local_share(outcomes: &Value, kernel: &str) -> f64 {
    let arrived = outcomes["arrived"].as_u64().unwrap();
    assert_eq!(arrived, CONNECTIONS, "{kernel}: every connection arrived");
    assert_eq!(outcomes["done"].as_u64().unwrap(), CONNECTIONS, "{kernel}");
    outcomes["local"].as_u64().unwrap() as f64 / arrived as f64
}

/// Not part of `npm test`: it boots two guests (about 70 s) from a kernel
/// cache that `npm test` fills only for 6.1. Run it with `cargo test -p
/// reuseport-agent --test scenario_kernels -- --ignored` after
/// `reuseport-agent verify --kernels 5.10,6.1`.
#[test]
#[ignore = "boots Debian 5.10 and 6.1 under QEMU (about 70 s, needs both kernels cached): run with -- --ignored"]
fn so_incoming_cpu_steers_the_group_on_6_1_and_not_on_5_10() {
    const NAME: &str = "so_incoming_cpu_steers_the_group_on_6_1_and_not_on_5_10";
    let root = workspace();
    let cache = root.join(".cache/kernels");
    let agent = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("x86_64-unknown-linux-musl/release/reuseport-agent");
    if let Some(why) = missing(&cache, &agent) {
        // A kernel not fetched yet or no guest agent built is this machine's
        // state, not a missing privilege: say so, never fail for it.
        common::skip_fact(NAME, &why);
        return;
    }
    let old = local_share(
        &run_in_guest("5.10", "reuseport-incoming-cpu-5.10", &cache, &agent),
        "5.10",
    );
    let new = local_share(
        &run_in_guest("6.1", "reuseport-incoming-cpu", &cache, &agent),
        "6.1",
    );
    eprintln!(
        "{NAME}: accepted on the SYN's own CPU: 5.10 {:.1}%, 6.1 {:.1}%",
        old * 100.0,
        new * 100.0
    );
    // 6.1: the listener of the receiving CPU always wins.
    assert!(new > 0.95, "6.1: {new}");
    // 5.10: the hash among four, about a quarter; far from all.
    assert!(old < 0.5, "5.10: {old}");
    assert!(new - old > 0.4, "5.10 {old} against 6.1 {new}");
}
