//! `scenario quic-reload`: the QUIC reload scenario of the gallery on the
//! running kernel ([`reuseport_model::quic::reload`], the one script).
//!
//! In a private network namespace (root), this process makes the UDP
//! group on 127.0.0.1 (four sockets, SO_REUSEPORT, bound in order), with
//! the connection-ID program attached in one variant and none in the
//! other, and plays the clients and the workers: each datagram is sent
//! from 127.0.0.2 and the socket that receives it is the kernel's answer.
//! The sockets are the agent's own (no QUIC server runs: Debian bookworm's
//! nginx 1.22 has no QUIC), and the datagrams carry QUIC headers, not
//! whole QUIC packets.
//!
//! The hash key of the namespace is recovered from the no-program run's
//! datagrams before the reload (every one is the hash's choice among the
//! four), as `recover` does; the model then runs the same script under that
//! key, and every datagram of both variants is compared: the agreement.

#![cfg(target_os = "linux")]

use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use reuseport_model::isa::Isa;
use reuseport_model::lookup::Host;
use reuseport_model::quic::reload::{self, Executor, Phase, ReloadReport, ReloadSpec};
use reuseport_model::recover::Plan;
use reuseport_model::reuseport::Program;
use reuseport_model::{GroupSpec, Keys, Profile, Proto, Tuple};
use serde::Serialize;
use socket2::{Domain, Socket, Type};

use super::{KernelInfo, ScenarioError};
use crate::cmd::recover::parallel_search;

/// The scenario's name in `scenario --list`.
pub const NAME: &str = "quic-reload";
/// The schema id of the trace.
pub const SCHEMA_ID: &str = "quic-reload-v1";
/// How long a datagram may take to arrive: generous, loopback takes microseconds.
const WAIT: Duration = Duration::from_secs(2);

/// One variant as measured, beside the model's run of the same script under the recovered key.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuicRun {
    /// `no-program` or `cid-program`.
    pub variant: &'static str,
    /// What the kernel did.
    pub measured: ReloadReport,
    /// What the model says for the same script, under the recovered key (null without one).
    pub model: Option<ReloadReport>,
    /// Datagrams compared, and those where the kernel's socket and payload were the model's.
    pub compared: u32,
    /// Of those, where kernel and model agreed.
    pub agreed: u32,
}

/// The trace `scenario quic-reload` writes (`public/traces/scenario-quic-reload.json`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuicReloadTrace {
    /// `quic-reload-v1`.
    pub schema: &'static str,
    /// The kernel it ran on.
    pub kernel: KernelInfo,
    /// CPUs online.
    pub nproc: u32,
    /// The command line.
    pub command: String,
    /// The namespace's IPv4 UDP hash key (secret + net_hash_mix), recovered; null when the search did not end on one key.
    pub key: Option<u32>,
    /// Candidate keys the search left.
    pub candidates: u64,
    /// The two variants.
    pub runs: Vec<QuicRun>,
}

fn reuseport_udp(port: u16) -> io::Result<UdpSocket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, None)?;
    s.set_reuse_port(true)?;
    s.bind(&SocketAddr::from((reload::SERVER, port)).into())?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// The live group: socket i is the i-th bound; a closed one is None.
struct Live {
    socks: Vec<Option<UdpSocket>>,
    port: u16,
}

impl Live {
    fn new(spec: &ReloadSpec) -> io::Result<Live> {
        let socks = (0..spec.workers)
            .map(|_| reuseport_udp(spec.port).map(Some))
            .collect::<io::Result<Vec<_>>>()?;
        if spec.cid_program {
            let first = socks[0].as_ref().expect("just made");
            crate::cbpf::attach(
                first.as_raw_fd(),
                &Program::Cbpf {
                    insns: reload::cid_program(),
                },
            )?;
        }
        Ok(Live {
            socks,
            port: spec.port,
        })
    }
}

impl Executor for Live {
    fn join(&mut self) -> Result<(), String> {
        let s = reuseport_udp(self.port).map_err(|e| format!("a new socket cannot join: {e}"))?;
        self.socks.push(Some(s));
        Ok(())
    }

    fn close(&mut self, socket: u32) -> Result<(), String> {
        self.socks
            .get_mut(socket as usize)
            .and_then(Option::take)
            .map(drop)
            .ok_or_else(|| format!("socket {socket} is not open"))
    }

