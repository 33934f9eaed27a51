//! The pure parts of the QEMU lab (agent/src/lab/) and of `verify --kernels`
//! (agent/src/cmd/verify/kernels.rs): reading what a guest printed, and the rule that a kernel is verified only when it
//! booted, recorded every layout and agreed everywhere. No QEMU here: the
//! booting itself runs in `npm test` (scripts/test.sh) and
//! `npm run verify:kernels`.

use reuseport_agent::cmd::verify::kernels::{
    assess, profile_evidence, KernelRow, LayoutCheck, Step, VerificationRecord, RECORD_SCHEMA,
};
use reuseport_agent::lab::fetch::{depends, field, in_series, release_from_path};
use reuseport_agent::lab::{
    init_script, is_static_x86_64_elf, parse_guest_output, requests, BootEnd, GuestRun, Request,
};

fn request(name: &str, suite: &str) -> Request {
    Request {
        name: name.into(),
        suite: suite.into(),
        series: Some(name.into()),
    }
}

fn layout(name: &str, kernel: &str, tested: usize, agreed: usize) -> LayoutCheck {
    LayoutCheck {
        layout: name.into(),
        proto: "tcp".into(),
        bind: "127.0.0.1".into(),
        listeners: 8,
        closed: vec![],
        kernel: kernel.into(),
        events: tested + 48,
        train: 48,
        candidates: 1,
        secret: Some("0x12345678".into()),
        tested,
        agreed,
        mismatches: vec![],
    }
}

/// What a 6.1 guest prints when both layouts were recorded.
fn good_output() -> String {
    "@@RPL-BEGIN 1\r\n@@RPL-KERNEL 6.1.0-50-amd64\r\n@@RPL-CPUS 2\n\
     @@RPL-VERSION Linux version 6.1.0-50-amd64 #1 SMP Debian 6.1.176-1\n\
     @@RPL-TRACE tcp-specific\n{\"format\":\n \"x\"}\n\n@@RPL-END tcp-specific\n\
     @@RPL-TRACE udp\n{\"udp\": 1}\n@@RPL-END udp\n@@RPL-DONE\n"
        .to_string()
}

fn exited(output: String) -> GuestRun {
    GuestRun {
        end: BootEnd::Exited { code: Some(0) },
        output,
        console_tail: String::new(),
    }
}

#[test]
fn guest_output_gives_release_and_each_trace_between_markers() {
    let out = parse_guest_output(&good_output());
    assert!(out.began && out.done);
    assert_eq!(out.release.as_deref(), Some("6.1.0-50-amd64"));
    assert_eq!(out.cpus, Some(2));
    assert_eq!(
        out.version.as_deref(),
        Some("Linux version 6.1.0-50-amd64 #1 SMP Debian 6.1.176-1")
    );
    assert_eq!(out.traces.len(), 2);
    assert_eq!(out.traces[0].0, "tcp-specific");
    assert_eq!(
        out.traces[0].1.as_deref().unwrap().trim(),
        "{\"format\":\n \"x\"}"
    );
    assert_eq!(out.traces[1].1.as_deref().unwrap().trim(), "{\"udp\": 1}");
}

#[test]
fn a_failed_recording_carries_the_recorders_status_and_stderr() {
    let out = parse_guest_output(
        "@@RPL-BEGIN 1\n@@RPL-KERNEL 5.10.0-32-amd64\n@@RPL-FAILED large rc=2\nerror: listen: ENOMEM\n@@RPL-END large\n@@RPL-DONE\n",
    );
    let err = out.traces[0].1.as_ref().unwrap_err();
    assert!(err.contains("rc=2") && err.contains("ENOMEM"), "{err}");
}

#[test]
fn a_trace_cut_off_by_the_end_of_the_output_is_a_failure_not_a_trace() {
    let out =
        parse_guest_output("@@RPL-BEGIN 1\n@@RPL-KERNEL 6.1.0-50-amd64\n@@RPL-TRACE udp\n{\"form");
    assert!(!out.done);
    assert!(out.traces[0]
        .1
        .as_ref()
        .unwrap_err()
        .contains("ended inside"));
}

#[test]
fn a_guest_that_booted_and_agreed_everywhere_is_verified() {
    let mut row = KernelRow::new(&request("6.1", "bookworm"), 2);
    let mut check = |name: &str, _json: &str| Ok(layout(name, "6.1.0-50-amd64", 252, 252));
    assess(
        &mut row,
        &exited(good_output()),
        &["tcp-specific", "udp"],
        &mut check,
    );
    assert!(row.verified, "{row:?}");
    assert!(row.booted);
    assert_eq!(row.release.as_deref(), Some("6.1.0-50-amd64"));
    assert_eq!(row.profile.as_deref(), Some("6.1"));
    assert_eq!((row.tested, row.agreed, row.events), (504, 504, 600));
}

