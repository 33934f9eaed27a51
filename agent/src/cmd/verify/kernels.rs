// Over 800 lines for now: fetching, booting and checking a kernel are one pipeline here; to be split by those stages with the guest runs of verify --layouts.
//! `verify --kernels`: the proof of [`crate::cmd::verify`], run on kernels this
//! machine does not run. For each Debian kernel asked for it
//!
//! 1. **fetch**: resolves the suite's `linux-image-amd64` to the image package
//!    (on sid, 7.x: the `linux-binary-*` package it depends on) with
//!    `apt-get` under a throw-away configuration of its own (the machine's
//!    apt setup is never read or changed), downloads it with
//!    `apt-get download`, keeps only the `vmlinuz` in the cache
//!    (`.cache/kernels/<suite>/`, reused on the next run);
//! 2. **initramfs**: packs busybox (static), a statically linked agent
//!    (`x86_64-unknown-linux-musl`) and an `/init` that brings up `lo` and
//!    runs `reuseport-agent record` for each of `verify`'s layouts
//!    ([`crate::cmd::verify::LayoutName`]), with `cpio`;
//! 3. **boot**: boots the kernel under QEMU (TCG by default: KVM is often
//!    unusable in CI), killed after `--boot-timeout` seconds; the guest prints its
//!    `uname -r` and each trace between markers on its second serial port
//!    (`ttyS1`, a file on the host), so kernel messages on the console
//!    (`ttyS0`) never mix with the data;
//! 4. **record**: reads the traces the guest printed ([`parse_guest_output`]);
//! 5. **check**: recovers each trace's key and predicts the rest on the host,
//!    exactly as `verify --trace` does (a key search under TCG takes about
//!    45 s instead of 1 s, hence the split).
//!
//! A kernel counts as verified only when its guest booted, reported its
//! release, recorded every layout, and the model agreed with every recorded
//! choice ([`KernelRow::verified`]); every other outcome names the step that
//! failed.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use clap::{Args, Parser};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::cmd::verify::calldraw::CallLogs;
use crate::cmd::verify::differential::{check_kernel_answers, Draw, LayoutsAgreement, Words};
use crate::cmd::verify::layouts::Layouts;
use crate::cmd::verify::{LayoutName, LayoutResult, VerifyArgs};

/// The Debian suites `verify --kernels` knows, with the kernel series each
/// ships (`None` for sid, whose series moves; 7.2 when this was written).
pub const SUITES: &[(&str, Option<&str>)] = &[
    ("bullseye", Some("5.10")),
    ("bookworm", Some("6.1")),
    ("trixie", Some("6.12")),
    ("sid", None),
];

/// Largest kernel package `fetch` downloads (the 6.12 image is about 108 MB).
pub const MAX_PACKAGE_BYTES: u64 = 256 << 20;
/// Largest guest output read back (a 1,000-event trace is about 150 kB).
pub const MAX_GUEST_OUTPUT: u64 = 64 << 20;
/// The verification record's `format`.
pub const RECORD_FORMAT: &str = "reuseport-lab-verification";
/// The JSON Schema every verification record satisfies.
pub const RECORD_SCHEMA: &str =
    include_str!("../../../../public/verification/verification-v1.schema.json");
/// The Debian mirror kernels are fetched from unless `--mirror` says otherwise.
pub const MIRROR: &str = "http://deb.debian.org/debian";
/// Where the guest's output lines begin; every marker line starts with this.
pub const MARK: &str = "@@RPL-";

/// Options of `verify --kernels` (flattened into [`VerifyArgs`]).
#[derive(Debug, Clone, Default, Args)]
pub struct KernelsArgs {
    /// Boot Debian's kernels under QEMU and verify in each (record in the guest, recover and predict on the host): a comma-separated list of 5.10, 6.1, 6.12, sid (or bullseye, bookworm, trixie, or sid's series such as 7.2); all four without a list.
    #[arg(long, value_name = "LIST", value_delimiter = ',', num_args = 0..=1, default_missing_value = "all", conflicts_with = "traces")]
    pub kernels: Option<Vec<String>>,
    /// With --kernels: where kernel images are cached (default: .cache/kernels in the source tree, or in the current directory).
    #[arg(long, value_name = "DIR", requires = "kernels")]
    pub kernel_cache: Option<PathBuf>,
    /// With --kernels: the statically linked agent run inside the guests (default: built with cargo for x86_64-unknown-linux-musl from the source tree).
    #[arg(long, value_name = "FILE", requires = "kernels")]
    pub guest_agent: Option<PathBuf>,
    /// With --kernels: seconds one guest may take to boot and record before QEMU is killed.
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub boot_timeout: u64,
    /// With --kernels: resolve and download the newest images again, even when cached.
    #[arg(long, requires = "kernels")]
    pub refresh: bool,
    /// With --kernels: QEMU's accelerator. TCG (emulation) works everywhere; kvm needs a usable /dev/kvm (where nested virtualisation is off it hangs, and is killed at --boot-timeout).
    #[arg(long, value_enum, default_value_t = Accel::Tcg)]
    pub accel: Accel,
    /// With --kernels: the Debian mirror.
    #[arg(long, value_name = "URL", default_value = MIRROR)]
    pub mirror: String,
    /// With --kernels: also write the verification record (JSON, schema public/verification/verification-v1.schema.json) to FILE.
    #[arg(long, value_name = "FILE", requires = "kernels")]
    pub write_record: Option<PathBuf>,
}

/// QEMU's accelerator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Accel {
    /// Emulation (TCG): slow, works on any host.
    #[default]
    Tcg,
    /// Hardware virtualisation.
    Kvm,
}

impl Accel {
    /// QEMU's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }
}

/// Why `verify --kernels` could not run at all (a kernel that fails is a
/// row, not an error).
#[derive(Debug, Error)]
pub enum KernelsError {
    /// A name in `--kernels` is not a kernel this command knows.
    #[error("--kernels: `{0}` is not a Debian kernel this command boots; name 5.10, 6.1, 6.12, sid (or bullseye, bookworm, trixie, or sid's series such as 7.2), or give --kernels alone for all four")]
    Unknown(String),
    /// Options that this form of `verify` would ignore.
    #[error("{0}")]
    Options(String),
    /// Writing the report or the record failed.
    #[error("writing {what}: {source}")]
    Io {
        /// What was written.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl KernelsError {
    /// True when stdout was closed early (`| head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, KernelsError::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// One kernel asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// As named on the command line (`6.1`, `sid`, `7.2`).
    pub name: String,
    /// The Debian suite it comes from.
    pub suite: String,
    /// The series required (`None`: whatever the suite ships).
    pub series: Option<String>,
}

/// Turns `--kernels` into requests, in the order given, without repeats.
pub fn requests(list: &[String]) -> Result<Vec<Request>, KernelsError> {
    let mut out: Vec<Request> = Vec::new();
    let mut push = |r: Request| {
        if !out
            .iter()
            .any(|o| o.suite == r.suite && o.series == r.series)
        {
            out.push(r);
        }
    };
    for item in list {
        let item = item.trim();
        if item == "all" {
            for (suite, series) in SUITES {
                push(Request {
                    name: series.unwrap_or(suite).to_string(),
                    suite: suite.to_string(),
                    series: series.map(String::from),
                });
            }
            continue;
        }
        if let Some((suite, series)) = SUITES.iter().find(|(s, v)| *s == item || *v == Some(item)) {
            push(Request {
                name: item.to_string(),
                suite: suite.to_string(),
                series: series.map(String::from),
            });
            continue;
        }
        // Any other MAJOR.MINOR can only be sid's (checked once resolved).
        let mut parts = item.split('.');
        let numeric = matches!((parts.next(), parts.next(), parts.next()),
            (Some(a), Some(b), None) if !a.is_empty() && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()));
        if !numeric {
            return Err(KernelsError::Unknown(item.to_string()));
        }
        push(Request {
            name: item.to_string(),
            suite: "sid".into(),
            series: Some(item.to_string()),
        });
    }
    Ok(out)
}

/// The step of a kernel's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Step {
    /// Resolving and downloading the image.
    Fetch,
    /// Packing the initramfs.
    Initramfs,
    /// Booting under QEMU.
    Boot,
    /// Recording inside the guest.
    Record,
    /// Recovering and predicting on the host.
    Check,
}

impl Step {
    /// The step's name.
    pub fn name(self) -> &'static str {
        match self {
            Step::Fetch => "fetch",
            Step::Initramfs => "initramfs",
            Step::Boot => "boot",
            Step::Record => "record",
            Step::Check => "check",
        }
    }
}

