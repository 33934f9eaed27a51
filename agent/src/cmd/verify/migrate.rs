//! `verify --migrate FILE.o`: where the children of a listener that shuts
//! down go, on the live kernel beside the model (`reuseport_migrate_sock`,
//! net/core/sock_reuseport.c 5.14+; the model's
//! `ReuseportGroup::migrate_run`).
//!
//! In a private network namespace, each case makes a group of [`LISTENERS`]
//! TCP sockets on 127.0.0.1. Only socket 0 listens while [`CLIENTS`]
//! clients connect from random loopback sources, so every child waits in
//! its accept queue; then the others listen, and socket 0 is shut down, as
//! the kernel selftest `migrate_reuseport.c` does. Each child is then
//! either accepted on a survivor or reset (its client reads ECONNRESET);
//! the model's answer for it, child by child in queue order, is compared.
//!
//! The cases:
//! - the object's SELECT_OR_MIGRATE program with `migrate_map` sending
//!   socket 0's cookie to key 4 (socket 4), the sysctl off;
//! - the same with socket 0's cookie absent (the selftest program drops),
//!   the sysctl on: no fallback;
//! - the same with the cookie sent to key 0, whose socket is the one
//!   shutting down (the sockarray drops it, the helper fails, the program
//!   passes to the hash), the sysctl off;
//! - no program with `net.ipv4.tcp_migrate_req` 1 (the hash) and 0 (reset).
//!
//! The maps follow the selftest's user space: socket i at key i of every
//! REUSEPORT_SOCKARRAY, and the one HASH map keyed by an 8-byte cookie
//! holds the route. Where the hash decides, the namespace's TCP hash key is
//! recovered first (as `verify --programs` does); if the search does not
//! find exactly one key, those children are counted, not compared. The
//! program's global counters (`.bss`) after the case are compared too.
//! The namespace, and with it the sysctl, goes when the run's thread ends.

#![cfg(all(target_os = "linux", feature = "trace"))]

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use libbpf_rs::{MapCore, MapFlags};
use reuseport_model::lookup::Host;
use reuseport_model::reuseport::ebpf::{
    map_type, EbpfProgram, MapFill, MapKey, MapValue, MigrateStage, ProgKind,
};
use reuseport_model::reuseport::{Migration, Program};
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};
use serde::Serialize;
use socket2::{Domain, Socket, Type};

use crate::cmd::verify::differential::Rng;

/// Sockets in each group.
pub const LISTENERS: u32 = 5;
/// Clients queued on socket 0 in each case.
pub const CLIENTS: usize = 12;
/// How long a migrated child may take to show up (loopback takes
/// microseconds; the migration runs inside the shutdown call).
const WAIT: Duration = Duration::from_secs(2);
/// `/proc/sys/net/ipv4/tcp_migrate_req` of this thread's namespace.
const SYSCTL: &str = "/proc/sys/net/ipv4/tcp_migrate_req";

/// One case's findings.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateCase {
    /// What the case sets up.
    pub name: String,
    /// Children queued on socket 0.
    pub children: u64,
    /// Compared child by child.
    pub compared: u64,
    /// Of those, where kernel and model agree (socket, or reset).
    pub agreed: u64,
    /// Children the hash sent, not compared: the key is not known.
    pub not_compared: u64,
    /// How the kernel's children ended: accepted per socket, then reset.
    pub kernel: Vec<u64>,
    /// The program's `.bss` after the case, kernel then model (hex).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bss: Option<(String, String)>,
    /// The first disagreements.
    pub mismatches: Vec<String>,
}

/// What the run found.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrateReport {
    /// The program.
    pub program: String,
    /// The namespace's TCP hash key, when recovered.
    pub hash_key: Option<String>,
    /// The cases.
    pub cases: Vec<MigrateCase>,
}

impl MigrateReport {
    /// Every case compared something and agreed on all of it.
    pub fn exact(&self) -> bool {
        !self.cases.is_empty()
            && self.cases.iter().all(|c| {
                c.compared > 0
                    && c.agreed == c.compared
                    && c.mismatches.is_empty()
                    && c.bss.as_ref().is_none_or(|(k, m)| k == m)
            })
    }
}

fn io(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// A SO_REUSEPORT TCP socket bound to 127.0.0.1:`port`.
fn member(port: u16) -> std::io::Result<Socket> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())?;
    Ok(s)
}

/// How the case routes socket 0's children.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// The program, `migrate_map[cookie(0)] = key`.
    Program(u32),
    /// The program, no entry for socket 0's cookie.
    ProgramNoEntry,
    /// No program; the sysctl.
    Sysctl(bool),
}

impl Route {
    fn name(self) -> String {
        match self {
            Route::Program(4) => "program: socket 0's cookie names key 4".into(),
            Route::Program(k) => {
                format!("program: socket 0's cookie names key {k}, the closing socket's own")
            }
            Route::ProgramNoEntry => {
                "program: socket 0's cookie is not in the map (tcp_migrate_req=1)".into()
            }
            Route::Sysctl(on) => format!("no program, tcp_migrate_req={}", u8::from(on)),
        }
    }

