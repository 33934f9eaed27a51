//! `verify --programs N` and `verify --program FILE`: classic BPF programs
//! on the live kernel. Each drawn program (of the kinds people write:
//! payload loads of bytes, halfwords and words, some past the end,
//! ancillary loads, ALU with K and X, scratch cells, forward jumps,
//! `ret a` and `ret #k`) is attached with SO_ATTACH_REUSEPORT_CBPF to a
//! UDP group on 127.0.0.1 in a private network namespace; datagrams with
//! random payloads from random loopback sources, sent from a thread pinned
//! to one CPU, land where the kernel puts them, and each is compared with
//! the model's slot. A disagreement is shrunk (instructions dropped while
//! it stays) and printed as `bpf_asm`-free `[code, jt, jf, k]` data.
//!
//! An index out of range falls back to the hash (`reuseport_select_sock`,
//! net/core/sock_reuseport.c: `select_by_hash` when `run_bpf_filter`
//! finds no socket, from 4.16, 61b7c691c731; before, the lookup's
//! reservoir walk took over). That hash is keyed per network
//! namespace (`udp_ehash_secret + net_hash_mix(net)`), so the run first
//! recovers this namespace's key from a hash-only group of 16 sockets, as
//! `recover` does, and then compares those datagrams too, counted apart as
//! `fallback`. Without a key (the search found none or several) they are
//! counted and not compared, and the report says so.
//!
//! The checker: mutated programs (a field set to a value a rule is about)
//! are attached too, one socket in ten without SO_REUSEPORT; the kernel
//! must answer as the model's call log does (EINVAL exactly when it
//! refuses).

#![cfg(target_os = "linux")]

use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use reuseport_model::batch::Isa;
use reuseport_model::lookup::Host;
use reuseport_model::recover::Plan;
use reuseport_model::reuseport::cbpf::{self, Ancillary, Insn};
use reuseport_model::reuseport::{PacketCtx, Payload, Program};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};
use serde::Serialize;
use socket2::{Domain, Socket, Type};

use crate::calllog::socket_type;
use crate::cmd::verify::differential::Rng;

/// The most programs one run draws.
pub const MAX_PROGRAMS: u32 = 100_000;
/// Datagrams sent to each program.
const DATAGRAMS: usize = 24;
/// SYNs sent to each program (a connection each, so fewer).
const SYNS: usize = 12;
/// How long a datagram may take to arrive: generous, loopback takes
/// microseconds.
const WAIT: Duration = Duration::from_secs(2);

/// What one protocol's packets found.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Packets compared (datagrams, or SYNs).
    pub compared: u64,
    /// Where kernel and model chose the same slot.
    pub agreed: u64,
    /// Packets whose index was out of range, so that the hash decided
    /// (compared when `hash_key` is known).
    pub fallback: u64,
    /// Of those, where kernel and model chose the same slot.
    pub fallback_agreed: u64,
    /// This namespace's IPv4 hash key for the protocol, recovered at the
    /// start of the run; `None` when the search did not find exactly one
    /// (the fallback packets are then not compared).
    pub hash_key: Option<String>,
}

impl Counts {
    fn add(&mut self, s: &Sent) {
        self.compared += s.compared;
        self.agreed += s.agreed;
        self.fallback += s.fallback;
        self.fallback_agreed += s.fallback_agreed;
    }
}

/// What the run found.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgramsReport {
    /// Programs run on packets.
    pub programs: u32,
    /// Each program on a UDP group: datagrams.
    pub udp: Counts,
    /// Each program on a TCP group: SYNs.
    pub tcp: Counts,
    /// Whether the SYNs carried payloads (TCP Fast Open without a cookie,
    /// set in the run's own namespace); without, every SYN's is empty.
    pub syn_payloads: bool,
    /// Programs given to the checker.
    pub checked: u32,
    /// Of those, where the kernel's answer (EINVAL or not) was the model's.
    pub checks_agreed: u32,
    /// The first disagreements, shrunk.
    pub mismatches: Vec<String>,
}

impl ProgramsReport {
    /// Every comparison agreed and something was compared.
    pub fn exact(&self) -> bool {
        self.udp.agreed == self.udp.compared
            && self.tcp.agreed == self.tcp.compared
            && self.checks_agreed == self.checked
            && self.udp.compared + self.tcp.compared + self.checked as u64 > 0
    }
}