/// A step that failed, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// Which step.
    pub step: Step,
    /// What went wrong, and what to do.
    pub message: String,
}

/// The image used for a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// Debian package.
    pub package: String,
    /// Its version.
    pub version: String,
    /// The release in the package (`uname -r` once booted).
    pub release: String,
    /// The kernel file (in `image.json`: its name in the suite's cache directory).
    pub vmlinuz: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was downloaded.
    pub fetched: String,
}

/// Seconds spent per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Resolving and downloading (0 when cached).
    pub fetch: f64,
    /// From starting QEMU until the guest powered off: boot and recording.
    pub boot_and_record: f64,
    /// The key searches and predictions on the host.
    pub check: f64,
}

/// One layout recorded in a guest and checked on the host (the part of
/// [`LayoutResult`] the record keeps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayoutCheck {
    /// Layout name ([`LayoutName::name`]).
    pub layout: String,
    /// `tcp` or `udp`.
    pub proto: String,
    /// Bound address.
    pub bind: String,
    /// Group size.
    pub listeners: u32,
    /// Closed before traffic.
    pub closed: Vec<u32>,
    /// The release in the trace (the guest's `uname -r`).
    pub kernel: String,
    /// Events recorded.
    pub events: usize,
    /// Events that recovered the key.
    pub train: usize,
    /// Keys that fit the training events (1: pinned down).
    pub candidates: u64,
    /// The recovered key, hex.
    pub secret: Option<String>,
    /// Events predicted.
    pub tested: usize,
    /// Predictions equal to the kernel's choice.
    pub agreed: usize,
    /// The first disagreements, if any.
    pub mismatches: Vec<String>,
}

impl From<LayoutResult> for LayoutCheck {
    fn from(r: LayoutResult) -> Self {
        LayoutCheck {
            layout: r.layout,
            proto: r.proto,
            bind: r.bind,
            listeners: r.listeners,
            closed: r.closed,
            kernel: r.kernel,
            events: r.events,
            train: r.train,
            candidates: r.candidates,
            secret: r.secret,
            tested: r.tested,
            agreed: r.agreed,
            mismatches: r.mismatches,
        }
    }
}

/// One kernel's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KernelRow {
    /// As asked for (`6.1`).
    pub kernel: String,
    /// Debian suite.
    pub suite: String,
    /// Package and version, when resolved.
    pub package: Option<String>,
    /// Package version.
    pub package_version: Option<String>,
    /// The release the booted guest reported (`uname -r`); `None` unless it booted.
    pub release: Option<String>,
    /// The booted guest's `/proc/version`, which names the exact build.
    pub version: Option<String>,
    /// The model profile of that release.
    pub profile: Option<String>,
    /// The guest booted and reported its release.
    pub booted: bool,
    /// Layouts `verify` records.
    pub layouts_expected: usize,
    /// Per layout recorded in the guest and checked on the host.
    pub layouts: Vec<LayoutCheck>,
    /// Random layouts (`--layouts N`) to build in the guest, and as many
    /// random call logs to replay there; 0: none.
    #[serde(default)]
    pub random_layouts_expected: u32,
    /// The guest's answers for the layouts, compared with the model on the host.
    #[serde(default)]
    pub random_layouts: Option<LayoutsAgreement>,
    /// The guest's answers for the call logs (every call), compared likewise.
    #[serde(default)]
    pub random_call_logs: Option<LayoutsAgreement>,
    /// Connections and datagrams recorded in the guest.
    pub events: usize,
    /// Predicted on the host (the events not used to recover the key).
    pub tested: usize,
    /// Predictions equal to the guest kernel's choice.
    pub agreed: usize,
    /// The first step that failed.
    pub failure: Option<Failure>,
    /// Booted, every layout recorded and predicted, all agreeing.
    pub verified: bool,
    /// Time per step.
    pub seconds: Timings,
}

impl KernelRow {
    /// A row for a kernel that has not got anywhere yet.
    pub fn new(req: &Request, layouts_expected: usize) -> KernelRow {
        KernelRow {
            kernel: req.name.clone(),
            suite: req.suite.clone(),
            package: None,
            package_version: None,
            release: None,
            version: None,
            profile: None,
            booted: false,
            layouts_expected,
            layouts: Vec::new(),
            random_layouts_expected: 0,
            random_layouts: None,
            random_call_logs: None,
            events: 0,
            tested: 0,
            agreed: 0,
            failure: None,
            verified: false,
            seconds: Timings::default(),
        }
    }

    /// Records the first failure (later ones are consequences).
    pub fn fail(&mut self, step: Step, message: impl Into<String>) {
        if self.failure.is_none() {
            self.failure = Some(Failure {
                step,
                message: message.into(),
            });
        }
        self.verified = false;
    }

    /// Sums the layouts and decides [`KernelRow::verified`]: only a guest
    /// that booted and reported its release, with no failed step, every
    /// layout recorded and checked, and every prediction agreeing.
    pub fn settle(&mut self) {
        self.events = self.layouts.iter().map(|l| l.events).sum();
        self.tested = self.layouts.iter().map(|l| l.tested).sum();
        self.agreed = self.layouts.iter().map(|l| l.agreed).sum();
        if self.failure.is_none() && self.booted {
            if self.layouts.len() != self.layouts_expected {
                let n = self.layouts.len();
                let want = self.layouts_expected;
                self.fail(Step::Check, format!("{n} of {want} layouts were checked"));
            } else if let Some(l) = self
                .layouts
                .iter()
                .find(|l| l.tested == 0 || l.agreed != l.tested)
            {
                let what = if l.secret.is_none() {
                    format!(
                        "layout {}: the key was not pinned down ({} candidates)",
                        l.layout, l.candidates
                    )
                } else {
                    format!(
                        "layout {}: the model agreed with {} of {} choices",
                        l.layout, l.agreed, l.tested
                    )
                };
                self.fail(Step::Check, what);
            } else if self.random_layouts_expected > 0 {
                let want = self.random_layouts_expected;
                // Not compared yet (None): `check_random` runs after the
                // curated layouts' check and settles the row again
                // (`verified` below still asks for the comparison).
                let off = self.randoms().into_iter().find_map(|(draw, r)| {
                    let r = r.as_ref()?;
                    let first = r.disagreements.first().map_or("", String::as_str);
                    (r.layouts != want || r.agreed != r.layouts).then(|| {
                        format!(
                            "random {}: the model agreed on {} of {} ({want} asked for); {first}",
                            draw.things, r.agreed, r.layouts
                        )
                    })
                });
                if let Some(what) = off {
                    self.fail(Step::Check, what);
                }
            }
        }
        self.verified = self.failure.is_none()
            && self.booted
            && self.release.is_some()
            && self.layouts_expected > 0
            && self.layouts.len() == self.layouts_expected
            && self.tested > 0
            && self.agreed == self.tested
            && (self.random_layouts_expected == 0
                || self.randoms().iter().all(|(_, r)| {
                    r.as_ref().is_some_and(|r| {
                        r.layouts == self.random_layouts_expected && r.agreed == r.layouts
                    })
                }));
    }

    /// Both random draws' results, with the draw's words.
    fn randoms(&self) -> [(&'static Words, &Option<LayoutsAgreement>); 2] {
        [
            (&Layouts::WORDS, &self.random_layouts),
            (&CallLogs::WORDS, &self.random_call_logs),
        ]
    }
}

/// What the guest printed on its data port, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuestOutput {
    /// `@@RPL-BEGIN` was seen: `/init` ran.
    pub began: bool,
    /// The release the guest reported.
    pub release: Option<String>,
    /// The guest's `/proc/version` (Debian's package version is in it).
    pub version: Option<String>,
    /// CPUs the guest saw.
    pub cpus: Option<u32>,
    /// Per layout, in order: the trace text, or why recording failed.
    pub traces: Vec<(String, Result<String, String>)>,
    /// `@@RPL-DONE` was seen: every layout was attempted.
    pub done: bool,
}

