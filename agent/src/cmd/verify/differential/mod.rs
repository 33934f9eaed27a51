//! The differential test of the lookup and bind rules, `verify --layouts N`:
//! what a draw shares. A [`Draw`] says what is drawn (call logs under a
//! profile, [`crate::cmd::verify::calldraw`]), how each side answers it and
//! how a disagreement is printed; this module runs it.
//!
//! Each run draws `N` random cases on fresh ports (seeded), builds each on
//! the running kernel the way a program would, sends traffic over loopback
//! to learn which socket receives, and asks the model
//! ([`reuseport_model::lookup::Host`]) the same questions.
//!
//! The per-boot hash secret is unknown here, so a lookup is compared by the
//! set of sockets that can receive it: the sockets the model picks for 168
//! packets from varied sources and ports, against the sockets the kernel
//! handed connections or datagrams to, sent until `24 ×` the sockets seen so
//! far (at least 8). A socket one side never chose in that many tries cannot
//! receive there (the chance of a miss by luck is below `7 × (6/7)^168`,
//! 1e-10). Every probe is sent from CPU [`PROBE_CPU`], which then receives
//! it, so SO_INCOMING_CPU compares too.
//!
//! Every disagreement is shrunk (parts dropped while it still disagrees)
//! and printed as input `predict --layout` reads, with both answers.
//!
//! The cases are built in a private network namespace when the process may
//! make one (root), so no other program's sockets share the ports; otherwise
//! in the current one, on ports checked free first. Inside a `verify
//! --kernels` guest only the kernel's side runs ([`run_kernel_side`]); the
//! host compares what it wrote ([`check_kernel_answers`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reuseport_model::lookup::{Host, Packet};
use reuseport_model::reuseport::PacketCtx;
use reuseport_model::{Profile, Proto, Tuple};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::calllog::source;
pub use crate::calllog::Answer;

/// At most this many cases per run.
pub const MAX_LAYOUTS: u32 = 100_000;
/// The most sockets a drawn case makes, under any profile of the draw.
pub(crate) const MAX_DRAWN_SOCKETS: usize = 7;
/// Tries per member of the model's answer.
const TRIES_PER_MEMBER: usize = 24;
/// Ports the cases use, one fresh port per build.
const PORT_LOW: u16 = 10_000;
const PORT_HIGH: u16 = 30_000;

/// A small, fast, seeded generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    /// Shuffles `v` in place (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for k in (1..v.len()).rev() {
            v.swap(k, self.below(k + 1));
        }
    }
}

/// The IPv4 addresses the draws bind: the wildcard and two of loopback.
pub(crate) const V4_ADDRS: [Ipv4Addr; 3] = [
    Ipv4Addr::UNSPECIFIED,
    Ipv4Addr::new(127, 0, 0, 1),
    Ipv4Addr::new(127, 0, 0, 2),
];

/// The IPv6 addresses the draws bind.
pub(crate) fn v6_addrs() -> [Ipv6Addr; 5] {
    [
        Ipv6Addr::UNSPECIFIED,
        Ipv6Addr::LOCALHOST,
        Ipv4Addr::new(127, 0, 0, 1).to_ipv6_mapped(),
        Ipv4Addr::new(127, 0, 0, 2).to_ipv6_mapped(),
        // The v4-mapped wildcard: IPv4's 0.0.0.0 through an AF_INET6 socket.
        Ipv4Addr::UNSPECIFIED.to_ipv6_mapped(),
    ]
}

/// Whether a drawn address is specific (a connected socket takes its
/// source address from its bound one only then).
pub(crate) fn specific(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => !a.is_unspecified(),
        IpAddr::V6(a) => a
            .to_ipv4_mapped()
            .map_or(!a.is_unspecified(), |m| !m.is_unspecified()),
    }
}

