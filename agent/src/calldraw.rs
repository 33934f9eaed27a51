//! `verify --layouts N --call-logs`: random call logs, drawn as programs
//! make them, replayed on the running kernel ([`crate::calllog::replay`])
//! and by the model ([`reuseport_model::lookup::Host::run`]), every call's
//! answer and the receiving sockets compared.
//!
//! Besides what the earlier draw ([`crate::layouts::draw`]) covers, a call
//! log says what only calls can: an option set after `bind()`, binds in
//! another order than the sockets were made, a listener shut down and
//! listening again, a `close()` between other sockets' binds. A
//! disagreement is shrunk (sockets, then single calls, dropped while it
//! still disagrees) and printed as the call log `predict --layout` reads.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use reuseport_model::lookup::{Call, CallLog, Family, Host, SockOpt};
use reuseport_model::{Profile, Proto};
use serde::{Deserialize, Serialize};

use crate::calllog::{errno_name, Answer};
use crate::layouts::{v6_addrs, Rng, OTHER_UID, V4_ADDRS, V4_PEER_IP};

/// Sockets per drawn call log.
const MIN_SOCKETS: usize = 2;
const MAX_SOCKETS: usize = 6;
/// The peer port TCP and UDP sockets connect to (a helper listener on
/// 127.0.0.5 and ::1 accepts the TCP connections).
pub const PEER_PORT: u16 = 4_001;

/// How a drawn socket ends its first life.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Listen,
    BoundOnly,
    TimeWait,
    ConnectedUdp,
    Udp,
}

fn shuffle<T>(rng: &mut Rng, v: &mut [T]) {
    for k in (1..v.len()).rev() {
        v.swap(k, rng.below(k + 1));
    }
}

