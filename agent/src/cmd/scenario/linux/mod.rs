//! The Linux driver of `scenario`: the workers, the clients and the
//! agent's loop that releases the clients and plays the events. Forking,
//! shared memory and pinning are [`crate::process`]'s and the stop on a
//! signal [`crate::signals`]'s, as in `bench`.
//!
//! The agent is single-threaded when it forks, so the children may use the
//! heap; they never return into the agent's code (they end in `_exit`).
//!
//! Shared memory, in 8-byte words: the start time and the accept mutex;
//! per worker its counters and its command word; per client process the
//! connections it has finished; per connection its times, worker, outcome
//! and locality; per request its send and answer times. Times are
//! CLOCK_MONOTONIC nanoseconds, the same clock in every process.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use libc::c_int;
use reuseport_model::sim::rng::Rng;
use reuseport_model::sim::{AcceptModel, Arrivals, Event, Scenario, ServiceDist};

use super::{ConnOutcome, ConnRecord, Measured, ScenarioError};
use crate::migrate_req::{self, HoldError, MigrateReq, MIGRATE_REQ};
use crate::process::{
    close_with_reset, errno, local_port, now_ns, os_error, set_int, sockaddr, Children, Shared,
    SysError, SOCKADDR_LEN,
};

mod client;
mod worker;

use client::{client_main, ClientPlan};
use worker::{worker_main, WorkerPlan};

const SERVER: [u8; 4] = [127, 0, 0, 1];
const FIRST_CLIENT: u32 = u32::from_be_bytes([127, 0, 1, 1]);
/// Descriptors a worker or client process keeps per-descriptor state for.
const FDS: usize = 65_536;
/// The data word of the listener and of the timer in an epoll set.
const LISTENER: u64 = u64::MAX;
const TIMER: u64 = u64::MAX - 1;
const COMMAND: u64 = u64::MAX - 2;

const W_WORDS: usize = 8;
const C_WORDS: usize = 6;
/// Worker words.
const W_ACCEPTS: usize = 0;
const W_REQUESTS: usize = 1;
const W_CPU: usize = 2;
const W_WASTED: usize = 3;
const W_CMD: usize = 4;
/// Commands (low byte; the rest is a sequence number).
const CMD_LEAVE: u64 = 1;
const CMD_REJOIN: u64 = 2;
/// Connection words.
const K_START: usize = 0;
const K_CONNECTED: usize = 1;
const K_ACCEPTED: usize = 2;
const K_WORKER: usize = 3;
const K_OUTCOME: usize = 4;
const K_LOCAL: usize = 5;

pub(super) fn setup(e: SysError) -> ScenarioError {
    ScenarioError::Setup {
        call: e.call.into(),
        source: e.source,
        hint: "",
    }
}

fn sys(call: &str, hint: &'static str) -> ScenarioError {
    ScenarioError::Setup {
        call: call.into(),
        source: io::Error::last_os_error(),
        hint,
    }
}

/// Where the words are.
#[derive(Clone, Copy)]
struct Layout {
    workers: usize,
    clients: usize,
    conns: usize,
    per: usize,
}

impl Layout {
    fn worker(&self, w: usize, word: usize) -> usize {
        2 + w * W_WORDS + word
    }
    fn client(&self, c: usize) -> usize {
        2 + self.workers * W_WORDS + c
    }
    fn conn(&self, i: usize, word: usize) -> usize {
        2 + self.workers * W_WORDS + self.clients + i * C_WORDS + word
    }
    fn request(&self, r: usize, word: usize) -> usize {
        2 + self.workers * W_WORDS + self.clients + self.conns * C_WORDS + r * 2 + word
    }
    fn words(&self) -> usize {
        self.request(self.conns * self.per, 0)
    }
}

/// What a run measured, and how it went.
pub(super) struct RunResult {
    pub measured: Measured,
    pub seconds: f64,
    pub stopped: Option<&'static str>,
    pub notes: Vec<String>,
}