/// The peers connected sockets are drawn with: local addresses no probe
/// comes from (the probes' source ports are ephemeral, these are not).
pub(crate) const V4_PEER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);
/// Their port (in a call log, a helper listener on 127.0.0.5 and ::1
/// accepts the TCP connections: `calldraw::Peers`).
pub const PEER_PORT: u16 = 4_001;

/// The second owner UID of the drawn sockets (the first is 0).
pub const OTHER_UID: u32 = 1000;

/// The receiving CPU of every probe: the prober pins itself there, and a
/// loopback packet is received on the sending CPU (`netif_rx` queues it to
/// this CPU's backlog), so the kernel's `raw_smp_processor_id()` is known.
pub const PROBE_CPU: u32 = 0;

/// Per probed destination, the sockets that receive there (empty: none).
pub type Lookups = Vec<(String, BTreeSet<usize>)>;

/// The destinations probed for a case: 127.0.0.1, 127.0.0.2 and ::1.
fn destinations() -> [IpAddr; 3] {
    [
        Ipv4Addr::new(127, 0, 0, 1).into(),
        Ipv4Addr::new(127, 0, 0, 2).into(),
        Ipv6Addr::LOCALHOST.into(),
    ]
}

/// Per destination of [`destinations`], the sockets the model picks for
/// packets from many sources and ports to `port`: as many as the kernel is
/// sent for the largest group, so a socket the model can pick is missed by
/// chance no more often than the kernel's.
pub(crate) fn model_lookups(host: &Host, proto: Proto, port: u16) -> Lookups {
    let samples = TRIES_PER_MEMBER * MAX_DRAWN_SOCKETS;
    destinations()
        .into_iter()
        .map(|daddr| {
            let set: BTreeSet<usize> = (0..samples)
                .filter_map(|k| {
                    let packet = Packet {
                        proto,
                        tuple: Tuple {
                            saddr: source(daddr, k),
                            sport: 40_000 + k as u16,
                            daddr,
                            dport: port,
                        },
                        device: None,
                        ctx: PacketCtx::on_cpu(PROBE_CPU),
                    };
                    host.lookup(&packet).socket
                })
                .collect();
            (daddr.to_string(), set)
        })
        .collect()
}

/// How a draw names itself and its parts in text.
pub struct Words {
    /// The command, as the lines start.
    pub command: &'static str,
    /// What is drawn, singular and plural ("layout", "layouts").
    pub thing: &'static str,
    /// As above, plural.
    pub things: &'static str,
    /// The answers compared ("call answers").
    pub answers: &'static str,
    /// What a receiving set counts ("socket", "fd").
    pub member: &'static str,
    /// What a case shrinks by ("sockets", "calls").
    pub parts: &'static str,
}

/// One kind of drawn case: a call log under a profile
/// ([`crate::cmd::verify::calldraw::CallDraw`]). Everything a run does with a
/// case goes through here; the run itself is this module's.
pub trait Draw {
    /// What is drawn.
    type Case: Clone;
    /// One side's answers to the case's calls, besides the lookups.
    type Answers: Clone;
    /// The line a guest kernel writes per case.
    type Line: Serialize + DeserializeOwned;
    /// A shrunk disagreement, as reported.
    type Disagreement: Serialize;
    /// The kernel side's helpers, kept for a run (peer listeners).
    #[cfg(target_os = "linux")]
    type Helpers;

    /// The draw's words.
    const WORDS: Words;

    /// Draws one case on `port`; `pinned` false draws no SO_INCOMING_CPU,
    /// `two_uids` false no second owner UID.
    fn draw(rng: &mut Rng, port: u16, pinned: bool, two_uids: bool) -> Self::Case;
    /// The case on another port.
    fn with_port(case: &Self::Case, port: u16) -> Self::Case;
    /// Its protocol and port.
    fn proto_port(case: &Self::Case) -> (Proto, u16);
    /// How many parts (sockets or calls) it has.
    fn size(case: &Self::Case) -> usize;
    /// The cases one step smaller, tried in order while shrinking.
    fn smaller(case: &Self::Case) -> Vec<Self::Case>;
    /// The case as `predict --layout` reads it, without the defaults.
    fn compact(case: &Self::Case) -> String;

