//! The discrete-event engine: connections arrive, are queued on a listening
//! socket, workers are woken by the accept model's rule, and every worker's
//! accepts and requests take turns on its CPU.
//!
//! What is the kernel's and what is assumed:
//! - **Kernel rules** (each names its file): which listener a SYN goes to
//!   (the model's own selection, [`ReuseportGroup::select_ctx`]); a full
//!   accept queue drops the SYN (`sk_acceptq_is_full`, include/net/sock.h:
//!   full when the queue holds more than the backlog, 6.18;
//!   `tcp_conn_request`, net/ipv4/tcp_input.c) and the client retransmits
//!   it after 1, 2, 4, … s (`TCP_TIMEOUT_INIT`, include/net/tcp.h), six
//!   times (`TCP_SYN_RETRIES`); a closed listener's queue is reset, or
//!   moved with `tcp_migrate_req` ([`ReuseportGroup::migrate`]); the wake-up
//!   order of each accept model (see [`super::spec::AcceptModel`] and its rules in
//!   [`super::accept`]).
//! - **Assumptions** (the site says so): the handshake is instant (loopback);
//!   a SYN is received on a CPU drawn uniformly; each CPU runs its workers'
//!   work in arrival order, one item at a time, without preemption; the
//!   costs are the [`Params`].
//!
//! One file on purpose: one state machine, one `impl Simulation` whose
//! event handlers call each other and share its private queues.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};

use crate::profile::Profile;
use crate::reuseport::{GroupSpec, Migration, PacketCtx, Program, ReuseportGroup};
use crate::spread::{boot_keys, Skew};
use crate::tuple::{Proto, Tuple};

use super::accept::{AcceptRules, Steering, Wake};
use super::report::{Histogram, Outcomes, Series, SimReport, WorkerReport};
use super::rng::Rng;
use super::spec::{Arrivals, Checked, Event, Params, Scenario, ServiceDist};

/// `TCP_SYN_RETRIES` (include/net/tcp.h): the default `net.ipv4.tcp_syn_retries`.
const SYN_RETRIES: u8 = 6;
/// `TCP_TIMEOUT_INIT` (include/net/tcp.h): the first SYN retransmission
/// after 1 s, doubling each time (net/ipv4/tcp_timer.c).
const SYN_RTO_NS: u64 = 1_000_000_000;
/// The server's address; clients count up from `127.0.1.1`.
const SERVER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const FIRST_CLIENT: u32 = u32::from_be_bytes([127, 0, 1, 1]);