/// Draws one call log on `port`: 2 – 6 sockets of one protocol, made in fd
/// order with their options (SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY,
/// SO_BINDTODEVICE lo, SO_INCOMING_CPU 0 or 1; owner UID 0 or
/// [`OTHER_UID`]); then bound in a drawn order, an option sometimes set
/// only after the bind, a listener sometimes listening at once, a TIME_WAIT
/// socket (at most one: two would share a 4-tuple) or a connected UDP
/// socket connecting at once, and now and then an earlier socket closed
/// between binds; then the other listens in a drawn order; then a listener
/// sometimes shut down and sometimes listening again; then some closes.
/// `pinned` false draws no SO_INCOMING_CPU, `two_uids` false no second UID.
pub fn draw(rng: &mut Rng, port: u16, pinned: bool, two_uids: bool) -> CallLog {
    let proto = if rng.chance(55) {
        Proto::Tcp
    } else {
        Proto::Udp
    };
    let n = MIN_SOCKETS + rng.below(MAX_SOCKETS - MIN_SOCKETS + 1);
    let mut calls = Vec::new();
    let mut addrs = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    let mut after_bind: Vec<Option<SockOpt>> = Vec::with_capacity(n);
    let mut families = Vec::with_capacity(n);
    let mut time_wait_drawn = false;
    for fd in 0..n {
        let inet6 = rng.chance(55);
        let addr: IpAddr = if inet6 {
            v6_addrs()[rng.below(5)].into()
        } else {
            V4_ADDRS[rng.below(3)].into()
        };
        let specific = match addr {
            IpAddr::V4(a) => !a.is_unspecified(),
            IpAddr::V6(a) => a
                .to_ipv4_mapped()
                .map_or(!a.is_unspecified(), |m| !m.is_unspecified()),
        };
        let kind = match (proto, rng.below(100)) {
            (Proto::Tcp, 0..=19) => Kind::BoundOnly,
            (Proto::Tcp, 20..=29) if specific && !time_wait_drawn => {
                time_wait_drawn = true;
                Kind::TimeWait
            }
            (Proto::Tcp, _) => Kind::Listen,
            (Proto::Udp, 0..=14) if specific => Kind::ConnectedUdp,
            (Proto::Udp, _) => Kind::Udp,
        };
        let family = if inet6 { Family::Inet6 } else { Family::Inet };
        let uid = if two_uids && rng.chance(12) {
            OTHER_UID
        } else {
            0
        };
        calls.push(Call::Socket { family, proto, uid });
        let reuseaddr = rng.chance(50);
        let reuseport = rng.chance(65);
        // One option of the two, off before bind, set on after it.
        let late = match rng.below(100) {
            0..=7 if !reuseport => Some(SockOpt::Reuseport(true)),
            8..=13 if !reuseaddr => Some(SockOpt::Reuseaddr(true)),
            _ => None,
        };
        let mut opt = |opt: SockOpt| calls.push(Call::Setsockopt { fd, opt });
        if reuseaddr {
            opt(SockOpt::Reuseaddr(true));
        }
        if reuseport {
            opt(SockOpt::Reuseport(true));
        }
        if inet6 && rng.chance(30) {
            opt(SockOpt::V6only(true));
        }
        if rng.chance(15) {
            opt(SockOpt::Bindtodevice(Some("lo".into())));
        }
        if rng.chance(15) {
            let cpu = rng.below(2) as u32;
            if pinned {
                opt(SockOpt::IncomingCpu(cpu));
            }
        }
        addrs.push(addr);
        kinds.push(kind);
        after_bind.push(late);
        families.push(family);
    }
    let peer = |fd: usize| -> IpAddr {
        match (families[fd], addrs[fd]) {
            (Family::Inet6, IpAddr::V6(a)) if a.to_ipv4_mapped().is_none() => {
                Ipv6Addr::LOCALHOST.into()
            }
            (Family::Inet6, _) => V4_PEER_IP.to_ipv6_mapped().into(),
            _ => V4_PEER_IP.into(),
        }
    };
    let mut closed = vec![false; n];
    let mut order: Vec<usize> = (0..n).collect();
    shuffle(rng, &mut order);
    let mut later = Vec::new();
    let mut bound = Vec::new();
    for &fd in &order {
        calls.push(Call::Bind {
            fd,
            addr: addrs[fd],
            port,
        });
        if let Some(opt) = after_bind[fd].clone() {
            calls.push(Call::Setsockopt { fd, opt });
        }
        match kinds[fd] {
            Kind::Listen if rng.chance(40) => calls.push(Call::Listen { fd }),
            Kind::Listen => later.push(fd),
            Kind::TimeWait | Kind::ConnectedUdp => {
                calls.push(Call::Connect {
                    fd,
                    addr: peer(fd),
                    port: PEER_PORT,
                });
                if kinds[fd] == Kind::TimeWait {
                    calls.push(Call::Close { fd });
                    closed[fd] = true;
                }
            }
            Kind::BoundOnly | Kind::Udp => {}
        }
        bound.push(fd);
        // A close between other sockets' binds.
        if rng.chance(8) {
            let open: Vec<usize> = bound.iter().copied().filter(|&f| !closed[f]).collect();
            if !open.is_empty() {
                let fd = open[rng.below(open.len())];
                calls.push(Call::Close { fd });
                closed[fd] = true;
            }
        }
    }
    shuffle(rng, &mut later);
    for &fd in &later {
        if !closed[fd] {
            calls.push(Call::Listen { fd });
        }
    }
    // A listener shut down, and sometimes listening again.
    let listeners: Vec<usize> = (0..n)
        .filter(|&f| kinds[f] == Kind::Listen && !closed[f])
        .collect();
    if !listeners.is_empty() && rng.chance(15) {
        let fd = listeners[rng.below(listeners.len())];
        calls.push(Call::Shutdown { fd });
        if rng.chance(60) {
            calls.push(Call::Listen { fd });
        }
    }
    let mut last: Vec<usize> = (0..n).filter(|&f| !closed[f] && rng.chance(12)).collect();
    shuffle(rng, &mut last);
    calls.extend(last.into_iter().map(|fd| Call::Close { fd }));
    CallLog {
        calls,
        ..CallLog::default()
    }
}

/// The log with every bind on `port`.
pub fn with_port(log: &CallLog, port: u16) -> CallLog {
    let mut l = log.clone();
    for c in &mut l.calls {
        if let Call::Bind { port: p, .. } = c {
            *p = port;
        }
    }
    l
}

