//! `verify --program FILE.o`: an eBPF program of your own (an ELF object
//! clang wrote) on the live kernel, datagram by datagram beside the model.
//!
//! The object is read by the model's reader, so the kernel runs the very
//! instructions the model runs. Maps are made with libbpf (`MapHandle`,
//! libbpf-rs) and filled by one rule the model is told too:
//!
//! - a REUSEPORT_SOCKARRAY or SOCKMAP holds socket i at key i;
//! - an array of maps with no inner map gets a REUSEPORT_SOCKARRAY of the
//!   group at key 0 (the selftests' `outer_map`);
//! - a map the object names but does not define (nginx's
//!   `ngx_quic_sockmap`) is a SOCKHASH, as nginx makes it
//!   (ngx_event_quic_bpf.c), holding socket i at its `SO_COOKIE`;
//! - other maps start as the object leaves them (zeroed, or the section's
//!   bytes for global data).
//!
//! The `ld_imm64` of each map gets its descriptor, the program is loaded
//! with `bpf_prog_load` (libbpf) and attached with
//! `SO_ATTACH_REUSEPORT_EBPF` to a UDP group on 127.0.0.1 in a private
//! network namespace. Each datagram (random bytes, and QUIC-like short
//! headers carrying a socket's cookie) lands where the kernel puts it, or
//! nowhere; the model's answer for it is computed with the maps as the
//! previous datagrams left them. The namespace's UDP hash key is recovered
//! first, as `verify --programs` does, so datagrams whose answer the hash
//! decides, or whose choice depends on the hash (the program read `hash`),
//! are compared too. Those that drew a random number are counted and not
//! compared (the kernel's generator is not the model's seeded one), and so
//! are the hash's datagrams when the key search does not find exactly one.

#![cfg(all(target_os = "linux", feature = "trace"))]

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use libbpf_rs::{libbpf_sys, MapCore, MapFlags, MapHandle, MapType};
use reuseport_model::explain::Pick;
use reuseport_model::lookup::Host;
use reuseport_model::message::ProgramOutcome;
use reuseport_model::reuseport::ebpf::{
    map_type, EbpfProgram, MapDef, MapFill, MapKey, MapValue, ProgKind,
};
use reuseport_model::reuseport::{PacketCtx, Payload, Program};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};
use serde::Serialize;
use socket2::{Domain, Socket, Type};

use crate::cmd::verify::differential::Rng;

/// Sockets in the group.
const SOCKETS: u32 = 4;
/// Datagrams sent.
const DATAGRAMS: usize = 64;
/// How long a datagram may take to arrive (loopback takes microseconds);
/// a datagram the model says is dropped is waited for this long too.
const WAIT: Duration = Duration::from_millis(500);
/// `SO_ATTACH_REUSEPORT_EBPF` (include/uapi/asm-generic/socket.h).
const SO_ATTACH_REUSEPORT_EBPF: i32 = 52;
/// `SO_COOKIE`.
const SO_COOKIE: i32 = 57;

/// What the run found.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EbpfReport {
    /// The program.
    pub program: String,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams compared.
    pub compared: u64,
    /// Of those, where kernel and model agree (socket, or drop).
    pub agreed: u64,
    /// Of the compared, those the hash decided or whose run read the hash
    /// (compared with the recovered key).
    pub by_hash: u64,
    /// Of those, where kernel and model agree.
    pub by_hash_agreed: u64,
    /// The namespace's UDP hash key, recovered at the start; `None` when
    /// the search did not find exactly one.
    pub hash_key: Option<String>,
    /// Datagrams not compared: the run drew a random number, or the hash
    /// decided and the key is not known.
    pub not_compared: u64,
    /// Datagrams the model could not decide (it names what it lacked).
    pub undecided: u64,
    /// The first disagreements.
    pub mismatches: Vec<String>,
}

impl EbpfReport {
    /// Every compared datagram agreed and something was compared.
    pub fn exact(&self) -> bool {
        self.compared > 0
            && self.agreed == self.compared
            && self.undecided == 0
            && self.mismatches.is_empty()
    }
}

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