/// Parses the guest's data port. The protocol, one marker per line
/// (`\r` ignored):
///
/// ```text
/// @@RPL-BEGIN 1
/// @@RPL-KERNEL <uname -r>
/// @@RPL-VERSION </proc/version>
/// @@RPL-CPUS <n>
/// @@RPL-TRACE <layout>      the trace JSON follows, up to
/// @@RPL-END <layout>
/// @@RPL-FAILED <layout> rc=<status>   the recorder's stderr follows, up to
/// @@RPL-END <layout>
/// @@RPL-DONE
/// ```
///
/// A section cut off by the end of the output (the guest died or was
/// killed) becomes a failure of that layout.
pub fn parse_guest_output(text: &str) -> GuestOutput {
    let mut out = GuestOutput::default();
    // (layout, failed?, body)
    let mut open: Option<(String, Option<String>, String)> = None;
    for raw in text.split('\n') {
        let line = raw.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix(MARK) {
            let (word, arg) = rest.split_once(' ').unwrap_or((rest, ""));
            let arg = arg.trim();
            match word {
                "END" => {
                    if let Some((name, failed, body)) = open.take() {
                        let result = match failed {
                            None => Ok(body),
                            Some(status) => Err(format!(
                                "the recorder exited with {status}: {}",
                                body.trim()
                            )),
                        };
                        out.traces.push((name, result));
                    }
                    continue;
                }
                "BEGIN" => out.began = true,
                "KERNEL" if !arg.is_empty() => out.release = Some(arg.to_string()),
                "VERSION" if !arg.is_empty() => out.version = Some(arg.to_string()),
                "CPUS" => out.cpus = arg.parse().ok(),
                "TRACE" => open = Some((arg.to_string(), None, String::new())),
                "FAILED" => {
                    let (name, status) = arg.split_once(' ').unwrap_or((arg, "rc=?"));
                    open = Some((name.to_string(), Some(status.to_string()), String::new()));
                }
                "DONE" => out.done = true,
                _ => {}
            }
            if word != "TRACE" && word != "FAILED" {
                if let Some((name, _, _)) = open.take() {
                    out.traces
                        .push((name, Err("the trace was cut off by another marker".into())));
                }
            }
            continue;
        }
        if let Some((_, _, body)) = open.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some((name, _, _)) = open {
        out.traces.push((
            name,
            Err("the output ended inside this layout (the guest stopped or was killed while recording)".into()),
        ));
    }
    out
}

/// How the QEMU process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootEnd {
    /// It exited by itself (the guest powered off, or QEMU gave up).
    Exited {
        /// Its exit status (`None`: killed by a signal).
        code: Option<i32>,
    },
    /// It ran past the timeout and was killed.
    TimedOut {
        /// The timeout, in seconds.
        after: u64,
    },
    /// It could not be started.
    NotStarted(String),
}

/// One guest run, as seen from the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestRun {
    /// How QEMU ended.
    pub end: BootEnd,
    /// The data port's text.
    pub output: String,
    /// The last lines of the console (kernel messages), for the report.
    pub console_tail: String,
}

/// Fills `row` from one guest run: the release, and per trace the result of
/// `check` (the host's recovery and prediction). A run that did not reach
/// `/init` and report the release fails at [`Step::Boot`], whatever else it
/// printed; nothing from it is checked.
pub fn assess(
    row: &mut KernelRow,
    run: &GuestRun,
    expected: &[&str],
    check: &mut dyn FnMut(&str, &str) -> Result<LayoutCheck, String>,
) {
    let out = parse_guest_output(&run.output);
    let how = match &run.end {
        BootEnd::Exited { code: Some(c) } => format!("QEMU exited with status {c}"),
        BootEnd::Exited { code: None } => "QEMU was killed by a signal".to_string(),
        BootEnd::TimedOut { after } => {
            format!("the guest was still running after {after} s and QEMU was killed")
        }
        BootEnd::NotStarted(why) => why.clone(),
    };
    let tail = if run.console_tail.trim().is_empty() {
        String::new()
    } else {
        format!("; console ends: {}", one_line(&run.console_tail, 300))
    };
    if let BootEnd::NotStarted(_) = run.end {
        row.fail(Step::Boot, how);
        row.settle();
        return;
    }
    let Some(release) = out.release.clone().filter(|_| out.began) else {
        row.fail(
            Step::Boot,
            format!("the guest never reached /init and reported its release ({how}){tail}"),
        );
        row.settle();
        return;
    };
    row.booted = true;
    row.profile = reuseport_model::Profile::for_release(&release)
        .ok()
        .map(|p| p.release.to_string());
    row.release = Some(release.clone());
    row.version = out.version.clone();
    for name in expected {
        match out.traces.iter().find(|(n, _)| n == name) {
            None => {
                let why = if out.done {
                    "the guest did not record it".to_string()
                } else {
                    format!("the guest stopped before recording it ({how})")
                };
                row.fail(Step::Record, format!("layout {name}: {why}{tail}"));
            }
            Some((_, Err(e))) => row.fail(Step::Record, format!("layout {name}: {e}")),
            Some((_, Ok(json))) => match check(name, json) {
                Ok(mut r) => {
                    if r.kernel != release {
                        row.fail(
                            Step::Check,
                            format!(
                                "layout {name}: the trace says kernel {} but the guest reported {release}",
                                r.kernel
                            ),
                        );
                    }
                    r.layout = name.to_string();
                    row.layouts.push(r);
                }
                Err(e) => row.fail(Step::Check, format!("layout {name}: {e}")),
            },
        }
    }
    row.settle();
}

fn one_line(s: &str, max: usize) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.len() <= max {
        s
    } else {
        let mut start = s.len() - max;
        while !s.is_char_boundary(start) {
            start += 1;
        }
        format!("…{}", &s[start..])
    }
}

/// The `/init` of the guest: mounts, `lo` up, then `reuseport-agent record`
/// per layout with its arguments, every result on `/dev/ttyS1` between
/// markers ([`parse_guest_output`]), then power off.
pub fn init_script(layouts: &[(String, Vec<String>)]) -> String {
    let mut s = String::from(
        "#!/bin/busybox sh\n\
         # /init of the verify --kernels guest, written by reuseport-agent (agent/src/kernels.rs).\n\
         /bin/busybox --install -s /bin\n\
         export PATH=/bin\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         ip link set lo up\n\
         stty -F /dev/ttyS1 raw -echo 2>/dev/null\n\
         exec 3>/dev/ttyS1\n\
         say() { echo \"$*\" >&3; }\n\
         say @@RPL-BEGIN 1\n\
         say @@RPL-KERNEL \"$(cat /proc/sys/kernel/osrelease)\"\n\
         say @@RPL-VERSION \"$(cat /proc/version)\"\n\
         say @@RPL-CPUS \"$(nproc)\"\n",
    );
    for (name, args) in layouts {
        let quoted: Vec<String> = args.iter().map(|a| sh_quote(a)).collect();
        let name_q = sh_quote(name);
        s.push_str(&format!(
            "if /reuseport-agent {} --output /tmp/trace.json 2>/tmp/record.err; then\n  \
               say @@RPL-TRACE {name_q}; cat /tmp/trace.json >&3; echo >&3\n\
             else\n  \
               say @@RPL-FAILED {name_q} rc=$?; tail -c 2000 /tmp/record.err >&3; echo >&3\n\
             fi\n\
             say @@RPL-END {name_q}\n\
             rm -f /tmp/trace.json /tmp/record.err\n",
            quoted.join(" ")
        ));
    }
    s.push_str("say @@RPL-DONE\nexec 3>&-\nsync\npoweroff -f\n");
    s
}

fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b".,:_=/+-".contains(&c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Whether `bytes` is an x86-64 ELF executable with no program interpreter
/// (statically linked, so it runs in an initramfs without a libc).
pub fn is_static_x86_64_elf(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[o..o + 8]);
        u64::from_le_bytes(b)
    };
    if u16_at(18) != 0x3e {
        return Err("not an x86-64 executable".into());
    }
    let (phoff, phentsize, phnum) = (
        u64_at(32) as usize,
        u16_at(54) as usize,
        u16_at(56) as usize,
    );
    for i in 0..phnum {
        let o = phoff + i * phentsize;
        if o + 4 > bytes.len() {
            return Err("its program headers are cut off".into());
        }
        if u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]) == 3 {
            return Err("it is dynamically linked (it names a program interpreter)".into());
        }
    }
    Ok(())
}

/// From `apt-cache show` output, the names in the first stanza's `Depends`
/// (first alternative of each, versions dropped).
pub fn depends(show: &str) -> Vec<String> {
    let stanza = show.split("\n\n").next().unwrap_or("");
    let Some(line) = stanza.lines().find_map(|l| l.strip_prefix("Depends:")) else {
        return Vec::new();
    };
    line.split(',')
        .filter_map(|d| d.split('|').next())
        .filter_map(|d| d.split_whitespace().next())
        .map(|d| d.split(':').next().unwrap_or(d).to_string())
        .collect()
}

/// A field of the first stanza of `apt-cache show` output.
pub fn field(show: &str, name: &str) -> Option<String> {
    let stanza = show.split("\n\n").next().unwrap_or("");
    stanza
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
}