/// The port the log binds (its first bind's).
pub fn port_of(log: &CallLog) -> u16 {
    log.calls
        .iter()
        .find_map(|c| match c {
            Call::Bind { port, .. } => Some(*port),
            _ => None,
        })
        .unwrap_or(0)
}

fn proto_of(log: &CallLog) -> Proto {
    crate::calllog::proto_of(log).unwrap_or(Proto::Tcp)
}

/// The log without socket `drop` (its `socket` call and every call on
/// it); higher fds move down by one.
pub fn without_socket(log: &CallLog, drop: usize) -> CallLog {
    let mut l = log.clone();
    let mut made = 0;
    l.calls.retain(|c| match c {
        Call::Socket { .. } => {
            made += 1;
            made - 1 != drop
        }
        c => c.fd() != Some(drop),
    });
    for c in &mut l.calls {
        match c {
            Call::Setsockopt { fd, .. }
            | Call::Bind { fd, .. }
            | Call::Listen { fd }
            | Call::Connect { fd, .. }
            | Call::Shutdown { fd }
            | Call::Close { fd } => {
                if *fd > drop {
                    *fd -= 1;
                }
            }
            Call::Socket { .. } => {}
        }
    }
    l
}

fn sockets_in(log: &CallLog) -> usize {
    log.calls
        .iter()
        .filter(|c| matches!(c, Call::Socket { .. }))
        .count()
}

/// Drops sockets, then single calls other than `socket`, while `still`
/// holds: a log where every socket and call matters.
pub fn shrink(log: &CallLog, mut still: impl FnMut(&CallLog) -> bool) -> CallLog {
    let mut cur = log.clone();
    'again: loop {
        for i in 0..sockets_in(&cur) {
            let smaller = without_socket(&cur, i);
            if sockets_in(&smaller) > 0 && still(&smaller) {
                cur = smaller;
                continue 'again;
            }
        }
        for i in 0..cur.calls.len() {
            if matches!(cur.calls[i], Call::Socket { .. }) {
                continue;
            }
            let mut smaller = cur.clone();
            smaller.calls.remove(i);
            if still(&smaller) {
                cur = smaller;
                continue 'again;
            }
        }
        return cur;
    }
}

/// Every answer of one side (kernel or model) for one call log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallAnswers {
    /// Per call: `None` (ok) or the errno.
    pub calls: Vec<Answer>,
    /// Per probed destination: the fds that receive (empty: none).
    pub lookups: Vec<(String, BTreeSet<usize>)>,
}

/// The model's answers; input it cannot replay is an error.
pub fn model_answers(profile: &'static Profile, log: &CallLog) -> Result<CallAnswers, String> {
    let host = Host::run(profile, log).map_err(|e| e.to_string())?;
    let calls = crate::calllog::model_answers(&host);
    let (proto, port) = (proto_of(log), port_of(log));
    let lookups = crate::layouts::model_lookups(&host, proto, port);
    Ok(CallAnswers { calls, lookups })
}

/// The differences between the kernel's answers and the model's, in words.
pub fn differences(log: &CallLog, kernel: &CallAnswers, model: &CallAnswers) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (k, m)) in kernel.calls.iter().zip(&model.calls).enumerate() {
        if k != m {
            let what = log
                .calls
                .get(i)
                .and_then(|c| serde_json::to_string(c).ok())
                .unwrap_or_default();
            out.push(format!(
                "call {i} {what}: kernel {}, model {}",
                errno_name(*k),
                errno_name(*m)
            ));
        }
    }
    if kernel.calls.len() != model.calls.len() {
        out.push(format!(
            "the kernel answered {} calls, the model {}",
            kernel.calls.len(),
            model.calls.len()
        ));
    }
    let proto = match proto_of(log) {
        Proto::Tcp => "tcp",
        Proto::Udp => "udp",
    };
    for ((d, k), (_, m)) in kernel.lookups.iter().zip(&model.lookups) {
        if k != m {
            out.push(format!(
                "{proto} to {d}: kernel delivered to fds {k:?}, model picks among fds {m:?}"
            ));
        }
    }
    out
}