/// The rule the whole command rests on: a QEMU that never got the guest to
/// /init (here it timed out, and the output even holds a stray trace) gives a
/// failure row at the boot step, and nothing is checked.
#[test]
fn never_verified_without_booting() {
    let mut checked = 0;
    let mut check = |name: &str, _json: &str| {
        checked += 1;
        Ok(layout(name, "6.1.0-50-amd64", 252, 252))
    };
    for run in [
        GuestRun {
            end: BootEnd::TimedOut { after: 900 },
            output: "@@RPL-TRACE udp\n{}\n@@RPL-END udp\n".into(),
            console_tail: "Kernel panic - not syncing: VFS: Unable to mount root fs".into(),
        },
        GuestRun {
            end: BootEnd::NotStarted(
                "qemu-system-x86_64 not found; install qemu-system-x86".into(),
            ),
            output: good_output(),
            console_tail: String::new(),
        },
        exited(String::new()),
        // Began but never said which kernel it is.
        exited("@@RPL-BEGIN 1\n@@RPL-TRACE udp\n{}\n@@RPL-END udp\n@@RPL-DONE\n".into()),
    ] {
        let mut row = KernelRow::new(&request("6.1", "bookworm"), 1);
        assess(&mut row, &run, &["udp"], &mut check);
        assert!(!row.verified, "{run:?} gave {row:?}");
        assert!(!row.booted);
        assert_eq!(row.release, None);
        assert_eq!(row.failure.as_ref().unwrap().step, Step::Boot, "{row:?}");
    }
    assert_eq!(
        checked, 0,
        "nothing from a guest that did not boot is checked"
    );
}

#[test]
fn a_missing_layout_or_one_disagreement_fails_the_kernel() {
    let mut check = |name: &str, _json: &str| Ok(layout(name, "6.1.0-50-amd64", 252, 252));
    let mut row = KernelRow::new(&request("6.1", "bookworm"), 3);
    assess(
        &mut row,
        &exited(good_output()),
        &["tcp-specific", "udp", "large"],
        &mut check,
    );
    assert!(row.booted && !row.verified);
    let f = row.failure.unwrap();
    assert_eq!(f.step, Step::Record);
    assert!(f.message.contains("large"), "{}", f.message);

    let mut check = |name: &str, _json: &str| {
        Ok(layout(
            name,
            "6.1.0-50-amd64",
            252,
            if name == "udp" { 251 } else { 252 },
        ))
    };
    let mut row = KernelRow::new(&request("6.1", "bookworm"), 2);
    assess(
        &mut row,
        &exited(good_output()),
        &["tcp-specific", "udp"],
        &mut check,
    );
    assert!(!row.verified);
    let f = row.failure.unwrap();
    assert_eq!(f.step, Step::Check);
    assert!(f.message.contains("251 of 252"), "{}", f.message);
}

#[test]
fn a_trace_from_another_kernel_than_the_guest_reported_fails() {
    let mut check = |name: &str, _json: &str| Ok(layout(name, "6.18.44-fc-v782", 252, 252));
    let mut row = KernelRow::new(&request("6.1", "bookworm"), 2);
    assess(
        &mut row,
        &exited(good_output()),
        &["tcp-specific", "udp"],
        &mut check,
    );
    assert!(!row.verified);
    assert_eq!(row.failure.unwrap().step, Step::Check);
}

#[test]
fn kernel_names_map_to_debian_suites() {
    let all = requests(&["all".into()]).unwrap();
    let suites: Vec<&str> = all.iter().map(|r| r.suite.as_str()).collect();
    assert_eq!(suites, ["bullseye", "bookworm", "trixie", "sid"]);
    let r = requests(&["6.1".into(), "bookworm".into(), "7.2".into()]).unwrap();
    assert_eq!(r.len(), 2, "6.1 and bookworm are the same kernel: {r:?}");
    assert_eq!(
        (r[1].suite.as_str(), r[1].series.as_deref()),
        ("sid", Some("7.2"))
    );
    let e = requests(&["banana".into()]).unwrap_err().to_string();
    assert!(e.contains("5.10, 6.1, 6.12, sid"), "{e}");
}

#[test]
fn apt_cache_show_gives_the_image_package_and_its_size() {
    let meta = "Package: linux-image-amd64\nVersion: 7.2.13-1\nDepends: linux-base-amd64 (= 7.2.13-1), linux-image-7.2.13+deb14-amd64 (= 7.2.13-1)\n\nPackage: other\nDepends: nope\n";
    assert_eq!(
        depends(meta),
        ["linux-base-amd64", "linux-image-7.2.13+deb14-amd64"]
    );
    let image = "Package: linux-image-7.2.13+deb14-amd64\nDepends: dracut | initramfs-tools (>= 0.120+deb8u2) | linux-initramfs-tool, linux-binary-7.2.13+deb14-amd64 (= 7.2.13-1)\nSize: 1892\n";
    assert_eq!(depends(image)[1], "linux-binary-7.2.13+deb14-amd64");
    assert_eq!(field(image, "Size").as_deref(), Some("1892"));
}