    fn send(&mut self, t: &Tuple, payload: &[u8]) -> Result<Option<u32>, String> {
        let std::net::IpAddr::V4(src) = t.saddr else {
            return Err("the scenario's clients are IPv4".into());
        };
        let from = UdpSocket::bind((src, t.sport))
            .map_err(|e| format!("client {src}:{}: {e}", t.sport))?;
        from.send_to(payload, (reload::SERVER, self.port))
            .map_err(|e| format!("send: {e}"))?;
        let me = from.local_addr().map_err(|e| e.to_string())?;
        let deadline = Instant::now() + WAIT;
        let mut buf = vec![0u8; 2048];
        while Instant::now() < deadline {
            for (i, s) in self.socks.iter().enumerate() {
                let Some(s) = s else { continue };
                if let Ok((n, peer)) = s.recv_from(&mut buf) {
                    if peer == me && buf[..n] == *payload {
                        return Ok(Some(i as u32));
                    }
                }
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        Ok(None)
    }
}

/// Recovers the namespace's key from the no-program run's datagrams before the reload.
fn recover_key(
    profile: &'static Profile,
    measured: &ReloadReport,
    err: &mut dyn Write,
) -> Result<(Option<u32>, u64), ScenarioError> {
    let s = &measured.spec;
    let group = Host::shorthand_group(
        profile,
        &GroupSpec::new(
            Proto::Udp,
            s.workers,
            reload::SERVER.into(),
            s.port,
            Keys::default(),
        ),
    )
    .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
    let mut plan = Plan::new(&group).map_err(|e| ScenarioError::Invalid(e.to_string()))?;
    for d in measured
        .datagrams
        .iter()
        .filter(|d| d.phase == Phase::Before)
    {
        if let Some(sock) = d.socket {
            let t = Tuple::v4(reload::CLIENT, d.sport, reload::SERVER, s.port);
            // The same tuple twice (a flow's Initial and its 1-RTT datagram) adds nothing new.
            plan.add(0, &t, sock).map_err(|e| {
                ScenarioError::Invalid(format!(
                    "the kernel's choices contradict the model's hash: {e}"
                ))
            })?;
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let stop = AtomicBool::new(false);
    let searched = parallel_search(
        &|r, f| plan.search(Isa::Best, r, f),
        0..1u64 << 32,
        threads,
        &stop,
        " quic-reload key",
        true,
        err,
    );
    let count = searched.found.count;
    Ok(((count == 1).then(|| searched.found.values[0]), count))
}

/// Compares two runs datagram by datagram: (compared, agreed).
fn agreement(measured: &ReloadReport, model: &ReloadReport) -> (u32, u32) {
    let compared = measured.datagrams.len().max(model.datagrams.len()) as u32;
    let agreed = measured
        .datagrams
        .iter()
        .zip(&model.datagrams)
        .filter(|(a, b)| a == b)
        .count() as u32;
    (compared, agreed)
}

/// Runs both variants in a private namespace and compares them with the model.
pub fn run(
    kernel: KernelInfo,
    command: String,
    mut err: impl Write,
) -> Result<QuicReloadTrace, ScenarioError> {
    if !crate::calllog::private_netns() {
        return Err(ScenarioError::Setup {
            call: "unshare(CLONE_NEWNET)".into(),
            source: io::Error::last_os_error(),
            hint: ": scenario quic-reload runs its UDP group in a private network namespace; run it as root",
        });
    }
    let profile = Profile::resolve(&kernel.profile, None)
        .map_err(|e| ScenarioError::Invalid(e.to_string()))?;
    let mut measured = Vec::new();
    for cid in [false, true] {
        let s = ReloadSpec::gallery(cid);
        let mut live = Live::new(&s).map_err(|e| ScenarioError::Setup {
            call: "making the UDP group".into(),
            source: e,
            hint: "",
        })?;
        let started = Instant::now();
        let report = reload::run(&s, &mut live).map_err(ScenarioError::Invalid)?;
        drop(live);
        let _ = writeln!(
            err,
            "scenario quic-reload: {} ran {} datagrams in {:.2} s",
            variant(cid),
            report.datagrams.len(),
            started.elapsed().as_secs_f64()
        );
        measured.push(report);
    }
    let (key, candidates) = recover_key(profile, &measured[0], &mut err)?;
    let runs = measured
        .into_iter()
        .map(|m| {
            let model = key.and_then(|k| {
                reload::simulate(
                    profile,
                    &m.spec,
                    Keys {
                        v4: k,
                        v6_outer: 0,
                        v6_inner: 0,
                    },
                )
                .ok()
            });
            let (compared, agreed) = model.as_ref().map_or((0, 0), |x| agreement(&m, x));
            QuicRun {
                variant: variant(m.spec.cid_program),
                measured: m,
                model,
                compared,
                agreed,
            }
        })
        .collect();
    let nproc = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    Ok(QuicReloadTrace {
        schema: SCHEMA_ID,
        kernel,
        nproc,
        command,
        key,
        candidates,
        runs,
    })
}

fn variant(cid: bool) -> &'static str {
    if cid {
        "cid-program"
    } else {
        "no-program"
    }
}

impl crate::exit::Ending for QuicReloadTrace {
    fn status(&self) -> crate::exit::Status {
        crate::exit::all_or_partial(
            self.key.is_some()
                && self
                    .runs
                    .iter()
                    .all(|r| r.compared > 0 && r.agreed == r.compared),
        )
    }
}
