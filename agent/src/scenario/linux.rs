//! The Linux driver of `scenario`: the workers, the clients and the
//! agent's loop that releases the clients and plays the events. Forking,
//! shared memory and signals are [`crate::fork`]'s, as in `bench`.
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
use crate::fork::{
    errno, local_port, now_ns, os_error, set_int, sockaddr, Children, Shared, SysError,
    SOCKADDR_LEN,
};

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

/// `net.ipv4.tcp_migrate_req` set as a variant asks while this lives; the
/// previous value is written back on drop (success, errors, a stop signal,
/// a panic).
struct MigrateReq {
    previous: Option<String>,
}

const MIGRATE_REQ: &str = "/proc/sys/net/ipv4/tcp_migrate_req";

impl MigrateReq {
    fn set(on: bool) -> Result<MigrateReq, ScenarioError> {
        let want = if on { "1" } else { "0" };
        let previous = match std::fs::read_to_string(MIGRATE_REQ) {
            Ok(p) => p.trim().to_string(),
            Err(e) if !on => {
                // No sysctl (before 5.14): nothing migrates anyway.
                let _ = e;
                return Ok(MigrateReq { previous: None });
            }
            Err(source) => {
                return Err(ScenarioError::Setup {
                    call: format!("reading {MIGRATE_REQ}"),
                    source,
                    hint: "; the variant needs net.ipv4.tcp_migrate_req (Linux 5.14+)",
                })
            }
        };
        if previous == want {
            return Ok(MigrateReq { previous: None });
        }
        std::fs::write(MIGRATE_REQ, format!("{want}\n")).map_err(|source| {
            ScenarioError::Setup {
                call: format!("writing {want} to {MIGRATE_REQ}"),
                source,
                hint: "; setting a sysctl needs root",
            }
        })?;
        Ok(MigrateReq {
            previous: Some(previous),
        })
    }
}

impl Drop for MigrateReq {
    fn drop(&mut self) {
        if let Some(p) = &self.previous {
            if let Err(e) = std::fs::write(MIGRATE_REQ, format!("{p}\n")) {
                crate::note!(
                    "scenario: could not restore {MIGRATE_REQ} to {p}: {e}; restore it with `sysctl -w net.ipv4.tcp_migrate_req={p}`"
                );
            }
        }
    }
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

/// What one worker process does.
#[derive(Clone, Copy)]
struct WorkerPlan {
    index: u32,
    model: AcceptModel,
    /// The shared listener, or -1 (open one's own).
    shared: RawFd,
    port: u16,
    backlog: u32,
    pin: Option<u32>,
    incoming_cpu: bool,
    attach_bpf: bool,
    mean_ns: f64,
    exponential: bool,
    factor: f64,
    seed: u64,
    mutex_delay_ms: c_int,
    report: RawFd,
}

fn pin_to(cpu: u32) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays in bounds for
    // cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// A reuseport listener on 127.0.0.1:port; Err: the call that failed.
fn reuseport_listener(p: &WorkerPlan) -> Result<RawFd, &'static str> {
    // SAFETY: plain socket calls on a descriptor we own.
    unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        );
        if fd < 0 {
            return Err("socket");
        }
        if !set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)
            || !set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)
        {
            return Err("setsockopt(SO_REUSEPORT)");
        }
        if p.incoming_cpu {
            let cpu = p.pin.unwrap_or(0) as c_int;
            if !set_int(fd, libc::SOL_SOCKET, libc::SO_INCOMING_CPU, cpu) {
                return Err("setsockopt(SO_INCOMING_CPU)");
            }
        }
        let a = sockaddr(SERVER, p.port);
        if libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), SOCKADDR_LEN) != 0 {
            return Err("bind");
        }
        if libc::listen(fd, p.backlog as c_int) != 0 {
            return Err("listen");
        }
        if p.attach_bpf {
            // ld [SKF_AD_OFF + SKF_AD_CPU]; ret a
            // (tools/testing/selftests/net/reuseport_bpf_cpu.c).
            let mut code = [
                libc::sock_filter {
                    code: 0x20,
                    jt: 0,
                    jf: 0,
                    k: 0xffff_f000 + 36,
                },
                libc::sock_filter {
                    code: 0x16,
                    jt: 0,
                    jf: 0,
                    k: 0,
                },
            ];
            let prog = libc::sock_fprog {
                len: 2,
                filter: code.as_mut_ptr(),
            };
            if libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_ATTACH_REUSEPORT_CBPF,
                (&prog as *const libc::sock_fprog).cast(),
                std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
            ) != 0
            {
                return Err("setsockopt(SO_ATTACH_REUSEPORT_CBPF)");
            }
        }
        Ok(fd)
    }
}