/// The release of a kernel file from its path in the package:
/// `boot/vmlinuz-<release>`, or `usr/lib/modules/<release>/vmlinuz` (the
/// `linux-binary-*` packages of 7.x).
pub fn release_from_path(path: &str) -> Option<String> {
    let path = path.trim_start_matches("./");
    if let Some(r) = path.strip_prefix("boot/vmlinuz-") {
        return (!r.is_empty() && !r.contains('/')).then(|| r.to_string());
    }
    let rest = path
        .strip_prefix("usr/lib/modules/")
        .or_else(|| path.strip_prefix("lib/modules/"))?;
    let (release, file) = rest.split_once('/')?;
    (file == "vmlinuz" && !release.is_empty()).then(|| release.to_string())
}

// --- the steps that touch the machine -----------------------------------------------------

/// The source tree this agent was built from, if it is still there.
fn workspace() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    dir.join("Cargo.toml").is_file().then_some(dir)
}

/// Runs a command with stdin empty and stdout and stderr to files, killed
/// after `timeout`. Returns its stdout (at most `max` bytes) or a message
/// with the tail of its stderr.
fn run_bounded(
    cmd: &mut Command,
    what: &str,
    timeout: Duration,
    logs: &Path,
    max: u64,
) -> Result<String, String> {
    let out_path = logs.join("cmd.out");
    let err_path = logs.join("cmd.err");
    let open = |p: &Path| {
        fs::File::create(p).map_err(|e| format!("{what}: cannot create {}: {e}", p.display()))
    };
    cmd.stdin(Stdio::null())
        .stdout(open(&out_path)?)
        .stderr(open(&err_path)?);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what}: cannot start it: {e}"))?;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{what}: still running after {} s, killed",
                    timeout.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let stdout = read_limited(&out_path, max).unwrap_or_default();
    if !status.success() {
        let err = read_tail(&err_path, 1500);
        return Err(format!(
            "{what} failed ({status}): {}",
            one_line(&err, 1500)
        ));
    }
    Ok(stdout)
}

/// QEMU gets SIGKILL when the agent dies (Ctrl-C, a test runner's
/// timeout), so no guest is ever left running.
fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}

fn read_limited(path: &Path, max: u64) -> std::io::Result<String> {
    let mut s = Vec::new();
    fs::File::open(path)?.take(max).read_to_end(&mut s)?;
    Ok(String::from_utf8_lossy(&s).into_owned())
}

fn read_tail(path: &Path, max: u64) -> String {
    let Ok(mut f) = fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    use std::io::Seek;
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(max)));
    let mut s = Vec::new();
    let _ = f.take(max).read_to_end(&mut s);
    String::from_utf8_lossy(&s).into_owned()
}

const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Resolves, downloads and caches one suite's kernel image.
fn fetch(
    req: &Request,
    args: &KernelsArgs,
    cache: &Path,
    err: &mut dyn Write,
) -> Result<Image, String> {
    let dir = cache.join(&req.suite);
    let meta = dir.join("image.json");
    if !args.refresh {
        if let Ok(text) = fs::read_to_string(&meta) {
            if let Ok(img) = serde_json::from_str::<Image>(&text) {
                let img = Image {
                    vmlinuz: dir.join(&img.vmlinuz),
                    ..img
                };
                if img.vmlinuz.is_file() {
                    let _ = writeln!(
                        err,
                        "verify --kernels: {}: cached {} ({})",
                        req.name, img.package, img.version
                    );
                    return Ok(img);
                }
            }
        }
    }
    if !Path::new(KEYRING).is_file() {
        return Err(format!("{KEYRING} is missing, so Debian's archive cannot be authenticated; install the debian-archive-keyring package"));
    }
    for tool in ["apt-get", "apt-cache", "dpkg-deb", "tar"] {
        if which(tool).is_none() {
            return Err(format!("{tool} not found; fetching Debian's kernels needs apt and dpkg (a Debian or Ubuntu host)"));
        }
    }
    let apt = cache.join("apt").join(&req.suite);
    let _ = fs::remove_dir_all(&apt);
    // The lists and the package go whatever happens (about 50 MB and 70–110 MB):
    // only the kernel stays.
    let result = download(req, args, &dir, &apt, err);
    let _ = fs::remove_dir_all(&apt);
    let _ = fs::remove_dir(cache.join("apt"));
    result
}

/// Whether a kernel version or release (`6.1.176-1`, `6.1.0-50-amd64`,
/// `7.2.13+deb14-amd64`) is of `series` (`6.1`).
pub fn in_series(version: &str, series: &str) -> bool {
    version
        .strip_prefix(series)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '-', '+']))
}

/// `fetch` past the cache: apt under its own configuration in `apt`, the
/// kernel into `dir`.
fn download(
    req: &Request,
    args: &KernelsArgs,
    dir: &Path,
    apt: &Path,
    err: &mut dyn Write,
) -> Result<Image, String> {
    let meta = dir.join("image.json");
    let mkdir =
        |p: &Path| fs::create_dir_all(p).map_err(|e| format!("cannot create {}: {e}", p.display()));
    for d in [
        "lists/partial",
        "cache/archives/partial",
        "empty",
        "download",
        "logs",
    ] {
        mkdir(&apt.join(d))?;
    }
    let abs = fs::canonicalize(apt).map_err(|e| format!("{}: {e}", apt.display()))?;
    fs::write(
        abs.join("sources.list"),
        format!(
            "deb [signed-by={KEYRING}] {} {} main\n",
            args.mirror, req.suite
        ),
    )
    .map_err(|e| format!("cannot write the apt sources: {e}"))?;
    // A configuration of its own: no /etc/apt/apt.conf.d (its hooks and extra
    // index targets), no dpkg status, amd64 and main only.
    let conf = format!(
        "Dir::Etc::Parts \"{d}/empty\";\nDir::Etc::Main \"{d}/empty/none\";\nDir::Etc::SourceList \"{d}/sources.list\";\n\
         Dir::Etc::SourceParts \"{d}/empty\";\nDir::Etc::Preferences \"{d}/empty/none\";\nDir::Etc::PreferencesParts \"{d}/empty\";\n\
         Dir::State \"{d}\";\nDir::State::Lists \"{d}/lists\";\nDir::State::status \"/dev/null\";\nDir::Cache \"{d}/cache\";\n\
         Dir::Log \"{d}/logs\";\nAcquire::Languages \"none\";\nAPT::Architectures {{ \"amd64\"; }};\n\
         APT::Sandbox::User \"root\";\nAcquire::Check-Valid-Until \"false\";\nAcquire::Retries \"2\";\nAcquire::http::Timeout \"60\";\n",
        d = abs.display()
    );
    let conf_path = abs.join("apt.conf");
    fs::write(&conf_path, conf).map_err(|e| format!("cannot write the apt configuration: {e}"))?;
    let logs = abs.join("logs");
    let apt_cmd = |prog: &str| {
        let mut c = Command::new(prog);
        c.env("APT_CONFIG", &conf_path)
            .env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    let _ = writeln!(
        err,
        "verify --kernels: {}: apt-get update ({} {} main)",
        req.name, args.mirror, req.suite
    );
    run_bounded(
        apt_cmd("apt-get").args(["-q", "update"]),
        "apt-get update",
        Duration::from_secs(600),
        &logs,
        1 << 20,
    )?;
    let show = |pkg: &str| {
        run_bounded(
            apt_cmd("apt-cache").args(["show", "--no-all-versions", pkg]),
            &format!("apt-cache show {pkg}"),
            Duration::from_secs(120),
            &logs,
            1 << 20,
        )
    };
    let meta_show = show("linux-image-amd64")?;
    let image = depends(&meta_show)
        .into_iter()
        .find(|d| d.starts_with("linux-image-"))
        .ok_or_else(|| {
            format!(
                "linux-image-amd64 in {} depends on no linux-image-* package",
                req.suite
            )
        })?;
    let image_show = show(&image)?;
    // From 7.x the image package is an empty dependency package; the kernel
    // itself is in linux-binary-*.
    let package = depends(&image_show)
        .into_iter()
        .find(|d| d.starts_with("linux-binary-"))
        .unwrap_or(image);
    let pkg_show = if package.starts_with("linux-binary-") {
        show(&package)?
    } else {
        image_show
    };
    let version = field(&pkg_show, "Version").unwrap_or_default();
    let wrong_series = |found: &str| {
        match &req.series {
        Some(series) if !in_series(found, series) => Some(format!(
            "{} ships {found}, not a {series} kernel (bullseye has 5.10, bookworm 6.1, trixie 6.12, sid the newest)",
            req.suite
        )),
        _ => None,
    }
    };
    if let Some(e) = wrong_series(&version) {
        return Err(e);
    }
    let size: u64 = field(&pkg_show, "Size")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if size > MAX_PACKAGE_BYTES {
        return Err(format!(
            "{package} is {} MB, more than the {} MB this command downloads",
            size >> 20,
            MAX_PACKAGE_BYTES >> 20
        ));
    }
    let _ = writeln!(
        err,
        "verify --kernels: {}: downloading {package} {version} ({} MB)",
        req.name,
        size >> 20
    );
    let download = abs.join("download");
    run_bounded(
        apt_cmd("apt-get")
            .args(["-q", "download", &package])
            .current_dir(&download),
        &format!("apt-get download {package}"),
        Duration::from_secs(1200),
        &logs,
        1 << 20,
    )?;
    let deb = fs::read_dir(&download)
        .map_err(|e| format!("{}: {e}", download.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| format!("apt-get download {package} left no .deb"))?;
    let extract = abs.join("extract");
    mkdir(&extract)?;
    let script = "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --wildcards '*vmlinuz*'";
    run_bounded(
        Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&deb)
            .arg(&extract),
        &format!("extracting the kernel from {}", deb.display()),
        Duration::from_secs(300),
        &logs,
        1 << 20,
    )?;
    let mut found = None;
    for rel in ["boot", "usr/lib/modules", "lib/modules"] {
        let base = extract.join(rel);
        let Ok(entries) = fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let candidates = if p.is_dir() {
                vec![p.join("vmlinuz")]
            } else {
                vec![p]
            };
            for c in candidates {
                let inside = c
                    .strip_prefix(&extract)
                    .map(|x| x.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if let (true, Some(r)) = (c.is_file(), release_from_path(&inside)) {
                    found = Some((c, r));
                }
            }
        }
    }
    let (file, release) = found
        .ok_or_else(|| format!("{package} holds no boot/vmlinuz-* or usr/lib/modules/*/vmlinuz"))?;
    if let Some(e) = wrong_series(&release) {
        return Err(e);
    }
    mkdir(dir)?;
    let vmlinuz = dir.join(format!("vmlinuz-{release}"));
    fs::copy(&file, &vmlinuz)
        .map_err(|e| format!("cannot copy the kernel into {}: {e}", dir.display()))?;
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("vmlinuz-") && p != vmlinuz {
            let _ = fs::remove_file(&p);
        }
    }
    let mut img = Image {
        package,
        version,
        bytes: fs::metadata(&vmlinuz).map(|m| m.len()).unwrap_or(0),
        // Stored relative to the suite's directory, so the cache can move.
        vmlinuz: PathBuf::from(format!("vmlinuz-{release}")),
        release,
        fetched: crate::cmd::record::rfc3339(SystemTime::now()),
    };
    fs::write(
        &meta,
        serde_json::to_string_pretty(&img).unwrap_or_default(),
    )
    .map_err(|e| format!("cannot write {}: {e}", meta.display()))?;
    img.vmlinuz = vmlinuz;
    Ok(img)
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}