/// Payload loads the draws make: offsets up to 24, past the end of short
/// payloads.
fn draw_insn(r: &mut Rng, stored: &mut u16, len: usize, pc: usize) -> Insn {
    const ANC: [Ancillary; 12] = [
        Ancillary::Cpu,
        Ancillary::Protocol,
        Ancillary::Queue,
        Ancillary::Ifindex,
        Ancillary::Hatype,
        Ancillary::Pkttype,
        Ancillary::Mark,
        Ancillary::AluXorX,
        Ancillary::VlanTag,
        Ancillary::VlanTagPresent,
        Ancillary::VlanTpid,
        Ancillary::Nlattr,
    ];
    let size = [0x00u16, 0x08, 0x10][r.below(3)];
    match r.below(14) {
        0 | 1 => Insn::stmt(0x20 | size, r.below(24) as u32),
        2 => Insn::stmt(0x40 | size, r.below(8) as u32),
        3 => Insn::stmt(0x80, 0),
        4 => Insn::stmt(0x20 | size, ANC[r.below(ANC.len())].k()),
        5 => Insn::stmt([0x01, 0x81, 0xb1][r.below(3)], r.below(16) as u32),
        6 | 7 => {
            const OPS: [u16; 10] = [0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x90, 0xa0];
            let op = OPS[r.below(OPS.len())];
            if r.chance(40) {
                Insn::stmt(0x04 | op | 0x08, 0)
            } else {
                let k = match op {
                    0x30 | 0x90 => 1 + r.below(9) as u32,
                    0x60 | 0x70 => r.below(32) as u32,
                    _ => r.below(1 << 16) as u32,
                };
                Insn::stmt(0x04 | op, k)
            }
        }
        8 => Insn::stmt(0x84, 0),
        9 => {
            let cell = r.below(4) as u32;
            *stored |= 1 << cell;
            Insn::stmt([0x02, 0x03][r.below(2)], cell)
        }
        10 if *stored != 0 => {
            let cells: Vec<u32> = (0..16).filter(|c| *stored & (1 << c) != 0).collect();
            Insn::stmt([0x60, 0x61][r.below(2)], cells[r.below(cells.len())])
        }
        11 => Insn::stmt([0x07, 0x87][r.below(2)], 0),
        12 | 13 if pc + 2 < len => {
            let room = (len - pc - 2).min(255);
            let code = [0x15u16, 0x25, 0x35, 0x45, 0x1d, 0x2d, 0x3d, 0x4d][r.below(8)];
            Insn::jump(
                code,
                r.below(8) as u32,
                r.below(room + 1) as u8,
                r.below(room + 1) as u8,
            )
        }
        _ => Insn::stmt(0x00, r.below(1 << 20) as u32),
    }
}

/// A valid program: a drawn body, then `A %= n` (usually) and `ret a`,
/// or `ret #k`.
pub fn draw_program(r: &mut Rng, n: u32) -> Vec<Insn> {
    loop {
        let body_len = 1 + r.below(10);
        let total = body_len + 2;
        let mut stored = 0u16;
        let mut v: Vec<Insn> = (0..body_len)
            .map(|pc| draw_insn(r, &mut stored, total, pc))
            .collect();
        if r.chance(80) {
            v.push(Insn::stmt(0x94, n));
            v.push(Insn::stmt(0x16, 0));
        } else {
            v.push(Insn::stmt(0x16, 0));
            v.push(Insn::stmt(0x06, r.below(n as usize + 2) as u32));
        }
        if cbpf::check(&v).is_ok() {
            return v;
        }
    }
}

/// A program with one field set to what a checker rule is about.
fn mutate(r: &mut Rng, mut v: Vec<Insn>) -> Vec<Insn> {
    let pc = r.below(v.len());
    match r.below(9) {
        0 => v[pc].code = r.below(0x100) as u16,
        1 => v[pc] = Insn::stmt([0x34, 0x94][r.below(2)], 0),
        2 => v[pc] = Insn::stmt([0x64, 0x74][r.below(2)], 30 + r.below(4) as u32),
        3 => v[pc] = Insn::stmt([0x02, 0x60, 0x61, 0x03][r.below(4)], 14 + r.below(4) as u32),
        4 => v[pc] = Insn::jump(0x15, 0, r.below(v.len() + 1) as u8, 0),
        5 => v[pc] = Insn::stmt(0x05, r.below(v.len()) as u32),
        6 => v[pc] = Insn::stmt(0x20, cbpf::SKF_AD_OFF + r.below(70) as u32),
        7 => {
            v.pop();
        }
        _ => v = vec![Insn::stmt(0x06, 0); [0, 4096, 4097][r.below(3)]],
    }
    v
}

