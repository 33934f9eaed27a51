//! `verify --kernels`: the proof of [`crate::cmd::verify`], run on kernels this
//! machine does not run. For each Debian kernel asked for, the QEMU lab
//! ([`crate::lab`]) fetches the image, packs an initramfs whose `/init` runs
//! `reuseport-agent record` for each of `verify`'s layouts
//! ([`crate::cmd::verify::LayoutName`]) and, with `--layouts N`, the random
//! layouts and call logs, and boots it; this module then
//!
//! 1. **judges the boot**: the guest reached `/init` and reported its
//!    release ([`assess`]);
//! 2. **checks** each trace on the host: recovers its key and predicts the
//!    rest exactly as `verify --trace` does (a key search under TCG takes
//!    about 45 s instead of 1 s, hence the split), and compares the random
//!    draws' answers with the model for the guest's release;
//! 3. **writes** the table, and with `--write-record` the verification
//!    record the site shows.
//!
//! A kernel counts as verified only when its guest booted, reported its
//! release, recorded every layout, and the model agreed with every recorded
//! choice ([`KernelRow::verified`]); every other outcome names the step that
//! failed (fetch, initramfs, boot, record, check).

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

use clap::Args;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::cmd::verify::calldraw::{CallLogs, Layouts};
use crate::cmd::verify::differential::{check_kernel_answers, Draw, LayoutsAgreement, Words};
use crate::cmd::verify::{LayoutName, LayoutResult, VerifyArgs};
use crate::lab::{self, Accel, GuestOutput, GuestRun, LabOptions, Request, MIRROR};

/// The verification record's `format`.
pub const RECORD_FORMAT: &str = "reuseport-lab-verification";
/// The JSON Schema every verification record satisfies.
pub const RECORD_SCHEMA: &str =
    include_str!("../../../../public/verification/verification-v1.schema.json");

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

impl KernelsArgs {
    /// What the lab needs of these options; `who` prefixes its progress.
    pub fn lab(&self, who: &str) -> LabOptions {
        LabOptions {
            who: who.to_string(),
            cache: self.kernel_cache.clone(),
            guest_agent: self.guest_agent.clone(),
            refresh: self.refresh,
            mirror: self.mirror.clone(),
            accel: self.accel,
            boot_timeout: self.boot_timeout,
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
    let (how, tail) = lab::guest::ending(run);
    let (release, out) = match lab::guest::booted(run) {
        Ok(b) => b,
        Err(why) => {
            row.fail(Step::Boot, why);
            row.settle();
            return;
        }
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

/// Recovers and predicts one guest trace on the host, as `verify --trace`
/// does.
fn check_on_host(
    name: &str,
    json: &str,
    verify: &VerifyArgs,
    err: &mut dyn Write,
) -> Result<LayoutCheck, String> {
    let trace = crate::trace::Trace::parse(json, name).map_err(|e| e.to_string())?;
    super::check_trace(name.to_string(), &trace, verify, err)
        .map(LayoutCheck::from)
        .map_err(|e| e.to_string())
}

/// vCPUs of a `verify --kernels` guest.
pub const VERIFY_GUEST_CPUS: u32 = 2;

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
    let out = lab::parse_guest_output(&guest.output);
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
            " In each guest {random} random layouts (seed {seed}, the layout profile of agent/src/cmd/verify/calldraw.rs: per socket its options and bind, then the listens in a drawn order, then some closes) were also replayed in a private network namespace, and {random} random call logs (seed {seed}, agent/src/cmd/verify/calldraw.rs: the calls a program makes, options set after bind(), binds in another order than the sockets were made, shutdown and listen again, closes between binds) replayed there; every call's answer of both, and the sockets that received connections and datagrams from several loopback sources were compared on the host with the model for the guest's release.",
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
    let reqs = lab::requests(&list).map_err(|u| KernelsError::Unknown(u.0))?;
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
    let lab = args.lab("verify --kernels");
    let cache = lab::cache_dir(&lab).map_err(|(what, source)| KernelsError::Io { what, source })?;
    let run = lab::run_dir(&cache).map_err(|e| KernelsError::Io {
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
        let image = lab::fetch(req, &lab, &cache, err);
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
                lab::guest_agent(&lab, &scratch, err)
                    .and_then(|a| lab::initramfs(&a, &layouts, &scratch))
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
        let guest = lab::boot(
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
            check_on_host(name, json, verify, err)
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
        date: crate::rfc3339(SystemTime::now()),
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
mod method_tests {
    use super::*;

    #[derive(clap::Parser)]
    struct VerifyOnly {
        #[command(flatten)]
        args: VerifyArgs,
    }

    fn args(argv: &[&str]) -> VerifyArgs {
        use clap::Parser;
        VerifyOnly::try_parse_from(argv).unwrap().args
    }

    /// Why: a record made with `--layouts N --call-logs` said its guests
    /// built random layouts and compared only bind()
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
                m.contains("50 random layouts (seed 11, the layout profile of agent/src/cmd/verify/calldraw.rs"),
                "{m}"
            );
            assert!(
                m.contains("50 random call logs (seed 11, agent/src/cmd/verify/calldraw.rs"),
                "{m}"
            );
            assert!(m.contains("every call's answer of both"), "{m}");
        }
        let none = method(300, &args(&["verify"]), 0);
        assert!(!none.contains("random"), "{none}");
        assert!(none.contains("recorded 300 connections"), "{none}");
    }
}
