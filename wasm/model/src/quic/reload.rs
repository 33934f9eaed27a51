//! The QUIC reload scenario: a UDP group of old workers serving QUIC flows,
//! a reload that adds as many new workers while the old ones drain, and the
//! end of the drain, when the old sockets close. Run with no program, or
//! with [`super::CID_PROGRAM`] attached.
//!
//! One script, two executors: [`run`] drives an [`Executor`], which either
//! is the model's group ([`ModelExecutor`]) or a live kernel group (the
//! agent's `scenario quic-reload`). The script decides nothing the kernel
//! decides: every delivery is the executor's answer.
//!
//! The server's part follows rules of this scenario, not of nginx's code:
//! a worker that receives a flow's Initial takes the flow and issues its
//! connection ID, whose first byte is the worker's socket index (the
//! socket's slot in `socks[]`: the sockets join in order and none has
//! closed when an ID is issued); a draining worker keeps its flows and takes
//! no new one, so an Initial that reaches it gets no answer and the flow
//! hangs; a datagram of a flow that reaches another worker than the flow's
//! finds no connection there, and the flow breaks.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use super::{packet, QuicForm, QuicPacketSpec, CID_PROGRAM, NGINX_CID_LEN};
use crate::hash::Keys;
use crate::lookup::Host;
use crate::profile::Profile;
use crate::reuseport::{cbpf, GroupSpec, PacketCtx, Payload, Program, ReuseportGroup};
use crate::tuple::{Proto, Tuple};

/// The most flows a phase may have (a bound on input).
pub const MAX_FLOWS: u32 = 4096;
/// The most workers (a bound on input; each is one socket).
pub const MAX_WORKERS: u32 = 64;

/// The server's address, and the first client port.
pub const SERVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
/// The clients' address.
pub const CLIENT: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// Flow `f` before the reload sends from `FIRST_PORT + f`, flow `f` during
/// the drain from `FIRST_PORT + flows_before + f`.
pub const FIRST_PORT: u16 = 40000;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReloadSpec {
    /// Workers before the reload, and as many after it (one UDP socket each).
    pub workers: u32,
    /// Flows established before the reload.
    pub flows_before: u32,
    /// New flows during the drain.
    pub flows_during: u32,
    /// Whether the connection-ID program is attached.
    pub cid_program: bool,
    /// The group's port.
    pub port: u16,
    /// The seed of the connection IDs' random bytes.
    pub seed: u32,
}

impl ReloadSpec {
    /// The scenario as the gallery shows it: 4 workers, 64 flows before
    /// the reload and 64 during the drain, on port 4433.
    pub fn gallery(cid_program: bool) -> ReloadSpec {
        ReloadSpec {
            workers: 4,
            flows_before: 64,
            flows_during: 64,
            cid_program,
            port: 4433,
            seed: 1,
        }
    }
}

/// Where the scenario is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The old workers alone.
    Before,
    /// The new workers joined; the old ones drain.
    Drain,
    /// The old workers' sockets closed.
    After,
}

/// One datagram sent, and where it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReloadDatagram {
    /// The phase.
    pub phase: Phase,
    /// The client's source port (the flow).
    pub sport: u16,
    /// Initial or 1-RTT.
    pub form: QuicForm,
    /// The payload, hex.
    pub payload: String,
    /// The socket that received it (its index: sockets are made in order), or none.
    pub socket: Option<u32>,
}

/// What happened to the flows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Fates {
    /// Flows established before the reload.
    pub before: u32,
    /// Of those, the ones whose datagram during the drain reached their worker.
    pub old_kept: u32,
    /// The ones whose datagram reached another worker.
    pub old_broken: u32,
    /// New flows during the drain whose Initial reached a new worker.
    pub new_established: u32,
    /// New flows whose Initial reached a draining worker: no answer.
    pub new_hung: u32,
    /// Of the established new flows, the ones whose datagram after the drain reached their worker.
    pub after_kept: u32,
    /// The ones whose datagram reached another worker.
    pub after_broken: u32,
}

/// A run of the scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReloadReport {
    /// What was run.
    pub spec: ReloadSpec,
    /// The flows' fates.
    pub fates: Fates,
    /// Every datagram in the order sent.
    pub datagrams: Vec<ReloadDatagram>,
}

