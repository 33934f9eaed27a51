//! Whole-file reads have a byte cap above the largest legal input, named
//! in the refusal: `predict --layout`, `calibrate --check` and
//! `calibrate --traces` read `/dev/zero` until the process held 10 to
//! 12 GB.

use std::time::Duration;

mod common;

/// Why: each of these read a whole file with no cap, so `/dev/zero` (here,
/// or behind a scenario trace's name) grew the process without end. Each
/// is refused now, naming its cap. (The run is bounded at 60 s so that a
/// run that reads without end fails instead of filling the memory.)
#[cfg(unix)]
#[test]
fn whole_file_reads_refuse_dev_zero_naming_their_cap() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("file-caps");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("scenario-zero.json")).unwrap();
    let traces = dir.to_str().unwrap();
    for (args, cap) in [
        (
            &["predict", "--kernel", "6.18", "--layout", "/dev/zero"][..],
            "64 MiB, the most a layout can be",
        ),
        (
            &[
                "calibrate",
                "--traces",
                "../public/traces",
                "--check",
                "/dev/zero",
            ],
            "16 MiB, the most a calibration file can be",
        ),
        (
            &["calibrate", "--traces", traces],
            "256 MiB, the most a scenario trace can be",
        ),
    ] {
        let r = common::agent(args, "", Duration::from_secs(60));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(cap), "{args:?}: {}", r.stderr);
    }
}
