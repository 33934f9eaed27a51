//! `verify --layouts N`: the layout draw of the differential test
//! ([`crate::cmd::verify::differential`]).
//!
//! A layout is the socket-list form `{sockets, listenOrder, closed}`: 2 – 7
//! sockets on one port, built on the running kernel the way a program would
//! (every `bind()` first, then every `listen()` in a drawn order, each
//! answer recorded with its errno). The model replays it through
//! [`reuseport_model::lookup::Host::run`], converted to calls first
//! ([`reuseport_model::lookup::CallLog::from_layout`]). A disagreement shrinks by
//! whole sockets. The call-log draw ([`crate::cmd::verify::calldraw`]) says more.

use std::io::Write;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use reuseport_model::lookup::{CallLog, Family, Host, Layout, SockState, SocketSpec};
use reuseport_model::{Keys, Profile, Proto};
use serde::{Deserialize, Serialize};

use crate::calllog::{errno_name, errno_number as model_errno};
use crate::cmd::verify::differential::{
    model_lookups, specific, v6_addrs, Draw, Drawing, Found, Lookups, Words, MAX_DRAWN_SOCKETS,
    PEER_PORT, V4_ADDRS, V4_PEER_IP,
};
pub use crate::cmd::verify::differential::{Answer, Rng, OTHER_UID};

/// Sockets per drawn layout.
const MIN_SOCKETS: usize = 2;
const MAX_SOCKETS: usize = MAX_DRAWN_SOCKETS;

const V4_PEER: SocketAddr = SocketAddr::new(IpAddr::V4(V4_PEER_IP), PEER_PORT);
const V6_PEER: SocketAddr = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), PEER_PORT);

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
        let specific = specific(addr);
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
pub fn shrink(layout: &Layout, still: impl FnMut(&Layout) -> bool) -> Layout {
    crate::cmd::verify::differential::shrink::<Layouts>(layout, still)
}

/// Every answer of one side (kernel or model) for one layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answers {
    /// `bind()` per socket.
    pub bind: Vec<Answer>,
    /// `listen()` per socket, for TCP sockets that listen and bound.
    pub listen: Vec<Option<Answer>>,
    /// Per probed destination: the sockets that receive (empty: none).
    pub lookups: Lookups,
}

/// The model's answers.
pub fn model_answers(profile: &'static Profile, layout: &Layout) -> Result<Answers, String> {
    let log = CallLog::from_layout(layout).map_err(|e| e.to_string())?;
    let host = Host::run(profile, &log).map_err(|e| e.to_string())?;
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
    let (proto, port) = proto_port(layout);
    let lookups = model_lookups(&host, proto, port);
    Ok(Answers {
        bind,
        listen,
        lookups,
    })
}

fn proto_port(layout: &Layout) -> (Proto, u16) {
    layout
        .sockets
        .first()
        .map_or((Proto::Tcp, 0), |s| (s.proto, s.port))
}

/// The differences between the kernel's answers and the model's, in words.
pub fn differences(layout: &Layout, kernel: &Answers, model: &Answers) -> Vec<String> {
    crate::cmd::verify::differential::differences::<Layouts>(layout, kernel, model)
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
    pub lookups: Lookups,
}