fn ns(us: f64) -> u64 {
    (us * 1e3).round() as u64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A SYN of this connection (the first, or a retransmission).
    Arrive(u32),
    /// The running item of this CPU is finished.
    ItemDone(u32),
    /// This worker runs after a wake-up (stale if the epoch moved on).
    Wake(u32, u32),
    /// The next request of this connection reaches its worker.
    RequestReady(u32),
    /// The scenario's event with this index.
    Scheduled(u32),
    /// This worker's stall is over.
    Resume(u32),
    /// This idle worker's `accept_mutex_delay` timer (stale if the epoch
    /// moved on).
    MutexRetry(u32, u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CState {
    Pending,
    Retrying,
    Queued,
    Serving,
    Done,
    Reset,
    Failed,
}

#[derive(Debug, Clone, Copy)]
struct Conn {
    saddr: u32,
    sport: u16,
    tries: u8,
    state: CState,
    cpu: u32,
    worker: u32,
    /// The queue (listener) it was last put on.
    queue: u32,
    left: u32,
    /// When its SYN was accepted into a queue (the handshake is instant).
    established: u64,
    /// When its current request reached the worker.
    req_at: u64,
}

/// One connection, as the run left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnView {
    /// Its 4-tuple.
    pub tuple: Tuple,
    /// The queue it was last put on.
    pub queue: Option<u32>,
    /// The worker that accepted it.
    pub worker: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WState {
    /// Asleep, waiting for a connection or one of its own requests.
    Idle,
    /// Woken, not yet running.
    Waking,
    /// An item queued or running on its CPU.
    Busy,
    /// Stalled until `stall_until`.
    Stalled,
    /// Blocking model: waiting in `read()` for its connection's next request.
    Reading,
}

#[derive(Debug, Clone)]
struct Worker {
    cpu: u32,
    queue: Option<u32>,
    accepting: bool,
    state: WState,
    epoch: u32,
    idle_seq: u64,
    reg_seq: u64,
    ready: VecDeque<u32>,
    current: Option<u32>,
    open: u32,
    stall_until: u64,
    accepted_last: bool,
    /// Woken by a connection: it will try `accept()` even if another
    /// worker has taken the connection meanwhile.
    woken_to_accept: bool,
    accepts: u64,
    requests: u64,
    busy: u64,
    wasted: u64,
    latency: Histogram,
}

#[derive(Debug, Clone, Copy)]
enum Item {
    Accept,
    Serve(u32),
    /// The load generator's work for one connection (`Params::client_cpu_us`):
    /// no worker's, so its worker number is [`NO_WORKER`] and never read.
    Client,
}

/// The worker number queued with an [`Item::Client`].
const NO_WORKER: u32 = u32::MAX;

#[derive(Debug, Default)]
struct Cpu {
    running: Option<(u32, Item)>,
    runq: VecDeque<(u32, Item)>,
}

#[derive(Debug, Default)]
struct Queue {
    conns: VecDeque<u32>,
    open: bool,
    owner: Option<u32>,
    lock_free_at: u64,
}

/// One run of one scenario, stepped until done.
#[derive(Debug)]
pub struct Simulation {
    s: Scenario,
    /// The accept model's row of rules ([`super::accept::ACCEPT_MODELS`]).
    rules: &'static AcceptRules,
    p: Params,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    now: u64,
    events: u64,
    arrivals: Vec<u64>,
    next_arrival: u32,
    conns: Vec<Conn>,
    next_port: Vec<u32>,
    workers: Vec<Worker>,
    cpus: Vec<Cpu>,
    queues: Vec<Queue>,
    group: Option<ReuseportGroup>,
    holder: Option<u32>,
    /// Connections whose SYN retransmission is still to come.
    retrying: u32,
    rng_clients: Rng,
    rng_service: Rng,
    rng_wake: Rng,
    outcomes: Outcomes,
    accept_lat: Histogram,
    request_lat: Histogram,
    bucket_ns: u64,
    series: Series,
    series_lat: Vec<Histogram>,
    /// Per slice, per queue: its depth after the slice's last change (None:
    /// no change in that slice; the report carries the depth forward).
    depth_end: Vec<Vec<Option<u32>>>,
    keys: crate::hash::Keys,
}

impl Simulation {
    /// Sets up a run of a checked scenario.
    pub fn new(c: Checked) -> Simulation {
        let Checked {
            scenario: s,
            profile,
        } = c;
        let p = s.params;
        let keys = boot_keys(s.seed, 0);
        let arrivals = arrival_times(&s);
        let last = arrivals.last().copied().unwrap_or(0);
        let last_event = s.events.iter().map(|e| ns(e.at_us())).max().unwrap_or(0);
        let horizon = last.max(last_event);
        let buckets = s.buckets as usize;
        let bucket_ns = (horizon + horizon / 4 + 1_000_000)
            .div_ceil(buckets as u64)
            .max(1);
        let mut sim = Simulation {
            rules: s.accept.rules(),
            p,
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            events: 0,
            arrivals,
            next_arrival: 0,
            conns: Vec::with_capacity(s.connections as usize),
            next_port: Vec::new(),
            workers: Vec::new(),
            cpus: (0..s.cpus).map(|_| Cpu::default()).collect(),
            queues: Vec::new(),
            group: None,
            holder: None,
            retrying: 0,
            rng_clients: Rng::new(s.seed, 2),
            rng_service: Rng::new(s.seed, 3),
            rng_wake: Rng::new(s.seed, 4),
            outcomes: Outcomes::default(),
            accept_lat: Histogram::fine(),
            request_lat: Histogram::fine(),
            bucket_ns,
            series: Series {
                bucket_us: bucket_ns as f64 / 1e3,
                accepts: vec![Vec::new(); buckets],
                depth: vec![Vec::new(); buckets],
                drops: vec![0; buckets],
                p50_us: Vec::new(),
                p99_us: Vec::new(),
            },
            series_lat: (0..buckets).map(|_| Histogram::coarse()).collect(),
            depth_end: vec![Vec::new(); buckets],
            keys,
            s,
        };
        let mut ports = Rng::new(sim.s.seed, 5);
        let range = (sim.s.clients.port_hi - sim.s.clients.port_lo) as u32 + 1;
        sim.next_port = (0..sim.s.clients.count)
            .map(|_| ports.below(range))
            .collect();
        if sim.rules.per_worker_queues() {
            let spec = GroupSpec::new(Proto::Tcp, 0, IpAddr::V4(SERVER), sim.s.clients.port, keys);
            let mut g = ReuseportGroup::build_empty(profile, &spec);
            if sim.s.tcp_migrate_req {
                g.set_tcp_migrate_req(true).expect("checked: 5.14 or later");
            }
            sim.group = Some(g);
        } else {
            sim.queues.push(Queue {
                open: true,
                ..Queue::default()
            });
        }
        for _ in 0..sim.s.workers {
            sim.add_worker();
        }
        if sim.rules.steering == Steering::BpfCpu {
            let g = sim.group.as_mut().expect("per-worker model");
            g.attach_program(Program::Cpu)
                .expect("checked: 4.6 or later");
        }
        for (i, e) in sim.s.events.iter().enumerate() {
            let at = ns(e.at_us());
            sim.seq += 1;
            sim.heap
                .push(Reverse((at, sim.seq, Ev::Scheduled(i as u32))));
        }
        if !sim.arrivals.is_empty() {
            let at = sim.arrivals[0];
            sim.push(at, Ev::Arrive(0));
        }
        for w in 0..sim.workers.len() as u32 {
            sim.worker_next(w);
        }
        sim
    }

    /// The profile the run uses.
    pub fn profile(&self) -> Option<&'static Profile> {
        self.group.as_ref().map(|g| g.profile())
    }

    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn bucket(&self, t: u64) -> usize {
        ((t / self.bucket_ns) as usize).min(self.series.drops.len() - 1)
    }

    fn add_worker(&mut self) -> u32 {
        let w = self.workers.len() as u32;
        let cpu = w % self.s.cpus;
        self.seq += 1;
        let reg_seq = self.seq;
        self.workers.push(Worker {
            cpu,
            queue: None,
            accepting: true,
            state: WState::Idle,
            epoch: 0,
            idle_seq: 0,
            reg_seq,
            ready: VecDeque::new(),
            current: None,
            open: 0,
            stall_until: 0,
            accepted_last: false,
            woken_to_accept: false,
            accepts: 0,
            requests: 0,
            busy: 0,
            wasted: 0,
            latency: Histogram::fine(),
        });
        self.attach_listener(w);
        w
    }

    /// Gives worker `w` a queue: the shared one, or a new member of the group.
    fn attach_listener(&mut self, w: u32) {
        if let Some(g) = self.group.as_mut() {
            let l = g.members().len() as u32;
            g.join()
                .expect("at most 256 members, far below the group's cap");
            if self.rules.steering == Steering::IncomingCpu {
                g.set_incoming_cpu(l, Some(self.workers[w as usize].cpu))
                    .expect("checked: 4.4 or later");
            }
            self.queues.push(Queue {
                open: true,
                owner: Some(w),
                ..Queue::default()
            });
            self.workers[w as usize].queue = Some(l);
        } else {
            self.workers[w as usize].queue = Some(0);
        }
    }

    /// Whether the run is over: nothing is left to happen.
    pub fn done(&self) -> bool {
        self.heap.is_empty()
    }

    /// Connections whose first SYN has arrived, and how many will.
    pub fn progress(&self) -> (u32, u32) {
        (self.next_arrival, self.s.connections)
    }

    /// Processes up to `budget` events; true when the run is over.
    pub fn step(&mut self, budget: u64) -> bool {
        for _ in 0..budget {
            let Some(Reverse((at, _, ev))) = self.heap.pop() else {
                return true;
            };
            self.now = at;
            self.events += 1;
            match ev {
                Ev::Arrive(c) => self.arrive(c),
                Ev::ItemDone(cpu) => self.item_done(cpu),
                Ev::Wake(w, epoch) => {
                    let wk = &self.workers[w as usize];
                    if wk.epoch == epoch && wk.state == WState::Waking {
                        self.worker_next(w);
                    }
                }
                Ev::RequestReady(c) => self.request_ready(c),
                Ev::Scheduled(i) => self.scheduled(i),
                Ev::Resume(w) => {
                    if self.workers[w as usize].state == WState::Stalled {
                        self.worker_next(w);
                    }
                }
                Ev::MutexRetry(w, epoch) => {
                    let wk = &self.workers[w as usize];
                    if wk.epoch == epoch && wk.state == WState::Idle {
                        self.worker_next(w);
                    }
                }
            }
        }
        self.heap.is_empty()
    }

    /// Runs to the end.
    pub fn run(&mut self) {
        while !self.step(1 << 20) {}
    }

    fn new_conn(&mut self) -> u32 {
        let c = self.conns.len() as u32;
        let cl = &self.s.clients;
        let client = self.rng_clients.below(cl.count);
        let range = (cl.port_hi - cl.port_lo) as u32 + 1;
        let k = &mut self.next_port[client as usize];
        let sport = cl.port_lo + (*k % range) as u16;
        *k = k.wrapping_add(1);
        let cpu = self.rng_clients.below(self.s.cpus);
        self.conns.push(Conn {
            saddr: FIRST_CLIENT.wrapping_add(client),
            sport,
            tries: 0,
            state: CState::Pending,
            cpu,
            worker: u32::MAX,
            queue: u32::MAX,
            left: self.s.requests.per_connection,
            established: 0,
            req_at: 0,
        });
        c
    }

    fn tuple(&self, c: u32) -> Tuple {
        let k = &self.conns[c as usize];
        Tuple::v4(
            Ipv4Addr::from(k.saddr),
            k.sport,
            SERVER,
            self.s.clients.port,
        )
    }

    /// The listener the kernel gives connection `c`'s SYN, if any.
    fn choose(&self, c: u32) -> Option<u32> {
        if !self.rules.per_worker_queues() {
            return Some(0);
        }
        if self.rules.steering == Steering::LeastLoaded {
            // The program's own rule (user space's choice, not the kernel's):
            // the listening socket whose worker has the least waiting and
            // in service; ties to the earliest listener.
            return (0..self.queues.len() as u32)
                .filter(|&q| self.queues[q as usize].open)
                .min_by_key(|&q| {
                    let qu = &self.queues[q as usize];
                    let w = qu.owner.expect("per-worker queue") as usize;
                    qu.conns.len() as u32 + self.workers[w].open
                });
        }
        let g = self.group.as_ref().expect("per-worker model");
        let ctx = PacketCtx::on_cpu(self.conns[c as usize].cpu);
        g.select_ctx(&self.tuple(c), &ctx)
            .ok()
            .and_then(|ch| ch.listener)
    }

    fn arrive(&mut self, c: u32) {
        if c == self.next_arrival {
            let made = self.new_conn();
            debug_assert_eq!(made, c);
            self.outcomes.arrived += 1;
            self.next_arrival += 1;
            if let Some(&at) = self.arrivals.get(self.next_arrival as usize) {
                self.push(at, Ev::Arrive(self.next_arrival));
            }
        }
        if self.conns[c as usize].state == CState::Retrying {
            self.retrying -= 1;
        } else if self.p.client_cpu_us > 0.0 {
            // A first SYN: the local load generator's work for this
            // connection takes its turn on the CPU that sends it.
            let cpu = self.conns[c as usize].cpu;
            self.cpus[cpu as usize]
                .runq
                .push_back((NO_WORKER, Item::Client));
            if self.cpus[cpu as usize].running.is_none() {
                self.start_next(cpu);
            }
        }
        let Some(q) = self.choose(c) else {
            self.conns[c as usize].state = CState::Reset;
            return;
        };
        let qi = q as usize;
        if !self.queues[qi].open {
            self.conns[c as usize].state = CState::Reset;
            return;
        }
        // sk_acceptq_is_full (include/net/sock.h, 6.18): more than the
        // backlog waiting; tcp_conn_request (net/ipv4/tcp_input.c, 6.18)
        // drops the SYN. SYN cookies do not change this: the cookie
        // decision, taken when the SYN queue is full or tcp_syncookies=2,
        // comes first, and the full accept queue drops the SYN either way.
        // The SYN queue itself never fills here (handshakes are instant).
        if self.queues[qi].conns.len() as u64 > self.s.backlog as u64 {
            self.outcomes.syn_drops += 1;
            let b = self.bucket(self.now);
            self.series.drops[b] += 1;
            let k = &mut self.conns[c as usize];
            k.tries += 1;
            if k.tries > SYN_RETRIES {
                k.state = CState::Failed;
            } else {
                k.state = CState::Retrying;
                self.retrying += 1;
                let at = self.now + (SYN_RTO_NS << (k.tries - 1));
                self.push(at, Ev::Arrive(c));
            }
            return;
        }
        self.enqueue(c, q, self.now);
    }

    fn enqueue(&mut self, c: u32, q: u32, established: u64) {
        let k = &mut self.conns[c as usize];
        k.state = CState::Queued;
        k.established = established;
        k.queue = q;
        let qu = &mut self.queues[q as usize];
        qu.conns.push_back(c);
        self.depth_changed(q);
        self.notify(q);
    }

    /// Queue `q` grew or shrank: keep the slice's deepest and last depth.
    fn depth_changed(&mut self, q: u32) {
        let depth = self.queues[q as usize].conns.len() as u32;
        let b = self.bucket(self.now);
        let qi = q as usize;
        let row = &mut self.series.depth[b];
        if row.len() <= qi {
            row.resize(qi + 1, 0);
        }
        row[qi] = row[qi].max(depth);
        let end = &mut self.depth_end[b];
        if end.len() <= qi {
            end.resize(qi + 1, None);
        }
        end[qi] = Some(depth);
    }

    fn waits_on(&self, w: u32, q: u32) -> bool {
        let wk = &self.workers[w as usize];
        wk.state == WState::Idle && wk.accepting && wk.queue == Some(q)
    }

    /// Wakes the one worker waiting on `q` that comes first in `order`
    /// (none when no one waits).
    fn wake_first_by(&mut self, q: u32, order: fn(&Worker) -> u64) {
        let n = self.workers.len() as u32;
        if let Some(w) = (0..n)
            .filter(|&w| self.waits_on(w, q))
            .min_by_key(|&w| order(&self.workers[w as usize]))
        {
            self.wake_to_accept(w);
        }
    }

    /// A connection was queued on `q`: wake whom the accept model wakes.
    fn notify(&mut self, q: u32) {
        let n = self.workers.len() as u32;
        match self.rules.wake {
            // inet_csk_wait_for_connect: exclusive waiters, the longest
            // asleep first (net/ipv4/inet_connection_sock.c).
            Wake::LongestAsleep => {
                self.wake_first_by(q, |wk| wk.idle_seq);
            }
            // Non-exclusive epoll entries: every one is woken (fs/eventpoll.c).
            Wake::Everyone => {
                for w in 0..n {
                    if self.waits_on(w, q) {
                        self.wake_to_accept(w);
                    }
                }
            }
            // EPOLLEXCLUSIVE: entries in registration order, stop at the
            // first with a sleeper (fs/eventpoll.c, 4.5).
            Wake::FirstRegistered => {
                self.wake_first_by(q, |wk| wk.reg_seq);
            }
            Wake::MutexHolder => {
                if let Some(h) = self.holder {
                    if self.waits_on(h, q) {
                        self.wake_to_accept(h);
                    }
                }
            }
            Wake::Owner => {
                if let Some(w) = self.queues[q as usize].owner {
                    if self.waits_on(w, q) {
                        self.wake_to_accept(w);
                    }
                }
            }
        }
    }

    fn wake_to_accept(&mut self, w: u32) {
        self.wake(w);
        self.workers[w as usize].woken_to_accept = true;
    }

    fn wake(&mut self, w: u32) {
        let jitter = if self.p.wake_jitter_us > 0.0 {
            ns(self.rng_wake.unit() * self.p.wake_jitter_us)
        } else {
            0
        };
        let wk = &mut self.workers[w as usize];
        wk.state = WState::Waking;
        wk.woken_to_accept = false;
        wk.epoch += 1;
        let epoch = wk.epoch;
        let at = self.now + ns(self.p.wake_us) + jitter;
        self.push(at, Ev::Wake(w, epoch));
    }

    fn go_idle(&mut self, w: u32) {
        self.seq += 1;
        let seq = self.seq;
        let wk = &mut self.workers[w as usize];
        wk.state = WState::Idle;
        wk.epoch += 1;
        wk.idle_seq = seq;
    }

    /// Worker `w` is free to run: decide what it does next.
    fn worker_next(&mut self, w: u32) {
        let now = self.now;
        let rules = self.rules;
        let wi = w as usize;
        if self.holder == Some(w) && self.workers[wi].state == WState::Busy {
            // nginx unlocks the mutex once the accept events are processed.
            self.holder = None;
        }
        if now < self.workers[wi].stall_until {
            let wk = &mut self.workers[wi];
            wk.epoch += 1;
            wk.state = WState::Stalled;
            let at = wk.stall_until;
            self.push(at, Ev::Resume(w));
            if self.holder == Some(w) {
                self.holder = None;
            }
            return;
        }
        let woken = std::mem::take(&mut self.workers[wi].woken_to_accept);
        let wk = &self.workers[wi];
        let has_ready = !wk.ready.is_empty();
        // A worker woken for a connection calls accept() even when another
        // has taken it meanwhile (and gets EAGAIN, or sleeps again).
        let queued = wk.accepting
            && wk.queue.is_some()
            && (woken
                || wk
                    .queue
                    .is_some_and(|q| !self.queues[q as usize].conns.is_empty()));
        if rules.blocking_accept {
            if wk.current.is_some() {
                if has_ready {
                    self.submit_serve(w);
                } else {
                    let wk = &mut self.workers[wi];
                    wk.state = WState::Reading;
                    wk.epoch += 1;
                }
            } else if queued {
                self.submit(w, Item::Accept);
            } else {
                self.go_idle(w);
            }
            return;
        }
        let mut may_accept = queued;
        if rules.wake == Wake::MutexHolder && wk.accepting {
            let locked = match self.holder {
                None => {
                    self.holder = Some(w);
                    true
                }
                Some(h) => h == w,
            };
            may_accept &= locked;
            if locked && !may_accept && has_ready {
                // Its epoll_wait returns its own events at once; it unlocks
                // before serving them.
                self.holder = None;
            }
        }
        let wk = &self.workers[wi];
        if may_accept && !(wk.accepted_last && has_ready) {
            self.submit(w, Item::Accept);
        } else if has_ready {
            if self.holder == Some(w) {
                // nginx unlocks before it processes the posted read events.
                self.holder = None;
            }
            self.submit_serve(w);
        } else {
            self.go_idle(w);
            if rules.wake == Wake::MutexHolder
                && self.workers[wi].accepting
                && self.holder != Some(w)
                && self.work_may_come()
            {
                let epoch = self.workers[wi].epoch;
                let at = now + ns(self.p.mutex_delay_us);
                self.push(at, Ev::MutexRetry(w, epoch));
            }
        }
    }

    /// Whether a connection may still need accepting: the idle workers'
    /// `accept_mutex_delay` timers stop when none can.
    fn work_may_come(&self) -> bool {
        self.next_arrival < self.s.connections
            || self.retrying > 0
            || self.queues.iter().any(|q| !q.conns.is_empty())
    }

    fn submit_serve(&mut self, w: u32) {
        let c = self.workers[w as usize]
            .ready
            .pop_front()
            .expect("a ready request");
        self.submit(w, Item::Serve(c));
    }

    fn submit(&mut self, w: u32, item: Item) {
        let wk = &mut self.workers[w as usize];
        wk.state = WState::Busy;
        wk.epoch += 1;
        let cpu = wk.cpu;
        self.cpus[cpu as usize].runq.push_back((w, item));
        if self.cpus[cpu as usize].running.is_none() {
            self.start_next(cpu);
        }
    }

    fn service_time(&mut self, w: u32) -> u64 {
        let sv = &self.s.service;
        let base = match sv.dist {
            ServiceDist::Fixed => sv.mean_us,
            ServiceDist::Exponential => self.rng_service.exp(sv.mean_us),
        };
        let factor = sv
            .slow
            .iter()
            .filter(|s| s.worker == w)
            .map(|s| s.factor)
            .product::<f64>();
        ns(base * factor)
    }

    fn start_next(&mut self, cpu: u32) {
        let Some((w, item)) = self.cpus[cpu as usize].runq.pop_front() else {
            return;
        };
        let now = self.now;
        let wi = w as usize;
        let end = match item {
            Item::Client => now + ns(self.p.client_cpu_us),
            Item::Accept => {
                let q = self.workers[wi]
                    .queue
                    .filter(|_| self.workers[wi].accepting);
                let got = q.and_then(|q| {
                    self.queues[q as usize]
                        .conns
                        .front()
                        .copied()
                        .map(|c| (q, c))
                });
                match got {
                    Some((q, c)) => {
                        let qu = &mut self.queues[q as usize];
                        qu.conns.pop_front();
                        let start = now.max(qu.lock_free_at);
                        let returned = start + ns(self.p.lock_us);
                        qu.lock_free_at = returned;
                        self.depth_changed(q);
                        let mut end = start + ns(self.p.accept_us + self.p.conn_cpu_us);
                        if self.rules.map_update_per_accept {
                            end += ns(self.p.map_update_us);
                        }
                        let k = &mut self.conns[c as usize];
                        k.state = CState::Serving;
                        k.worker = w;
                        k.req_at = k.established;
                        self.accept_lat.add(returned - k.established);
                        let b = self.bucket(returned);
                        let row = &mut self.series.accepts[b];
                        if row.len() <= wi {
                            row.resize(wi + 1, 0);
                        }
                        row[wi] += 1;
                        let local = self.conns[c as usize].cpu == self.workers[wi].cpu;
                        self.outcomes.local += local as u64;
                        let wk = &mut self.workers[wi];
                        wk.accepts += 1;
                        wk.open += 1;
                        wk.ready.push_back(c);
                        wk.accepted_last = true;
                        if self.rules.blocking_accept {
                            wk.current = Some(c);
                        }
                        end
                    }
                    None => {
                        let wk = &mut self.workers[wi];
                        wk.wasted += 1;
                        wk.accepted_last = false;
                        now + ns(self.p.herd_us)
                    }
                }
            }
            Item::Serve(_) => {
                self.workers[wi].accepted_last = false;
                now + self.service_time(w)
            }
        };
        if !matches!(item, Item::Client) {
            self.workers[wi].busy += end - now;
        }
        self.cpus[cpu as usize].running = Some((w, item));
        self.push(end, Ev::ItemDone(cpu));
    }

    fn item_done(&mut self, cpu: u32) {
        let (w, item) = self.cpus[cpu as usize]
            .running
            .take()
            .expect("an item was running");
        if let Item::Serve(c) = item {
            self.request_done(w, c);
        }
        if !matches!(item, Item::Client) {
            self.worker_next(w);
        }
        if self.cpus[cpu as usize].running.is_none() {
            self.start_next(cpu);
        }
    }

    fn request_done(&mut self, w: u32, c: u32) {
        let now = self.now;
        let wi = w as usize;
        let k = &mut self.conns[c as usize];
        let lat = now - k.req_at;
        k.left -= 1;
        let finished = k.left == 0;
        if finished {
            k.state = CState::Done;
        }
        self.request_lat.add(lat);
        let b = self.bucket(now);
        self.series_lat[b].add(lat);
        let wk = &mut self.workers[wi];
        wk.latency.add(lat);
        wk.requests += 1;
        if finished {
            wk.open -= 1;
            if wk.current == Some(c) {
                wk.current = None;
            }
        } else {
            let at = now + ns(self.s.requests.think_us);
            self.push(at, Ev::RequestReady(c));
        }
    }

    fn request_ready(&mut self, c: u32) {
        let now = self.now;
        let k = &mut self.conns[c as usize];
        k.req_at = now;
        let w = k.worker;
        let wk = &mut self.workers[w as usize];
        wk.ready.push_back(c);
        if matches!(wk.state, WState::Idle | WState::Reading) {
            self.wake(w);
        }
    }

    fn scheduled(&mut self, i: u32) {
        let e = self.s.events[i as usize];
        match e {
            Event::Stall { worker, for_us, .. } => {
                let until = self.now + ns(for_us);
                let wk = &mut self.workers[worker as usize];
                wk.stall_until = wk.stall_until.max(until);
                if matches!(wk.state, WState::Idle | WState::Reading | WState::Waking) {
                    self.worker_next(worker);
                }
            }
            Event::Leave { worker, .. } => self.leave(worker),
            Event::Rejoin { worker, .. } => {
                let wi = worker as usize;
                if !self.workers[wi].accepting {
                    self.workers[wi].accepting = true;
                    self.seq += 1;
                    self.workers[wi].reg_seq = self.seq;
                    if self.group.is_some() {
                        self.attach_listener(worker);
                    }
                    if self.workers[wi].state == WState::Idle {
                        self.worker_next(worker);
                    }
                }
            }
            Event::AddWorker { .. } => {
                let w = self.add_worker();
                self.worker_next(w);
            }
        }
    }

    fn leave(&mut self, w: u32) {
        let wi = w as usize;
        if !self.workers[wi].accepting {
            return;
        }
        self.workers[wi].accepting = false;
        if self.holder == Some(w) {
            self.holder = None;
        }
        let Some(g) = self.group.as_mut() else {
            return;
        };
        let l = self.workers[wi]
            .queue
            .take()
            .expect("an accepting worker has a listener");
        g.close(l).expect("a listening member");
        let qu = &mut self.queues[l as usize];
        qu.open = false;
        let waiting: Vec<u32> = qu.conns.drain(..).collect();
        self.depth_changed(l);
        for c in waiting {
            let t = self.tuple(c);
            let cpu = self.conns[c as usize].cpu;
            let g = self.group.as_ref().expect("per-worker model");
            // inet_csk_listen_stop → reuseport_migrate_sock
            // (net/ipv4/inet_connection_sock.c, net/core/sock_reuseport.c, 5.14).
            match g.migrate(
                l,
                &t,
                crate::reuseport::ebpf::MigrateStage::AcceptQueue,
                cpu,
            ) {
                Ok(Migration::To { listener, .. })
                    if (self.queues[listener as usize].conns.len() as u64)
                        <= self.s.backlog as u64 =>
                {
                    self.outcomes.migrated += 1;
                    let est = self.conns[c as usize].established;
                    self.enqueue(c, listener, est);
                }
                _ => self.conns[c as usize].state = CState::Reset,
            }
        }
    }

    /// Connection `i` so far: its tuple, the queue (listener, in join
    /// order; 0 for a shared socket) it was last put on, and the worker
    /// that accepted it.
    pub fn connection(&self, i: u32) -> Option<ConnView> {
        let k = self.conns.get(i as usize)?;
        Some(ConnView {
            tuple: self.tuple(i),
            queue: (k.queue != u32::MAX).then_some(k.queue),
            worker: (k.worker != u32::MAX).then_some(k.worker),
        })
    }

    /// The listener's owner, per listener.
    pub fn listener_worker(&self) -> Vec<u32> {
        if self.group.is_none() {
            return Vec::new();
        }
        self.queues
            .iter()
            .map(|q| q.owner.expect("per-worker queue"))
            .collect()
    }

    /// The report, of the whole run or (before it is done) of what has
    /// been simulated so far.
    pub fn report(&self) -> SimReport {
        let mut o = self.outcomes;
        for k in &self.conns {
            match k.state {
                CState::Done => o.done += 1,
                CState::Serving => o.in_service += 1,
                CState::Queued => o.queued += 1,
                CState::Retrying => o.retrying += 1,
                CState::Reset => o.reset += 1,
                CState::Failed => o.failed += 1,
                CState::Pending => {}
            }
        }
        let total_busy: u64 = self.workers.iter().map(|w| w.busy).sum();
        let workers: Vec<WorkerReport> = self
            .workers
            .iter()
            .map(|w| WorkerReport {
                accepts: w.accepts,
                requests: w.requests,
                busy_us: w.busy as f64 / 1e3,
                cpu_share: if total_busy == 0 {
                    0.0
                } else {
                    w.busy as f64 / total_busy as f64
                },
                wasted_wakeups: w.wasted,
                latency: w.latency.summary(),
            })
            .collect();
        let accepts: Vec<u64> = workers.iter().map(|w| w.accepts).collect();
        let n = self.workers.len();
        let queues = self.queues.len();
        let mut series = self.series.clone();
        for row in &mut series.accepts {
            row.resize(n, 0);
        }
        // A slice without a change holds the depth the last change left.
        let mut carried = vec![0u32; queues];
        for (row, end) in series.depth.iter_mut().zip(&self.depth_end) {
            row.resize(queues, 0);
            for q in 0..queues {
                row[q] = row[q].max(carried[q]);
                if let Some(&Some(d)) = end.get(q) {
                    carried[q] = d;
                }
            }
        }
        series.p50_us = self
            .series_lat
            .iter()
            .map(|h| h.quantile(0.5) as f64 / 1e3)
            .collect();
        series.p99_us = self
            .series_lat
            .iter()
            .map(|h| h.quantile(0.99) as f64 / 1e3)
            .collect();
        SimReport {
            partial: !self.heap.is_empty(),
            end_us: self.now as f64 / 1e3,
            events: self.events,
            keys: self.keys,
            workers,
            listener_worker: self.listener_worker(),
            skew: Skew::of(&accepts),
            outcomes: o,
            accept_latency: self.accept_lat.summary(),
            request_latency: self.request_lat.summary(),
            series,
        }
    }
}

/// Every connection's arrival time, in nanoseconds, not decreasing.
fn arrival_times(s: &Scenario) -> Vec<u64> {
    let n = s.connections as usize;
    let mut rng = Rng::new(s.seed, 1);
    let mut out = Vec::with_capacity(n);
    match &s.arrivals {
        Arrivals::Poisson { rate_per_sec } => {
            let mean_us = 1e6 / rate_per_sec;
            let mut t = 0.0;
            for _ in 0..n {
                t += rng.exp(mean_us);
                out.push(ns(t));
            }
        }
        Arrivals::Bursty {
            rate_per_sec,
            burst,
        } => {
            let mean_us = 1e6 * *burst as f64 / rate_per_sec;
            let mut t = 0.0;
            while out.len() < n {
                t += rng.exp(mean_us);
                for _ in 0..*burst {
                    if out.len() < n {
                        out.push(ns(t));
                    }
                }
            }
        }
        Arrivals::Paced { gap_us } => {
            for i in 0..n {
                out.push(ns(gap_us * (i + 1) as f64));
            }
        }
        Arrivals::Replay { at_us } => out.extend(at_us.iter().map(|&t| ns(t))),
    }
    out
}
