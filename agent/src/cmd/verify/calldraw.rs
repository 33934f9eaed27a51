//! `verify --layouts N [--call-logs]`: the draw of the differential test
//! ([`crate::cmd::verify::differential`]). One draw makes random call logs
//! as programs make them; a [`DrawProfile`] says which calls it may make
//! and in which order. Each log is replayed on the running kernel
//! ([`crate::calllog::replay`]) and by the model
//! ([`reuseport_model::lookup::Host::run`]), every call's answer and the
//! receiving sockets compared.
//!
//! Two profiles:
//! - [`CALL_LOGS`] (`--call-logs`) draws what only calls can say: an
//!   option set after `bind()`, binds in another order than the sockets
//!   were made, a listener shut down and listening again, a `close()`
//!   between other sockets' binds, a reset;
//! - [`LAYOUTS`] (the default) draws only what the socket-list form of a
//!   layout file says, in the order that form implies
//!   ([`reuseport_model::lookup::CallLog::from_layout`]): per socket in
//!   fd order its `socket`, its options and its `bind` (then `connect` for
//!   connected UDP, or `connect`, SO_LINGER and `close` for TIME_WAIT);
//!   then every `listen` in a drawn order; then some closes.
//!
//! A disagreement is shrunk (sockets and, where the profile says, single
//! calls dropped while it still disagrees) and printed as the call log
//! `predict --layout` reads.

use std::io::Write;
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv6Addr};

use reuseport_model::lookup::{Call, CallLog, Family, Host, SockOpt};
use reuseport_model::{Profile, Proto};
use serde::{Deserialize, Serialize};

use crate::calllog::{errno_name, Answer};
pub use crate::cmd::verify::differential::PEER_PORT;
use crate::cmd::verify::differential::{
    model_lookups, specific, v6_addrs, Draw, Drawing, Found, Lookups, Rng, Words,
    MAX_DRAWN_SOCKETS, OTHER_UID, V4_ADDRS, V4_PEER_IP,
};

/// The fewest sockets a drawn log makes.
const MIN_SOCKETS: usize = 2;

/// What one profile of the draw may make: its restrictions on the calls
/// and their order, and how its runs name themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restrictions {
    /// The most sockets per log (at most [`MAX_DRAWN_SOCKETS`]).
    pub max_sockets: usize,
    /// Every socket is made, with its options, before the first bind, and
    /// the binds run in a drawn order; otherwise each socket is made, set
    /// up and bound in fd order before the next is made.
    pub sockets_first: bool,
    /// SO_REUSEADDR or SO_REUSEPORT sometimes set only after `bind()`.
    pub late_options: bool,
    /// A listener sometimes listens right after its bind; otherwise every
    /// `listen` comes after the last bind.
    pub listen_at_bind: bool,
    /// A TCP socket sometimes connects and closes with SO_LINGER 0 (a
    /// reset: nothing left on the port).
    pub reset: bool,
    /// An earlier socket sometimes closes between other sockets' binds.
    pub close_between_binds: bool,
    /// A listener sometimes shut down, and sometimes listening again.
    pub shutdown: bool,
    /// A disagreement shrinks by single calls as well as by sockets.
    pub shrink_calls: bool,
}

/// The call-log profile: every restriction off.
pub const CALL_LOGS: Restrictions = Restrictions {
    max_sockets: 6,
    sockets_first: true,
    late_options: true,
    listen_at_bind: true,
    reset: true,
    close_between_binds: true,
    shutdown: true,
    shrink_calls: true,
};

/// The layout profile: the calls the socket-list form of a layout file
/// stands for, in its order, shrunk by whole sockets as a layout is.
pub const LAYOUTS: Restrictions = Restrictions {
    max_sockets: MAX_DRAWN_SOCKETS,
    sockets_first: false,
    late_options: false,
    listen_at_bind: false,
    reset: false,
    close_between_binds: false,
    shutdown: false,
    shrink_calls: false,
};

/// How a drawn socket ends its first life.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Listen,
    BoundOnly,
    TimeWait,
    Reset,
    ConnectedUdp,
    Udp,
}

