// Over 800 lines for now: the earlier layout form; the call-log draw is agent/src/calldraw.rs, and when it replaces this draw, this file shrinks to what both share.
//! `verify --layouts N`: the differential test of the lookup and bind rules.
//!
//! Draws `N` random layouts of 2 – 7 sockets on one port (seeded), builds
//! each on the running kernel the way a program would (every `bind()` first,
//! then every `listen()` in a drawn order, each answer recorded with its
//! errno), sends traffic over loopback to learn which socket receives, and
//! asks the model ([`reuseport_model::lookup::Host`]) the same questions.
//!
//! The per-boot hash secret is unknown here, so a lookup is compared by the
//! set of sockets that can receive it: the sockets the model picks for 168
//! packets from varied sources and ports, against the sockets the kernel
//! handed connections or datagrams to, sent until `24 ×` the sockets seen so
//! far (at least 8). A socket one side never chose in that many tries cannot
//! receive there (the chance of a miss by luck is below `7 × (6/7)^168`,
//! 1e-10). Every probe
//! is sent from CPU [`PROBE_CPU`], which then receives it, so SO_INCOMING_CPU
//! compares too.
//!
//! Every disagreement is shrunk (sockets dropped while it still disagrees)
//! and printed as a layout `predict --layout` reads, with both answers.
//!
//! The layouts are built in a private network namespace when the process may
//! make one (root), so no other program's sockets share the ports; otherwise
//! in the current one, on ports checked free first.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reuseport_model::lookup::{Family, Host, Layout, Packet, SockState, SocketSpec};
use reuseport_model::reuseport::PacketCtx;
use reuseport_model::{Keys, Profile, Proto, Tuple};
use serde::{Deserialize, Serialize};

/// At most this many layouts per run.
pub const MAX_LAYOUTS: u32 = 100_000;
/// Sockets per drawn layout.
const MIN_SOCKETS: usize = 2;
const MAX_SOCKETS: usize = 7;
/// Tries per member of the model's answer.
const TRIES_PER_MEMBER: usize = 24;
/// Ports the layouts use, one fresh port per build.
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
}

pub(crate) const V4_ADDRS: [Ipv4Addr; 3] = [
    Ipv4Addr::UNSPECIFIED,
    Ipv4Addr::new(127, 0, 0, 1),
    Ipv4Addr::new(127, 0, 0, 2),
];

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

/// The peers connected UDP sockets are drawn with: local addresses no probe
/// comes from (the probes' source ports are ephemeral, these are not).
pub(crate) const V4_PEER_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 5);
const V4_PEER: SocketAddr = SocketAddr::new(IpAddr::V4(V4_PEER_IP), 4_001);
const V6_PEER: SocketAddr = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 4_001);

/// The receiving CPU of every probe: the prober pins itself there, and a
/// loopback packet is received on the sending CPU (`netif_rx` queues it to
/// this CPU's backlog), so the kernel's `raw_smp_processor_id()` is known.
pub const PROBE_CPU: u32 = 0;

/// Draws one layout on `port`: 2 – 7 sockets of one protocol; each AF_INET
/// or AF_INET6 with a specific, wildcard or v4-mapped address, SO_REUSEADDR,
/// SO_REUSEPORT, IPV6_V6ONLY, SO_BINDTODEVICE lo, SO_INCOMING_CPU 0 or 1
/// and owner UID 0 or [`OTHER_UID`] at random; TCP sockets listen, stay
/// bound or (on a specific address) leave a TIME_WAIT socket behind; UDP
/// sockets on a specific address may `connect()`; the listens run in a drawn
/// order; some sockets close at the end, in a drawn order.
pub fn draw(rng: &mut Rng, port: u16) -> Layout {
    let proto = if rng.chance(55) {
        Proto::Tcp
    } else {
        Proto::Udp
    };
    let n = MIN_SOCKETS + rng.below(MAX_SOCKETS - MIN_SOCKETS + 1);
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let inet6 = rng.chance(55);
        let addr: IpAddr = if inet6 {
            v6_addrs()[rng.below(5)].into()
        } else {
            V4_ADDRS[rng.below(3)].into()
        };
        let v6only = inet6 && rng.chance(30);
        // Wildcard binds take their address from connect(); the model
        // wants the address the socket ends with, so only specific ones.
        let specific = match addr {
            IpAddr::V4(a) => !a.is_unspecified(),
            IpAddr::V6(a) => a
                .to_ipv4_mapped()
                .map_or(!a.is_unspecified(), |m| !m.is_unspecified()),
        };
        let mut peer = None;
        let state = match (proto, rng.below(100)) {
            (Proto::Tcp, 0..=19) => SockState::Bound,
            (Proto::Tcp, 20..=29) if specific => SockState::TimeWait,
            (Proto::Udp, 0..=14) if specific => {
                // A peer of the socket's family: an AF_INET6 socket on a
                // v4-mapped address connects to the v4-mapped peer.
                peer = Some(match addr {
                    IpAddr::V6(a) if a.to_ipv4_mapped().is_none() => V6_PEER,
                    _ if inet6 => {
                        SocketAddr::new(IpAddr::V6(V4_PEER_IP.to_ipv6_mapped()), V4_PEER.port())
                    }
                    _ => V4_PEER,
                });
                SockState::Connected
            }
            _ => SockState::Listen,
        };
        sockets.push(SocketSpec {
            family: if inet6 { Family::Inet6 } else { Family::Inet },
            proto,
            addr,
            port,
            v6only,
            reuseaddr: rng.chance(50),
            reuseport: rng.chance(65),
            uid: if rng.chance(12) { OTHER_UID } else { 0 },
            device: rng.chance(15).then(|| "lo".to_string()),
            state,
            peer,
            incoming_cpu: rng.chance(15).then(|| rng.below(2) as u32),
            program: None,
            program_before_bind: false,
        });
    }
    let mut order: Vec<usize> = (0..n)
        .filter(|&i| proto == Proto::Tcp && sockets[i].state == SockState::Listen)
        .collect();
    for k in (1..order.len()).rev() {
        order.swap(k, rng.below(k + 1));
    }
    // Some sockets close after every call, in a drawn order (a TIME_WAIT
    // socket has no file to close: it outlives its socket).
    let mut closed: Vec<usize> = (0..n)
        .filter(|&i| rng.chance(12) && sockets[i].state != SockState::TimeWait)
        .collect();
    for k in (1..closed.len()).rev() {
        closed.swap(k, rng.below(k + 1));
    }
    Layout {
        sockets,
        listen_order: (proto == Proto::Tcp).then_some(order),
        sk_lookup: None,
        keys: Keys::default(),
        ephemeral: None,
        closed,
    }
}