extern "C" fn on_command(_: c_int) {}

/// Per-descriptor state of a worker.
#[derive(Clone, Copy, Default)]
struct WFd {
    accepted: u64,
    conn: u32,
    local: bool,
    have: u8,
    buf: [u8; 8],
}

struct Worker<'a> {
    p: WorkerPlan,
    sh: &'a Shared,
    lay: Layout,
    fds: Vec<WFd>,
    rng: u64,
    accepts: u64,
    requests: u64,
    wasted: u64,
}

impl Worker<'_> {
    fn word(&self, w: usize) -> &std::sync::atomic::AtomicU64 {
        self.sh.word(self.lay.worker(self.p.index as usize, w))
    }

    fn publish(&self) {
        self.word(W_ACCEPTS).store(self.accepts, Ordering::Relaxed);
        self.word(W_REQUESTS)
            .store(self.requests, Ordering::Relaxed);
        self.word(W_WASTED).store(self.wasted, Ordering::Relaxed);
        self.word(W_CPU)
            .store(crate::fork::cpu_ns(), Ordering::Relaxed);
    }

    fn service_ns(&mut self) -> u64 {
        let mut t = self.p.mean_ns;
        if self.p.exponential {
            // xorshift64*
            self.rng ^= self.rng >> 12;
            self.rng ^= self.rng << 25;
            self.rng ^= self.rng >> 27;
            let u =
                (self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
            t = -t * (1.0 - u).ln();
        }
        (t * self.p.factor) as u64
    }

    /// A new connection on descriptor `c`.
    fn accepted(&mut self, c: RawFd) -> bool {
        if c as usize >= FDS {
            // SAFETY: our descriptor.
            unsafe { libc::close(c) };
            return false;
        }
        let mut inc: c_int = -1;
        let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
        // SAFETY: an int-sized option into an int.
        unsafe {
            libc::getsockopt(
                c,
                libc::SOL_SOCKET,
                libc::SO_INCOMING_CPU,
                (&mut inc as *mut c_int).cast(),
                &mut len,
            );
        }
        // SAFETY: no arguments.
        let here = unsafe { libc::sched_getcpu() };
        self.fds[c as usize] = WFd {
            accepted: now_ns(),
            conn: u32::MAX,
            local: inc >= 0 && inc == here,
            have: 0,
            buf: [0; 8],
        };
        self.accepts += 1;
        self.publish();
        true
    }

    /// Reads what `c` sent and answers each whole request. Returns false
    /// when the connection is over (closed here).
    fn serve(&mut self, c: RawFd) -> bool {
        loop {
            let st = &mut self.fds[c as usize];
            let have = st.have as usize;
            // SAFETY: reading into the rest of the descriptor's buffer.
            let n = unsafe { libc::read(c, st.buf[have..].as_mut_ptr().cast(), 8 - have) };
            if n == 0 {
                break;
            }
            if n < 0 {
                match errno() {
                    libc::EINTR => continue,
                    libc::EAGAIN => return true,
                    _ => break,
                }
            }
            st.have += n as u8;
            if st.have < 8 {
                continue;
            }
            st.have = 0;
            let conn = u32::from_ne_bytes(st.buf[..4].try_into().expect("4 bytes"));
            if st.conn == u32::MAX && (conn as usize) < self.lay.conns {
                st.conn = conn;
                let i = conn as usize;
                self.sh
                    .word(self.lay.conn(i, K_ACCEPTED))
                    .store(st.accepted, Ordering::Relaxed);
                self.sh
                    .word(self.lay.conn(i, K_LOCAL))
                    .store(st.local as u64, Ordering::Relaxed);
                self.sh
                    .word(self.lay.conn(i, K_WORKER))
                    .store(self.p.index as u64 + 1, Ordering::Relaxed);
            }
            let answer = st.buf;
            let t = self.service_ns();
            let until = crate::fork::cpu_ns() + t;
            while crate::fork::cpu_ns() < until {}
            // SAFETY: writing 8 bytes from a local.
            unsafe { libc::write(c, answer.as_ptr().cast(), 8) };
            self.requests += 1;
            self.publish();
        }
        // SAFETY: our descriptor.
        unsafe { libc::close(c) };
        false
    }
}