/// The static agent for the guests: `--guest-agent`, or built from the
/// source tree.
fn guest_agent(args: &KernelsArgs, scratch: &Path, err: &mut dyn Write) -> Result<PathBuf, String> {
    let path = match &args.guest_agent {
        Some(p) => p.clone(),
        None => {
            let ws = workspace().ok_or("no --guest-agent given and the source tree this agent was built from is gone; build one with `cargo build --release --target x86_64-unknown-linux-musl -p reuseport-agent --no-default-features` and pass it with --guest-agent")?;
            let _ = writeln!(err, "verify --kernels: building the static guest agent (cargo build --release --target x86_64-unknown-linux-musl)");
            run_bounded(
                Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
                    .args(["build", "--release", "-q", "--target", "x86_64-unknown-linux-musl", "-p", "reuseport-agent", "--no-default-features"])
                    .current_dir(&ws),
                "building the static guest agent (needs `rustup target add x86_64-unknown-linux-musl`, done by scripts/setup.sh)",
                Duration::from_secs(1800),
                scratch,
                1 << 20,
            )?;
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| ws.join("target"));
            target.join("x86_64-unknown-linux-musl/release/reuseport-agent")
        }
    };
    let bytes = fs::read(&path).map_err(|e| format!("guest agent {}: {e}", path.display()))?;
    is_static_x86_64_elf(&bytes).map_err(|e| {
        format!("guest agent {}: {e}; build it with `cargo build --release --target x86_64-unknown-linux-musl -p reuseport-agent --no-default-features`", path.display())
    })?;
    Ok(path)
}

/// Packs the initramfs: `/init`, `/bin/busybox`, `/reuseport-agent`.
fn initramfs(
    agent: &Path,
    layouts: &[(String, Vec<String>)],
    dir: &Path,
) -> Result<PathBuf, String> {
    let busybox = Path::new("/bin/busybox");
    let bytes = fs::read(busybox).map_err(|_| {
        "/bin/busybox is missing; install busybox-static (scripts/setup.sh does)".to_string()
    })?;
    is_static_x86_64_elf(&bytes).map_err(|e| {
        format!("/bin/busybox: {e}; install busybox-static (scripts/setup.sh does)")
    })?;
    if which("cpio").is_none() {
        return Err("cpio not found; install it (scripts/setup.sh does)".into());
    }
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    let mk = |p: &Path| fs::create_dir_all(p).map_err(|e| format!("{}: {e}", p.display()));
    for d in ["bin", "proc", "sys", "dev", "tmp"] {
        mk(&root.join(d))?;
    }
    let copy = |from: &Path, to: &Path| {
        fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("copying {}: {e}", from.display()))
    };
    copy(busybox, &root.join("bin/busybox"))?;
    copy(agent, &root.join("reuseport-agent"))?;
    fs::write(root.join("init"), init_script(layouts))
        .map_err(|e| format!("writing /init: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in ["init", "bin/busybox", "reuseport-agent"] {
            fs::set_permissions(root.join(f), fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("chmod {f}: {e}"))?;
        }
    }
    let cpio = dir.join("initramfs.cpio");
    let script = "cd \"$1\" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 > \"$2\"";
    run_bounded(
        Command::new("sh")
            .args(["-c", script, "sh"])
            .arg(&root)
            .arg(&cpio),
        "cpio",
        Duration::from_secs(120),
        dir,
        1 << 16,
    )?;
    let _ = fs::remove_dir_all(&root);
    Ok(cpio)
}

/// Boots `vmlinuz` with `initrd` on `cpus` vCPUs, the data port going to a
/// file in `dir`.
fn boot(
    vmlinuz: &Path,
    initrd: &Path,
    dir: &Path,
    timeout: u64,
    accel: Accel,
    cpus: u32,
) -> GuestRun {
    let data = dir.join("guest.out");
    let console = dir.join("console.log");
    let _ = fs::remove_file(&data);
    let _ = fs::remove_file(&console);
    let qemu = "qemu-system-x86_64";
    if which(qemu).is_none() {
        return GuestRun {
            end: BootEnd::NotStarted(format!(
                "{qemu} not found; install qemu-system-x86 (scripts/setup.sh does)"
            )),
            output: String::new(),
            console_tail: String::new(),
        };
    }
    let mut cmd = Command::new(qemu);
    cmd.args(["-accel", accel.name()])
        .args([
            "-m",
            "512",
            "-smp",
            &cpus.to_string(),
            "-display",
            "none",
            "-monitor",
            "none",
            "-nic",
            "none",
            "-no-reboot",
        ])
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 panic=-1 quiet"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-serial")
        .arg(format!("file:{}", data.display()))
        .stdin(Stdio::null());
    die_with_parent(&mut cmd);
    let qlog = dir.join("qemu.log");
    match fs::File::create(&qlog).and_then(|f| Ok((f.try_clone()?, f))) {
        Ok((a, b)) => {
            cmd.stdout(a).stderr(b);
        }
        Err(_) => {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
    let end = match cmd.spawn() {
        Err(e) => BootEnd::NotStarted(format!("{qemu} could not be started: {e}")),
        Ok(mut child) => {
            let t0 = Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(s)) => break BootEnd::Exited { code: s.code() },
                    Ok(None) if t0.elapsed().as_secs() >= timeout => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break BootEnd::TimedOut { after: timeout };
                    }
                    Ok(None) if crate::signals::stopped() => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break BootEnd::NotStarted("stopped by a signal".into());
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break BootEnd::NotStarted(format!("waiting for {qemu}: {e}"));
                    }
                }
            }
        }
    };
    let mut console_tail = read_tail(&console, 600);
    let qemu_says = read_tail(&qlog, 400);
    if !qemu_says.trim().is_empty() {
        console_tail = format!("{console_tail} [qemu: {}]", qemu_says.trim());
    }
    GuestRun {
        end,
        output: read_limited(&data, MAX_GUEST_OUTPUT).unwrap_or_default(),
        console_tail,
    }
}