/// What runs the script: a group that starts with `spec.workers` sockets
/// (sockets 0.., in bind order) and the program if asked.
pub trait Executor {
    /// A new socket joins (the next index).
    fn join(&mut self) -> Result<(), String>;
    /// Socket `socket` closes.
    fn close(&mut self, socket: u32) -> Result<(), String>;
    /// Sends one datagram; the socket that received it, or none.
    fn send(&mut self, tuple: &Tuple, payload: &[u8]) -> Result<Option<u32>, String>;
}

/// The model's group as the executor.
pub struct ModelExecutor {
    group: ReuseportGroup,
}

/// The connection-ID program as instructions.
pub fn cid_program() -> Vec<cbpf::Insn> {
    cbpf::parse(CID_PROGRAM).expect("the connection-ID program parses")
}

impl ModelExecutor {
    /// The group of `spec` under `keys`, in the era of `profile`.
    pub fn new(
        profile: &'static Profile,
        spec: &ReloadSpec,
        keys: Keys,
    ) -> Result<ModelExecutor, String> {
        let mut g = GroupSpec::new(Proto::Udp, spec.workers, SERVER.into(), spec.port, keys);
        if spec.cid_program {
            g.program = Some(Program::Cbpf {
                insns: cid_program(),
            });
        }
        Ok(ModelExecutor {
            group: Host::shorthand_group(profile, &g).map_err(|e| e.to_string())?,
        })
    }
}