/// Counts one log's answers into `calls` and `lookups` (compared, equal).
pub fn tally(
    kernel: &CallAnswers,
    model: &CallAnswers,
    calls: &mut (u64, u64),
    lookups: &mut (u64, u64),
) {
    for (k, m) in kernel.calls.iter().zip(&model.calls) {
        calls.0 += 1;
        calls.1 += u64::from(k == m);
    }
    for ((_, k), (_, m)) in kernel.lookups.iter().zip(&model.lookups) {
        lookups.0 += 1;
        lookups.1 += u64::from(k == m);
    }
}

/// The call log as JSON `predict --layout` reads, without the settings
/// left at their defaults.
pub fn compact(log: &CallLog) -> String {
    use serde_json::Value;
    let mut v = serde_json::to_value(log).unwrap_or(Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.remove("keys");
        m.retain(|_, x| !x.is_null() && *x != Value::Bool(false));
    }
    v.to_string()
}

/// One disagreement, shrunk.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallDisagreement {
    /// Which drawn log (0-based) it came from.
    pub drawn: u32,
    /// Calls before shrinking.
    pub calls_drawn: usize,
    /// The minimal call log, on port 8080 (`predict --layout` reads it).
    pub log: CallLog,
    /// What differs.
    pub differences: Vec<String>,
    /// The kernel's answers for the minimal log.
    pub kernel: CallAnswers,
    /// The model's.
    pub model: CallAnswers,
}

/// One drawn call log's answers on a guest kernel: a line of the file
/// `verify --layouts N --call-logs --kernel-answers --output FILE` writes.
/// The log itself is not written: the host draws it again from the seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallsLine {
    /// Which drawn log (0-based).
    pub drawn: u32,
    /// The port it was bound on.
    pub port: u16,
    /// Whether the guest drew SO_INCOMING_CPU and a second UID.
    pub pinned: bool,
    /// As above.
    pub two_uids: bool,
    /// The kernel's answers.
    pub answers: CallAnswers,
}

/// Compares a guest kernel's [`CallsLine`]s with the model's answers to
/// the same logs, drawn again from `seed`; all `expected` must be there.
pub fn check_kernel_answers(
    profile: &'static Profile,
    text: &str,
    seed: u64,
    expected: u32,
) -> Result<crate::layouts::LayoutsAgreement, String> {
    let mut a = crate::layouts::LayoutsAgreement {
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
    let mut rng = Rng::new(seed);
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let k: CallsLine = serde_json::from_str(line)
            .map_err(|e| format!("line {} of the guest's answers: {e}", n + 1))?;
        if k.drawn as usize != n {
            return Err(format!(
                "line {} of the guest's answers is drawn log {}; expected {n}",
                n + 1,
                k.drawn
            ));
        }
        let log = draw(&mut rng, k.port, k.pinned, k.two_uids);
        let model =
            model_answers(profile, &log).map_err(|e| format!("drawn call log {}: {e}", k.drawn))?;
        a.layouts += 1;
        tally(&k.answers, &model, &mut calls, &mut lookups);
        let diffs = differences(&log, &k.answers, &model);
        if diffs.is_empty() {
            a.agreed += 1;
        } else if a.disagreements.len() < 10 {
            a.disagreements.push(format!(
                "drawn call log {}: {} -- {}",
                k.drawn,
                compact(&log),
                diffs.join("; ")
            ));
        }
    }
    (a.calls, a.calls_agreed) = calls;
    (a.lookups, a.lookups_agreed) = lookups;
    if a.layouts != expected {
        return Err(format!(
            "the guest wrote the answers of {} of {expected} call logs",
            a.layouts
        ));
    }
    Ok(a)
}

/// The report of `verify --layouts N --call-logs`.
pub type CallsReport = crate::layouts::Report<CallDisagreement>;