#[derive(Parser)]
struct VerifyOnly {
    #[command(flatten)]
    args: VerifyArgs,
}

/// Recovers and predicts one guest trace on the host, as `verify --trace`.
fn check_on_host(
    path: &Path,
    verify: &VerifyArgs,
    err: &mut dyn Write,
) -> Result<LayoutCheck, String> {
    let mut argv = vec![
        "verify".to_string(),
        "--trace".into(),
        path.display().to_string(),
    ];
    argv.extend(["--train".into(), verify.train().to_string()]);
    if let Some(t) = verify.threads {
        argv.extend(["--threads".into(), t.to_string()]);
    }
    let args = VerifyOnly::try_parse_from(argv)
        .map_err(|e| e.to_string())?
        .args;
    let report = crate::cmd::verify::run(&args, std::io::sink(), err).map_err(|e| e.to_string())?;
    report
        .layouts
        .into_iter()
        .next()
        .map(LayoutCheck::from)
        .ok_or_else(|| "no result".to_string())
}

/// The kernel cache of `args` (`--kernel-cache`, or `.cache/kernels` in the
/// source tree), created and made absolute: cpio runs in another
/// directory, and QEMU is given file paths.
fn cache_dir(args: &KernelsArgs) -> Result<PathBuf, KernelsError> {
    let cache = args.kernel_cache.clone().unwrap_or_else(|| {
        workspace()
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".cache/kernels")
    });
    let io = |source| KernelsError::Io {
        what: cache.display().to_string(),
        source,
    };
    fs::create_dir_all(&cache).map_err(io)?;
    fs::canonicalize(&cache).map_err(io)
}

/// One run's own directory under `CACHE/runs/`, named `PID-N`, locked
/// (flock on its `.lock`) while the run lives: two runs at once never share
/// a directory (they did, and one of them failed at boot when the other
/// removed its files). Directories of earlier runs whose lock is free are
/// removed when a run starts, as a run used to remove its predecessor's.
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
    /// Held while this lives.
    _lock: fs::File,
}

/// Makes this run's [`RunDir`] under `cache`, removing those of runs that
/// have ended.
pub fn run_dir(cache: &Path) -> Result<RunDir, String> {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let runs = cache.join("runs");
    let flock = |f: &fs::File| {
        // SAFETY: flock on a descriptor the caller owns.
        unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
    };
    for e in fs::read_dir(&runs).into_iter().flatten().flatten() {
        let lock = e.path().join(".lock");
        // Only this layout's directories; a free lock is a run that ended.
        if let Ok(f) = fs::File::open(&lock) {
            if flock(&f) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    let name = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let path = runs.join(name);
    let _ = fs::remove_dir_all(&path);
    fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lock =
        fs::File::create(path.join(".lock")).map_err(|e| format!("{}: {e}", path.display()))?;
    if !flock(&lock) {
        return Err(format!("{}: cannot lock {}", path.display(), ".lock"));
    }
    Ok(RunDir { path, _lock: lock })
}

/// vCPUs of a `verify --kernels` guest.
pub const VERIFY_GUEST_CPUS: u32 = 2;
/// vCPUs of a `scenario --kernel` guest: the four CPUs of the curated
/// scenarios (`incoming-cpu` pins a worker and a client to each).
pub const SCENARIO_GUEST_CPUS: u32 = 4;

/// A scenario run inside a booted guest ([`run_scenario`]).
#[derive(Debug, Clone)]
pub struct GuestScenario {
    /// The trace the guest's agent wrote (JSON text, not yet checked).
    pub trace: String,
    /// The image booted.
    pub image: Image,
    /// The guest's `uname -r`.
    pub release: String,
    /// The guest's `/proc/version`.
    pub version: Option<String>,
    /// CPUs the guest saw.
    pub cpus: Option<u32>,
    /// From starting QEMU until the guest powered off.
    pub seconds: f64,
}

/// Boots the one kernel `args.kernels` names on [`SCENARIO_GUEST_CPUS`]
/// vCPUs and runs `reuseport-agent scenario` there with `guest_argv`
/// (without `--output`), bringing its trace back: fetch (or the cache), the
/// static guest agent, an initramfs whose `/init` runs that one command, the
/// boot, and the data port read as `verify --kernels` reads it. Err: the
/// step that failed and why.
pub fn run_scenario(
    args: &KernelsArgs,
    guest_argv: &[String],
    err: &mut dyn Write,
) -> Result<GuestScenario, String> {
    let list = args.kernels.clone().unwrap_or_default();
    let reqs = requests(&list).map_err(|e| match e {
        KernelsError::Unknown(k) => format!(
            "`{k}` is not a Debian kernel this command boots; name one of 5.10, 6.1, 6.12, sid (or bullseye, bookworm, trixie, or sid's series such as 7.2)"
        ),
        e => e.to_string(),
    })?;
    let [req] = reqs.as_slice() else {
        return Err(format!(
            "--kernel names one kernel to boot; `{}` names {}",
            list.join(","),
            reqs.len()
        ));
    };
    let cache = cache_dir(args).map_err(|e| e.to_string())?;
    let run = run_dir(&cache)?;
    let dir = run.path.join(format!("scenario-{}", req.suite));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let image = fetch(req, args, &cache, err).map_err(|e| format!("fetch: {e}"))?;
    let scratch = dir.join("initramfs");
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let name = "scenario".to_string();
    let initrd = guest_agent(args, &scratch, err)
        .and_then(|a| initramfs(&a, &[(name.clone(), guest_argv.to_vec())], &scratch))
        .map_err(|e| format!("initramfs: {e}"))?;
    let _ = writeln!(
        err,
        "scenario --kernel {}: booting {} under QEMU ({}, {SCENARIO_GUEST_CPUS} vCPUs, at most {} s): reuseport-agent {}",
        req.name,
        image.release,
        args.accel.name(),
        args.boot_timeout,
        guest_argv.join(" ")
    );
    let t0 = Instant::now();
    let run = boot(
        &image.vmlinuz,
        &initrd,
        &dir,
        args.boot_timeout,
        args.accel,
        SCENARIO_GUEST_CPUS,
    );
    let seconds = t0.elapsed().as_secs_f64();
    // Judged as verify's guests are (booted, reported its release, the
    // command's output between its markers); the trace is only kept, there
    // is nothing to recover and predict.
    let mut row = KernelRow::new(req, 1);
    let mut trace = None;
    assess(&mut row, &run, &[name.as_str()], &mut |_, json| {
        trace = Some(json.to_string());
        Err(String::new())
    });
    if let (Some(trace), Some(release)) = (trace, row.release.clone()) {
        return Ok(GuestScenario {
            trace,
            image,
            release,
            version: row.version,
            cpus: parse_guest_output(&run.output).cpus,
            seconds,
        });
    }
    Err(match row.failure {
        Some(f) => format!(
            "{}: {}",
            f.step.name(),
            f.message.replacen("layout scenario: ", "", 1)
        ),
        None => "the guest printed no trace".into(),
    })
}

/// The verification record: what was proven, on which kernels, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerificationRecord {
    /// Always [`RECORD_FORMAT`].
    pub format: String,
    /// 1.
    pub version: u32,
    /// When the run ended (RFC 3339, UTC).
    pub date: String,
    /// The agent that ran it.
    pub agent: AgentInfo,
    /// The host that booted the guests and checked their traces.
    pub host: HostInfo,
    /// How each kernel was checked.
    pub method: String,
    /// Per kernel, in the order asked for.
    pub kernels: Vec<KernelRow>,
    /// Every profile of the model and whether a booted kernel proved it.
    pub profiles: Vec<ProfileEvidence>,
    /// A terminating signal stopped the run after these kernels (exit
    /// status 130; not part of the file, which is then not written).
    #[serde(skip)]
    pub interrupted: bool,
}

/// The agent's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// `reuseport-agent` version (Cargo).
    pub version: String,
}

/// The host's side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// The host's `uname -r`.
    pub release: String,
    /// `qemu-system-x86_64 --version`, first line.
    pub qemu: String,
    /// `tcg` or `kvm`.
    pub accel: String,
}