/// The second owner UID of the drawn sockets (the first is 0).
pub const OTHER_UID: u32 = 1000;

/// The layout without socket `drop`: indexes above it move down by one.
pub fn without(layout: &Layout, drop: usize) -> Layout {
    let mut l = layout.clone();
    l.sockets.remove(drop);
    for o in l.listen_order.iter_mut().chain([&mut l.closed]) {
        o.retain(|&i| i != drop);
        for i in o.iter_mut() {
            if *i > drop {
                *i -= 1;
            }
        }
    }
    l
}

/// Drops sockets one at a time while `still` holds, until no single drop
/// keeps it: a layout where every socket matters.
pub fn shrink(layout: &Layout, mut still: impl FnMut(&Layout) -> bool) -> Layout {
    let mut cur = layout.clone();
    'again: loop {
        for i in 0..cur.sockets.len() {
            let smaller = without(&cur, i);
            if !smaller.sockets.is_empty() && still(&smaller) {
                cur = smaller;
                continue 'again;
            }
        }
        return cur;
    }
}

pub use crate::calllog::Answer;
use crate::calllog::{errno_name, errno_number as model_errno, source};

/// Every answer of one side (kernel or model) for one layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answers {
    /// `bind()` per socket.
    pub bind: Vec<Answer>,
    /// `listen()` per socket, for TCP sockets that listen and bound.
    pub listen: Vec<Option<Answer>>,
    /// Per probed destination: the sockets that receive (empty: none).
    pub lookups: Vec<(String, BTreeSet<usize>)>,
}

/// The destinations probed for a layout: 127.0.0.1, 127.0.0.2 and ::1.
fn destinations() -> [IpAddr; 3] {
    [
        Ipv4Addr::new(127, 0, 0, 1).into(),
        Ipv4Addr::new(127, 0, 0, 2).into(),
        Ipv6Addr::LOCALHOST.into(),
    ]
}

/// The model's answers, and how many probes each destination gets.
pub fn model_answers(profile: &'static Profile, layout: &Layout) -> Result<Answers, String> {
    let host = Host::build(profile, layout).map_err(|e| e.to_string())?;
    let results = host.results();
    let bind = results
        .iter()
        .map(|r| r.bind.as_ref().map(|f| model_errno(&f.errno)))
        .collect();
    let listen = results
        .iter()
        .zip(&layout.sockets)
        .map(|(r, s)| {
            let listens = s.proto == Proto::Tcp && s.state == SockState::Listen;
            (listens && r.bind.is_none()).then(|| r.listen.as_ref().map(|f| model_errno(&f.errno)))
        })
        .collect();
    let proto = layout.sockets.first().map_or(Proto::Tcp, |s| s.proto);
    let port = layout.sockets.first().map_or(0, |s| s.port);
    let lookups = model_lookups(&host, proto, port);
    Ok(Answers {
        bind,
        listen,
        lookups,
    })
}