/// One attach on the kernel and in the model's call log (`socket`,
/// SO_REUSEPORT or not, `bind` to 127.0.0.1, the attach): the errno each
/// answers, 0 for success.
fn checker_case(
    profile: &'static Profile,
    reuseport: bool,
    insns: &[Insn],
) -> std::io::Result<(i32, i32)> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, None)?;
    s.set_reuse_port(reuseport)?;
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())?;
    let port = s.local_addr()?.as_socket().map_or(0, |a| a.port());
    let kernel = attach(s.as_raw_fd(), insns);
    let program = Program::Cbpf {
        insns: insns.to_vec(),
    };
    let log = serde_json::json!({"calls": [
        {"call": "socket", "family": "inet", "proto": "udp"},
        {"call": "setsockopt", "fd": 0, "opt": {"reuseport": reuseport}},
        {"call": "bind", "fd": 0, "addr": "127.0.0.1", "port": port},
        {"call": "setsockopt", "fd": 0, "opt": {"attachReuseport": program}},
    ]});
    let log: reuseport_model::lookup::CallLog =
        serde_json::from_value(log).map_err(std::io::Error::other)?;
    let host = reuseport_model::lookup::Host::run(profile, &log)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let model = match host.answers().last().and_then(|a| a.as_ref()) {
        None => 0,
        Some(refusal) => match refusal.errno {
            reuseport_model::message::Errno::Einval => libc::EINVAL,
            other => {
                return Err(std::io::Error::other(format!(
                    "the model answers {other:?} to an attach"
                )))
            }
        },
    };
    Ok((kernel, model))
}

/// Attaches `insns` to `fd`: the errno, or 0.
fn attach(fd: i32, insns: &[Insn]) -> i32 {
    match crate::cbpf::attach(
        fd,
        &Program::Cbpf {
            insns: insns.to_vec(),
        },
    ) {
        Ok(()) => 0,
        Err(e) => e.raw_os_error().unwrap_or(-1),
    }
}

/// A member of a live group: SO_REUSEPORT, bound to 127.0.0.1:`port`
/// (0: any free port), listening when TCP.
fn member(proto: Proto, port: u16) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::IPV4, socket_type(proto), None)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())?;
    if proto == Proto::Tcp {
        s.listen(64)?;
    }
    s.set_nonblocking(true)?;
    Ok(s)
}

/// One program on one live group: per packet, the kernel's slot, or
/// `None` when nothing arrived in time.
struct Live {
    proto: Proto,
    socks: Vec<Socket>,
    port: u16,
}

impl Live {
    fn new(proto: Proto, n: u32) -> std::io::Result<Live> {
        let first = member(proto, 0)?;
        let port = first.local_addr()?.as_socket().map_or(0, |a| a.port());
        let mut socks = vec![first];
        for _ in 1..n {
            socks.push(member(proto, port)?);
        }
        Ok(Live { proto, socks, port })
    }

