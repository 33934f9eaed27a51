//! `verify`'s options and its stop: options that would be ignored or give
//! a wrong answer are refused naming them, and a terminating signal ends
//! the run with the rows finished so far and exit status 130, as the exit
//! table says.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

use common::BIN;

fn verify(args: &[&str]) -> common::Run {
    let mut all = vec!["verify"];
    all.extend_from_slice(args);
    common::agent(&all, "", Duration::from_secs(120))
}

/// Why: `--threads 0` reported "DISAGREEMENT: the model is not exact here"
/// on a trace that agrees with one thread, and `--threads 4294967295` ran
/// for minutes. It is bounded as `recover` bounds it, 1 to 1024.
#[test]
fn verify_threads_outside_1_to_1024_are_refused() {
    for n in ["0", "1025", "4294967295"] {
        let r = verify(&["--threads", n, "--trace", "x.json"]);
        assert_eq!(r.code, 2, "{n}: {}", r.stderr);
        assert!(
            r.stderr.contains("--threads") && r.stderr.contains("1..=1024"),
            "{n}: {}",
            r.stderr
        );
    }
}

/// Why: these options were accepted and then ignored or answered wrongly:
/// `--count 0 --quick` recorded 300, `--call-logs` was ignored with named
/// layouts, `--train` with `--layouts N`, and `--train 0` printed
/// "predicted 1000 … 0.00 %" under "nothing was predicted".
#[test]
fn contradictory_verify_options_are_refused_naming_them() {
    for (args, named) in [
        (&["--count", "0"][..], "--count"),
        (&["--count", "10", "--quick"], "--quick"),
        (&["--train", "0"], "--train"),
        (&["--layouts", "tcp-specific", "--call-logs"], "--call-logs"),
        (&["--call-logs"], "--call-logs"),
        (&["--layouts", "5", "--train", "4294967296"], "--train"),
    ] {
        let r = verify(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(named), "{args:?}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    }
}

/// Why: a trace whose `kernel.release` is 100 KB had it quoted whole in the
/// refusal. It is cut as other fields are (the schema now also bounds the
/// release, at 64 characters, and its message quotes it cut).
#[test]
fn a_huge_kernel_release_is_quoted_cut_short() {
    let mut t: serde_json::Value =
        serde_json::from_str(include_str!("../../public/traces/udp-v4-specific-8.json")).unwrap();
    t["kernel"]["release"] = "9".repeat(100_000).into();
    t["kernel"].as_object_mut().unwrap().remove("profile");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("verify-release");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.json");
    std::fs::write(&file, t.to_string()).unwrap();
    let r = verify(&["--trace", file.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", &r.stderr[..r.stderr.len().min(2000)]);
    assert!(
        r.stderr.contains("/kernel/release"),
        "{}",
        &r.stderr[..r.stderr.len().min(2000)]
    );
    assert!(r.stderr.len() < 2000, "{} bytes of stderr", r.stderr.len());
}

/// Starts `verify ARGS`, sends SIGTERM once stderr shows `started`, and
/// returns its exit code, standard output and the rest of its standard
/// error.
#[cfg(target_os = "linux")]
fn stopped_once(args: &[&str], started: &str) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .arg("verify")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains(started) {
        line.clear();
        assert_ne!(err.read_line(&mut line).unwrap(), 0, "verify ended early");
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    (child.wait().unwrap().code(), stdout, rest)
}

/// Why: `verify` had no stop handler: SIGTERM gave exit 143 and nothing was
/// written, though the exit table promises 130 and what was done so far.
/// The search of a trace's key runs long in a test build, so the signal
/// comes while it runs.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_stops_verify_with_the_rows_so_far_and_exit_130() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../public/traces/udp-v4-specific-8.json"
    );
    let (code, stdout, stderr) =
        stopped_once(&["--threads", "1", "--trace", trace], "recovering the key");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stdout.starts_with("layout"), "the table's header: {stdout}");
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
}

/// The same for `verify --layouts N`: the counts of the cases compared
/// before the signal, and 130.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_stops_verify_layouts_with_the_counts_so_far_and_exit_130() {
    let (code, stdout, stderr) = stopped_once(&["--layouts", "100000"], "random layouts, seed");
    assert_eq!(code, Some(130), "{stderr}");
    assert!(stdout.contains("INTERRUPTED by a signal after"), "{stdout}");
}