/// Per destination of [`destinations`], the sockets the model picks for
/// packets from many sources and ports to `port`: as many as the kernel is
/// sent for the largest group, so a socket the model can pick is missed by
/// chance no more often than the kernel's.
pub(crate) fn model_lookups(
    host: &Host,
    proto: Proto,
    port: u16,
) -> Vec<(String, BTreeSet<usize>)> {
    let samples = TRIES_PER_MEMBER * MAX_SOCKETS;
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
                        ctx: PacketCtx {
                            cpu: PROBE_CPU,
                            payload: None,
                        },
                    };
                    host.lookup(&packet).socket
                })
                .collect();
            (daddr.to_string(), set)
        })
        .collect()
}

/// The differences between the kernel's answers and the model's, in words.
pub fn differences(layout: &Layout, kernel: &Answers, model: &Answers) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (k, m)) in kernel.bind.iter().zip(&model.bind).enumerate() {
        if k != m {
            out.push(format!(
                "socket {i} bind(): kernel {}, model {}",
                errno_name(*k),
                errno_name(*m)
            ));
        }
    }
    for (i, (k, m)) in kernel.listen.iter().zip(&model.listen).enumerate() {
        if let (Some(k), Some(m)) = (k, m) {
            if k != m {
                out.push(format!(
                    "socket {i} listen(): kernel {}, model {}",
                    errno_name(*k),
                    errno_name(*m)
                ));
            }
        }
    }
    let proto = layout.sockets.first().map_or("tcp", |s| match s.proto {
        Proto::Tcp => "tcp",
        Proto::Udp => "udp",
    });
    for ((d, k), (_, m)) in kernel.lookups.iter().zip(&model.lookups) {
        if k != m {
            out.push(format!(
                "{proto} to {d}: kernel delivered to {}, model picks among {}",
                set_text(k),
                set_text(m)
            ));
        }
    }
    out
}

/// The layout as JSON without the fields left at their defaults (what
/// `predict --layout` reads back the same).
pub fn compact(layout: &Layout) -> String {
    use serde_json::Value;
    let mut v = serde_json::to_value(layout).unwrap_or(Value::Null);
    let default = |x: &Value| {
        x.is_null()
            || *x == Value::Bool(false)
            || *x == 0
            || x.as_array().is_some_and(|a| a.is_empty())
    };
    if let Some(m) = v.as_object_mut() {
        m.remove("keys");
        m.retain(|_, x| !default(x));
        if let Some(Value::Array(socks)) = m.get_mut("sockets") {
            for s in socks {
                if let Some(o) = s.as_object_mut() {
                    o.retain(|k, x| {
                        !default(x) || k == "port" || (k == "incomingCpu" && !x.is_null())
                    });
                    if o.get("state") == Some(&Value::from("listen")) {
                        o.remove("state");
                    }
                }
            }
        }
    }
    v.to_string()
}

fn set_text(s: &BTreeSet<usize>) -> String {
    if s.is_empty() {
        "no socket".into()
    } else {
        let v: Vec<String> = s.iter().map(|i| format!("socket {i}")).collect();
        format!("{{{}}}", v.join(", "))
    }
}

/// One drawn layout and this kernel's answers: a line of the file
/// `verify --layouts N --kernel-answers --output FILE` writes inside a
/// `verify --kernels` guest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KernelLine {
    /// Which drawn layout (0-based).
    pub drawn: u32,
    /// The layout, on the port it was built on.
    pub layout: Layout,
    /// `bind()` per socket: 0 or the errno.
    pub bind: Vec<i32>,
    /// `listen()` per socket: -1 when not called, else 0 or the errno.
    pub listen: Vec<i32>,
    /// Per probed destination: the sockets that received.
    pub lookups: Vec<(String, BTreeSet<usize>)>,
}

impl KernelLine {
    fn new(drawn: u32, layout: Layout, a: &Answers) -> KernelLine {
        KernelLine {
            drawn,
            layout,
            bind: a.bind.iter().map(|b| b.unwrap_or(0)).collect(),
            listen: a
                .listen
                .iter()
                .map(|l| l.map_or(-1, |e| e.unwrap_or(0)))
                .collect(),
            lookups: a.lookups.clone(),
        }
    }

    /// The answers as [`Answers`].
    pub fn answers(&self) -> Answers {
        let errno = |e: i32| (e != 0).then_some(e);
        Answers {
            bind: self.bind.iter().map(|&e| errno(e)).collect(),
            listen: self
                .listen
                .iter()
                .map(|&e| (e >= 0).then(|| errno(e)))
                .collect(),
            lookups: self.lookups.clone(),
        }
    }
}