    /// Sends `payload` from `src` (a datagram, or a SYN carrying it with TCP
    /// Fast Open, [`tcp_fastopen_without_cookie`]): the source port and the
    /// slot of the member that received it.
    fn send(&self, src: Ipv4Addr, payload: &[u8]) -> std::io::Result<(u16, Option<u32>)> {
        let to: socket2::SockAddr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port)).into();
        let from = Socket::new(Domain::IPV4, socket_type(self.proto), None)?;
        from.bind(&SocketAddr::from((src, 0)).into())?;
        let me = from.local_addr()?.as_socket();
        let sport = me.map_or(0, |a| a.port());
        match (self.proto, payload.is_empty()) {
            (Proto::Udp, _) => {
                from.send_to(payload, &to)?;
            }
            (Proto::Tcp, true) => from.connect(&to)?,
            (Proto::Tcp, false) => {
                from.send_to_with_flags(payload, &to, libc::MSG_FASTOPEN)?;
            }
        }
        let deadline = Instant::now() + WAIT;
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 2048];
        while Instant::now() < deadline {
            for (i, s) in self.socks.iter().enumerate() {
                let arrived = match self.proto {
                    Proto::Udp => s.recv_from(&mut buf).ok().and_then(|(n, peer)| {
                        // SAFETY: recv_from initialised the first n bytes.
                        let got =
                            unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
                        (peer.as_socket() == me && got == payload).then_some(())
                    }),
                    // A connection from another source (none is expected) is dropped.
                    Proto::Tcp => s
                        .accept()
                        .ok()
                        .and_then(|(_, peer)| (peer.as_socket() == me).then_some(())),
                };
                if arrived.is_some() {
                    return Ok((sport, Some(i as u32)));
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok((sport, None))
    }
}

/// Lets a client put data in its SYN without a cookie (`tcp_fastopen`
/// bits 0x1 and 0x4, Documentation/networking/ip-sysctl.rst), in this
/// process's private network namespace only: the SYN then carries the
/// payload the program reads (the listener itself keeps Fast Open off and
/// takes the data after the handshake). `false` when the setting cannot be
/// written.
fn tcp_fastopen_without_cookie() -> bool {
    std::fs::write("/proc/sys/net/ipv4/tcp_fastopen", "5").is_ok()
}

/// What one program's datagrams found.
#[derive(Default)]
struct Sent {
    /// Compared (in range, or out of range with the key known).
    compared: u64,
    agreed: u64,
    /// Out of range: the hash decided.
    fallback: u64,
    fallback_agreed: u64,
    first: Option<String>,
}

/// A random source on 127.0.0.0/8 other than the group's own address.
fn source(r: &mut Rng) -> Ipv4Addr {
    Ipv4Addr::new(
        127,
        r.below(250) as u8 + 1,
        r.below(256) as u8,
        r.below(254) as u8 + 1,
    )
}

/// The members of the group that recovers the key.
const KEY_GROUP: u32 = 16;

/// This namespace's IPv4 hash key for `proto` (UDP's and TCP's differ):
/// packets from random sources to a hash-only group of [`KEY_GROUP`]
/// sockets, each a constraint on the key (the model's [`Plan`]), then the
/// search over all 2^32 values, as `recover` does. `None` unless exactly
/// one value fits.
pub(crate) fn hash_key(
    r: &mut Rng,
    profile: &'static Profile,
    proto: Proto,
    err: &mut dyn std::io::Write,
) -> std::io::Result<Option<u32>> {
    let live = Live::new(proto, KEY_GROUP)?;
    let name = proto_name(proto);
    let spec = GroupSpec::new(
        proto,
        KEY_GROUP,
        Ipv4Addr::LOCALHOST.into(),
        live.port,
        Keys::default(),
    );
    let other = |e: String| std::io::Error::other(e);
    let group = Host::shorthand_group(profile, &spec).map_err(|e| other(e.to_string()))?;
    let mut plan = match Plan::new(&group) {
        Ok(p) => p,
        Err(e) => {
            writeln!(err, "verify: the fallback is not compared: {e}")?;
            return Ok(None);
        }
    };
    // Twice what leaves 0.01 false keys among 2^32: a spare for lost datagrams.
    let wanted = 2 * crate::cmd::verify::events_needed(KEY_GROUP);
    for _ in 0..wanted {
        let src = source(r);
        let payload: &[u8] = if proto == Proto::Udp { b"key" } else { b"" };
        if let (sport, Some(slot)) = live.send(src, payload)? {
            let t = Tuple::v4(src, sport, Ipv4Addr::LOCALHOST, live.port);
            plan.add(0, &t, slot).map_err(|e| other(e.to_string()))?;
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let searched = crate::cmd::recover::parallel_search(
        &|range, f| plan.search(Isa::Best, range, f),
        0..1u64 << 32,
        threads,
        crate::cmd::verify::stop_flag(),
        &format!(" the namespace's {name} key"),
        true,
        err,
    );
    let key = (searched.found.count == 1).then(|| searched.found.values[0]);
    match key {
        Some(k) => writeln!(
            err,
            "verify: this namespace's {name} hash key is 0x{k:08x} ({} packets, {:.1} s); what the hash decides is compared",
            plan.observations().len(),
            searched.seconds
        )?,
        None => writeln!(
            err,
            "verify: the {name} hash key search found {} values, not one: what the hash decides is counted, not compared",
            searched.found.count
        )?,
    }
    Ok(key)
}

fn proto_name(proto: Proto) -> &'static str {
    match proto {
        Proto::Udp => "UDP",
        Proto::Tcp => "TCP",
    }
}

/// One program's group: its kernel profile, protocol, size and the hash key
/// of its namespace.
struct Case {
    profile: &'static Profile,
    proto: Proto,
    /// SYNs may carry a payload ([`tcp_fastopen_without_cookie`]).
    fastopen: bool,
    n: u32,
    key: Option<u32>,
}

impl Case {
    /// Runs the program on [`DATAGRAMS`] datagrams, or [`SYNS`] SYNs (with a
    /// payload when `fastopen`).
    fn packets(&self, r: &mut Rng, insns: &[Insn], cpus: &[u32]) -> std::io::Result<Sent> {
        let Case {
            profile,
            proto,
            fastopen,
            n,
            key,
        } = *self;
        let live = Live::new(proto, n)?;
        let e = attach(live.socks[0].as_raw_fd(), insns);
        if e != 0 {
            return Ok(Sent {
                compared: 1,
                first: Some(format!(
                    "the kernel refused a program the model takes (errno {e})"
                )),
                ..Sent::default()
            });
        }
        let spec = GroupSpec {
            program: Some(Program::Cbpf {
                insns: insns.to_vec(),
            }),
            ..GroupSpec::new(
                proto,
                n,
                Ipv4Addr::LOCALHOST.into(),
                live.port,
                Keys {
                    v4: key.unwrap_or(0),
                    ..Keys::default()
                },
            )
        };
        let group = Host::shorthand_group(profile, &spec)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut sent = Sent::default();
        let count = match proto {
            Proto::Udp => DATAGRAMS,
            Proto::Tcp => SYNS,
        };
        for d in 0..count {
            // Each datagram from the next CPU this process may use: on
            // loopback the receiving CPU is the sender's.
            let cpu = cpus[d % cpus.len()];
            crate::process::pin_to(cpu)?;
            let src = source(r);
            // A SYN carries a payload only with Fast Open; without, it has none.
            let len = if proto == Proto::Udp || fastopen {
                r.below(25)
            } else {
                0
            };
            let payload: Vec<u8> = (0..len).map(|_| r.below(256) as u8).collect();
            let (sport, kernel) = live.send(src, &payload)?;
            let t = Tuple::v4(src, sport, Ipv4Addr::LOCALHOST, live.port);
            let ctx = PacketCtx {
                payload: Some(Payload::Bytes(payload.clone())),
                ..PacketCtx::on_cpu(cpu)
            };
            let input = cbpf::Input {
                payload: &payload,
                proto,
                ipv6: false,
                cpu,
                anc: &ctx.anc,
            };
            let value = cbpf::run(insns, &input).value();
            let in_range = matches!(value, Some(v) if v < n);
            if !in_range {
                sent.fallback += 1;
                if key.is_none() {
                    continue;
                }
            }
            sent.compared += 1;
            let model = group.select_ctx(&t, &ctx).ok().and_then(|c| c.slot);
            if model == kernel {
                sent.agreed += 1;
                sent.fallback_agreed += u64::from(!in_range);
            } else if sent.first.is_none() {
                sent.first = Some(format!(
                "{} payload {} from {src}:{sport} on CPU {cpu}{}: kernel slot {kernel:?}, model slot {model:?}",
                proto_name(proto),
                hex(&payload),
                if in_range { "" } else { " (index out of range: the hash)" }
            ));
            }
        }
        Ok(sent)
    }

    /// Drops instructions while the disagreement stays (jumps over a dropped
    /// one are shortened; a candidate the checker refuses is skipped).
    fn shrink(&self, seed: u64, insns: Vec<Insn>, cpus: &[u32]) -> Vec<Insn> {
        let mut best = insns;
        let mut d = 0;
        while d + 1 < best.len() {
            let mut cand = best.clone();
            cand.remove(d);
            for (pc, i) in cand.iter_mut().enumerate().take(d) {
                let jumps = i.code & 0x07 == 0x05;
                if jumps && i.code == 0x05 && pc + 1 + i.k as usize > d {
                    i.k -= 1;
                } else if jumps && i.code != 0x05 {
                    if pc + 1 + i.jt as usize > d {
                        i.jt -= 1;
                    }
                    if pc + 1 + i.jf as usize > d {
                        i.jf -= 1;
                    }
                }
            }
            let still = cbpf::check(&cand).is_ok()
                && self
                    .packets(&mut Rng::new(seed), &cand, cpus)
                    .is_ok_and(|s| s.agreed < s.compared);
            if still {
                best = cand;
            } else {
                d += 1;
            }
        }
        best
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Runs the drawn programs (or `given`), writing progress to `err`.
pub fn run(
    profile: &'static Profile,
    count: u32,
    seed: u64,
    given: Option<&[Insn]>,
    err: &mut dyn std::io::Write,
) -> std::io::Result<ProgramsReport> {
    if !crate::calllog::private_netns() {
        return Err(std::io::Error::other(
            "verify --programs needs a private network namespace (unshare(CLONE_NEWNET)): run it as root",
        ));
    }
    let mut cpus = crate::process::allowed_cpus()?;
    if cpus.is_empty() {
        cpus.push(0);
    }
    let mut r = Rng::new(seed);
    let mut rep = ProgramsReport {
        syn_payloads: tcp_fastopen_without_cookie(),
        ..ProgramsReport::default()
    };
    let mut keys = [None, None];
    for (p, proto) in [Proto::Udp, Proto::Tcp].into_iter().enumerate() {
        keys[p] = hash_key(
            &mut Rng::new(seed ^ 0x006b_6579 ^ p as u64),
            profile,
            proto,
            err,
        )?;
    }
    rep.udp.hash_key = keys[0].map(|k| format!("0x{k:08x}"));
    rep.tcp.hash_key = keys[1].map(|k| format!("0x{k:08x}"));
    let total = if given.is_some() { 1 } else { count };
    for i in 0..total {
        if crate::cmd::verify::stopping() {
            break;
        }
        // A program of your own meets a group of 10, as the selftests'.
        let n = if given.is_some() {
            10
        } else {
            2 + r.below(7) as u32
        };
        let insns = match given {
            Some(g) => g.to_vec(),
            None => draw_program(&mut r, n),
        };
        let pseed = seed ^ (i as u64).wrapping_mul(0x9e37_79b9);
        rep.programs += 1;
        for (p, proto) in [Proto::Udp, Proto::Tcp].into_iter().enumerate() {
            let live = Case {
                profile,
                proto,
                fastopen: rep.syn_payloads,
                n,
                key: keys[p],
            };
            let sent = live.packets(&mut Rng::new(pseed), &insns, &cpus)?;
            match proto {
                Proto::Udp => rep.udp.add(&sent),
                Proto::Tcp => rep.tcp.add(&sent),
            }
            if let Some(what) = sent.first {
                let small = if given.is_some() {
                    insns.clone()
                } else {
                    live.shrink(pseed, insns.clone(), &cpus)
                };
                let data: Vec<(u16, u8, u8, u32)> = small.iter().map(|&i| i.into()).collect();
                rep.mismatches
                    .push(format!("{n} sockets, program {data:?}: {what}"));
            }
        }
        if given.is_none() {
            let valid = draw_program(&mut r, n);
            let bad = mutate(&mut r, valid);
            // One socket in ten without SO_REUSEPORT (reuseport_bpf.c
            // test_filter_no_reuseport): EINVAL whatever the program.
            let reuseport = !r.chance(10);
            let (kernel, model) = checker_case(profile, reuseport, &bad)?;
            rep.checked += 1;
            if kernel == model {
                rep.checks_agreed += 1;
            } else {
                let data: Vec<(u16, u8, u8, u32)> =
                    bad.iter().take(12).map(|&i| i.into()).collect();
                rep.mismatches.push(format!(
                    "checker (SO_REUSEPORT {reuseport}): kernel errno {kernel}, model errno {model}, program ({} insns) {data:?}",
                    bad.len()
                ));
            }
        }
        if (i + 1) % 50 == 0 {
            writeln!(err, "verify: {} of {total} programs", i + 1)?;
        }
    }
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_programs_pass_the_checker_and_use_every_kind() {
        let mut r = Rng::new(3);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let v = draw_program(&mut r, 5);
            assert!(cbpf::check(&v).is_ok(), "{v:?}");
            for i in &v {
                seen.insert(i.code & 0x07);
                if Ancillary::from_k(i.k).is_some() && i.code & 0xe0 == 0x20 {
                    seen.insert(100);
                }
            }
        }
        // LD, LDX, ST/STX, ALU, JMP, RET, MISC and an ancillary load.
        for class in [0, 1, 2, 3, 4, 5, 6, 7, 100] {
            assert!(seen.contains(&class), "class {class} never drawn");
        }
    }

    #[test]
    fn mutations_give_the_checker_both_answers() {
        let mut r = Rng::new(9);
        let (mut refused, mut taken) = (0, 0);
        for _ in 0..400 {
            let valid = draw_program(&mut r, 4);
            match cbpf::check(&mutate(&mut r, valid)) {
                Ok(()) => taken += 1,
                Err(_) => refused += 1,
            }
        }
        assert!(
            refused > 100 && taken > 20,
            "refused {refused}, taken {taken}"
        );
    }
}