    /// The model's answers; input it cannot replay is an error.
    fn model_answers(profile: &'static Profile, case: &Self::Case)
        -> Result<Self::Answers, String>;
    /// Each compared answer, kernel's and model's side by side, and the
    /// difference in words where they differ.
    fn compare(
        case: &Self::Case,
        kernel: &Self::Answers,
        model: &Self::Answers,
    ) -> Vec<(Answer, Answer, Option<String>)>;
    /// A difference [`Draw::compare`] cannot pair up (one side answered
    /// more calls), in words.
    fn mismatch(_kernel: &Self::Answers, _model: &Self::Answers) -> Option<String> {
        None
    }
    /// The lookups of one side's answers.
    fn lookups(a: &Self::Answers) -> &Lookups;

    /// The helpers for one run.
    #[cfg(target_os = "linux")]
    fn helpers() -> Self::Helpers;
    /// Builds the case on this kernel and probes it.
    #[cfg(target_os = "linux")]
    fn kernel_answers(
        case: &Self::Case,
        probes: &mut u64,
        helpers: &mut Self::Helpers,
    ) -> Self::Answers;

    /// The guest's line for one case.
    fn line(drawn: u32, case: &Self::Case, s: &Drawing, answers: Self::Answers) -> Self::Line;
    /// From the `n`th line a guest wrote: the case, drawn again from `rng`
    /// where the line does not carry it, and the kernel's answers.
    fn read_line(
        line: Self::Line,
        n: usize,
        rng: &mut Rng,
    ) -> Result<(u32, Self::Case, Self::Answers), String>;

    /// A shrunk disagreement: `drawn` was the case drawn, `shown` the
    /// shrunk one as printed, with both sides' answers to it.
    fn disagreement(
        drawn: u32,
        drawn_case: &Self::Case,
        shown: Self::Case,
        found: Found<Self::Answers>,
    ) -> Self::Disagreement;
    /// Prints one disagreement.
    fn write_disagreement(d: &Self::Disagreement, out: &mut dyn Write) -> std::io::Result<()>;
}

/// What a run found on one shrunk case.
pub struct Found<A> {
    /// The kernel's answers.
    pub kernel: A,
    /// The model's.
    pub model: A,
    /// What differs, in words.
    pub differences: Vec<String>,
}

/// What the run may draw on this machine.
#[derive(Debug, Clone, Copy)]
pub struct Drawing {
    /// The port the case is built on.
    pub port: u16,
    /// SO_INCOMING_CPU drawn (the prober could pin itself).
    pub pinned: bool,
    /// A second owner UID drawn (root).
    pub two_uids: bool,
}

/// The differences between the kernel's answers and the model's, in words.
pub fn differences<D: Draw>(
    case: &D::Case,
    kernel: &D::Answers,
    model: &D::Answers,
) -> Vec<String> {
    let mut out: Vec<String> = D::compare(case, kernel, model)
        .into_iter()
        .filter_map(|(_, _, d)| d)
        .chain(D::mismatch(kernel, model))
        .collect();
    let proto = match D::proto_port(case).0 {
        Proto::Tcp => "tcp",
        Proto::Udp => "udp",
    };
    let set = |s: &BTreeSet<usize>| {
        if s.is_empty() {
            format!("no {}", D::WORDS.member)
        } else {
            let v: Vec<String> = s
                .iter()
                .map(|i| format!("{} {i}", D::WORDS.member))
                .collect();
            format!("{{{}}}", v.join(", "))
        }
    };
    for ((d, k), (_, m)) in D::lookups(kernel).iter().zip(D::lookups(model)) {
        if k != m {
            out.push(format!(
                "{proto} to {d}: kernel delivered to {}, model picks among {}",
                set(k),
                set(m)
            ));
        }
    }
    out
}

/// Drops one part at a time ([`Draw::smaller`]) while `still` holds, until
/// no single drop keeps it: a case where every part matters.
pub fn shrink<D: Draw>(case: &D::Case, mut still: impl FnMut(&D::Case) -> bool) -> D::Case {
    let mut cur = case.clone();
    'again: loop {
        for smaller in D::smaller(&cur) {
            if still(&smaller) {
                cur = smaller;
                continue 'again;
            }
        }
        return cur;
    }
}