/// Prints the report as text.
pub fn print_text(r: &CallsReport, out: &mut impl Write) -> std::io::Result<()> {
    let words = crate::layouts::Words {
        command: "verify --layouts --call-logs",
        things: "call logs",
        answers: "call answers",
    };
    r.write_counts(&words, out)?;
    for d in &r.disagreements {
        writeln!(
            out,
            "DISAGREEMENT in drawn call log {} ({} calls, shrunk to {}):",
            d.drawn,
            d.calls_drawn,
            d.log.calls.len()
        )?;
        writeln!(out, "  log: {}", compact(&d.log))?;
        for (i, c) in d.log.calls.iter().enumerate() {
            let k = d.kernel.calls.get(i).copied().flatten();
            let m = d.model.calls.get(i).copied().flatten();
            writeln!(
                out,
                "  {i:>2} {:<70} kernel {:<11} model {}{}",
                serde_json::to_string(c).unwrap_or_default(),
                errno_name(k),
                errno_name(m),
                if k == m { "" } else { "  <--" }
            )?;
        }
        for x in &d.differences {
            writeln!(out, "  {x}")?;
        }
    }
    r.write_verdict(&words, out)
}

#[cfg(target_os = "linux")]
pub use kernel::{kernel_answers, run, run_kernel_side};

#[cfg(target_os = "linux")]
mod kernel {
    use super::*;
    use crate::calllog::replay;
    use crate::layouts::kernel::{probe_destinations, Setup};
    use crate::layouts::{LayoutsError, Options, MAX_LAYOUTS};
    use socket2::{Domain, Socket, Type};
    use std::time::{Duration, Instant};

    /// TCP listeners on 127.0.0.5 and ::1 port [`PEER_PORT`] that the drawn
    /// TIME_WAIT sockets connect to; their queues are emptied after each log.
    pub struct Peers(Vec<Socket>);

    impl Peers {
        /// Listens on both addresses (a note when one cannot be made).
        pub fn new() -> Peers {
            let ips: [IpAddr; 2] = [V4_PEER_IP.into(), Ipv6Addr::LOCALHOST.into()];
            Peers(
                ips.iter()
                    .filter_map(|&ip| {
                        let at = SocketAddr::new(ip, PEER_PORT);
                        let l = Socket::new(Domain::for_address(at), Type::STREAM, None).and_then(
                            |l| {
                                l.set_reuse_address(true)?;
                                l.bind(&at.into())?;
                                l.listen(64)?;
                                l.set_nonblocking(true)?;
                                Ok(l)
                            },
                        );
                        l.map_err(|e| crate::note!("verify --layouts: the peer listener {at}: {e}"))
                            .ok()
                    })
                    .collect(),
            )
        }

        fn drain(&self) {
            for l in &self.0 {
                while let Ok((a, _)) = l.accept() {
                    let _ = a.set_linger(Some(Duration::ZERO));
                }
            }
        }
    }

    impl Default for Peers {
        fn default() -> Peers {
            Peers::new()
        }
    }

    /// Replays the log on this kernel and probes its port
    /// (`layouts::kernel::probe_destinations`).
    pub fn kernel_answers(log: &CallLog, probes: &mut u64, peers: &Peers) -> CallAnswers {
        let run = replay(log);
        peers.drain();
        let (proto, port) = (proto_of(log), port_of(log));
        let receiving: Vec<usize> = (0..run.socks.len())
            .filter(|&i| run.receiving[i] && run.protos[i] == proto)
            .collect();
        let lookups = probe_destinations(&run.socks, &receiving, proto, port, probes);
        CallAnswers {
            calls: run.answers,
            lookups,
        }
    }

    fn check(opts: &Options) -> Result<(), LayoutsError> {
        if opts.count == 0 || opts.count > MAX_LAYOUTS {
            return Err(LayoutsError::Options(format!(
                "the number of call logs must be 1 to {MAX_LAYOUTS}; got {}",
                opts.count
            )));
        }
        Ok(())
    }