impl KernelLine {
    fn new(drawn: u32, layout: Layout, a: Answers) -> KernelLine {
        KernelLine {
            drawn,
            layout,
            bind: a.bind.iter().map(|b| b.unwrap_or(0)).collect(),
            listen: a
                .listen
                .iter()
                .map(|l| l.map_or(-1, |e| e.unwrap_or(0)))
                .collect(),
            lookups: a.lookups,
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

/// The report of `verify --layouts`.
pub type LayoutsReport = crate::cmd::verify::differential::Report<Disagreement>;

/// The layout draw.
pub struct Layouts;

impl Draw for Layouts {
    type Case = Layout;
    type Answers = Answers;
    type Line = KernelLine;
    type Disagreement = Disagreement;
    #[cfg(target_os = "linux")]
    type Helpers = kernel::Helpers;

    const WORDS: Words = Words {
        command: "verify --layouts",
        thing: "layout",
        things: "layouts",
        answers: "bind/listen answers",
        member: "socket",
        parts: "sockets",
    };

    /// [`draw`], without SO_INCOMING_CPU or a second UID where the run
    /// cannot build them.
    fn draw(rng: &mut Rng, port: u16, pinned: bool, two_uids: bool) -> Layout {
        let mut layout = draw(rng, port);
        for s in &mut layout.sockets {
            if !two_uids {
                s.uid = 0;
            }
            if !pinned {
                s.incoming_cpu = None;
            }
        }
        layout
    }

    fn with_port(layout: &Layout, port: u16) -> Layout {
        let mut l = layout.clone();
        for s in &mut l.sockets {
            s.port = port;
        }
        l
    }

    fn proto_port(layout: &Layout) -> (Proto, u16) {
        proto_port(layout)
    }

    fn size(layout: &Layout) -> usize {
        layout.sockets.len()
    }

    fn smaller(layout: &Layout) -> Vec<Layout> {
        (0..layout.sockets.len())
            .map(|i| without(layout, i))
            .filter(|l| !l.sockets.is_empty())
            .collect()
    }

    fn compact(layout: &Layout) -> String {
        compact(layout)
    }

    fn model_answers(profile: &'static Profile, layout: &Layout) -> Result<Answers, String> {
        model_answers(profile, layout)
    }

    /// `bind()` per socket, then `listen()` where both sides called it.
    fn compare(_: &Layout, k: &Answers, m: &Answers) -> Vec<(Answer, Answer, Option<String>)> {
        let say = |i: usize, call: &str, k: Answer, m: Answer| {
            (k != m).then(|| {
                format!(
                    "socket {i} {call}(): kernel {}, model {}",
                    errno_name(k),
                    errno_name(m)
                )
            })
        };
        let binds = (k.bind.iter().zip(&m.bind).enumerate())
            .map(|(i, (&k, &m))| (k, m, say(i, "bind", k, m)));
        let listens = (k.listen.iter().zip(&m.listen).enumerate())
            .filter_map(|(i, (k, m))| Some((i, (*k)?, (*m)?)))
            .map(|(i, k, m)| (k, m, say(i, "listen", k, m)));
        binds.chain(listens).collect()
    }

    fn lookups(a: &Answers) -> &Lookups {
        &a.lookups
    }

    #[cfg(target_os = "linux")]
    fn helpers() -> kernel::Helpers {
        kernel::Helpers::default()
    }

    #[cfg(target_os = "linux")]
    fn kernel_answers(layout: &Layout, probes: &mut u64, helpers: &mut kernel::Helpers) -> Answers {
        kernel::kernel_answers(layout, probes, helpers)
    }

    fn line(drawn: u32, layout: &Layout, _: &Drawing, answers: Answers) -> KernelLine {
        KernelLine::new(drawn, layout.clone(), answers)
    }

    /// The line carries its layout: nothing is drawn again.
    fn read_line(
        line: KernelLine,
        _: usize,
        _: &mut Rng,
    ) -> Result<(u32, Layout, Answers), String> {
        let answers = line.answers();
        Ok((line.drawn, line.layout, answers))
    }

    fn disagreement(
        drawn: u32,
        drawn_case: &Layout,
        shown: Layout,
        f: Found<Answers>,
    ) -> Disagreement {
        Disagreement {
            drawn,
            sockets_drawn: drawn_case.sockets.len(),
            layout: shown,
            differences: f.differences,
            kernel: f.kernel,
            model: f.model,
        }
    }

    fn write_disagreement(d: &Disagreement, out: &mut dyn Write) -> std::io::Result<()> {
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
        Ok(())
    }
}

#[cfg(target_os = "linux")]
mod kernel {
    use super::*;
    use crate::cmd::verify::differential::probe_destinations;
    use socket2::{Domain, SockAddr, Socket, Type};
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn errno_of(e: &std::io::Error) -> i32 {
        e.raw_os_error().unwrap_or(libc::EIO)
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

    /// Listeners on ephemeral ports of 127.0.0.1 and ::1 that TIME_WAIT
    /// sockets connect to (made when first needed, kept for the run).
    #[derive(Default)]
    pub struct Helpers {
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
}