impl Executor for ModelExecutor {
    fn join(&mut self) -> Result<(), String> {
        self.group.join().map(|_| ()).map_err(|e| e.to_string())
    }
    fn close(&mut self, socket: u32) -> Result<(), String> {
        self.group
            .close(socket)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    fn send(&mut self, tuple: &Tuple, payload: &[u8]) -> Result<Option<u32>, String> {
        let ctx = PacketCtx {
            payload: Some(Payload::Bytes(payload.to_vec())),
            ..PacketCtx::default()
        };
        let c = self
            .group
            .select_ctx(tuple, &ctx)
            .map_err(|e| e.to_string())?;
        Ok(c.listener)
    }
}

/// A small seeded stream for the IDs' random bytes (xorshift32).
struct Bytes(u32);

impl Bytes {
    fn next(&mut self) -> u8 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        (x >> 24) as u8
    }
    fn cid(&mut self) -> Vec<u8> {
        (0..NGINX_CID_LEN).map(|_| self.next()).collect()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Checks the spec's bounds; the error names the field.
pub fn check(spec: &ReloadSpec) -> Result<(), String> {
    if spec.workers == 0 || spec.workers > MAX_WORKERS {
        return Err(format!(
            "workers must be 1 to {MAX_WORKERS}, not {}",
            spec.workers
        ));
    }
    for (name, n) in [
        ("flowsBefore", spec.flows_before),
        ("flowsDuring", spec.flows_during),
    ] {
        if n > MAX_FLOWS {
            return Err(format!("{name} must be at most {MAX_FLOWS}, not {n}"));
        }
    }
    if u32::from(FIRST_PORT) + spec.flows_before + spec.flows_during > 65535 {
        return Err("flowsBefore + flowsDuring leave the port range".into());
    }
    Ok(())
}

/// Runs the scenario on `exec`.
pub fn run(spec: &ReloadSpec, exec: &mut impl Executor) -> Result<ReloadReport, String> {
    check(spec)?;
    let w = spec.workers;
    let mut rng = Bytes(spec.seed | 1);
    let mut fates = Fates::default();
    let mut datagrams = Vec::new();
    let mut send = |exec: &mut dyn ExecutorDyn,
                    phase: Phase,
                    sport: u16,
                    form: QuicForm,
                    dcid: Vec<u8>,
                    pn: u32|
     -> Result<Option<u32>, String> {
        let bytes = packet(&QuicPacketSpec {
            form,
            dcid,
            scid: Vec::new(),
            packet_number: pn,
        })
        .map_err(|e| e.to_string())?;
        let t = Tuple::v4(CLIENT, sport, SERVER, spec.port);
        let socket = exec.send_dyn(&t, &bytes)?;
        datagrams.push(ReloadDatagram {
            phase,
            sport,
            form,
            payload: hex(&bytes),
            socket,
        });
        Ok(socket)
    };
    // Before: each flow's Initial, then a 1-RTT datagram with the ID its worker issued.
    let mut old: Vec<(u16, u32, Vec<u8>)> = Vec::new();
    for f in 0..spec.flows_before {
        let sport = FIRST_PORT + f as u16;
        let Some(worker) = send(exec, Phase::Before, sport, QuicForm::Initial, rng.cid(), 0)?
        else {
            continue;
        };
        let mut id = rng.cid();
        id[0] = worker as u8;
        fates.before += 1;
        send(exec, Phase::Before, sport, QuicForm::Short, id.clone(), 1)?;
        old.push((sport, worker, id));
    }
    // The reload: as many new sockets join.
    for _ in 0..w {
        exec.join()?;
    }
    for (sport, worker, id) in &old {
        let got = send(exec, Phase::Drain, *sport, QuicForm::Short, id.clone(), 2)?;
        if got == Some(*worker) {
            fates.old_kept += 1;
        } else {
            fates.old_broken += 1;
        }
    }
    let mut new: Vec<(u16, u32, Vec<u8>)> = Vec::new();
    for f in 0..spec.flows_during {
        let sport = FIRST_PORT + (spec.flows_before + f) as u16;
        match send(exec, Phase::Drain, sport, QuicForm::Initial, rng.cid(), 0)? {
            Some(worker) if worker >= w => {
                fates.new_established += 1;
                let mut id = rng.cid();
                id[0] = worker as u8;
                send(exec, Phase::Drain, sport, QuicForm::Short, id.clone(), 1)?;
                new.push((sport, worker, id));
            }
            _ => fates.new_hung += 1,
        }
    }
    // The drain ends: the old sockets close, in order.
    for s in 0..w {
        exec.close(s)?;
    }
    for (sport, worker, id) in &new {
        let got = send(exec, Phase::After, *sport, QuicForm::Short, id.clone(), 2)?;
        if got == Some(*worker) {
            fates.after_kept += 1;
        } else {
            fates.after_broken += 1;
        }
    }
    Ok(ReloadReport {
        spec: spec.clone(),
        fates,
        datagrams,
    })
}

/// [`Executor`] as a trait object (the closure above takes one).
trait ExecutorDyn {
    fn send_dyn(&mut self, tuple: &Tuple, payload: &[u8]) -> Result<Option<u32>, String>;
}

impl<E: Executor> ExecutorDyn for E {
    fn send_dyn(&mut self, tuple: &Tuple, payload: &[u8]) -> Result<Option<u32>, String> {
        self.send(tuple, payload)
    }
}

/// The scenario in the model: `profile`'s group under `keys`.
pub fn simulate(
    profile: &'static Profile,
    spec: &ReloadSpec,
    keys: Keys,
) -> Result<ReloadReport, String> {
    let mut exec = ModelExecutor::new(profile, spec, keys)?;
    run(spec, &mut exec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(cid: bool) -> Fates {
        let p = Profile::resolve("6.18", None).unwrap();
        let keys = Keys {
            v4: 0x1234_5678,
            v6_outer: 0,
            v6_inner: 0,
        };
        simulate(p, &ReloadSpec::gallery(cid), keys).unwrap().fates
    }

    /// The program keeps every old flow on its worker through the drain;
    /// without it, a flow stays only where the hash over 8 slots lands in
    /// the slot it had among 4, slot 0 alone (reciprocal_scale: slot 0 of
    /// 4 is slots 0 and 1 of 8), so about one in eight.
    #[test]
    fn the_program_keeps_old_flows_through_the_drain_and_the_hash_does_not() {
        let with = sim(true);
        let without = sim(false);
        assert_eq!((with.before, with.old_kept, with.old_broken), (64, 64, 0));
        assert_eq!(without.before, 64);
        assert!(without.old_kept < 20, "{without:?}");
        assert_eq!(without.old_kept + without.old_broken, 64);
        // New flows' Initials go by the hash in both: the program leaves Initials to it.
        assert_eq!(with.new_hung, without.new_hung);
        assert_eq!(with.new_hung + with.new_established, 64);
    }

    /// After the old sockets close, the new workers' sockets move into the
    /// freed slots: an index is a position, so the classic program's IDs
    /// name slots 4 to 7, which are past the group, and the hash decides.
    #[test]
    fn after_the_drain_the_classic_program_falls_back_as_the_hash_does() {
        let with = sim(true);
        let without = sim(false);
        assert_eq!(with.after_kept + with.after_broken, with.new_established);
        assert_eq!(
            (with.after_kept, with.after_broken),
            (without.after_kept, without.after_broken)
        );
    }
}