/// A worker process; never returns.
fn worker_main(p: WorkerPlan, sh: &Shared, lay: Layout) -> ! {
    let fail = |what: &str| -> ! {
        let e = errno();
        let msg = format!("{} {what} {e}\n", p.index);
        // SAFETY: writing a local buffer to the report pipe.
        unsafe {
            libc::write(p.report, msg.as_ptr().cast(), msg.len());
            libc::_exit(1)
        }
    };
    if let Some(cpu) = p.pin {
        pin_to(cpu);
    }
    // SAFETY: a handler that does nothing, without SA_RESTART, so a
    // command interrupts a blocking accept() or read().
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = on_command as extern "C" fn(c_int) as usize;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGUSR1, &act, ptr::null_mut());
    }
    let mut w = Worker {
        p,
        sh,
        lay,
        fds: vec![WFd::default(); FDS],
        rng: p.seed ^ (u64::from(p.index) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
        accepts: 0,
        requests: 0,
        wasted: 0,
    };
    let mut listener = if p.shared >= 0 {
        p.shared
    } else {
        reuseport_listener(&p).unwrap_or_else(|call| fail(call))
    };
    let msg = format!("{} ready 0\n", p.index);
    // SAFETY: as above; the report pipe is not needed after this.
    unsafe {
        libc::write(p.report, msg.as_ptr().cast(), msg.len());
        libc::close(p.report);
    }
    let mut seen = 0u64;
    let mut accepting = true;
    if p.model == AcceptModel::Blocking {
        loop {
            let cmd = w.word(W_CMD).load(Ordering::SeqCst);
            if cmd != seen {
                seen = cmd;
                accepting = cmd & 0xff == CMD_REJOIN;
            }
            if !accepting {
                // SAFETY: sleeping; a command's signal cuts it short.
                unsafe { libc::usleep(1000) };
                continue;
            }
            // SAFETY: accept on the shared listener.
            let c = unsafe {
                libc::accept4(
                    listener,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    libc::SOCK_CLOEXEC,
                )
            };
            if c < 0 {
                continue;
            }
            if w.accepted(c) {
                while w.serve(c) {}
            }
        }
    }
    // SAFETY: a new epoll set.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        fail("epoll_create1");
    }
    let ctl = |op: c_int, fd: RawFd, events: u32, data: u64| -> bool {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: one event on our epoll set.
        unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) == 0 }
    };
    let listen_events = libc::EPOLLIN as u32
        | if p.model == AcceptModel::EpollExclusive {
            libc::EPOLLEXCLUSIVE as u32
        } else {
            0
        };
    let mutex = p.model == AcceptModel::AcceptMutex;
    let lock = sh.word(1);
    let me = u64::from(p.index) + 1;
    let mut registered = false;
    if !mutex {
        if !ctl(libc::EPOLL_CTL_ADD, listener, listen_events, LISTENER) {
            fail("epoll_ctl");
        }
        registered = true;
    }
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
    let mut ready: Vec<RawFd> = Vec::with_capacity(64);
    let _ = COMMAND;
    loop {
        let cmd = w.word(W_CMD).load(Ordering::SeqCst);
        if cmd != seen {
            seen = cmd;
            let leave = cmd & 0xff == CMD_LEAVE;
            if leave && accepting {
                accepting = false;
                if p.shared >= 0 {
                    if registered {
                        ctl(libc::EPOLL_CTL_DEL, listener, 0, 0);
                        registered = false;
                    }
                    if mutex {
                        let _ = lock.compare_exchange(me, 0, Ordering::SeqCst, Ordering::SeqCst);
                    }
                } else {
                    // SAFETY: closing our own listener; its queue is reset
                    // or migrated by the kernel.
                    unsafe { libc::close(listener) };
                    registered = false;
                }
            } else if !leave && !accepting {
                accepting = true;
                if p.shared < 0 {
                    listener = reuseport_listener(&WorkerPlan {
                        attach_bpf: false,
                        ..p
                    })
                    .unwrap_or_else(|call| fail(call));
                }
                if !mutex {
                    registered = ctl(libc::EPOLL_CTL_ADD, listener, listen_events, LISTENER);
                }
            }
        }
        let mut timeout = -1;
        let mut holder = false;
        if mutex && accepting {
            // ngx_trylock_accept_mutex: the holder has the listener in its
            // set; the others drop it and wait at most accept_mutex_delay.
            holder = lock
                .compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
                || lock.load(Ordering::SeqCst) == me;
            if holder && !registered {
                registered = ctl(
                    libc::EPOLL_CTL_ADD,
                    listener,
                    libc::EPOLLIN as u32,
                    LISTENER,
                );
            } else if !holder && registered {
                ctl(libc::EPOLL_CTL_DEL, listener, 0, 0);
                registered = false;
            }
            if !holder {
                timeout = p.mutex_delay_ms;
            }
        }
        // SAFETY: into our events array.
        let n =
            unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as c_int, timeout) };
        if n < 0 {
            if holder {
                lock.store(0, Ordering::SeqCst);
            }
            continue;
        }
        let mut listener_ready = false;
        ready.clear();
        for ev in &events[..n as usize] {
            if ev.u64 == LISTENER {
                listener_ready = true;
            } else {
                ready.push(ev.u64 as RawFd);
            }
        }
        if listener_ready && accepting {
            // One accept per wake-up (nginx's multi_accept off).
            // SAFETY: a non-blocking accept on the listener.
            let c = unsafe {
                libc::accept4(
                    listener,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                )
            };
            if c >= 0 {
                if w.accepted(c) {
                    ctl(libc::EPOLL_CTL_ADD, c, libc::EPOLLIN as u32, c as u64);
                }
            } else if errno() == libc::EAGAIN {
                w.wasted += 1;
                w.publish();
            }
        }
        if holder {
            // nginx unlocks before it processes the posted read events.
            lock.store(0, Ordering::SeqCst);
        }
        for &c in &ready {
            w.serve(c);
        }
    }
}

