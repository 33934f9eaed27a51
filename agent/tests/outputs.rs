//! Where the agent writes its results (`record -o`, `scenario -o`,
//! `calibrate --output`, `verify --kernels --write-record`): a path is
//! checked before anything is measured, a regular file is replaced only by
//! a whole result (also on a full disk), and a link, a device, a FIFO or
//! standard output is written through, never replaced. The
//! tests that need root (a device node, a small file system) fail instead
//! of skipping under `REUSEPORT_REQUIRE_ROOT=1` ([`common`]).

#![cfg(target_os = "linux")]

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use reuseport_agent::trace::Trace;

mod common;

use common::BIN;

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("outputs-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A short recording's arguments, writing to `out`.
fn short_record(out: &str) -> Vec<&str> {
    vec![
        "record",
        "--proto",
        "tcp",
        "--listeners",
        "2",
        "--count",
        "20",
        "--duration",
        "30",
        "--output",
        out,
    ]
}

/// A short recording to `out`.
fn record_to(out: &Path) -> common::Run {
    common::agent(
        &short_record(out.to_str().unwrap()),
        "",
        Duration::from_secs(120),
    )
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mknod(path: &Path, mode: libc::mode_t, major: u32, minor: u32) -> bool {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mknod reads one C string.
    unsafe { libc::mknod(c.as_ptr(), mode | 0o600, libc::makedev(major, minor)) == 0 }
}

/// Why: `record -o` renamed its temporary file over the path, so a symbolic
/// link became a regular file and the file it named kept its old content.
#[test]
fn record_output_through_a_symlink_replaces_the_file_it_names_and_keeps_the_link() {
    let dir = scratch("symlink");
    let real = dir.join("real.json");
    std::fs::write(&real, "old\n").unwrap();
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let r = record_to(&link);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link is still a link"
    );
    assert_eq!(Trace::read(&real).unwrap().counts.events, 20);
    assert_eq!(names_in(&dir), ["link.json", "real.json"]);
}

/// Why: a dangling link (to a file not made yet) was replaced by the trace
/// instead of the trace going where it points.
#[test]
fn record_output_through_a_dangling_symlink_makes_the_file_it_names() {
    let dir = scratch("dangling");
    let link = dir.join("link.json");
    std::os::unix::fs::symlink("made.json", &link).unwrap();
    let r = record_to(&link);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        Trace::read(&dir.join("made.json")).unwrap().counts.events,
        20
    );
}

/// Why: a reader on a FIFO got nothing, since the FIFO was replaced by a
/// regular file holding the trace.
#[test]
fn record_output_to_a_fifo_is_written_through_to_its_reader() {
    let dir = scratch("fifo");
    let fifo = dir.join("trace.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // A write end held here lets the reader's open return at once, and the
    // reader sees the end when it closes after the run: it never waits
    // for good, whatever the run does with the FIFO.
    let held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let (opened, wait_open) = std::sync::mpsc::channel();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(fifo).unwrap();
            opened.send(()).unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut f, &mut text).unwrap();
            text
        })
    };
    wait_open.recv().unwrap();
    let r = record_to(&fifo);
    drop(held);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = reader.join().unwrap();
    assert_eq!(Trace::parse(&text, "fifo").unwrap().counts.events, 20);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names_in(&dir), ["trace.fifo"]);
}

/// Why: `-o /dev/stdout` (here a link to `/proc/self/fd/1`, as `/dev/stdout`
/// is) replaced the link with a regular file instead of writing to the
/// standard output the caller reads.
#[test]
fn record_output_to_a_link_to_its_own_stdout_writes_to_stdout() {
    let dir = scratch("stdout");
    let link = dir.join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    let r = record_to(&link);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(Trace::parse(&r.stdout, "stdout").unwrap().counts.events, 20);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(names_in(&dir), ["stdout"]);
}

/// Why: as root, `-o /dev/null` replaced the machine's own device node
/// with a regular file (a node made here stands in for it).
#[test]
fn record_output_to_a_character_device_writes_through_and_keeps_the_node() {
    if !common::is_root() {
        return common::skip("record_output_to_a_character_device", "mknod needs root");
    }
    let dir = scratch("chardev");
    let null = dir.join("null");
    assert!(mknod(&null, libc::S_IFCHR, 1, 3), "mknod c 1 3");
    let r = record_to(&null);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::metadata(&null)
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(names_in(&dir), ["null"]);
}