/// Cases, answers and lookups compared, and of which equal.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Cases (layouts or call logs) drawn and compared.
    pub layouts: u32,
    /// Cases where kernel and model agree on everything.
    pub agreed: u32,
    /// Answers compared: every call of each drawn log.
    pub calls: u64,
    /// Of which equal.
    pub calls_agreed: u64,
    /// Destinations compared.
    pub lookups: u64,
    /// Of which equal.
    pub lookups_agreed: u64,
}

impl Counts {
    /// Counts one case's answers; its differences, in words.
    fn add<D: Draw>(
        &mut self,
        case: &D::Case,
        kernel: &D::Answers,
        model: &D::Answers,
    ) -> Vec<String> {
        for (k, m, _) in D::compare(case, kernel, model) {
            self.calls += 1;
            self.calls_agreed += u64::from(k == m);
        }
        for ((_, k), (_, m)) in D::lookups(kernel).iter().zip(D::lookups(model)) {
            self.lookups += 1;
            self.lookups_agreed += u64::from(k == m);
        }
        let diffs = differences::<D>(case, kernel, model);
        self.layouts += 1;
        self.agreed += u32::from(diffs.is_empty());
        diffs
    }

    /// Whether every case agreed.
    pub fn exact(&self) -> bool {
        self.agreed == self.layouts
    }
}

/// A guest kernel's answers compared with the model on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayoutsAgreement {
    /// The seed the cases were drawn from.
    pub seed: u64,
    /// Cases built in the guest and compared.
    pub layouts: u32,
    /// Cases where kernel and model agree on everything.
    pub agreed: u32,
    /// Answers compared: every call of each drawn log.
    pub calls: u64,
    /// Of which equal.
    pub calls_agreed: u64,
    /// Destinations compared.
    pub lookups: u64,
    /// Of which equal.
    pub lookups_agreed: u64,
    /// The first disagreements (at most 10): the case as `predict
    /// --layout` reads it, then what differs (not shrunk: shrinking needs
    /// the guest again).
    pub disagreements: Vec<String>,
}

/// Compares the answers a guest kernel wrote (one [`Draw::Line`] a line)
/// with the model's for `profile`; all `expected` cases must be there.
pub fn check_kernel_answers<D: Draw>(
    profile: &'static Profile,
    text: &str,
    seed: u64,
    expected: u32,
) -> Result<LayoutsAgreement, String> {
    let (mut t, mut disagreements) = (Counts::default(), Vec::new());
    let mut rng = Rng::new(seed);
    let thing = D::WORDS.thing;
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let line: D::Line = serde_json::from_str(line)
            .map_err(|e| format!("line {} of the guest's answers: {e}", n + 1))?;
        let (drawn, case, kernel) = D::read_line(line, n, &mut rng)?;
        let model =
            D::model_answers(profile, &case).map_err(|e| format!("drawn {thing} {drawn}: {e}"))?;
        let diffs = t.add::<D>(&case, &kernel, &model);
        if !diffs.is_empty() && disagreements.len() < 10 {
            disagreements.push(format!(
                "drawn {thing} {drawn}: {} -- {}",
                D::compact(&case),
                diffs.join("; ")
            ));
        }
    }
    if t.layouts != expected {
        return Err(format!(
            "the guest wrote the answers of {} of {expected} {}",
            t.layouts,
            D::WORDS.things
        ));
    }
    Ok(LayoutsAgreement {
        seed,
        layouts: t.layouts,
        agreed: t.agreed,
        calls: t.calls,
        calls_agreed: t.calls_agreed,
        lookups: t.lookups,
        lookups_agreed: t.lookups_agreed,
        disagreements,
    })
}