/// One client connection's state.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Phase {
    #[default]
    Waiting,
    Connecting,
    Reading,
    Thinking,
    Over,
}

struct ClientPlan<'a> {
    index: usize,
    procs: usize,
    at: &'a [u64],
    who: &'a [u32],
    s: &'a Scenario,
    port: u16,
    gate: RawFd,
    gate_write: RawFd,
    /// Pinned to this CPU (the CPU-steered variants: on loopback a SYN is
    /// received on the sending client's CPU).
    pin: Option<u32>,
}

/// A client process: opens its share of the connections at their times,
/// sends the requests, times the answers. Never returns.
fn client_main(p: ClientPlan, sh: &Shared, lay: Layout) -> ! {
    if let Some(cpu) = p.pin {
        pin_to(cpu);
    }
    // SAFETY: closing the write end we hold, then waiting at the gate.
    unsafe {
        libc::close(p.gate_write);
        let mut b = 0u8;
        while libc::read(p.gate, (&mut b as *mut u8).cast(), 1) < 0 && errno() == libc::EINTR {}
        libc::close(p.gate);
    }
    let t0 = sh.word(0).load(Ordering::SeqCst);
    let s = p.s;
    let per = s.requests.per_connection as usize;
    let think = (s.requests.think_us * 1e3).round() as u64;
    let cl = s.clients;
    let full_range = cl.port_lo <= 32768 && cl.port_hi >= 60999;
    let range = (cl.port_hi - cl.port_lo) as u32 + 1;
    let mut prng = Rng::new(s.seed, 5);
    let mut next_port: Vec<u32> = (0..cl.count).map(|_| prng.below(range)).collect();
    let mine: Vec<usize> = (p.index..p.at.len()).step_by(p.procs).collect();
    let n = p.at.len();
    let mut fd_of = vec![-1 as RawFd; n];
    let mut phase = vec![Phase::Waiting; n];
    let mut next_req = vec![0usize; n];
    let mut thinking: VecDeque<(u64, usize)> = VecDeque::new();
    // SAFETY: new descriptors, ours.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    let tfd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
        )
    };
    let ctl = |op: c_int, fd: RawFd, events: u32, data: u64| {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: one event on our set.
        unsafe { libc::epoll_ctl(ep, op, fd, &mut ev) };
    };
    ctl(libc::EPOLL_CTL_ADD, tfd, libc::EPOLLIN as u32, TIMER);
    let word = |i: usize, w: usize| sh.word(lay.conn(i, w));
    let mut finished = 0usize;
    let finish =
        |i: usize, outcome: u64, fd_of: &mut [RawFd], phase: &mut [Phase], finished: &mut usize| {
            let fd = fd_of[i];
            if fd >= 0 {
                let reset = libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                };
                // SAFETY: our descriptor; reset rather than close (no TIME_WAIT).
                unsafe {
                    libc::setsockopt(
                        fd,
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        (&reset as *const libc::linger).cast(),
                        std::mem::size_of::<libc::linger>() as libc::socklen_t,
                    );
                    libc::close(fd);
                }
                fd_of[i] = -1;
            }
            word(i, K_OUTCOME).store(outcome, Ordering::SeqCst);
            phase[i] = Phase::Over;
            *finished += 1;
            sh.word(lay.client(p.index))
                .store(*finished as u64, Ordering::SeqCst);
        };
    let send = |i: usize, k: usize, fd: RawFd| -> bool {
        let mut msg = [0u8; 8];
        msg[..4].copy_from_slice(&(i as u32).to_ne_bytes());
        msg[4..].copy_from_slice(&(k as u32).to_ne_bytes());
        let t = now_ns();
        if k > 0 {
            sh.word(lay.request(i * per + k, 0))
                .store(t, Ordering::Relaxed);
        }
        // SAFETY: 8 bytes from a local.
        unsafe { libc::send(fd, msg.as_ptr().cast(), 8, libc::MSG_NOSIGNAL) == 8 }
    };
    let mut next = 0usize;
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 256];
    while finished < mine.len() {
        let now = now_ns();
        while next < mine.len() && t0 + p.at[mine[next]] <= now {
            let i = mine[next];
            next += 1;
            let client = p.who[i];
            let src = (FIRST_CLIENT + client).to_be_bytes();
            let t = now_ns();
            word(i, K_START).store(t, Ordering::SeqCst);
            sh.word(lay.request(i * per, 0)).store(t, Ordering::Relaxed);
            // SAFETY: a new socket, ours.
            let fd = unsafe {
                libc::socket(
                    libc::AF_INET,
                    libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                    0,
                )
            };
            if fd < 0 {
                finish(i, 3, &mut fd_of, &mut phase, &mut finished);
                continue;
            }
            fd_of[i] = fd;
            let mut bound = false;
            // SAFETY: options and bind on our socket.
            unsafe {
                if full_range {
                    set_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1);
                    let a = sockaddr(src, 0);
                    bound =
                        libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), SOCKADDR_LEN) == 0;
                } else {
                    set_int(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1);
                    for _ in 0..range {
                        let k = &mut next_port[client as usize];
                        let port = cl.port_lo + (*k % range) as u16;
                        *k = k.wrapping_add(1);
                        let a = sockaddr(src, port);
                        if libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), SOCKADDR_LEN)
                            == 0
                        {
                            bound = true;
                            break;
                        }
                    }
                }
            }
            if !bound {
                finish(i, 3, &mut fd_of, &mut phase, &mut finished);
                continue;
            }
            let server = sockaddr(SERVER, p.port);
            // SAFETY: a non-blocking connect on our socket.
            let r = unsafe {
                libc::connect(
                    fd,
                    (&server as *const libc::sockaddr_in).cast(),
                    SOCKADDR_LEN,
                )
            };
            if r != 0 && errno() != libc::EINPROGRESS {
                let o = if errno() == libc::ECONNREFUSED { 2 } else { 3 };
                finish(i, o, &mut fd_of, &mut phase, &mut finished);
                continue;
            }
            phase[i] = Phase::Connecting;
            ctl(
                libc::EPOLL_CTL_ADD,
                fd,
                (libc::EPOLLOUT | libc::EPOLLIN) as u32,
                i as u64,
            );
        }
        while let Some(&(due, i)) = thinking.front() {
            if due > now_ns() {
                break;
            }
            thinking.pop_front();
            if phase[i] != Phase::Thinking {
                continue;
            }
            let k = next_req[i];
            if send(i, k, fd_of[i]) {
                phase[i] = Phase::Reading;
            } else {
                finish(i, 2, &mut fd_of, &mut phase, &mut finished);
            }
        }
        if finished >= mine.len() {
            break;
        }
        // The next thing due: an arrival or the end of a think time.
        let due = [
            mine.get(next).map(|&i| t0 + p.at[i]),
            thinking.front().map(|&(d, _)| d),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(d) = due {
            let ts = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: (d / 1_000_000_000) as libc::time_t,
                    tv_nsec: (d % 1_000_000_000) as libc::c_long,
                },
            };
            // SAFETY: arming our timer at an absolute time.
            unsafe { libc::timerfd_settime(tfd, libc::TFD_TIMER_ABSTIME, &ts, ptr::null_mut()) };
        }
        // SAFETY: into our events array.
        let got = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as c_int, -1) };
        for ev in &events[..got.max(0) as usize] {
            if ev.u64 == TIMER {
                let mut b = [0u8; 8];
                // SAFETY: draining the timer.
                unsafe { libc::read(tfd, b.as_mut_ptr().cast(), 8) };
                continue;
            }
            let i = ev.u64 as usize;
            let fd = fd_of[i];
            if fd < 0 {
                continue;
            }
            match phase[i] {
                Phase::Connecting => {
                    if ev.events & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 == 0 {
                        continue;
                    }
                    let mut err: c_int = 0;
                    let mut len = std::mem::size_of::<c_int>() as libc::socklen_t;
                    // SAFETY: an int-sized option.
                    unsafe {
                        libc::getsockopt(
                            fd,
                            libc::SOL_SOCKET,
                            libc::SO_ERROR,
                            (&mut err as *mut c_int).cast(),
                            &mut len,
                        )
                    };
                    if err != 0 {
                        let o = if matches!(err, libc::ECONNREFUSED | libc::ECONNRESET) {
                            2
                        } else {
                            3
                        };
                        finish(i, o, &mut fd_of, &mut phase, &mut finished);
                        continue;
                    }
                    word(i, K_CONNECTED).store(now_ns(), Ordering::SeqCst);
                    ctl(libc::EPOLL_CTL_MOD, fd, libc::EPOLLIN as u32, i as u64);
                    next_req[i] = 0;
                    if send(i, 0, fd) {
                        phase[i] = Phase::Reading;
                    } else {
                        finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                    }
                }
                Phase::Reading => {
                    let mut b = [0u8; 8];
                    // SAFETY: into a local.
                    let r = unsafe { libc::recv(fd, b.as_mut_ptr().cast(), 8, libc::MSG_WAITALL) };
                    if r < 0 && errno() == libc::EAGAIN {
                        continue;
                    }
                    if r != 8 {
                        finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                        continue;
                    }
                    let k = next_req[i];
                    sh.word(lay.request(i * per + k, 1))
                        .store(now_ns(), Ordering::Relaxed);
                    next_req[i] = k + 1;
                    if k + 1 >= per {
                        finish(i, 1, &mut fd_of, &mut phase, &mut finished);
                    } else if think == 0 {
                        if !send(i, k + 1, fd) {
                            finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                        }
                    } else {
                        phase[i] = Phase::Thinking;
                        thinking.push_back((now_ns() + think, i));
                    }
                }
                Phase::Thinking => {
                    // Only a reset or EOF can come now.
                    let mut b = [0u8; 8];
                    // SAFETY: a peek into a local.
                    let r = unsafe {
                        libc::recv(
                            fd,
                            b.as_mut_ptr().cast(),
                            8,
                            libc::MSG_PEEK | libc::MSG_DONTWAIT,
                        )
                    };
                    if r == 0 || (r < 0 && errno() != libc::EAGAIN) {
                        finish(i, 2, &mut fd_of, &mut phase, &mut finished);
                    }
                }
                Phase::Waiting | Phase::Over => {}
            }
        }
    }
    // SAFETY: ending the child.
    unsafe { libc::_exit(0) }
}

/// Runs one variant's scenario `s` and reads what was measured.
pub(super) fn run_one(
    s: &Scenario,
    procs: u32,
    timeout: Duration,
) -> Result<RunResult, ScenarioError> {
    let mut notes = Vec::new();
    let _migrate = MigrateReq::set(s.tcp_migrate_req)?;
    let model = s.accept;
    let nproc = crate::bench::nproc() as u32;
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
            let (r, wr) = crate::fork::pipe().map_err(setup)?;
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
    let (gate_r, gate_w) = crate::fork::pipe().map_err(setup)?;
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