/// Why: a block device was replaced too; writing a trace onto a disk is
/// never meant, so it is refused before anything is recorded.
#[test]
fn record_output_to_a_block_device_is_refused_before_recording() {
    if !common::is_root() {
        return common::skip("record_output_to_a_block_device", "mknod needs root");
    }
    let dir = scratch("blockdev");
    let node = dir.join("disk");
    // A loop device number no one uses: nothing is opened either way.
    assert!(mknod(&node, libc::S_IFBLK, 7, 250), "mknod b 7 250");
    let r = record_to(&node);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("block device"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("record: 0/"),
        "refused before recording: {}",
        r.stderr
    );
    assert!(std::fs::metadata(&node)
        .unwrap()
        .file_type()
        .is_block_device());
}

/// Why: a run killed with SIGKILL left an empty hidden `.NAME.PID.partial`
/// beside its output for good.
#[test]
fn a_killed_recording_leaves_nothing_beside_its_output() {
    use std::io::BufRead;
    let dir = scratch("killed");
    let out = dir.join("trace.json");
    let mut args = short_record(out.to_str().unwrap());
    args[6] = "20000";
    let mut child = Command::new(BIN)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("record: 0/") {
        line.clear();
        assert_ne!(err.read_line(&mut line).unwrap(), 0, "record ended early");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(names_in(&dir), Vec::<String>::new());
}

/// Runs `RUN` (a shell command with `$AGENT` the agent, writing to
/// `$OUT`) where `$OUT` is an existing file holding `old` on a full tmpfs
/// of `size` in a private mount namespace (it goes with the namespace).
/// Checks that the run exits 1, says why, and leaves the old file as it
/// was; returns its standard output and error.
fn on_a_full_disk(test: &str, size: &str, run: &str) -> Option<(Vec<u8>, String)> {
    if !common::is_root() {
        common::skip(test, "mounting a small tmpfs needs root");
        return None;
    }
    let d = scratch(test);
    let script = format!(
        "mount -t tmpfs -o size={size} none {d} && echo old > {d}/out.json && \
         head -c {size} /dev/zero > {d}/fill 2>/dev/null; OUT={d}/out.json; {run}; \
         echo \"status=$?\" >&2; cat {d}/out.json >&2",
        d = d.display()
    );
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("AGENT", BIN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("status=1"), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        stderr.contains("written to standard output instead"),
        "{stderr}"
    );
    assert!(
        stderr.trim_end().ends_with("\nold"),
        "the old file is as it was: {stderr}"
    );
    Some((out.stdout, stderr))
}

/// Why: on a full disk `record` discarded the whole recording. Now the
/// existing file is left as it was, the trace goes to standard output,
/// stderr says so, and the run exits 1.
#[test]
fn record_on_a_full_disk_keeps_the_old_file_and_writes_the_trace_to_stdout() {
    let Some((stdout, _)) = on_a_full_disk(
        "record-full",
        "16k",
        "$AGENT record --proto tcp --listeners 2 --count 300 --duration 30 -o $OUT",
    ) else {
        return;
    };
    let t = Trace::parse(&String::from_utf8(stdout).unwrap(), "stdout").unwrap();
    assert_eq!(t.counts.events, 300);
}

/// Why: `calibrate` wrote its file in place at the end, so a full disk
/// truncated an existing calibration.json to invalid JSON. It goes through
/// a whole temporary file now, and to standard output when that fails.
#[test]
fn calibrate_on_a_full_disk_keeps_the_old_calibration() {
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../public/traces");
    let Some((stdout, _)) = on_a_full_disk(
        "calibrate-full",
        "8k",
        &format!(
            "$AGENT calibrate --traces {} --output $OUT",
            traces.display()
        ),
    ) else {
        return;
    };
    let c: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert!(c["params"].is_object(), "the calibration is on stdout");
}

/// Why: an output in a directory that does not exist was found only after
/// the measurement (79 s of guests for `verify --kernels`), losing it.
#[test]
fn a_missing_output_directory_is_refused_before_anything_runs() {
    let dir = scratch("missing");
    let missing = dir.join("no-such-dir").join("out.json");
    let m = missing.to_str().unwrap();
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../public/traces");
    for (args, started) in [
        (short_record(m), "record: 0/"),
        (vec!["scenario", "six-connections", "-o", m], "scenario "),
        (
            vec![
                "calibrate",
                "--traces",
                traces.to_str().unwrap(),
                "--output",
                m,
            ],
            "calibrate: round",
        ),
        (
            vec!["verify", "--kernels", "6.1", "--quick", "--write-record", m],
            "verify --kernels: ",
        ),
    ] {
        let r = common::agent(&args, "", Duration::from_secs(120));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("no-such-dir"), "{args:?}: {}", r.stderr);
        assert!(
            !r.stderr.lines().any(|l| l.starts_with(started)),
            "{args:?} refused before it started: {}",
            r.stderr
        );
    }
}