/// Draws one call log on `port` within the restrictions `r`: 2 –
/// `r.max_sockets` sockets of one protocol, made with their options
/// (SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY, SO_BINDTODEVICE lo,
/// SO_INCOMING_CPU 0 or 1; owner UID 0 or [`OTHER_UID`]); then bound (in
/// fd order, or in a drawn order), an option sometimes set only after the
/// bind, a listener sometimes listening at once, a TCP socket on a
/// specific address connecting and closing at once with SO_LINGER, into
/// TIME_WAIT or reset (at most one: two would share a 4-tuple), or a
/// connected UDP socket connecting at once, and now and then an earlier
/// socket closed between binds; then the other listens in a drawn order;
/// then a listener sometimes shut down and sometimes listening again; then
/// some closes. What `r` forbids is never drawn. `pinned` false draws no
/// SO_INCOMING_CPU, `two_uids` false no second UID.
pub fn draw(rng: &mut Rng, port: u16, r: &Restrictions, pinned: bool, two_uids: bool) -> CallLog {
    let proto = if rng.chance(55) {
        Proto::Tcp
    } else {
        Proto::Udp
    };
    let n = MIN_SOCKETS + rng.below(r.max_sockets - MIN_SOCKETS + 1);
    // Per socket: its `socket` call and its options before bind.
    let mut made: Vec<Vec<Call>> = Vec::with_capacity(n);
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
        // Wildcard binds take their address from connect(); the model
        // wants the address the socket ends with, so only specific ones.
        let specific = specific(addr);
        let kind = match (proto, rng.below(100)) {
            (Proto::Tcp, 0..=19) => Kind::BoundOnly,
            (Proto::Tcp, 20..=29) if specific && !time_wait_drawn => {
                time_wait_drawn = true;
                Kind::TimeWait
            }
            (Proto::Tcp, 30..=33) if r.reset && specific && !time_wait_drawn => {
                time_wait_drawn = true;
                Kind::Reset
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
        let mut calls = vec![Call::Socket { family, proto, uid }];
        let reuseaddr = rng.chance(50);
        let reuseport = rng.chance(65);
        // One option of the two, off before bind, set on after it.
        let late = if r.late_options {
            match rng.below(100) {
                0..=7 if !reuseport => Some(SockOpt::Reuseport(true)),
                8..=13 if !reuseaddr => Some(SockOpt::Reuseaddr(true)),
                _ => None,
            }
        } else {
            None
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
        made.push(calls);
        addrs.push(addr);
        kinds.push(kind);
        after_bind.push(late);
        families.push(family);
    }
    // A peer of the socket's family: an AF_INET6 socket on a v4-mapped
    // address connects to the v4-mapped peer.
    let peer = |fd: usize| -> IpAddr {
        match (families[fd], addrs[fd]) {
            (Family::Inet6, IpAddr::V6(a)) if a.to_ipv4_mapped().is_none() => {
                Ipv6Addr::LOCALHOST.into()
            }
            (Family::Inet6, _) => V4_PEER_IP.to_ipv6_mapped().into(),
            _ => V4_PEER_IP.into(),
        }
    };
    let mut calls = Vec::new();
    let mut order: Vec<usize> = (0..n).collect();
    if r.sockets_first {
        calls.extend(made.iter_mut().flat_map(std::mem::take));
        rng.shuffle(&mut order);
    }
    let mut closed = vec![false; n];
    let mut later = Vec::new();
    let mut bound = Vec::new();
    for &fd in &order {
        calls.append(&mut made[fd]);
        calls.push(Call::Bind {
            fd,
            addr: addrs[fd],
            port,
        });
        if let Some(opt) = after_bind[fd].clone() {
            calls.push(Call::Setsockopt { fd, opt });
        }
        match kinds[fd] {
            Kind::Listen if r.listen_at_bind && rng.chance(40) => calls.push(Call::Listen { fd }),
            Kind::Listen => later.push(fd),
            Kind::TimeWait | Kind::Reset | Kind::ConnectedUdp => {
                calls.push(Call::Connect {
                    fd,
                    addr: peer(fd),
                    port: PEER_PORT,
                });
                // SO_LINGER makes the close definite: with a timeout it
                // waits for the peer's ACK and leaves a timewait socket,
                // with 0 it resets and leaves nothing. Without it the
                // socket is in FIN_WAIT1 until the ACK comes, 0.1 – 43 ms
                // on loopback (measured on 6.18.44), so what a bind right
                // after it meets would depend on timing; the model answers
                // that case (kernel_bind_rules.rs), the draw leaves it out.
                let linger = match kinds[fd] {
                    Kind::TimeWait => Some(reuseport_model::lookup::TIME_WAIT_LINGER),
                    Kind::Reset => Some(0),
                    _ => None,
                };
                if let Some(l) = linger {
                    calls.push(Call::Setsockopt {
                        fd,
                        opt: SockOpt::Linger(Some(l)),
                    });
                    calls.push(Call::Close { fd });
                    closed[fd] = true;
                }
            }
            Kind::BoundOnly | Kind::Udp => {}
        }
        bound.push(fd);
        // A close between other sockets' binds.
        if r.close_between_binds && rng.chance(8) {
            let open: Vec<usize> = bound.iter().copied().filter(|&f| !closed[f]).collect();
            if !open.is_empty() {
                let fd = open[rng.below(open.len())];
                calls.push(Call::Close { fd });
                closed[fd] = true;
            }
        }
    }
    rng.shuffle(&mut later);
    for &fd in &later {
        if !closed[fd] {
            calls.push(Call::Listen { fd });
        }
    }
    // A listener shut down, and sometimes listening again.
    let listeners: Vec<usize> = (0..n)
        .filter(|&f| kinds[f] == Kind::Listen && !closed[f])
        .collect();
    if r.shutdown && !listeners.is_empty() && rng.chance(15) {
        let fd = listeners[rng.below(listeners.len())];
        calls.push(Call::Shutdown { fd });
        if rng.chance(60) {
            calls.push(Call::Listen { fd });
        }
    }
    let mut last: Vec<usize> = (0..n).filter(|&f| !closed[f] && rng.chance(12)).collect();
    rng.shuffle(&mut last);
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

/// How many sockets the log makes.
pub fn sockets_in(log: &CallLog) -> usize {
    log.calls
        .iter()
        .filter(|c| matches!(c, Call::Socket { .. }))
        .count()
}

/// The logs one step smaller: each socket dropped, then (where `r` says
/// so) each call other than `socket`.
pub fn smaller(log: &CallLog, r: &Restrictions) -> Vec<CallLog> {
    let sockets = (0..sockets_in(log))
        .map(|i| without_socket(log, i))
        .filter(|l| sockets_in(l) > 0);
    let calls = (0..log.calls.len())
        .filter(|&i| r.shrink_calls && !matches!(log.calls[i], Call::Socket { .. }))
        .map(|i| {
            let mut l = log.clone();
            l.calls.remove(i);
            l
        });
    sockets.chain(calls).collect()
}

/// Every answer of one side (kernel or model) for one call log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallAnswers {
    /// Per call: `None` (ok) or the errno.
    pub calls: Vec<Answer>,
    /// Per probed destination: the fds that receive (empty: none).
    pub lookups: Lookups,
}

/// The model's answers; input it cannot replay is an error.
pub fn model_answers(profile: &'static Profile, log: &CallLog) -> Result<CallAnswers, String> {
    let host = Host::run(profile, log).map_err(|e| e.to_string())?;
    let calls = crate::calllog::model_answers(&host);
    let (proto, port) = (proto_of(log), port_of(log));
    let lookups = model_lookups(&host, proto, port);
    Ok(CallAnswers { calls, lookups })
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
    /// Sockets before shrinking.
    pub sockets_drawn: usize,
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
/// `verify --layouts N [--call-logs] --kernel-answers --output FILE`
/// writes. The log itself is not written: the host draws it again from
/// the seed, with the same profile.
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

/// The report of `verify --layouts N [--call-logs]`.
pub type CallsReport = crate::cmd::verify::differential::Report<CallDisagreement>;

/// A profile of the draw as a type, so that [`CallDraw`] is a [`Draw`].
pub trait DrawProfile {
    /// What the profile may draw.
    const RESTRICTIONS: Restrictions;
    /// How its runs name themselves and their parts.
    const WORDS: Words;
}

/// The call-log profile ([`CALL_LOGS`]).
pub struct AnyCalls;

impl DrawProfile for AnyCalls {
    const RESTRICTIONS: Restrictions = CALL_LOGS;
    const WORDS: Words = Words {
        command: "verify --layouts --call-logs",
        thing: "call log",
        things: "call logs",
        answers: "call answers",
        member: "fd",
        parts: "calls",
    };
}

/// The layout profile ([`LAYOUTS`]).
pub struct LayoutCalls;

impl DrawProfile for LayoutCalls {
    const RESTRICTIONS: Restrictions = LAYOUTS;
    const WORDS: Words = Words {
        command: "verify --layouts",
        thing: "layout",
        things: "layouts",
        answers: "call answers",
        member: "fd",
        parts: "sockets",
    };
}

/// The draw under profile `P`: the one [`Draw`] of call logs.
pub struct CallDraw<P>(PhantomData<P>);

/// `verify --layouts N --call-logs`.
pub type CallLogs = CallDraw<AnyCalls>;
/// `verify --layouts N`.
pub type Layouts = CallDraw<LayoutCalls>;

impl<P: DrawProfile> CallDraw<P> {
    /// What a log's size counts: its sockets where the profile shrinks by
    /// sockets alone, else its calls.
    fn parts(log: &CallLog) -> usize {
        if P::RESTRICTIONS.shrink_calls {
            log.calls.len()
        } else {
            sockets_in(log)
        }
    }
}

impl<P: DrawProfile> Draw for CallDraw<P> {
    type Case = CallLog;
    type Answers = CallAnswers;
    type Line = CallsLine;
    type Disagreement = CallDisagreement;
    #[cfg(target_os = "linux")]
    type Helpers = kernel::Peers;

    const WORDS: Words = P::WORDS;

    fn draw(rng: &mut Rng, port: u16, pinned: bool, two_uids: bool) -> CallLog {
        draw(rng, port, &P::RESTRICTIONS, pinned, two_uids)
    }

    fn with_port(log: &CallLog, port: u16) -> CallLog {
        with_port(log, port)
    }

    fn proto_port(log: &CallLog) -> (Proto, u16) {
        (proto_of(log), port_of(log))
    }

    fn size(log: &CallLog) -> usize {
        Self::parts(log)
    }

    fn smaller(log: &CallLog) -> Vec<CallLog> {
        smaller(log, &P::RESTRICTIONS)
    }

    fn compact(log: &CallLog) -> String {
        compact(log)
    }

    fn model_answers(profile: &'static Profile, log: &CallLog) -> Result<CallAnswers, String> {
        model_answers(profile, log)
    }

    /// Every call's answer.
    fn compare(
        log: &CallLog,
        k: &CallAnswers,
        m: &CallAnswers,
    ) -> Vec<(Answer, Answer, Option<String>)> {
        let say = |i: usize, k: Answer, m: Answer| {
            let what = log
                .calls
                .get(i)
                .and_then(|c| serde_json::to_string(c).ok())
                .unwrap_or_default();
            format!(
                "call {i} {what}: kernel {}, model {}",
                errno_name(k),
                errno_name(m)
            )
        };
        (k.calls.iter().zip(&m.calls).enumerate())
            .map(|(i, (&k, &m))| (k, m, (k != m).then(|| say(i, k, m))))
            .collect()
    }

    fn mismatch(k: &CallAnswers, m: &CallAnswers) -> Option<String> {
        (k.calls.len() != m.calls.len()).then(|| {
            format!(
                "the kernel answered {} calls, the model {}",
                k.calls.len(),
                m.calls.len()
            )
        })
    }

    fn lookups(a: &CallAnswers) -> &Lookups {
        &a.lookups
    }

    #[cfg(target_os = "linux")]
    fn helpers() -> kernel::Peers {
        kernel::Peers::new()
    }

    #[cfg(target_os = "linux")]
    fn kernel_answers(log: &CallLog, probes: &mut u64, peers: &mut kernel::Peers) -> CallAnswers {
        kernel::kernel_answers(log, probes, peers)
    }

    fn line(drawn: u32, _: &CallLog, d: &Drawing, answers: CallAnswers) -> CallsLine {
        CallsLine {
            drawn,
            port: d.port,
            pinned: d.pinned,
            two_uids: d.two_uids,
            answers,
        }
    }

    /// The log is drawn again, as the guest drew it; the `n`th line must be
    /// drawn log `n`, or the draws would part.
    fn read_line(
        line: CallsLine,
        n: usize,
        rng: &mut Rng,
    ) -> Result<(u32, CallLog, CallAnswers), String> {
        if line.drawn as usize != n {
            return Err(format!(
                "line {} of the guest's answers is drawn {} {}; expected {n}",
                n + 1,
                P::WORDS.thing,
                line.drawn
            ));
        }
        let log = draw(rng, line.port, &P::RESTRICTIONS, line.pinned, line.two_uids);
        Ok((line.drawn, log, line.answers))
    }

    fn disagreement(
        drawn: u32,
        drawn_case: &CallLog,
        shown: CallLog,
        f: Found<CallAnswers>,
    ) -> CallDisagreement {
        CallDisagreement {
            drawn,
            calls_drawn: drawn_case.calls.len(),
            sockets_drawn: sockets_in(drawn_case),
            log: shown,
            differences: f.differences,
            kernel: f.kernel,
            model: f.model,
        }
    }

    fn write_disagreement(d: &CallDisagreement, out: &mut dyn Write) -> std::io::Result<()> {
        let w = P::WORDS;
        let drawn = if P::RESTRICTIONS.shrink_calls {
            d.calls_drawn
        } else {
            d.sockets_drawn
        };
        writeln!(
            out,
            "DISAGREEMENT in drawn {} {} ({drawn} {}, shrunk to {}):",
            w.thing,
            d.drawn,
            w.parts,
            Self::parts(&d.log)
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
        Ok(())
    }
}

#[cfg(target_os = "linux")]
pub use kernel::{kernel_answers, Peers};

#[cfg(target_os = "linux")]
mod kernel {
    use super::*;
    use crate::calllog::replay;
    use crate::cmd::verify::differential::probe_destinations;
    use socket2::{Domain, Socket, Type};
    use std::net::SocketAddr;
    use std::time::Duration;

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
    /// ([`probe_destinations`]).
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
}