    fn sysctl(self) -> bool {
        matches!(self, Route::ProgramNoEntry | Route::Sysctl(true))
    }
}

/// The kernel's side of one case, and the model's.
fn case(
    profile: &'static Profile,
    prog: &EbpfProgram,
    route: Route,
    key: Option<u32>,
    r: &mut Rng,
) -> std::io::Result<MigrateCase> {
    let mut c = MigrateCase {
        name: route.name(),
        kernel: vec![0; LISTENERS as usize + 1],
        ..MigrateCase::default()
    };
    std::fs::write(SYSCTL, if route.sysctl() { "1" } else { "0" })
        .map_err(|e| io(format!("writing {SYSCTL}: {e}")))?;
    let first = member(0)?;
    let port = first.local_addr()?.as_socket().map_or(0, |a| a.port());
    let mut socks = vec![first];
    for _ in 1..LISTENERS {
        socks.push(member(port)?);
    }
    socks[0].listen(64)?;
    // Every client's child waits on socket 0, the one listening.
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let src = Ipv4Addr::new(
            127,
            r.below(250) as u8 + 1,
            r.below(256) as u8,
            r.below(254) as u8 + 1,
        );
        let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        s.bind(&SocketAddr::from((src, 0)).into())?;
        s.connect(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())?;
        let me = s
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io("no address"))?;
        clients.push((TcpStream::from(s), me));
    }
    for s in &socks[1..] {
        s.listen(64)?;
    }
    let cookies: Vec<(u32, u64)> = socks
        .iter()
        .enumerate()
        .map(|(i, s)| Ok((i as u32, crate::cmd::verify::ebpf::cookie(s)?)))
        .collect::<std::io::Result<_>>()?;
    // The program, its maps by the selftest's rule, the route.
    let live = match route {
        Route::Program(_) | Route::ProgramNoEntry => {
            let (live, mut fills, extra) = crate::cmd::verify::ebpf::build(prog, &socks)?;
            let routes = prog
                .maps
                .iter()
                .position(|d| d.map_type == map_type::HASH && d.key_size == 8)
                .ok_or_else(|| {
                    io("the object has no HASH map with 8-byte keys (the selftest's migrate_map)")
                })?;
            let def = &prog.maps[routes];
            if let Route::Program(k) = route {
                let mut v = k.to_le_bytes().to_vec();
                v.resize(def.value_size as usize, 0);
                live.maps[routes]
                    .update(&cookies[0].1.to_le_bytes(), &v, MapFlags::ANY)
                    .map_err(|e| io(format!("filling `{}`: {e}", def.name)))?;
                fills.push(MapFill {
                    map: def.name.clone(),
                    entries: vec![(MapKey::Num(cookies[0].1), MapValue::Num(k as u64))],
                });
            }
            Some((live, fills, extra))
        }
        Route::Sysctl(_) => None,
    };
    let mut program = live.as_ref().map(|(_, fills, extra)| Program::Ebpf {
        program: prog.clone(),
        maps: fills.clone(),
        extra_maps: extra.clone(),
        seed: 0,
        cookies: cookies.clone(),
    });
    // SAFETY: the descriptor is ours and open.
    if unsafe { libc::shutdown(socks[0].as_raw_fd(), libc::SHUT_RDWR) } != 0 {
        return Err(io(format!(
            "shutdown of socket 0: {}",
            std::io::Error::last_os_error()
        )));
    }
    // Where each child went: accepted on a survivor, or reset.
    for s in &socks[1..] {
        s.set_nonblocking(true)?;
    }
    let mut landed: Vec<Option<Option<u32>>> = vec![None; CLIENTS];
    let deadline = Instant::now() + WAIT;
    let mut held = Vec::new();
    while landed.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, s) in socks.iter().enumerate().skip(1) {
            while let Ok((child, peer)) = s.accept() {
                if let Some(k) = clients
                    .iter()
                    .position(|(_, me)| Some(*me) == peer.as_socket())
                {
                    landed[k] = Some(Some(i as u32));
                }
                held.push(child);
            }
        }
        for (k, (stream, _)) in clients.iter_mut().enumerate() {
            if landed[k].is_some() {
                continue;
            }
            stream.set_nonblocking(true)?;
            let mut b = [0u8; 1];
            if let Err(e) = stream.read(&mut b) {
                if e.kind() == std::io::ErrorKind::ConnectionReset {
                    landed[k] = Some(None);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // The model, child by child in queue order, the maps as the previous
    // migration left them.
    let keys = Keys {
        v4: key.unwrap_or(0),
        ..Keys::default()
    };
    for (k, (_, me)) in clients.iter().enumerate() {
        c.children += 1;
        let spec = GroupSpec {
            program: program.clone(),
            tcp_migrate_req: route.sysctl(),
            shutdown: vec![0],
            ..GroupSpec::new(
                Proto::Tcp,
                LISTENERS,
                Ipv4Addr::LOCALHOST.into(),
                port,
                keys,
            )
        };
        let g = Host::shorthand_group(profile, &spec).map_err(io)?;
        let SocketAddr::V4(v4) = me else {
            return Err(io("a client without an IPv4 address"));
        };
        let t = Tuple::v4(*v4.ip(), me.port(), Ipv4Addr::LOCALHOST, port);
        let run = g
            .migrate_run(0, &t, MigrateStage::AcceptQueue, 0)
            .map_err(|e| {
                io(format!(
                    "the model cannot decide child {k}: {}",
                    crate::messages::setup_error(&e)
                ))
            })?;
        if let (Some(Program::Ebpf { maps, .. }), Some(after)) = (
            program.as_mut(),
            run.ebpf_run.as_ref().and_then(|r| r.maps_after.as_ref()),
        ) {
            *maps = after.to_fills();
        }
        let (model, by_hash) = match run.migration {
            Migration::To {
                listener,
                by_program,
                ..
            } => (Some(listener), !by_program),
            Migration::Reset { .. } => (None, false),
        };
        let kernel = landed[k];
        match kernel {
            Some(Some(l)) => c.kernel[l as usize] += 1,
            Some(None) => c.kernel[LISTENERS as usize] += 1,
            None => {}
        }
        if by_hash && key.is_none() {
            c.not_compared += 1;
            continue;
        }
        c.compared += 1;
        if kernel == Some(model) {
            c.agreed += 1;
        } else if c.mismatches.len() < 8 {
            let say = |x: Option<Option<u32>>| match x {
                Some(Some(l)) => format!("socket {l}"),
                Some(None) => "reset".into(),
                None => "neither accepted nor reset".into(),
            };
            c.mismatches.push(format!(
                "child from {me}: kernel {}, model {}",
                say(kernel),
                say(Some(model))
            ));
        }
    }
    // The program's counters: the kernel's .bss beside the model's.
    if let (Some((live, ..)), Some(Program::Ebpf { maps, .. })) = (&live, &program) {
        if let Some(i) = prog.maps.iter().position(|d| d.name == ".bss") {
            let kernel = live.maps[i]
                .lookup(&0u32.to_le_bytes(), MapFlags::ANY)
                .map_err(|e| io(format!("reading .bss: {e}")))?
                .unwrap_or_default();
            let model = maps
                .iter()
                .find(|f| f.map == ".bss")
                .and_then(|f| f.entries.first())
                .map(|(_, v)| match v {
                    MapValue::Hex(h) => h.clone(),
                    _ => String::new(),
                })
                .unwrap_or_else(|| hex(&vec![0; kernel.len()]));
            c.bss = Some((hex(&kernel), model));
        }
    }
    drop(held);
    Ok(c)
}

/// The object's SELECT_OR_MIGRATE program: the first whose section says
/// `sk_reuseport/migrate`.
pub fn migrate_program(bytes: &[u8]) -> Result<EbpfProgram, String> {
    let obj = reuseport_model::reuseport::ebpf::read(bytes)
        .map_err(|e| crate::messages::elf_error(&e))?;
    obj.programs
        .into_iter()
        .find(|p| p.kind == Some(ProgKind::SkReuseportMigrate))
        .ok_or_else(|| "the object has no program in a `sk_reuseport/migrate` section".into())
}

/// Runs the cases on the live kernel and in the model.
pub fn run(
    profile: &'static Profile,
    prog: &EbpfProgram,
    seed: u64,
    err: &mut dyn std::io::Write,
) -> std::io::Result<MigrateReport> {
    if !profile.closed_tail {
        return Err(io(format!(
            "this kernel ({}) predates 5.14: nothing migrates, there is nothing to compare",
            profile.release
        )));
    }
    if !crate::calllog::private_netns() {
        return Err(io(
            "verify --migrate needs a private network namespace (unshare(CLONE_NEWNET)): run it as root",
        ));
    }
    let mut rep = MigrateReport {
        program: format!("{} (section {})", prog.name, prog.section),
        ..MigrateReport::default()
    };
    let key = crate::cmd::verify::programs::hash_key(
        &mut Rng::new(seed ^ 0x6d69_6772),
        profile,
        Proto::Tcp,
        err,
    )?;
    rep.hash_key = key.map(|k| format!("0x{k:08x}"));
    let mut r = Rng::new(seed);
    for route in [
        Route::Program(4),
        Route::ProgramNoEntry,
        Route::Program(0),
        Route::Sysctl(true),
        Route::Sysctl(false),
    ] {
        if crate::cmd::verify::stopping() {
            break;
        }
        let c = case(profile, prog, route, key, &mut r)?;
        writeln!(
            err,
            "verify: {}: {} children, accepted per socket and reset {:?}",
            c.name, c.children, c.kernel
        )?;
        rep.cases.push(c);
    }
    let _ = std::fs::write(SYSCTL, "0");
    Ok(rep)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