/// `net.ipv4.tcp_migrate_req` set as a variant asks while the guard lives
/// (written back on drop: success, errors, a stop signal, a panic; after
/// a SIGKILL, by the next run, from the state file [`MigrateReq::claim`]
/// keeps); `None` when the variant asks for 0 and the kernel has no such
/// sysctl (before 5.14 nothing migrates anyway).
fn migrate_req(on: bool) -> Result<Option<MigrateReq>, ScenarioError> {
    let current = match migrate_req::current() {
        Ok(c) => c,
        Err(_) if !on => return Ok(None),
        Err(source) => {
            return Err(ScenarioError::Setup {
                call: format!("reading {MIGRATE_REQ}"),
                source,
                hint: "; the variant needs net.ipv4.tcp_migrate_req (Linux 5.14+)",
            })
        }
    };
    // Scenarios run in the host namespace: the state file guards it.
    MigrateReq::claim(&current, on, true, "scenario")
        .map(Some)
        .map_err(|e| match e {
            HoldError::Held { pid, state } => ScenarioError::MigrateReqHeld {
                pid,
                state: state.display().to_string(),
            },
            HoldError::State { path, source } => ScenarioError::Setup {
                call: format!("writing the state file {}", path.display()),
                source,
                hint: "; it records the value of net.ipv4.tcp_migrate_req to restore should the run be killed, and needs root",
            },
            HoldError::Write(source) => ScenarioError::Setup {
                call: format!("writing {} to {MIGRATE_REQ}", u8::from(on)),
                source,
                hint: "; setting a sysctl needs root",
            },
        })
}

/// `TcpExt` counters of /proc/net/netstat.
fn netstat(names: &[&str]) -> Vec<u64> {
    let text = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = vec![0; names.len()];
    for pair in lines.chunks(2) {
        if pair.len() < 2 || !pair[0].starts_with("TcpExt:") {
            continue;
        }
        let keys: Vec<&str> = pair[0].split_whitespace().collect();
        let vals: Vec<&str> = pair[1].split_whitespace().collect();
        for (k, v) in keys.iter().zip(&vals) {
            if let Some(i) = names.iter().position(|n| n == k) {
                out[i] = v.parse().unwrap_or(0);
            }
        }
    }
    out
}

/// Every connection's arrival time (ns from the start) and client index,
/// from the scenario's distributions and seed.
fn schedule(s: &Scenario) -> (Vec<u64>, Vec<u32>) {
    let n = s.connections as usize;
    let mut rng = Rng::new(s.seed, 1);
    let ns = |us: f64| (us * 1e3).round() as u64;
    let mut at = Vec::with_capacity(n);
    match &s.arrivals {
        Arrivals::Poisson { rate_per_sec } => {
            let mut t = 0.0;
            for _ in 0..n {
                t += rng.exp(1e6 / rate_per_sec);
                at.push(ns(t));
            }
        }
        Arrivals::Bursty {
            rate_per_sec,
            burst,
        } => {
            let mut t = 0.0;
            while at.len() < n {
                t += rng.exp(1e6 * *burst as f64 / rate_per_sec);
                for _ in 0..*burst {
                    if at.len() < n {
                        at.push(ns(t));
                    }
                }
            }
        }
        Arrivals::Paced { gap_us } => at.extend((0..n).map(|i| ns(gap_us * (i + 1) as f64))),
        Arrivals::Replay { at_us } => at.extend(at_us.iter().map(|&t| ns(t))),
    }
    let mut crng = Rng::new(s.seed, 2);
    let clients = (0..n).map(|_| crng.below(s.clients.count)).collect();
    (at, clients)
}