    /// `--call-logs --kernel-answers --output FILE`: replays and probes the
    /// drawn logs on this kernel only, writing a [`CallsLine`] per log.
    pub fn run_kernel_side(opts: &Options, path: &std::path::Path) -> Result<(), LayoutsError> {
        check(opts)?;
        let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let opts = opts.clone();
        let lines = std::thread::spawn(move || {
            let mut s = Setup::enter(opts.seed);
            let peers = Peers::new();
            let mut probes = 0;
            (0..opts.count)
                .map(|drawn| {
                    let port = s.ports.take();
                    let log = draw(&mut s.rng, port, s.pinned, s.two_uids);
                    CallsLine {
                        drawn,
                        port,
                        pinned: s.pinned,
                        two_uids: s.two_uids,
                        answers: kernel_answers(&log, &mut probes, &peers),
                    }
                })
                .collect::<Vec<_>>()
        })
        .join()
        .map_err(|_| LayoutsError::Kernel("the call-log thread panicked".into()))?;
        for l in lines {
            serde_json::to_writer(&mut file, &l).map_err(std::io::Error::from)?;
            writeln!(file)?;
        }
        file.flush()?;
        Ok(())
    }

    fn run_all(
        opts: &Options,
        profile: &'static Profile,
        release: String,
    ) -> Result<CallsReport, LayoutsError> {
        let t0 = Instant::now();
        let mut s = Setup::enter(opts.seed);
        let peers = Peers::new();
        let mut r = CallsReport {
            seed: opts.seed,
            kernel: release,
            profile: profile.release.to_string(),
            private_netns: s.ports.private,
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
        let mut probes = 0;
        let mut seen = BTreeSet::new();
        let (mut calls, mut lookups) = ((0, 0), (0, 0));
        for drawn in 0..opts.count {
            let port = s.ports.take();
            let log = draw(&mut s.rng, port, s.pinned, s.two_uids);
            let model = model_answers(profile, &log).map_err(LayoutsError::Kernel)?;
            let kernel = kernel_answers(&log, &mut probes, &peers);
            r.layouts += 1;
            tally(&kernel, &model, &mut calls, &mut lookups);
            if differences(&log, &kernel, &model).is_empty() {
                r.agreed += 1;
                continue;
            }
            let mut both = |l: &CallLog| -> Option<(CallLog, CallAnswers, CallAnswers)> {
                let l = with_port(l, s.ports.take());
                let m = model_answers(profile, &l).ok()?;
                let k = kernel_answers(&l, &mut probes, &peers);
                Some((l, k, m))
            };
            let small = shrink(&log, |l| {
                both(l).is_some_and(|(l, k, m)| !differences(&l, &k, &m).is_empty())
            });
            let Some((l, k, m)) = both(&small) else {
                continue;
            };
            let shown = with_port(&small, 8080);
            crate::note!(
                "verify --layouts: drawn call log {drawn} disagrees; shrunk to {} calls",
                small.calls.len()
            );
            if seen.insert(compact(&shown)) && r.disagreements.len() < 50 {
                r.disagreements.push(CallDisagreement {
                    drawn,
                    calls_drawn: log.calls.len(),
                    differences: differences(&l, &k, &m),
                    log: shown,
                    kernel: k,
                    model: m,
                });
            }
        }
        (r.calls, r.calls_agreed) = calls;
        (r.lookups, r.lookups_agreed) = lookups;
        r.probes = probes;
        r.seconds = t0.elapsed().as_secs_f64();
        Ok(r)
    }

    /// Runs `verify --layouts N --call-logs`: the report to `out`, progress
    /// to `err`.
    pub fn run(
        opts: &Options,
        mut out: impl Write,
        err: &mut dyn Write,
    ) -> Result<CallsReport, LayoutsError> {
        check(opts)?;
        let release =
            crate::kernel::running_release().map_err(|e| LayoutsError::Kernel(e.to_string()))?;
        let profile =
            Profile::for_release(&release).map_err(|e| LayoutsError::Kernel(e.to_string()))?;
        writeln!(
            err,
            "verify --layouts --call-logs: {} random call logs, seed {} (repeat with --seed {}), kernel {release} (profile {})",
            opts.count, opts.seed, opts.seed, profile.release
        )?;
        let o = opts.clone();
        let report = std::thread::spawn(move || run_all(&o, profile, release))
            .join()
            .map_err(|_| LayoutsError::Kernel("the call-log thread panicked".into()))??;
        if opts.json {
            serde_json::to_writer(&mut out, &report).map_err(std::io::Error::from)?;
            writeln!(out)?;
        } else {
            print_text(&report, &mut out)?;
        }
        Ok(report)
    }
}