/// A guest kernel's answers compared with the model on the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayoutsAgreement {
    /// The seed the layouts were drawn from.
    pub seed: u64,
    /// Layouts built in the guest and compared.
    pub layouts: u32,
    /// Layouts where kernel and model agree on everything.
    pub agreed: u32,
    /// bind() and listen() answers compared.
    pub calls: u64,
    /// Of which equal.
    pub calls_agreed: u64,
    /// Destinations compared.
    pub lookups: u64,
    /// Of which equal.
    pub lookups_agreed: u64,
    /// The first disagreements (at most 10): the layout as `predict
    /// --layout` reads it, then what differs (not shrunk: shrinking needs
    /// the guest again).
    pub disagreements: Vec<String>,
}

/// Counts one layout's answers into `calls` and `lookups` (compared, equal).
fn tally(kernel: &Answers, model: &Answers, calls: &mut (u64, u64), lookups: &mut (u64, u64)) {
    let listens = kernel
        .listen
        .iter()
        .zip(&model.listen)
        .filter_map(|(k, m)| k.zip(*m));
    let binds = kernel.bind.iter().copied().zip(model.bind.iter().copied());
    for (k, m) in binds.chain(listens) {
        calls.0 += 1;
        calls.1 += u64::from(k == m);
    }
    for ((_, k), (_, m)) in kernel.lookups.iter().zip(&model.lookups) {
        lookups.0 += 1;
        lookups.1 += u64::from(k == m);
    }
}

/// Compares the answers a guest kernel wrote (one [`KernelLine`] a line)
/// with the model's for `profile`; all `expected` layouts must be there.
pub fn check_kernel_answers(
    profile: &'static Profile,
    text: &str,
    seed: u64,
    expected: u32,
) -> Result<LayoutsAgreement, String> {
    let mut a = LayoutsAgreement {
        seed,
        layouts: 0,
        agreed: 0,
        calls: 0,
        calls_agreed: 0,
        lookups: 0,
        lookups_agreed: 0,
        disagreements: Vec::new(),
    };
    let (mut calls, mut lookups) = ((0, 0), (0, 0));
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let k: KernelLine = serde_json::from_str(line)
            .map_err(|e| format!("line {} of the guest's answers: {e}", n + 1))?;
        let kernel = k.answers();
        let model = model_answers(profile, &k.layout)
            .map_err(|e| format!("drawn layout {}: {e}", k.drawn))?;
        a.layouts += 1;
        tally(&kernel, &model, &mut calls, &mut lookups);
        let diffs = differences(&k.layout, &kernel, &model);
        if diffs.is_empty() {
            a.agreed += 1;
        } else if a.disagreements.len() < 10 {
            a.disagreements.push(format!(
                "drawn layout {}: {} -- {}",
                k.drawn,
                compact(&k.layout),
                diffs.join("; ")
            ));
        }
    }
    (a.calls, a.calls_agreed) = calls;
    (a.lookups, a.lookups_agreed) = lookups;
    if a.layouts != expected {
        return Err(format!(
            "the guest wrote the answers of {} of {expected} layouts",
            a.layouts
        ));
    }
    Ok(a)
}

/// `verify --layouts N --kernel-answers --output FILE`: builds and probes
/// the drawn layouts on this kernel only and writes a [`KernelLine`] per
/// layout to `path` (what a `verify --kernels` guest runs).
#[cfg(target_os = "linux")]
pub fn run_kernel_side(opts: &Options, path: &std::path::Path) -> Result<(), LayoutsError> {
    if opts.count == 0 || opts.count > MAX_LAYOUTS {
        return Err(LayoutsError::Options(format!(
            "the number of layouts must be 1 to {MAX_LAYOUTS}; got {}",
            opts.count
        )));
    }
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let opts = opts.clone();
    // Its own thread, which may move into a private network namespace.
    let lines = std::thread::spawn(move || kernel::answers_only(&opts))
        .join()
        .map_err(|_| LayoutsError::Kernel("the layout thread panicked".into()))?;
    for l in lines {
        serde_json::to_writer(&mut file, &l).map_err(std::io::Error::from)?;
        writeln!(file)?;
    }
    file.flush()?;
    Ok(())
}

/// Options of one run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Layouts to draw.
    pub count: u32,
    /// The seed.
    pub seed: u64,
    /// One JSON object instead of text.
    pub json: bool,
}

/// One disagreement, shrunk.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Disagreement {
    /// Which drawn layout (0-based) it came from.
    pub drawn: u32,
    /// Sockets before shrinking.
    pub sockets_drawn: usize,
    /// The minimal layout (`predict --layout` reads it).
    pub layout: Layout,
    /// What differs.
    pub differences: Vec<String>,
    /// The kernel's answers for the minimal layout.
    pub kernel: Answers,
    /// The model's.
    pub model: Answers,
}