/// Runs one variant's scenario `s` and reads what was measured.
pub(super) fn run_one(
    s: &Scenario,
    procs: u32,
    timeout: Duration,
) -> Result<RunResult, ScenarioError> {
    let mut notes = Vec::new();
    let _migrate = migrate_req(s.tcp_migrate_req)?;
    let model = s.accept;
    let nproc = crate::cmd::bench::nproc() as u32;
    let added = s
        .events
        .iter()
        .filter(|e| matches!(e, Event::AddWorker { .. }))
        .count();
    let lay = Layout {
        workers: s.workers as usize + added,
        clients: procs as usize,
        conns: s.connections as usize,
        per: s.requests.per_connection as usize,
    };
    // Descriptors: each process keeps per-descriptor state for up to FDS.
    // SAFETY: reading and raising our own limit.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max.min(FDS as libc::rlim_t);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
    let sh = Shared::bytes(lay.words() * 8).map_err(setup)?;
    let (at, who) = schedule(s);

    // The shared listener, or the hold on the port of the reuseport
    // models: bound, not listening, so it joins no group.
    let per_worker = model.per_worker_queues();
    let nonblocking = model != AcceptModel::Blocking;
    // SAFETY: plain socket calls; owned at once.
    let hold = unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM
                | libc::SOCK_CLOEXEC
                | if nonblocking { libc::SOCK_NONBLOCK } else { 0 },
            0,
        );
        if fd < 0 {
            return Err(sys("socket", ""));
        }
        let fd = OwnedFd::from_raw_fd(fd);
        set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1);
        if per_worker {
            set_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEPORT, 1);
        }
        let a = sockaddr(SERVER, 0);
        if libc::bind(
            fd.as_raw_fd(),
            (&a as *const libc::sockaddr_in).cast(),
            SOCKADDR_LEN,
        ) != 0
        {
            return Err(sys("bind 127.0.0.1:0", ""));
        }
        if !per_worker && libc::listen(fd.as_raw_fd(), s.backlog as c_int) != 0 {
            return Err(sys("listen", ""));
        }
        fd
    };
    let port = local_port(&hold).map_err(|source| ScenarioError::Setup {
        call: "getsockname".into(),
        source,
        hint: "",
    })?;
    notes.push(format!(
        "server port {port} (a free one; the scenario's port only enters the hash, whose per-boot key differs anyway)"
    ));

    let mut children = Children::default();
    let mut pids: Vec<libc::pid_t> = Vec::new();
    let mut listeners: Vec<(u64, u32)> = Vec::new();
    let plan = |w: u32, report: RawFd, first: bool| WorkerPlan {
        index: w,
        model,
        shared: if per_worker { -1 } else { hold.as_raw_fd() },
        port,
        backlog: s.backlog,
        pin: matches!(
            model,
            AcceptModel::ReuseportIncomingCpu | AcceptModel::ReuseportBpfCpu
        )
        .then_some(w % nproc),
        incoming_cpu: model == AcceptModel::ReuseportIncomingCpu,
        attach_bpf: model == AcceptModel::ReuseportBpfCpu && first,
        mean_ns: s.service.mean_us * 1e3,
        exponential: s.service.dist == ServiceDist::Exponential,
        factor: s
            .service
            .slow
            .iter()
            .filter(|x| x.worker == w)
            .map(|x| x.factor)
            .product(),
        seed: s.seed,
        mutex_delay_ms: ((s.params.mutex_delay_us / 1e3).round() as c_int).max(1),
        report,
    };
    // Workers one at a time, so listener w is the w-th to join the group.
    let start_worker =
        |children: &mut Children, w: u32, first: bool| -> Result<libc::pid_t, ScenarioError> {
            let (r, wr) = crate::process::pipe().map_err(setup)?;
            let p = plan(w, wr.as_raw_fd(), first);
            let sh = &sh;
            let pid = children
                .spawn(move || worker_main(p, sh, lay))
                .map_err(|source| ScenarioError::Setup {
                    call: "fork (a worker)".into(),
                    source,
                    hint: "; raise the process limit (ulimit -u)",
                })?;
            drop(wr);
            let mut buf = [0u8; 256];
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut text = String::new();
            while !text.ends_with('\n') && Instant::now() < deadline {
                // SAFETY: reading into a local buffer.
                let n = unsafe { libc::read(r.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    if n < 0 && errno() == libc::EINTR {
                        continue;
                    }
                    break;
                }
                text.push_str(&String::from_utf8_lossy(&buf[..n as usize]));
            }
            if !text.contains(" ready ") {
                return Err(ScenarioError::Setup {
                    call: format!("worker {w}: {}", text.trim()),
                    source: os_error(
                        text.split_whitespace()
                            .last()
                            .and_then(|e| e.parse().ok())
                            .unwrap_or(libc::EIO),
                    ),
                    hint: "",
                });
            }
            Ok(pid)
        };
    for w in 0..s.workers {
        pids.push(start_worker(&mut children, w, w == 0)?);
        listeners.push((0, w));
    }
    if !per_worker {
        listeners.clear();
    }

    // Clients, held at the gate; for the CPU-steered variants pinned round
    // robin, so the SYNs' CPUs are spread as the simulator draws them.
    let steered = matches!(
        model,
        AcceptModel::ReuseportIncomingCpu | AcceptModel::ReuseportBpfCpu
    );
    let (gate_r, gate_w) = crate::process::pipe().map_err(setup)?;
    for k in 0..procs as usize {
        let cp = ClientPlan {
            index: k,
            procs: procs as usize,
            at: &at,
            who: &who,
            s,
            port,
            gate: gate_r.as_raw_fd(),
            gate_write: gate_w.as_raw_fd(),
            pin: steered.then_some(k as u32 % nproc),
        };
        let sh = &sh;
        children
            .spawn(move || client_main(cp, sh, lay))
            .map_err(|source| ScenarioError::Setup {
                call: "fork (a client)".into(),
                source,
                hint: "; raise the process limit (ulimit -u)",
            })?;
    }
    drop(gate_r);
    let before = netstat(&["ListenOverflows", "TCPMigrateReqSuccess"]);

    // Events, in time order: (at ns, what).
    #[derive(Clone, Copy)]
    enum Act {
        Stop(u32),
        Cont(u32),
        Leave(u32),
        Rejoin(u32),
        Add,
    }
    let ns = |us: f64| (us * 1e3).round() as u64;
    let mut acts: Vec<(u64, Act)> = Vec::new();
    for e in &s.events {
        match *e {
            Event::Stall {
                worker,
                at_us,
                for_us,
            } => {
                acts.push((ns(at_us), Act::Stop(worker)));
                acts.push((ns(at_us + for_us), Act::Cont(worker)));
            }
            Event::Leave { worker, at_us } => acts.push((ns(at_us), Act::Leave(worker))),
            Event::Rejoin { worker, at_us } => acts.push((ns(at_us), Act::Rejoin(worker))),
            Event::AddWorker { at_us } => acts.push((ns(at_us), Act::Add)),
        }
    }
    acts.sort_by_key(|a| a.0);
    let mut next_act = 0;
    let mut seq = 0u64;
    let mut stopped = None;

    let t0 = now_ns();
    sh.word(0).store(t0, Ordering::SeqCst);
    drop(gate_w);
    let started = Instant::now();
    let finished = |sh: &Shared| -> u64 {
        (0..procs as usize)
            .map(|k| sh.word(lay.client(k)).load(Ordering::SeqCst))
            .sum()
    };
    loop {
        let now = now_ns() - t0;
        while next_act < acts.len() && acts[next_act].0 <= now {
            let (_, act) = acts[next_act];
            next_act += 1;
            let signal = |w: u32, sig: c_int| {
                if let Some(&pid) = pids.get(w as usize) {
                    // SAFETY: signalling our own child.
                    unsafe { libc::kill(pid, sig) };
                }
            };
            match act {
                Act::Stop(w) => signal(w, libc::SIGSTOP),
                Act::Cont(w) => signal(w, libc::SIGCONT),
                Act::Leave(w) | Act::Rejoin(w) => {
                    seq += 1;
                    let kind = if matches!(act, Act::Leave(_)) {
                        CMD_LEAVE
                    } else {
                        CMD_REJOIN
                    };
                    sh.word(lay.worker(w as usize, W_CMD))
                        .store(seq << 8 | kind, Ordering::SeqCst);
                    signal(w, libc::SIGUSR1);
                    if per_worker && kind == CMD_REJOIN {
                        listeners.push((now, w));
                    }
                }
                Act::Add => {
                    let w = pids.len() as u32;
                    pids.push(start_worker(&mut children, w, false)?);
                    if per_worker {
                        listeners.push((now_ns() - t0, w));
                    }
                }
            }
        }
        if finished(&sh) >= s.connections as u64 {
            break;
        }
        if crate::signals::stopped() {
            stopped = Some("interrupted");
            break;
        }
        if started.elapsed() >= timeout {
            stopped = Some("timeout");
            break;
        }
        let wait = acts
            .get(next_act)
            .map(|a| a.0.saturating_sub(now_ns() - t0))
            .unwrap_or(1_000_000)
            .min(1_000_000);
        std::thread::sleep(Duration::from_nanos(wait.max(10_000)));
    }
    let end = now_ns() - t0;
    let seconds = started.elapsed().as_secs_f64();
    // Workers publish after every accept and request: read before the kill.
    let workers: Vec<[u64; 4]> = (0..pids.len())
        .map(|w| {
            [W_ACCEPTS, W_REQUESTS, W_CPU, W_WASTED]
                .map(|k| sh.word(lay.worker(w, k)).load(Ordering::SeqCst))
        })
        .collect();
    children.stop();
    drop(hold);
    let after = netstat(&["ListenOverflows", "TCPMigrateReqSuccess"]);
    let rel = |t: u64| {
        if t == 0 {
            0
        } else {
            t.saturating_sub(t0).max(1)
        }
    };
    let mut conns = Vec::with_capacity(lay.conns);
    for i in 0..lay.conns {
        let w = |k| sh.word(lay.conn(i, k)).load(Ordering::SeqCst);
        let worker = w(K_WORKER);
        conns.push(ConnRecord {
            start: rel(w(K_START)),
            connected: rel(w(K_CONNECTED)),
            accepted: rel(w(K_ACCEPTED)),
            worker: (worker > 0).then(|| worker as u32 - 1),
            outcome: match w(K_OUTCOME) {
                1 => ConnOutcome::Done,
                2 => ConnOutcome::Reset,
                3 => ConnOutcome::Failed,
                _ => ConnOutcome::Open,
            },
            local: w(K_LOCAL) == 1,
        });
    }
    let requests = (0..lay.conns * lay.per)
        .map(|r| {
            (
                rel(sh.word(lay.request(r, 0)).load(Ordering::SeqCst)),
                rel(sh.word(lay.request(r, 1)).load(Ordering::SeqCst)),
            )
        })
        .collect();
    notes.push("syn drops: the machine-wide TcpExt ListenOverflows during the run (other traffic would count too); migrated: TcpExt TCPMigrateReqSuccess".into());
    notes.push("busyUs: each worker's CPU time (CLOCK_PROCESS_CPUTIME_ID) as it last published it, after its last accept or request".into());
    notes.push(match model {
        AcceptModel::Blocking => "wastedWakeups: 0, unmeasurable with blocking accept() (the kernel wakes one waiter and accept() returns only with a connection)".into(),
        _ => "wastedWakeups: accept() calls that found nothing after epoll_wait() returned the listener (wake-ups the kernel absorbs inside epoll_wait are not seen)".to_string(),
    });
    notes.push("acceptLatency: from connect() to accept() returning; request latency from connect() (first request) or the send (later ones) to the answer, timed by the client".into());
    notes.push("depth: connections whose handshake the client saw complete and no worker had accepted yet, per listener of the worker that accepted them (never-accepted ones are not counted)".into());
    if matches!(
        model,
        AcceptModel::ReuseportIncomingCpu | AcceptModel::ReuseportBpfCpu
    ) {
        notes.push(format!(
            "worker w pinned to CPU w % {nproc}; client process k pinned to CPU k % {nproc} (a loopback SYN is received on its sender's CPU; connection i is sent by client process i % {procs})"
        ));
    } else {
        notes.push("workers not pinned: the scheduler places them (the simulator keeps worker w on CPU w % cpus)".into());
    }
    Ok(RunResult {
        measured: Measured {
            conns,
            requests,
            workers,
            listeners,
            syn_drops: after[0].saturating_sub(before[0]),
            migrated: after[1].saturating_sub(before[1]),
            partial: stopped.is_some(),
            end,
        },
        seconds,
        stopped,
        notes,
    })
}