/// One model profile and the evidence for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileEvidence {
    /// The profile (`6.1`).
    pub profile: String,
    /// `booted`: a Debian kernel of this series was booted and verified in
    /// this run; `host`: the series of the host's own kernel, which this run
    /// did not boot (plain `verify` checks it, on every `npm test`);
    /// `source`: the rules were read from the kernel source only.
    pub evidence: String,
    /// The releases that proved it.
    pub releases: Vec<String>,
}

/// The profiles with their evidence, from the rows and the host's release
/// (`uname -r`, if known).
pub fn profile_evidence(rows: &[KernelRow], host: Option<&str>) -> Vec<ProfileEvidence> {
    let host = host
        .and_then(|h| reuseport_model::Profile::for_release(h).ok())
        .map(|p| p.release.to_string());
    reuseport_model::profile::PROFILES
        .iter()
        .map(|p| {
            let name = p.release.to_string();
            let releases: Vec<String> = rows
                .iter()
                .filter(|r| r.verified && r.profile.as_deref() == Some(name.as_str()))
                .filter_map(|r| r.release.clone())
                .collect();
            let evidence = if !releases.is_empty() {
                "booted"
            } else if host.as_deref() == Some(name.as_str()) {
                "host"
            } else {
                "source"
            };
            ProfileEvidence {
                evidence: evidence.into(),
                profile: name,
                releases,
            }
        })
        .collect()
}

/// Writes the per-kernel table.
pub fn write_table(rows: &[KernelRow], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<6} {:<9} {:<22} {:>7} {:>11} {:>8} {:>9} {:>8}  result",
        "kernel", "suite", "release", "layouts", "predicted", "agree", "boot+rec", "check"
    )?;
    for r in rows {
        let agree = if r.tested > 0 {
            format!("{:.2}%", 100.0 * r.agreed as f64 / r.tested as f64)
        } else {
            "-".into()
        };
        let result = if r.verified {
            "verified".to_string()
        } else if let Some(f) = &r.failure {
            format!("FAILED at {}: {}", f.step.name(), f.message)
        } else {
            "FAILED".to_string()
        };
        writeln!(
            out,
            "{:<6} {:<9} {:<22} {:>7} {:>11} {:>8} {:>8.1}s {:>7.1}s  {}",
            r.kernel,
            r.suite,
            r.release.as_deref().unwrap_or("-"),
            format!("{}/{}", r.layouts.len(), r.layouts_expected),
            format!("{}/{}", r.agreed, r.tested),
            agree,
            r.seconds.boot_and_record,
            r.seconds.check,
            result
        )?;
    }
    // The random layouts and call logs (`--layouts N`), a line per draw
    // and kernel that ran them.
    for r in rows {
        for (w, a) in r.randoms() {
            if let Some(a) = a {
                writeln!(
                    out,
                    "{:<6} random {} (seed {}): {}/{} agree; {} {}/{}; lookups {}/{}",
                    r.kernel,
                    w.things,
                    a.seed,
                    a.agreed,
                    a.layouts,
                    w.answers,
                    a.calls_agreed,
                    a.calls,
                    a.lookups_agreed,
                    a.lookups
                )?;
            }
        }
    }
    Ok(())
}

/// The names of the random layouts' and call logs' sections in the
/// guest's output.
pub const RANDOM_LAYOUTS: &str = "random-layouts";
/// As above.
pub const RANDOM_CALL_LOGS: &str = "random-call-logs";

/// Compares one random draw's answers the guest wrote (section `name`)
/// with the model for the guest's release.
fn check_draw<D: Draw>(
    row: &KernelRow,
    out: &GuestOutput,
    name: &str,
    seed: u64,
) -> Result<LayoutsAgreement, (Step, String)> {
    let what = D::WORDS.things;
    match out.traces.iter().find(|(n, _)| n == name) {
        None => Err((
            Step::Record,
            format!("random {what}: the guest did not run them"),
        )),
        Some((_, Err(e))) => Err((Step::Record, format!("random {what}: {e}"))),
        Some((_, Ok(text))) => {
            reuseport_model::Profile::for_release(row.release.as_deref().unwrap_or_default())
                .map_err(|e| e.to_string())
                .and_then(|p| check_kernel_answers::<D>(p, text, seed, row.random_layouts_expected))
                .map_err(|e| (Step::Check, format!("random {what}: {e}")))
        }
    }
}

/// Compares both random draws' answers with the model, and settles the
/// row again.
fn check_random(row: &mut KernelRow, guest: &GuestRun, seed: u64) {
    let out = parse_guest_output(&guest.output);
    match check_draw::<Layouts>(row, &out, RANDOM_LAYOUTS, seed) {
        Ok(a) => row.random_layouts = Some(a),
        Err((step, e)) => row.fail(step, e),
    }
    match check_draw::<CallLogs>(row, &out, RANDOM_CALL_LOGS, seed) {
        Ok(a) => row.random_call_logs = Some(a),
        Err((step, e)) => row.fail(step, e),
    }
    row.settle();
}

/// The record's `method`: how the kernels were booted and checked, and
/// with `--layouts N` (`random`) how the random draws were compared.
fn method(count: u64, verify: &VerifyArgs, random: u32) -> String {
    let random = if random == 0 {
        String::new()
    } else {
        format!(
            " In each guest {random} random layouts (seed {seed}, agent/src/cmd/verify/layouts.rs: every bind, then the listens in a drawn order, then some closes) were also built in a private network namespace, and {random} random call logs (seed {seed}, agent/src/cmd/verify/calldraw.rs: the calls a program makes, options set after bind(), binds in another order than the sockets were made, shutdown and listen again, closes between binds) replayed there; the layouts' bind() and listen() answers, every call's answer, and the sockets that received connections and datagrams from several loopback sources were compared on the host with the model for the guest's release.",
            seed = verify.seed
        )
    };
    format!(
        "Each Debian kernel image was booted under QEMU with a busybox initramfs; inside it, reuseport-agent record (static, musl) recorded {count} connections or datagrams per layout over loopback. On the host, the hash key was recovered from the first {} events of each trace by trying all 2^32 values, and the model predicted the rest.{random}",
        verify.train()
    )
}