/// The report of `verify --layouts` ([`LayoutsReport`]) and of
/// `verify --layouts --call-logs` (`calldraw::CallsReport`): the same
/// counts, and each shrunk disagreement of the draw's kind `D`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report<D> {
    /// The seed.
    pub seed: u64,
    /// The kernel release.
    pub kernel: String,
    /// The profile it maps to.
    pub profile: String,
    /// Whether the layouts ran in a private network namespace.
    pub private_netns: bool,
    /// Layouts (or call logs) drawn and run.
    pub layouts: u32,
    /// Layouts where kernel and model agree on everything.
    pub agreed: u32,
    /// Answers compared: bind() and listen(), or every call of a call log.
    pub calls: u64,
    /// Of which equal.
    pub calls_agreed: u64,
    /// Destinations compared.
    pub lookups: u64,
    /// Of which equal.
    pub lookups_agreed: u64,
    /// Connections or datagrams sent.
    pub probes: u64,
    /// Seconds.
    pub seconds: f64,
    /// Each disagreement, shrunk.
    pub disagreements: Vec<D>,
}

/// The report of `verify --layouts`.
pub type LayoutsReport = Report<Disagreement>;

/// How a report names its draw in text.
pub(crate) struct Words {
    /// The command, as the lines start.
    pub command: &'static str,
    /// What was drawn, plural ("layouts").
    pub things: &'static str,
    /// The answers compared ("bind/listen answers").
    pub answers: &'static str,
}