/// `--kernels 6.1` must not take a 6.12 image, and the check comes before
/// the download (from the package's version).
#[test]
fn a_series_matches_only_its_own_versions() {
    assert!(in_series("6.1.176-1", "6.1"));
    assert!(in_series("6.1.0-50-amd64", "6.1"));
    assert!(in_series("7.2.13+deb14-amd64", "7.2"));
    assert!(!in_series("6.12.117-1", "6.1"));
    assert!(!in_series("7.2.13-1", "5.4"));
}

#[test]
fn the_release_comes_from_where_the_package_puts_vmlinuz() {
    assert_eq!(
        release_from_path("./boot/vmlinuz-6.1.0-50-amd64").as_deref(),
        Some("6.1.0-50-amd64")
    );
    assert_eq!(
        release_from_path("usr/lib/modules/7.2.13+deb14-amd64/vmlinuz").as_deref(),
        Some("7.2.13+deb14-amd64")
    );
    assert_eq!(
        release_from_path("usr/lib/modules/7.2.13+deb14-amd64/kernel/x.ko"),
        None
    );
    assert_eq!(release_from_path("boot/config-6.1.0-50-amd64"), None);
}

#[test]
fn init_script_records_each_layout_between_markers_and_powers_off() {
    let s = init_script(&[(
        "closed".into(),
        vec!["record".into(), "--closed".into(), "1,5".into()],
    )]);
    assert!(s.starts_with("#!/bin/busybox sh\n"));
    assert!(s.contains("ip link set lo up"));
    assert!(s.contains("/reuseport-agent record --closed 1,5 --output /tmp/trace.json"));
    assert!(s.contains("say @@RPL-TRACE closed"));
    assert!(s.contains("say @@RPL-END closed"));
    assert!(s.trim_end().ends_with("poweroff -f"));
}

#[test]
fn only_a_static_x86_64_elf_runs_in_the_initramfs() {
    assert!(is_static_x86_64_elf(b"#!/bin/sh\n").is_err());
    // A minimal ELF64 header with one PT_INTERP program header.
    let mut elf = vec![0u8; 64 + 56];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[18] = 0x3e;
    elf[32] = 64; // e_phoff
    elf[54] = 56; // e_phentsize
    elf[56] = 1; // e_phnum
    elf[64] = 3; // PT_INTERP
    assert!(is_static_x86_64_elf(&elf)
        .unwrap_err()
        .contains("dynamically linked"));
    elf[64] = 1; // PT_LOAD
    assert!(is_static_x86_64_elf(&elf).is_ok());
}

#[test]
fn profiles_count_as_booted_only_through_a_verified_kernel() {
    let mut ok = KernelRow::new(&request("6.1", "bookworm"), 1);
    let mut check = |name: &str, _json: &str| Ok(layout(name, "6.1.0-50-amd64", 10, 10));
    assess(&mut ok, &exited(good_output()), &["udp"], &mut check);
    let mut bad = KernelRow::new(&request("6.12", "trixie"), 1);
    bad.fail(Step::Fetch, "no network");
    bad.settle();
    let ev = profile_evidence(&[ok, bad], Some("6.18.44-fc-v782"));
    let get = |p: &str| ev.iter().find(|e| e.profile == p).unwrap();
    assert_eq!(get("6.1").evidence, "booted");
    assert_eq!(get("6.1").releases, ["6.1.0-50-amd64"]);
    assert_eq!(get("6.12").evidence, "source");
    assert_eq!(get("3.9").evidence, "source");
    assert_eq!(
        get("6.18").evidence,
        "host",
        "the host's series is checked by plain verify"
    );
}

/// The record the site reads (public/verification/kernels.json) must match
/// its schema, and claim only kernels that booted and agreed.
#[test]
fn the_committed_verification_record_matches_its_schema() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../public/verification/kernels.json"
    );
    let text = std::fs::read_to_string(path).expect("public/verification/kernels.json");
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema: serde_json::Value = serde_json::from_str(RECORD_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(problems.is_empty(), "{problems:?}");
    let record: VerificationRecord = serde_json::from_value(value).unwrap();
    assert!(
        record.kernels.iter().any(|k| k.verified),
        "the record proves no kernel"
    );
    for k in &record.kernels {
        if k.verified {
            assert!(k.booted && k.release.is_some() && k.failure.is_none());
            assert_eq!(k.layouts.len(), k.layouts_expected);
            assert!(k.layouts.iter().all(|l| l.tested > 0
                && l.agreed == l.tested
                && Some(&l.kernel) == k.release.as_ref()));
        }
    }
}