/// Options of one run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Cases to draw.
    pub count: u32,
    /// The seed.
    pub seed: u64,
    /// One JSON object instead of text.
    pub json: bool,
}

impl Options {
    fn check(&self, w: &Words) -> Result<(), LayoutsError> {
        if self.count == 0 || self.count > MAX_LAYOUTS {
            return Err(LayoutsError::Options(format!(
                "the number of {} must be 1 to {MAX_LAYOUTS}; got {}",
                w.things, self.count
            )));
        }
        Ok(())
    }
}

/// The report of one run: the counts, and each shrunk disagreement of the
/// draw's kind `D`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report<D> {
    /// The seed.
    pub seed: u64,
    /// The kernel release.
    pub kernel: String,
    /// The profile it maps to.
    pub profile: String,
    /// Whether the cases ran in a private network namespace.
    pub private_netns: bool,
    /// What was compared, and of which equal.
    #[serde(flatten)]
    pub counts: Counts,
    /// Connections or datagrams sent.
    pub probes: u64,
    /// Seconds.
    pub seconds: f64,
    /// Each disagreement, shrunk.
    pub disagreements: Vec<D>,
    /// A terminating signal stopped the run: the counts are those of the
    /// cases before it (exit status 130).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl<T> Report<T> {
    /// Whether every case agreed.
    pub fn exact(&self) -> bool {
        self.disagreements.is_empty() && self.counts.exact()
    }

    /// The report as text: the header, the counts, each disagreement, and
    /// the verdict.
    pub fn write_text<D: Draw<Disagreement = T>>(
        &self,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let (w, c) = (D::WORDS, &self.counts);
        writeln!(
            out,
            "{}: seed {}, kernel {} (profile {}), {}",
            w.command,
            self.seed,
            self.kernel,
            self.profile,
            if self.private_netns {
                "in a private network namespace"
            } else {
                "in this network namespace (no private one allowed)"
            }
        )?;
        writeln!(
            out,
            "  {} {}: {} agree ({:.2}%); {} {}/{}; lookups {}/{}; {} probes in {:.1} s",
            w.things,
            c.layouts,
            c.agreed,
            100.0 * c.agreed as f64 / c.layouts.max(1) as f64,
            w.answers,
            c.calls_agreed,
            c.calls,
            c.lookups_agreed,
            c.lookups,
            self.probes,
            self.seconds
        )?;
        for d in &self.disagreements {
            D::write_disagreement(d, out)?;
        }
        if self.interrupted {
            writeln!(
                out,
                "{}: INTERRUPTED by a signal after {} of the {} asked for; the counts above are theirs",
                w.command, c.layouts, w.things
            )?;
        }
        if self.disagreements.is_empty() {
            writeln!(
                out,
                "{}: the model agreed with the kernel on every {}",
                w.command, w.thing
            )
        } else {
            writeln!(
                out,
                "{}: DISAGREEMENT on {} of {} {}",
                w.command,
                c.layouts - c.agreed,
                c.layouts,
                w.things
            )
        }
    }
}

/// Why the run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LayoutsError {
    /// Bad options.
    #[error("--layouts: {0}")]
    Options(String),
    /// The kernel could not be set up or asked.
    #[error("--layouts: {0}")]
    Kernel(String),
    /// Writing the report.
    #[error("writing the report: {0}")]
    Io(#[from] std::io::Error),
}

#[cfg(target_os = "linux")]
pub use kernel::{probe_destinations, run, run_kernel_side};

#[cfg(target_os = "linux")]
mod kernel;