impl<D> Report<D> {
    /// The header and the counts line.
    pub(crate) fn write_counts(&self, w: &Words, out: &mut impl Write) -> std::io::Result<()> {
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
            self.layouts,
            self.agreed,
            100.0 * self.agreed as f64 / self.layouts.max(1) as f64,
            w.answers,
            self.calls_agreed,
            self.calls,
            self.lookups_agreed,
            self.lookups,
            self.probes,
            self.seconds
        )
    }

    /// The last line: every one agreed, or how many did not.
    pub(crate) fn write_verdict(&self, w: &Words, out: &mut impl Write) -> std::io::Result<()> {
        if self.disagreements.is_empty() {
            let one = w.things.trim_end_matches('s');
            writeln!(
                out,
                "{}: the model agreed with the kernel on every {one}",
                w.command
            )
        } else {
            writeln!(
                out,
                "{}: DISAGREEMENT on {} of {} {}",
                w.command,
                self.layouts - self.agreed,
                self.layouts,
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

/// Runs `verify --layouts`: prints the report to `out`, progress to `err`.
#[cfg(target_os = "linux")]
pub fn run(
    opts: &Options,
    mut out: impl Write,
    err: &mut dyn Write,
) -> Result<LayoutsReport, LayoutsError> {
    if opts.count == 0 || opts.count > MAX_LAYOUTS {
        return Err(LayoutsError::Options(format!(
            "the number of layouts must be 1 to {MAX_LAYOUTS}; got {}",
            opts.count
        )));
    }
    let release =
        crate::kernel::running_release().map_err(|e| LayoutsError::Kernel(e.to_string()))?;
    let profile =
        Profile::for_release(&release).map_err(|e| LayoutsError::Kernel(e.to_string()))?;
    writeln!(
        err,
        "verify --layouts: {} random layouts, seed {} (repeat with --seed {}), kernel {release} (profile {})",
        opts.count, opts.seed, opts.seed, profile.release
    )?;
    let opts2 = opts.clone();
    let rel2 = release.clone();
    // The kernel side runs in a thread of its own, which may move into a
    // private network namespace without taking the rest of the process.
    let report = std::thread::spawn(move || kernel::run_all(&opts2, profile, rel2))
        .join()
        .map_err(|_| LayoutsError::Kernel("the layout thread panicked".into()))??;
    if opts.json {
        serde_json::to_writer(&mut out, &report).map_err(std::io::Error::from)?;
        writeln!(out)?;
    } else {
        print_text(&report, &mut out)?;
    }
    Ok(report)
}

fn print_text(r: &LayoutsReport, out: &mut impl Write) -> std::io::Result<()> {
    let words = Words {
        command: "verify --layouts",
        things: "layouts",
        answers: "bind/listen answers",
    };
    r.write_counts(&words, out)?;
    for d in &r.disagreements {
        writeln!(
            out,
            "DISAGREEMENT in drawn layout {} ({} sockets, shrunk to {}):",
            d.drawn,
            d.sockets_drawn,
            d.layout.sockets.len()
        )?;
        writeln!(out, "  layout: {}", compact(&d.layout))?;
        for x in &d.differences {
            writeln!(out, "  {x}")?;
        }
    }
    r.write_verdict(&words, out)
}

#[cfg(target_os = "linux")]
pub(crate) mod kernel {
    use super::*;
    use socket2::{Domain, SockAddr, Socket, Type};
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    fn errno_of(e: &std::io::Error) -> i32 {
        e.raw_os_error().unwrap_or(libc::EIO)
    }

    use crate::calllog::{private_netns, probe_tcp, probe_udp};

    /// Whether nothing holds `port` (checked outside a private namespace).
    fn port_free(port: u16) -> bool {
        [Type::STREAM, Type::DGRAM].iter().all(|&t| {
            let s4 = Socket::new(Domain::IPV4, t, None)
                .and_then(|s| s.bind(&SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port).into()));
            let s6 = Socket::new(Domain::IPV6, t, None).and_then(|s| {
                s.set_only_v6(true)?;
                s.bind(&SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port).into())
            });
            s4.is_ok() && s6.is_ok()
        })
    }

    pub(crate) struct Ports {
        pub(crate) next: u16,
        pub(crate) private: bool,
    }

    impl Ports {
        pub(crate) fn take(&mut self) -> u16 {
            loop {
                let p = self.next;
                self.next = if p >= PORT_HIGH { PORT_LOW } else { p + 1 };
                if self.private || port_free(p) {
                    return p;
                }
            }
        }
    }

    fn with_port(layout: &Layout, port: u16) -> Layout {
        let mut l = layout.clone();
        for s in &mut l.sockets {
            s.port = port;
        }
        l
    }

    /// Builds the layout on this kernel and probes it. Each destination gets
    /// probes until `24 ×` the sockets seen so far (at least 8); two misses
    /// before any socket is seen end it (none receives). It needs no model,
    /// so a guest kernel runs it alone (`verify --kernels --layouts`).
    pub(super) fn kernel_answers(
        layout: &Layout,
        probes: &mut u64,
        helpers: &mut Helpers,
    ) -> Answers {
        let n = layout.sockets.len();
        let mut socks: Vec<Option<Socket>> = Vec::with_capacity(n);
        let mut bind = Vec::with_capacity(n);
        for s in &layout.sockets {
            let domain = match s.family {
                Family::Inet => Domain::IPV4,
                Family::Inet6 => Domain::IPV6,
            };
            let ty = match s.proto {
                Proto::Tcp => Type::STREAM,
                Proto::Udp => Type::DGRAM,
            };
            // The owner UID is the creator's fsuid (sock_init_data); the
            // thread's own, so the rest of the process is untouched.
            // SAFETY: setfsuid changes only this thread's credentials.
            if s.uid != 0 {
                unsafe { libc::setfsuid(s.uid) };
            }
            let made = Socket::new(domain, ty, None);
            if s.uid != 0 {
                // SAFETY: as above, back to root.
                unsafe { libc::setfsuid(0) };
            }
            let made = made.and_then(|k| {
                k.set_reuse_address(s.reuseaddr)?;
                k.set_reuse_port(s.reuseport)?;
                if s.family == Family::Inet6 {
                    k.set_only_v6(s.v6only)?;
                }
                if let Some(d) = &s.device {
                    k.bind_device(Some(d.as_bytes()))?;
                }
                if let Some(cpu) = s.incoming_cpu {
                    k.set_cpu_affinity(cpu as usize)?;
                }
                k.set_nonblocking(true)?;
                Ok(k)
            });
            match made {
                Ok(k) => {
                    let r = k.bind(&SockAddr::from(SocketAddr::new(s.addr, s.port)));
                    bind.push(r.as_ref().err().map(errno_of));
                    let bound = r.is_ok();
                    socks.push(match s.state {
                        SockState::TimeWait if bound => {
                            time_wait(k, s, helpers);
                            None
                        }
                        SockState::Connected if bound => {
                            if let Some(p) = s.peer {
                                let _ = k.connect(&p.into());
                            }
                            Some(k)
                        }
                        _ => Some(k),
                    });
                }
                Err(e) => {
                    bind.push(Some(errno_of(&e)));
                    socks.push(None);
                }
            }
        }
        let mut listen = vec![None; n];
        for &i in layout.listen_order.iter().flatten() {
            if bind[i].is_none() {
                if let Some(k) = &socks[i] {
                    listen[i] = Some(k.listen(64).err().as_ref().map(errno_of));
                }
            }
        }
        for &i in &layout.closed {
            socks[i] = None;
        }
        let receiving: Vec<usize> = (0..n)
            .filter(|&i| {
                socks[i].is_some()
                    && bind[i].is_none()
                    && match layout.sockets[i].proto {
                        Proto::Tcp => listen[i] == Some(None),
                        Proto::Udp => true,
                    }
            })
            .collect();
        let proto = layout.sockets.first().map_or(Proto::Tcp, |s| s.proto);
        let port = layout.sockets.first().map_or(0, |s| s.port);
        let lookups = probe_destinations(&socks, &receiving, proto, port, probes);
        Answers {
            bind,
            listen,
            lookups,
        }
    }

    /// Per destination of [`destinations`], the sockets `receiving` names
    /// (indexes into `socks`) that receive probes to `port`: each
    /// destination gets probes until `24 ×` the sockets seen so far (at
    /// least 8); two misses before any socket is seen end it.
    pub(crate) fn probe_destinations(
        socks: &[Option<Socket>],
        receiving: &[usize],
        proto: Proto,
        port: u16,
        probes: &mut u64,
    ) -> Vec<(String, BTreeSet<usize>)> {
        let mut lookups = Vec::new();
        for daddr in destinations() {
            let mut got = BTreeSet::new();
            let mut missed = 0;
            let mut t = 0;
            while t < (TRIES_PER_MEMBER * got.len()).max(8) {
                // Nothing received twice: no socket receives here.
                if missed >= 2 && got.is_empty() {
                    break;
                }
                *probes += 1;
                let src = source(daddr, t);
                t += 1;
                let r = match proto {
                    Proto::Tcp => {
                        probe_tcp(socks, receiving, src, daddr, port, Duration::from_secs(1))
                    }
                    Proto::Udp => {
                        // Once a socket here has received, a datagram is due:
                        // wait for it; before that, briefly.
                        let wait = Duration::from_millis(if !got.is_empty() { 250 } else { 30 });
                        probe_udp(socks, receiving, src, daddr, port, wait)
                    }
                };
                match r {
                    Some(i) => {
                        got.insert(i);
                    }
                    None => missed += 1,
                }
            }
            lookups.push((daddr.to_string(), got));
        }
        lookups
    }

    /// Listeners on ephemeral ports of 127.0.0.1 and ::1 that TIME_WAIT
    /// sockets connect to (made when first needed, kept for the run).
    #[derive(Default)]
    pub(super) struct Helpers {
        v4: Option<(Socket, SocketAddr)>,
        v6: Option<(Socket, SocketAddr)>,
    }

    impl Helpers {
        fn listener(&mut self, v6: bool) -> Option<&(Socket, SocketAddr)> {
            let slot = if v6 { &mut self.v6 } else { &mut self.v4 };
            if slot.is_none() {
                let ip: IpAddr = if v6 {
                    Ipv6Addr::LOCALHOST.into()
                } else {
                    Ipv4Addr::LOCALHOST.into()
                };
                let l = Socket::new(
                    Domain::for_address(SocketAddr::new(ip, 0)),
                    Type::STREAM,
                    None,
                )
                .and_then(|l| {
                    l.bind(&SocketAddr::new(ip, 0).into())?;
                    l.listen(64)?;
                    let a = l
                        .local_addr()?
                        .as_socket()
                        .ok_or(std::io::ErrorKind::Other)?;
                    Ok((l, a))
                });
                *slot = made_or_note(l);
            }
            slot.as_ref()
        }
    }

    fn made_or_note<T>(r: std::io::Result<T>) -> Option<T> {
        r.map_err(|e| crate::note!("verify --layouts: a TIME_WAIT helper listener: {e}"))
            .ok()
    }

    /// Leaves a TIME_WAIT socket on the bound socket's address and port: it
    /// connects to a helper listener and closes first (the active closer
    /// keeps TIME_WAIT). It waits for the listener's FIN: once `recv` reads
    /// the end, the connection is in TIME_WAIT (`tcp_fin` in FIN_WAIT2
    /// calls `tcp_time_wait`), and closing the file leaves the TIME_WAIT
    /// socket holding the port for 60 s.
    fn time_wait(k: Socket, s: &SocketSpec, helpers: &mut Helpers) {
        let native_v6 = matches!(s.addr, IpAddr::V6(a) if a.to_ipv4_mapped().is_none());
        let Some((l, at)) = helpers.listener(native_v6) else {
            return;
        };
        let to = match (s.family, at) {
            (Family::Inet6, SocketAddr::V4(a)) => {
                SocketAddr::new(a.ip().to_ipv6_mapped().into(), a.port())
            }
            _ => *at,
        };
        let step = || -> std::io::Result<()> {
            k.set_nonblocking(false)?;
            k.set_read_timeout(Some(Duration::from_secs(2)))?;
            k.connect(&to.into())?;
            l.set_nonblocking(false)?;
            let (a, _) = l.accept()?;
            a.set_read_timeout(Some(Duration::from_secs(2)))?;
            k.shutdown(std::net::Shutdown::Write)?;
            let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 1];
            if a.recv(&mut buf)? != 0 {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
            drop(a);
            if k.recv(&mut buf)? != 0 {
                return Err(std::io::ErrorKind::InvalidData.into());
            }
            Ok(())
        };
        if let Err(e) = step() {
            crate::note!(
                "verify --layouts: leaving a TIME_WAIT socket on {}: {e}",
                s.addr
            );
        }
    }

    struct Runner {
        profile: &'static Profile,
        ports: Ports,
        probes: u64,
        helpers: Helpers,
    }

    impl Runner {
        fn both(&mut self, layout: &Layout) -> Result<(Layout, Answers, Answers), String> {
            let l = with_port(layout, self.ports.take());
            let model = model_answers(self.profile, &l)?;
            let kernel = kernel_answers(&l, &mut self.probes, &mut self.helpers);
            Ok((l, kernel, model))
        }
    }

    /// What a run sets up on this thread before drawing.
    pub(crate) struct Setup {
        pub(crate) rng: Rng,
        pub(crate) ports: Ports,
        pub(crate) two_uids: bool,
        pub(crate) pinned: bool,
    }

    impl Setup {
        /// A private network namespace when allowed, the thread pinned to
        /// [`PROBE_CPU`], the seeded generator.
        pub(crate) fn enter(seed: u64) -> Setup {
            let private = private_netns();
            if !private {
                crate::note!("verify --layouts: no private network namespace (not root?); using this one, on ports checked free");
            }
            // SO_INCOMING_CPU is compared on the probes' CPU, so the prober
            // stays there; without it, no socket is drawn with one.
            let pinned = crate::process::pin_to(PROBE_CPU).is_ok();
            if !pinned {
                crate::note!(
                    "verify --layouts: cannot pin to CPU {PROBE_CPU}; no SO_INCOMING_CPU draws"
                );
            }
            Setup {
                rng: Rng::new(seed),
                ports: Ports {
                    next: PORT_LOW + (seed % u64::from(PORT_HIGH - PORT_LOW)) as u16,
                    private,
                },
                // A second owner UID needs root (setfsuid); without it every
                // socket is drawn with UID 0, the model's stand-in for "the same".
                two_uids: crate::record::is_root(),
                pinned,
            }
        }

        /// The next layout, without what this run cannot build.
        fn draw(&mut self) -> Layout {
            let mut layout = draw(&mut self.rng, 0);
            for s in &mut layout.sockets {
                if !self.two_uids {
                    s.uid = 0;
                }
                if !self.pinned {
                    s.incoming_cpu = None;
                }
            }
            layout
        }
    }

    /// The kernel's side of every drawn layout, each on a fresh port.
    pub(super) fn answers_only(opts: &Options) -> Vec<KernelLine> {
        let mut s = Setup::enter(opts.seed);
        let (mut probes, mut helpers) = (0, Helpers::default());
        (0..opts.count)
            .map(|drawn| {
                let layout = with_port(&s.draw(), s.ports.take());
                let answers = kernel_answers(&layout, &mut probes, &mut helpers);
                KernelLine::new(drawn, layout, &answers)
            })
            .collect()
    }

    pub(super) fn run_all(
        opts: &Options,
        profile: &'static Profile,
        release: String,
    ) -> Result<LayoutsReport, LayoutsError> {
        let t0 = Instant::now();
        let mut s = Setup::enter(opts.seed);
        let private = s.ports.private;
        let mut run = Runner {
            profile,
            ports: Ports {
                next: s.ports.next,
                private,
            },
            probes: 0,
            helpers: Helpers::default(),
        };
        let mut r = LayoutsReport {
            seed: opts.seed,
            kernel: release,
            profile: profile.release.to_string(),
            private_netns: private,
            layouts: 0,
            agreed: 0,
            calls: 0,
            calls_agreed: 0,
            lookups: 0,
            lookups_agreed: 0,
            probes: 0,
            seconds: 0.0,
            disagreements: Vec::new(),
        };
        let mut seen: BTreeMap<String, ()> = BTreeMap::new();
        for drawn in 0..opts.count {
            let layout = s.draw();
            let (_, kernel, model) = run.both(&layout).map_err(LayoutsError::Kernel)?;
            r.layouts += 1;
            let (mut calls, mut lookups) =
                ((r.calls, r.calls_agreed), (r.lookups, r.lookups_agreed));
            tally(&kernel, &model, &mut calls, &mut lookups);
            (r.calls, r.calls_agreed, r.lookups, r.lookups_agreed) =
                (calls.0, calls.1, lookups.0, lookups.1);
            let diffs = differences(&layout, &kernel, &model);
            if diffs.is_empty() {
                r.agreed += 1;
                continue;
            }
            let small = shrink(&layout, |l| {
                run.both(l)
                    .map(|(l, k, m)| !differences(&l, &k, &m).is_empty())
                    .unwrap_or(false)
            });
            let (l, k, m) = run.both(&small).map_err(LayoutsError::Kernel)?;
            let diffs = differences(&l, &k, &m);
            let mut shown = small.clone();
            for s in &mut shown.sockets {
                s.port = 8080;
            }
            let key = serde_json::to_string(&shown).unwrap_or_default();
            crate::note!(
                "verify --layouts: drawn layout {drawn} disagrees; shrunk to {} sockets",
                small.sockets.len()
            );
            if seen.insert(key, ()).is_none() && r.disagreements.len() < 50 {
                r.disagreements.push(Disagreement {
                    drawn,
                    sockets_drawn: layout.sockets.len(),
                    layout: shown,
                    differences: diffs,
                    kernel: k,
                    model: m,
                });
            }
        }
        r.probes = run.probes;
        r.seconds = t0.elapsed().as_secs_f64();
        Ok(r)
    }
}