/// Runs `verify --kernels`: a row per kernel, the table (or the record as
/// JSON with `--json`) on `out`, progress on `err`. The record says
/// `verified` only for kernels that booted and agreed.
pub fn run(
    verify: &VerifyArgs,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<VerificationRecord, KernelsError> {
    let args = &verify.kernels;
    let list = args.kernels.clone().unwrap_or_default();
    let list = if list.is_empty() {
        vec!["all".to_string()]
    } else {
        list
    };
    let reqs = requests(&list)?;
    verify.check().map_err(KernelsError::Options)?;
    // Until the run ends, a terminating signal stops it: the guest is
    // killed, and the rows finished so far are printed (exit status 130).
    let _signals =
        crate::signals::Guard::install(crate::signals::Second::Ends).map_err(|source| {
            KernelsError::Io {
                what: "the signal handlers".into(),
                source,
            }
        })?;
    // Checked before any kernel boots: a path that cannot take the record
    // fails now, not after the guests.
    let sink = match &args.write_record {
        Some(p) => Some(
            crate::output::Output::prepare(p).map_err(|source| KernelsError::Io {
                what: format!("--write-record {}", p.display()),
                source,
            })?,
        ),
        None => None,
    };
    let chosen: Vec<LayoutName> = verify.named_layouts();
    let count = if verify.quick { 300 } else { verify.count };
    let layouts: Vec<(String, Vec<String>)> = chosen
        .iter()
        .map(|l| (l.name().to_string(), l.record_args(count, verify.seed)))
        .collect();
    let names: Vec<String> = layouts.iter().map(|(n, _)| n.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    // `--layouts N`: N random layouts and N random call logs too, built in
    // the guest, compared here.
    let random = match &verify.layouts {
        Some(crate::cmd::verify::LayoutsArg::Random(n)) => *n,
        _ => 0,
    };
    let mut layouts = layouts;
    if random > 0 {
        let mut args = vec![
            "verify".to_string(),
            "--layouts".to_string(),
            random.to_string(),
            "--seed".to_string(),
            verify.seed.to_string(),
            "--kernel-answers".to_string(),
        ];
        layouts.push((RANDOM_LAYOUTS.to_string(), args.clone()));
        // The guest writes each call's answer; the host draws the logs again.
        args.push("--call-logs".to_string());
        layouts.push((RANDOM_CALL_LOGS.to_string(), args));
    }
    let cache = cache_dir(args)?;
    let run = run_dir(&cache).map_err(|e| KernelsError::Io {
        what: "the run directory".into(),
        source: std::io::Error::other(e),
    })?;
    let runs = run.path.clone();

    let mut rows = Vec::new();
    // Built once for all kernels; a failure fails every row at that step.
    let mut shared: Option<Result<PathBuf, String>> = None;
    let mut interrupted = false;
    for req in &reqs {
        if crate::signals::stopped() {
            interrupted = true;
            break;
        }
        let mut row = KernelRow::new(req, names.len());
        row.random_layouts_expected = random;
        let dir = runs.join(&req.suite);
        let _ = fs::remove_dir_all(&dir);
        let _ = fs::create_dir_all(&dir);
        let t0 = Instant::now();
        let image = fetch(req, args, &cache, err);
        row.seconds.fetch = t0.elapsed().as_secs_f64();
        let image = match image {
            Ok(i) => i,
            Err(e) => {
                let _ = writeln!(err, "verify --kernels: {}: FAILED at fetch: {e}", req.name);
                row.fail(Step::Fetch, e);
                row.settle();
                rows.push(row);
                continue;
            }
        };
        row.package = Some(image.package.clone());
        row.package_version = Some(image.version.clone());
        let initrd = shared
            .get_or_insert_with(|| {
                let scratch = runs.join("initramfs");
                let _ = fs::create_dir_all(&scratch);
                guest_agent(args, &scratch, err).and_then(|a| initramfs(&a, &layouts, &scratch))
            })
            .clone();
        let initrd = match initrd {
            Ok(p) => p,
            Err(e) => {
                row.fail(Step::Initramfs, e);
                row.settle();
                rows.push(row);
                continue;
            }
        };
        let _ = writeln!(
            err,
            "verify --kernels: {}: booting {} under QEMU and recording {} layouts of {count} events (at most {} s)",
            req.name,
            image.release,
            layouts.len(),
            args.boot_timeout
        );
        let t1 = Instant::now();
        let guest = boot(
            &image.vmlinuz,
            &initrd,
            &dir,
            args.boot_timeout,
            args.accel,
            VERIFY_GUEST_CPUS,
        );
        row.seconds.boot_and_record = t1.elapsed().as_secs_f64();
        let t2 = Instant::now();
        let mut check = |name: &str, json: &str| -> Result<LayoutCheck, String> {
            let path = dir.join(format!("{name}.json"));
            fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
            check_on_host(&path, verify, err)
        };
        if crate::signals::stopped() {
            // This kernel's run was cut short: not a row.
            interrupted = true;
            break;
        }
        assess(&mut row, &guest, &names, &mut check);
        if random > 0 && row.booted {
            check_random(&mut row, &guest, verify.seed);
        }
        row.seconds.check = t2.elapsed().as_secs_f64();
        if row.verified {
            // The traces stay for inspection; the raw port output only repeats them.
            let _ = fs::remove_file(dir.join("guest.out"));
        }
        let _ = writeln!(
            err,
            "verify --kernels: {}: {}",
            req.name,
            if row.verified {
                format!("verified: {} of {} choices agreed", row.agreed, row.tested)
            } else {
                let f = row.failure.as_ref();
                format!(
                    "FAILED at {}: {}",
                    f.map_or("check", |f| f.step.name()),
                    f.map_or("", |f| f.message.as_str())
                )
            }
        );
        rows.push(row);
    }

    let qemu = Command::new("qemu-system-x86_64")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "not found".into());
    let host_release = crate::kernel::running_release().unwrap_or_default();
    let record = VerificationRecord {
        format: RECORD_FORMAT.into(),
        version: 1,
        date: crate::cmd::record::rfc3339(SystemTime::now()),
        agent: AgentInfo {
            version: env!("CARGO_PKG_VERSION").into(),
        },
        host: HostInfo {
            release: host_release.clone(),
            qemu,
            accel: args.accel.name().into(),
        },
        method: method(count, verify, random),
        profiles: profile_evidence(&rows, Some(&host_release)),
        kernels: rows,
        interrupted,
    };
    let stdout = |e| KernelsError::Io {
        what: "the report".into(),
        source: e,
    };
    if verify.json {
        serde_json::to_writer(&mut out, &record).map_err(|e| stdout(e.into()))?;
        writeln!(out).map_err(stdout)?;
    } else {
        write_table(&record.kernels, &mut out).map_err(stdout)?;
        let ok = record.kernels.iter().filter(|r| r.verified).count();
        writeln!(
            out,
            "verify --kernels: {ok} of {} kernels verified{}",
            record.kernels.len(),
            if ok == record.kernels.len() {
                "; the model predicted every recorded choice exactly"
            } else {
                ""
            }
        )
        .map_err(stdout)?;
    }
    if interrupted {
        let _ = writeln!(
            err,
            "verify --kernels: INTERRUPTED by a signal: the rows above are the kernels finished before it{}",
            if sink.is_some() {
                "; the record is not written, so a partial run replaces no record"
            } else {
                ""
            }
        );
    }
    // After the table, so a record that cannot be written loses nothing
    // printed.
    if let Some(sink) = sink.filter(|_| !interrupted) {
        let text = serde_json::to_string_pretty(&record).expect("the record serializes") + "\n";
        let path = sink.path().display().to_string();
        let _ = out.flush();
        let diverted = if verify.json {
            sink.commit(text.as_bytes())
                .map(|()| false)
                .map_err(|e| (path.clone(), e))
        } else {
            sink.commit_or_stdout(text.as_bytes(), "verify --kernels")
        }
        .map_err(|(what, source)| KernelsError::Io { what, source })?;
        if !diverted {
            let _ = writeln!(
                err,
                "verify --kernels: wrote the verification record to {path}"
            );
        }
    }
    Ok(record)
}

impl crate::exit::Ending for VerificationRecord {
    fn status(&self) -> crate::exit::Status {
        if self.interrupted {
            crate::exit::Status::Interrupted
        } else {
            crate::exit::all_or_partial(self.kernels.iter().all(|k| k.verified))
        }
    }
}

crate::exit::refusing!(KernelsError);

#[cfg(test)]
mod run_dir_tests {
    use super::*;

    /// Why: two `verify --kernels` runs at once shared `runs/SUITE/`, and
    /// one removed the other's files ("FAILED at boot: the guest never
    /// reached /init"). Each run has its own directory, locked while it
    /// lives; a later run removes only those of runs that have ended.
    #[test]
    fn runs_at_once_get_their_own_directories_and_only_ended_ones_are_removed() {
        let cache = std::env::temp_dir().join(format!("run-dir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&cache);
        let first = run_dir(&cache).unwrap();
        let second = run_dir(&cache).unwrap();
        assert_ne!(first.path, second.path);
        fs::write(first.path.join("trace.json"), "{}").unwrap();
        let third = run_dir(&cache).unwrap();
        assert!(
            first.path.join("trace.json").exists(),
            "a live run's files stay"
        );
        let ended = first.path.clone();
        drop(first);
        let fourth = run_dir(&cache).unwrap();
        assert!(!ended.exists(), "an ended run's directory goes");
        assert!(second.path.exists() && third.path.exists() && fourth.path.exists());
        drop((second, third, fourth));
        let _ = fs::remove_dir_all(&cache);
    }
}

#[cfg(test)]
mod method_tests {
    use super::*;

    fn args(argv: &[&str]) -> VerifyArgs {
        VerifyOnly::try_parse_from(argv).unwrap().args
    }

    /// Why: a record made with `--layouts N --call-logs` said its guests
    /// built random layouts of agent/src/cmd/verify/layouts.rs and compared only bind()
    /// and listen(), when they replayed calldraw's call logs and compared
    /// every call. Now every guest runs both draws, and the method names both.
    #[test]
    fn the_record_method_names_both_random_draws() {
        for argv in [
            &["verify", "--layouts", "50"][..],
            &["verify", "--layouts", "50", "--call-logs"],
        ] {
            let m = method(300, &args(argv), 50);
            assert!(
                m.contains("50 random layouts (seed 11, agent/src/cmd/verify/layouts.rs"),
                "{m}"
            );
            assert!(
                m.contains("50 random call logs (seed 11, agent/src/cmd/verify/calldraw.rs"),
                "{m}"
            );
            assert!(
                m.contains("bind() and listen() answers, every call's answer"),
                "{m}"
            );
        }
        let none = method(300, &args(&["verify"]), 0);
        assert!(!none.contains("random"), "{none}");
        assert!(none.contains("recorded 300 connections"), "{none}");
    }
}