fn reuseport_udp(port: u16) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, None)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())?;
    Ok(s)
}

/// A socket's `SO_COOKIE` (the kernel hands one out on first use).
pub(crate) fn cookie(s: &impl AsFd) -> std::io::Result<u64> {
    let mut v = 0u64;
    let mut len = 8 as libc::socklen_t;
    // SAFETY: v and len outlive the call; the kernel writes at most len bytes.
    let r = unsafe {
        libc::getsockopt(
            s.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            SO_COOKIE,
            (&mut v as *mut u64).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(v)
}

fn create(def: &MapDef, inner: Option<i32>) -> std::io::Result<MapHandle> {
    let opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        inner_map_fd: inner.unwrap_or(0) as u32,
        ..Default::default()
    };
    let name: String = def
        .name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(15)
        .collect();
    MapHandle::create(
        MapType::from(def.map_type),
        Some(name),
        def.key_size,
        def.value_size,
        def.max_entries,
        &opts,
    )
    .map_err(|e| io(format!("creating map `{}`: {e}", def.name)))
}

/// The kernel's side: maps (in the object's order, then inner maps),
/// program, group.
pub struct Live {
    socks: Vec<UdpSocket>,
    port: u16,
    pub(crate) maps: Vec<MapHandle>,
    prog_fd: i32,
}

impl Live {
    /// Puts `sock` at `key` of the `map`-th map (in the object's order), as
    /// user space filling a socket map does (`bpf_map_update_elem` with
    /// its descriptor).
    pub fn put_socket(&self, map: usize, key: u32, sock: &impl AsFd) -> std::io::Result<()> {
        let m = self
            .maps
            .get(map)
            .ok_or_else(|| io(format!("no map {map}")))?;
        let fd = sock.as_fd().as_raw_fd() as u64;
        let size = m.value_size() as usize;
        m.update(&key.to_le_bytes(), &fd.to_le_bytes()[..size], MapFlags::ANY)
            .map_err(|e| io(format!("putting a socket at key {key}: {e}")))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // SAFETY: the descriptor is ours and closed once.
        unsafe { libc::close(self.prog_fd) };
    }
}

/// Makes the maps by the module's rule, loads the program and attaches it
/// to the group of `socks[0]` (`SO_ATTACH_REUSEPORT_EBPF`); returns the
/// kernel's side with the fills the model is given and the definitions it
/// needs beyond the object's. The sockets may be UDP or TCP listeners.
pub fn build(
    prog: &EbpfProgram,
    socks: &[impl AsFd],
) -> std::io::Result<(Live, Vec<MapFill>, Vec<MapDef>)> {
    let n = socks.len() as u32;
    let mut handles: Vec<MapHandle> = Vec::new();
    let mut fds: Vec<i32> = Vec::new();
    let mut fills = Vec::new();
    let mut extra = Vec::new();
    let mut keep = Vec::new();
    let sock_fd = |i: usize| socks[i].as_fd().as_raw_fd() as u64;
    for def in &prog.maps {
        let def = if def.map_type == 0 {
            let d = reuseport_model::reuseport::ebpf::fill::extern_def(&def.name);
            extra.push(d.clone());
            d
        } else {
            def.clone()
        };
        let (h, fill) = match def.map_type {
            map_type::REUSEPORT_SOCKARRAY | map_type::SOCKMAP => {
                let h = create(&def, None)?;
                let mut entries = Vec::new();
                for i in 0..n.min(def.max_entries) {
                    h.update(
                        &i.to_le_bytes(),
                        &sock_fd(i as usize).to_le_bytes()[..def.value_size as usize],
                        MapFlags::ANY,
                    )
                    .map_err(|e| io(format!("filling `{}`: {e}", def.name)))?;
                    entries.push((MapKey::Num(i as u64), MapValue::Socket { socket: i }));
                }
                (h, entries)
            }
            map_type::SOCKHASH if def.key_size == 8 => {
                let h = create(&def, None)?;
                let mut entries = Vec::new();
                for (i, s) in socks.iter().enumerate() {
                    let c = cookie(s)?;
                    h.update(&c.to_le_bytes(), &sock_fd(i).to_le_bytes(), MapFlags::ANY)
                        .map_err(|e| io(format!("filling `{}`: {e}", def.name)))?;
                    entries.push((MapKey::Num(c), MapValue::Socket { socket: i as u32 }));
                }
                (h, entries)
            }
            map_type::ARRAY_OF_MAPS => {
                let inner_def = MapDef {
                    name: format!("{}_inner", def.name),
                    map_type: map_type::REUSEPORT_SOCKARRAY,
                    key_size: 4,
                    value_size: 8,
                    max_entries: n,
                    flags: 0,
                    data: None,
                };
                let inner = create(&inner_def, None)?;
                let mut entries = Vec::new();
                for i in 0..n {
                    inner
                        .update(
                            &i.to_le_bytes(),
                            &sock_fd(i as usize).to_le_bytes(),
                            MapFlags::ANY,
                        )
                        .map_err(|e| io(format!("filling `{}`: {e}", inner_def.name)))?;
                    entries.push((MapKey::Num(i as u64), MapValue::Socket { socket: i }));
                }
                let h = create(&def, Some(inner.as_fd().as_raw_fd()))?;
                let ifd = inner.as_fd().as_raw_fd() as u32;
                h.update(&0u32.to_le_bytes(), &ifd.to_le_bytes(), MapFlags::ANY)
                    .map_err(|e| io(format!("filling `{}`: {e}", def.name)))?;
                fills.push(MapFill {
                    map: inner_def.name.clone(),
                    entries,
                });
                extra.push(inner_def);
                keep.push(inner);
                (
                    h,
                    vec![(
                        MapKey::Num(0),
                        MapValue::Map {
                            map: format!("{}_inner", def.name),
                        },
                    )],
                )
            }
            _ => {
                let h = create(&def, None)?;
                if let Some(d) = &def.data {
                    let bytes: Vec<u8> = (0..d.len() / 2)
                        .map(|i| u8::from_str_radix(&d[2 * i..2 * i + 2], 16).unwrap_or(0))
                        .collect();
                    h.update(&0u32.to_le_bytes(), &bytes, MapFlags::ANY)
                        .map_err(|e| io(format!("filling `{}`: {e}", def.name)))?;
                }
                (h, Vec::new())
            }
        };
        if !fill.is_empty() {
            fills.push(MapFill {
                map: def.name.clone(),
                entries: fill,
            });
        }
        fds.push(h.as_fd().as_raw_fd());
        handles.push(h);
    }
    handles.extend(keep);
    // The ld_imm64 of each map gets its descriptor (BPF_PSEUDO_MAP_FD,
    // BPF_PSEUDO_MAP_VALUE), as libbpf and nginx's loader do.
    let mut insns: Vec<libbpf_sys::bpf_insn> = Vec::with_capacity(prog.insns.len());
    for i in &prog.insns {
        let mut x = libbpf_sys::bpf_insn {
            code: i.code,
            off: i.off,
            imm: i.imm,
            ..Default::default()
        };
        x.set_dst_reg(i.dst);
        x.set_src_reg(i.src);
        if i.code == 0x18 && (i.src == 1 || i.src == 2) {
            x.imm = fds[i.imm as usize];
        }
        insns.push(x);
    }
    let kind = prog.kind.unwrap_or(ProgKind::SkReuseport);
    let (ptype, attach) = match kind {
        ProgKind::SkReuseport => (
            libbpf_sys::BPF_PROG_TYPE_SK_REUSEPORT,
            libbpf_sys::BPF_SK_REUSEPORT_SELECT,
        ),
        ProgKind::SkReuseportMigrate => (
            libbpf_sys::BPF_PROG_TYPE_SK_REUSEPORT,
            libbpf_sys::BPF_SK_REUSEPORT_SELECT_OR_MIGRATE,
        ),
        ProgKind::SocketFilter => (libbpf_sys::BPF_PROG_TYPE_SOCKET_FILTER, 0),
    };
    let mut log = vec![0u8; 1 << 16];
    let mut opts = libbpf_sys::bpf_prog_load_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _,
        expected_attach_type: attach,
        log_buf: log.as_mut_ptr().cast(),
        log_size: log.len() as u32,
        log_level: 0,
        ..Default::default()
    };
    let license = c"GPL";
    // SAFETY: the instructions, license and options outlive the call.
    let fd = unsafe {
        libbpf_sys::bpf_prog_load(
            ptype,
            std::ptr::null(),
            license.as_ptr(),
            insns.as_ptr(),
            insns.len() as _,
            &mut opts,
        )
    };
    if fd < 0 {
        let msg = String::from_utf8_lossy(&log);
        return Err(io(format!(
            "the kernel refused the program (errno {}): {}",
            -fd,
            msg.trim_end_matches('\0').lines().last().unwrap_or("")
        )));
    }
    let port = socket2::SockRef::from(&socks[0])
        .local_addr()?
        .as_socket()
        .map_or(0, |a| a.port());
    let live = Live {
        socks: Vec::new(),
        port,
        maps: handles,
        prog_fd: fd,
    };
    // SAFETY: the descriptor is valid for the call.
    let r = unsafe {
        libc::setsockopt(
            socks[0].as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_EBPF,
            (&fd as *const i32).cast(),
            4,
        )
    };
    if r != 0 {
        return Err(io(format!(
            "SO_ATTACH_REUSEPORT_EBPF: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok((live, fills, extra))
}

fn receive(socks: &[UdpSocket], src: SocketAddr, payload: &[u8]) -> Option<u32> {
    let deadline = Instant::now() + WAIT;
    let mut buf = vec![0u8; 2048];
    while Instant::now() < deadline {
        for (i, s) in socks.iter().enumerate() {
            if let Ok((n, peer)) = s.recv_from(&mut buf) {
                if peer == src && buf[..n] == *payload {
                    return Some(i as u32);
                }
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    None
}

/// Runs `prog` on the live kernel and in the model.
pub fn run(
    profile: &'static Profile,
    prog: &EbpfProgram,
    seed: u64,
    err: &mut dyn std::io::Write,
) -> std::io::Result<EbpfReport> {
    if !crate::calllog::private_netns() {
        return Err(io(
            "verify --program with an ELF object needs a private network namespace (unshare(CLONE_NEWNET)): run it as root",
        ));
    }
    let first = reuseport_udp(0)?;
    let port = first.local_addr()?.as_socket().map_or(0, |a| a.port());
    let mut socks = vec![UdpSocket::from(first)];
    for _ in 1..SOCKETS {
        socks.push(UdpSocket::from(reuseport_udp(port)?));
    }
    for s in &socks {
        s.set_nonblocking(true)?;
    }
    let (mut live, mut fills, extra) = build(prog, &socks)?;
    let cookies: Vec<u64> = socks.iter().map(cookie).collect::<Result<_, _>>()?;
    live.socks = socks;
    let mut rep = EbpfReport {
        program: format!("{} (section {})", prog.name, prog.section),
        ..EbpfReport::default()
    };
    let key = crate::cmd::verify::programs::hash_key(
        &mut Rng::new(seed ^ 0x006b_6579),
        profile,
        Proto::Udp,
        err,
    )?;
    rep.hash_key = key.map(|k| format!("0x{k:08x}"));
    let keys = Keys {
        v4: key.unwrap_or(0),
        ..Keys::default()
    };
    let mut r = Rng::new(seed);
    for d in 0..DATAGRAMS {
        if crate::cmd::verify::stopping() {
            break;
        }
        let src = Ipv4Addr::new(
            127,
            r.below(250) as u8 + 1,
            r.below(256) as u8,
            r.below(254) as u8 + 1,
        );
        let from = UdpSocket::bind((src, 0))?;
        let payload: Vec<u8> = match d % 3 {
            // A QUIC short header whose connection ID starts with a
            // socket's cookie (nginx's key), or a random one.
            0 => {
                let mut v = vec![0x40];
                let c = if r.chance(4) {
                    r.below(u32::MAX as usize) as u64
                } else {
                    cookies[r.below(SOCKETS as usize)]
                };
                v.extend(c.to_be_bytes());
                v.extend((0..12 + r.below(8)).map(|_| r.below(256) as u8));
                v
            }
            // A selftest command: reuseport_index, pass_on_failure.
            1 => {
                let mut v = (r.below(SOCKETS as usize + 2) as u32)
                    .to_le_bytes()
                    .to_vec();
                v.extend((r.below(2) as u32).to_le_bytes());
                v
            }
            _ => (0..r.below(30)).map(|_| r.below(256) as u8).collect(),
        };
        let sport = from.local_addr()?.port();
        let t = Tuple::v4(src, sport, Ipv4Addr::LOCALHOST, live.port);
        let ctx = PacketCtx {
            payload: Some(Payload::Bytes(payload.clone())),
            ..PacketCtx::on_cpu(0)
        };
        let group_with = |keys: Keys| {
            let spec = GroupSpec {
                program: Some(Program::ebpf(prog.clone(), fills.clone(), extra.clone())),
                ..GroupSpec::new(
                    Proto::Udp,
                    SOCKETS,
                    Ipv4Addr::LOCALHOST.into(),
                    live.port,
                    keys,
                )
            };
            Host::shorthand_group(profile, &spec).map_err(io)
        };
        let group = group_with(keys)?;
        // The same datagram under another hash key: a program that only
        // records the hash (the selftest's data_check) chooses the same.
        let other = group_with(Keys {
            v4: 0x9e37_79b9,
            v6_outer: 0x7f4a_7c15,
            v6_inner: 0x1234_5678,
        })?;
        from.send_to(&payload, (Ipv4Addr::LOCALHOST, live.port))?;
        let kernel = receive(&live.socks, from.local_addr()?, &payload);
        rep.sent += 1;
        let e = match group.explain_ctx(&t, &ctx) {
            Ok(e) => e,
            Err(why) => {
                rep.undecided += 1;
                if rep.mismatches.len() < 8 {
                    rep.mismatches.push(format!(
                        "payload {}: the model cannot decide: {}",
                        hex(&payload),
                        crate::messages::setup_error(&why)
                    ));
                }
                continue;
            }
        };
        if let Ok(Some(next)) = group.ebpf_maps_after(&t, &ctx) {
            fills = next;
        }
        let Pick::Program {
            outcome, ebpf_run, ..
        } = &e.pick
        else {
            return Err(io("the group's choice was not the program's"));
        };
        let run = ebpf_run
            .as_ref()
            .ok_or_else(|| io("no eBPF run in the record"))?;
        let hash_decides = matches!(
            outcome,
            ProgramOutcome::PassSelectedNothing | ProgramOutcome::InvalidThenHash { .. }
        );
        let same_under_other_key = other
            .explain_ctx(&t, &ctx)
            .is_ok_and(|o| o.listener == e.listener && o.fallback == e.fallback);
        let by_hash = hash_decides || (run.read_hash && !same_under_other_key);
        if run.drew_random || (by_hash && key.is_none()) {
            rep.not_compared += 1;
            // The hash picks a socket: something must arrive.
            if hash_decides && kernel.is_none() && rep.mismatches.len() < 8 {
                rep.mismatches.push(format!(
                    "payload {}: the hash decides, but nothing arrived",
                    hex(&payload)
                ));
            }
            continue;
        }
        rep.compared += 1;
        rep.by_hash += u64::from(by_hash);
        let model = e.listener;
        if model == kernel {
            rep.agreed += 1;
            rep.by_hash_agreed += u64::from(by_hash);
        } else if rep.mismatches.len() < 8 {
            rep.mismatches.push(format!(
                "payload {} from {src}:{sport}: kernel socket {kernel:?}, model {model:?} ({outcome:?}{})",
                hex(&payload),
                if by_hash { ", the hash" } else { "" }
            ));
        }
    }
    writeln!(
        err,
        "verify: {} datagrams sent to {}",
        rep.sent, rep.program
    )?;
    Ok(rep)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
