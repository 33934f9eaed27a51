//! `record`: sets up an SO_REUSEPORT group on the running Linux kernel,
//! drives connections (TCP) or datagrams (UDP) into it over loopback one at
//! a time, and writes which member received each one as a trace file
//! (format v1, [`crate::trace`]).
//!
//! The stages:
//!
//! 1. **Plan** ([`plan`]): the options are checked and turned into the group
//!    to make ([`GroupSetup`]), the client addresses and the seeded order of
//!    (address, source port) pairs ([`clients`]). Impossible options are
//!    refused here, before any socket exists.
//! 2. **Setup** (Linux): the descriptor limit is raised, SIGINT, SIGTERM,
//!    SIGHUP and the other terminating signals set a stop flag
//!    ([`crate::STOP_SIGNALS`]), and a dedicated thread optionally enters a private
//!    network namespace (`--netns`), sets `net.ipv4.tcp_migrate_req`, and
//!    makes the group: member i is the i-th to call listen() (TCP) or bind()
//!    (UDP), which is the kernel's numbering (kernel-history.md §6.2); then
//!    SO_INCOMING_CPU, the classic BPF program, the closes.
//! 3. **Drive** ([`drive`]): for each pair, a client socket bound to it
//!    connects (TCP) or sends its sequence number (UDP); epoll on the
//!    members tells which one got it. One event at a time, so attribution
//!    is unambiguous; nothing within the wait (1 s) counts as lost.
//! 4. **Trace**: the events, counts per listener, each listener's slot in
//!    `socks[]` per the model ([`Host::shorthand_group`] of the same spec),
//!    kernel, machine and options. Written also after Ctrl-C, with what was
//!    recorded; the sysctl is restored on every way out.

// Off Linux `record` refuses at once; the trace assembly is then unused.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::{Duration, SystemTime};

use reuseport_model::lookup::Host;
use reuseport_model::reuseport::CpuPin;
use reuseport_model::{GroupSpec, Keys, Profile, Proto};
use serde_json::json;

use crate::trace::{KernelInfo, MachineInfo, Sampling, Trace, TraceGroup, FORMAT, VERSION};

mod args;
pub mod clients;
pub mod drive;
mod error;
#[cfg(target_os = "linux")]
pub mod foreign;
#[cfg(target_os = "linux")]
mod net;
#[cfg(target_os = "linux")]
mod sys;

#[cfg(target_os = "linux")]
pub use crate::process::is_root;
pub use args::{Bpf, PortRange, RecordArgs};
pub use error::RecordError;

use clients::Pairs;
use drive::Recording;

/// How long a connection or datagram may take to arrive before it counts
/// as lost.
pub const WAIT: Duration = Duration::from_secs(1);
/// Client addresses generated when `--clients` is not given.
pub const DEFAULT_CLIENTS: u32 = 16;
/// Progress lines on stderr this often.
pub const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// `machine.netns` with `--netns`.
pub const PRIVATE_NETNS: &str = "private (unshare)";

/// The group to make, as the options describe it.
#[derive(Debug, Clone)]
pub struct GroupSetup {
    /// TCP or UDP.
    pub proto: Proto,
    /// Members.
    pub listeners: u32,
    /// Bound address.
    pub bind: IpAddr,
    /// Bound port, 0 for an ephemeral one chosen by the first bind.
    pub port: u16,
    /// IPV6_V6ONLY (IPv6 groups only).
    pub v6only: bool,
    /// SO_INCOMING_CPU, set after every member has joined.
    pub pins: Vec<CpuPin>,
    /// Program attached to member 0 after every member has joined.
    pub bpf: Option<Bpf>,
    /// Members closed, in order, after that.
    pub closed: Vec<u32>,
    /// `net.ipv4.tcp_migrate_req` during the recording.
    pub tcp_migrate_req: bool,
}

impl GroupSetup {
    /// The model's description of the group, bound to `port` (keys do not
    /// matter for the layout).
    pub fn spec(&self, port: u16) -> GroupSpec {
        GroupSpec {
            v6only: self.v6only,
            closed: self.closed.clone(),
            incoming_cpu: self.pins.clone(),
            tcp_migrate_req: self.tcp_migrate_req,
            ..GroupSpec::new(self.proto, self.listeners, self.bind, port, Keys::default())
        }
    }
}

/// A checked recording plan: everything but the sockets.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The group.
    pub setup: GroupSetup,
    /// Where clients send (the port comes from the group).
    pub dest: IpAddr,
    /// (client address, source port) pairs in order.
    pub pairs: Pairs,
    /// Addresses to put on lo in the private namespace.
    pub netns_addrs: Vec<IpAddr>,
    /// CPUs the client cycles through with `--pin-cpu`.
    pub pin_cpus: Vec<u32>,
    /// Stop after this many events.
    pub count: u64,
    /// Time bound.
    pub duration: Duration,
    /// Keep every n-th received event.
    pub sample: u64,
    /// Record despite listening sockets outside the group on the port.
    pub allow_foreign: bool,
}

fn is_loopback(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback(),
    }
}

/// `multicast` or `broadcast` for an address whose datagrams leave
/// loopback for the real interfaces (a multicast group is routed out of
/// them, 255.255.255.255 goes to every attached network).
fn off_loopback(a: IpAddr) -> Option<&'static str> {
    match a.to_canonical() {
        a if a.is_multicast() => Some("multicast"),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("broadcast"),
        _ => None,
    }
}

/// Checks the options and plans the recording; `cpus` are the CPUs the
/// process may run on (for `--incoming-cpu-all` and `--pin-cpu`). Pure:
/// nothing is touched.
pub fn plan(args: &RecordArgs, cpus: &[u32]) -> Result<Plan, RecordError> {
    let proto: Proto = args.proto.into();
    let n = args.listeners;
    if n == 0 {
        return Err(RecordError::NoListeners);
    }
    let order = proto.join_call();
    let mut closed = Vec::with_capacity(args.closed.len());
    for &l in &args.closed {
        if l >= n {
            return Err(RecordError::NoSuchListener {
                option: "--closed",
                listener: l,
                count: n,
                order,
            });
        }
        if closed.contains(&l) {
            return Err(RecordError::ClosedTwice(l));
        }
        closed.push(l);
    }
    if closed.len() as u64 == u64::from(n) {
        return Err(RecordError::AllClosed(n));
    }
    let pins: Vec<CpuPin> = if args.incoming_cpu_all {
        let cpus = if cpus.is_empty() { &[0][..] } else { cpus };
        (0..n)
            .map(|l| CpuPin {
                listener: l,
                cpu: cpus[l as usize % cpus.len()],
            })
            .collect()
    } else {
        args.incoming_cpu.clone()
    };
    if let Some(p) = pins.iter().find(|p| p.listener >= n) {
        return Err(RecordError::NoSuchListener {
            option: "--incoming-cpu",
            listener: p.listener,
            count: n,
            order,
        });
    }
    if matches!(args.bpf, Some(Bpf::PayloadMod(_))) && proto != Proto::Udp {
        return Err(RecordError::PayloadModNeedsUdp);
    }
    if args.tcp_migrate_req && proto != Proto::Tcp {
        return Err(RecordError::MigrateReqNeedsTcp);
    }
    if !args.netns {
        let given = std::iter::once(("--bind", args.bind))
            .chain(args.client.iter().map(|&c| ("--client", c)));
        for (option, addr) in given {
            if let Some(kind) = off_loopback(addr) {
                return Err(RecordError::OffLoopback { option, addr, kind });
            }
        }
    }
    let duration = Duration::try_from_secs_f64(args.duration)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or(RecordError::BadDuration(args.duration))?;

    // Where clients send, and in which family.
    let bind = args.bind;
    let v6only = args.v6only && bind.is_ipv6();
    let given: Vec<IpAddr> = args.client.iter().map(|c| c.to_canonical()).collect();
    let all_given_v4 = !given.is_empty() && given.iter().all(IpAddr::is_ipv4);
    let dest: IpAddr = match bind {
        IpAddr::V4(a) if a.is_unspecified() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(a) if a.is_unspecified() && all_given_v4 => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V6(a) if a.is_unspecified() => Ipv6Addr::LOCALHOST.into(),
        a => a.to_canonical(),
    };
    for &c in &given {
        if c.is_ipv4() && bind.is_ipv6() && v6only {
            return Err(RecordError::V6OnlyRefusesV4 { client: c });
        }
        if c.is_ipv4() != dest.is_ipv4() {
            return Err(RecordError::ClientFamily {
                client: c,
                bind,
                why: if c.is_ipv4() {
                    "an IPv4 client reaches an IPv6 group only when it is bound to :: without --v6only, and then every --client must be IPv4"
                } else {
                    "an IPv6 client cannot reach an IPv4 group; bind the group to an IPv6 address or :: instead"
                },
            });
        }
    }
    if dest.is_ipv4() && bind.is_ipv6() && v6only {
        return Err(RecordError::V6OnlyRefusesV4 { client: dest });
    }
    let v6 = dest.is_ipv6();
    let clients: Vec<IpAddr> = if !given.is_empty() {
        let mut seen = Vec::new();
        for c in given {
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        seen
    } else {
        let k = args.clients.unwrap_or(if v6 && !args.netns {
            1
        } else {
            DEFAULT_CLIENTS
        });
        if k == 0 {
            return Err(RecordError::NoClients);
        }
        if v6 && !args.netns {
            if k > 1 {
                return Err(RecordError::V6ClientsNeedNetns(k));
            }
            vec![Ipv6Addr::LOCALHOST.into()]
        } else {
            clients::generate(v6, k, args.seed, &[bind, dest]).ok_or(
                RecordError::TooManyClients {
                    asked: k,
                    space: clients::space(v6),
                    space_name: if v6 { "fd00::/112" } else { "127.0.0.0/8" },
                },
            )?
        }
    };
    let ports = u64::from(args.sport_range.hi - args.sport_range.lo) + 1;
    let pairs = Pairs::new(
        clients,
        (args.sport_range.lo, args.sport_range.hi),
        args.seed,
    );
    if args.count > pairs.len() {
        return Err(RecordError::TooFewPairs {
            count: args.count,
            pairs: pairs.len(),
            clients: pairs.clients().len() as u64,
            ports,
        });
    }
    let mut netns_addrs = Vec::new();
    if args.netns {
        for &a in std::iter::once(&bind).chain(pairs.clients()) {
            let a = a.to_canonical();
            if !a.is_unspecified() && !is_loopback(a) && !netns_addrs.contains(&a) {
                netns_addrs.push(a);
            }
        }
    }
    Ok(Plan {
        setup: GroupSetup {
            proto,
            listeners: n,
            bind,
            port: args.port,
            v6only,
            pins,
            bpf: args.bpf,
            closed,
            tcp_migrate_req: args.tcp_migrate_req,
        },
        dest,
        pairs,
        netns_addrs,
        pin_cpus: if args.pin_cpu {
            cpus.to_vec()
        } else {
            Vec::new()
        },
        count: args.count,
        duration,
        sample: args.sample,
        allow_foreign: args.allow_foreign_listeners,
    })
}

/// Each listener's slot in `socks[]` per the model, and the slots in order
/// (`group.slots`); `None` when the model has no array for this kernel or
/// refuses the group (said on stderr).
fn model_slots(
    profile: Option<&'static Profile>,
    setup: &GroupSetup,
    port: u16,
) -> Option<Vec<u32>> {
    let profile = profile?;
    match Host::shorthand_group(profile, &setup.spec(port)) {
        Ok(g) => g.sock_array().map(|a| a.listening().to_vec()),
        Err(e) => {
            crate::note!(
                "record: the model cannot describe this group ({e}); events carry no slot"
            );
            None
        }
    }
}

pub use crate::rfc3339;

/// What a finished run reports besides the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Events driven.
    pub events: u64,
    /// Of which lost.
    pub lost: u64,
    /// Of those, taken by a listener outside the group.
    pub elsewhere: u64,
    /// Stopped by a terminating signal (exit status 130).
    pub interrupted: bool,
    /// `--output` could not be written, and the trace went to standard
    /// output instead (exit status 1).
    pub diverted: bool,
}

/// What the recording thread hands back.
struct Measured {
    recording: Recording,
    port: u16,
    slots: Option<Vec<u32>>,
    started: SystemTime,
    migrate_req_before: Option<String>,
    /// Listening sockets outside the group on its port (`--allow-foreign-listeners`).
    foreign: Vec<String>,
}

/// Everything the trace says besides the events.
struct Context<'a> {
    args: &'a RecordArgs,
    plan: &'a Plan,
    release: String,
    profile: Option<&'static Profile>,
    cpus: u32,
}

fn assemble(cx: &Context<'_>, m: Measured) -> Trace {
    let (args, plan) = (cx.args, cx.plan);
    let s = &plan.setup;
    let Measured {
        recording: r,
        port,
        slots,
        started,
        migrate_req_before,
        foreign,
    } = m;
    let listed = |v: &[IpAddr]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    let clients = plan.pairs.clients();
    let options = json!({
        "proto": s.proto,
        "listeners": s.listeners,
        "bind": s.bind,
        "port": args.port,
        "v6only": s.v6only,
        "closed": s.closed,
        "incomingCpu": args.incoming_cpu,
        "incomingCpuAll": args.incoming_cpu_all,
        "bpf": args.bpf.map(|b| b.info()),
        "tcpMigrateReq": args.tcp_migrate_req,
        "tcpMigrateReqBefore": migrate_req_before,
        "seed": args.seed,
        "clients": clients.len(),
        "client": listed(&args.client),
        "clientAddrs": (clients.len() <= 256).then(|| listed(clients)),
        "sportRange": args.sport_range.to_string(),
        "dest": std::net::SocketAddr::new(plan.dest, port).to_string(),
        "pinCpu": args.pin_cpu,
        "pinCpus": plan.pin_cpus,
        "netns": args.netns,
        "count": args.count,
        "duration": args.duration,
        "sample": args.sample,
        "waitMs": WAIT.as_millis() as u64,
        "stoppedBy": r.stopped_by.word(),
        "skippedPairs": r.skipped,
        "foreignListeners": foreign,
        "deliveredElsewhere": r.elsewhere,
        "elapsedNs": r.elapsed.as_nanos() as u64,
    });
    Trace {
        format: FORMAT.into(),
        version: VERSION,
        recorded: Some(rfc3339(started)),
        command: Some(crate::trace::bounded_command(
            std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        )),
        kernel: KernelInfo {
            release: cx.release.clone(),
            profile: cx.profile.map(|p| p.release.to_string()),
        },
        machine: MachineInfo {
            cpus: Some(cx.cpus),
            netns: Some(if args.netns { PRIVATE_NETNS } else { "host" }.into()),
        },
        group: TraceGroup {
            proto: s.proto,
            bind: s.bind,
            port,
            listeners: s.listeners,
            v6only: s.v6only,
            closed: s.closed.clone(),
            incoming_cpu: s.pins.clone(),
            bpf: s.bpf.map(Bpf::info),
            tcp_migrate_req: s.tcp_migrate_req,
            slots: slots.unwrap_or_default(),
        },
        options,
        counts: r.counts,
        sampling: (args.sample > 1).then_some(Sampling { every: args.sample }),
        events: r.events,
    }
}

/// Records on the running kernel and returns the trace (nothing is
/// written). Refuses off Linux.
#[cfg(not(target_os = "linux"))]
pub fn record(_args: &RecordArgs) -> Result<(Trace, Outcome), RecordError> {
    Err(RecordError::NotLinux)
}

/// Records on the running kernel and returns the trace (nothing is
/// written): plans, raises the descriptor limit, installs the signal
/// handlers, and runs the setup and the traffic on a dedicated thread, so
/// that `--netns` and `--pin-cpu` change that thread only.
#[cfg(target_os = "linux")]
pub fn record(args: &RecordArgs) -> Result<(Trace, Outcome), RecordError> {
    let cpus =
        crate::process::allowed_cpus().map_err(|e| RecordError::sys("sched_getaffinity", e, ""))?;
    let plan = plan(args, &cpus)?;
    sys::raise_fd_limit(args.listeners)?;
    let release = crate::kernel::running_release()?;
    let profile = Profile::for_release(&release).ok();
    if !args.tcp_migrate_req && !args.netns {
        // A run killed while it held the sysctl left its value to restore.
        crate::migrate_req::restore_left("record");
    }
    let _signals = crate::signals::Guard::install(crate::signals::Second::Waits).map_err(|e| {
        RecordError::sys(
            "installing the handlers of SIGINT, SIGTERM, SIGHUP and the other terminating signals",
            e,
            "",
        )
    })?;
    let measured = std::thread::scope(|scope| {
        scope
            .spawn(|| measure(&plan, args.netns, profile))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    let measured = match measured {
        Err(_) if crate::signals::stopped() => return Err(RecordError::Interrupted),
        m => m?,
    };
    let outcome = Outcome {
        events: measured.recording.counts.events,
        lost: measured.recording.counts.lost.unwrap_or(0),
        elsewhere: measured.recording.elsewhere,
        interrupted: measured.recording.stopped_by == drive::StoppedBy::Signal,
        diverted: false,
    };
    let cx = Context {
        args,
        plan: &plan,
        release,
        profile,
        cpus: crate::process::online_cpus(),
    };
    Ok((assemble(&cx, measured), outcome))
}

/// The recording thread: namespace, sysctl, group, traffic. The sockets are
/// closed before the sysctl is restored.
#[cfg(target_os = "linux")]
fn measure(
    plan: &Plan,
    netns: bool,
    profile: Option<&'static Profile>,
) -> Result<Measured, RecordError> {
    use std::time::Instant;

    if netns {
        sys::enter_private_netns(&plan.netns_addrs)?;
    }
    let migrate = if plan.setup.tcp_migrate_req {
        Some(sys::enable_migrate_req(!netns)?)
    } else {
        None
    };
    let mut group = net::Group::build(&plan.setup, plan.dest, WAIT, &crate::signals::STOP)?;
    let port = group.port();
    let found = foreign::find(
        plan.setup.proto,
        port,
        plan.dest,
        plan.setup.bind,
        &group.inodes(),
    );
    let foreign: Vec<String> = found.iter().map(ToString::to_string).collect();
    if !foreign.is_empty() {
        if !plan.allow_foreign {
            return Err(RecordError::ForeignListeners {
                port,
                found: foreign.join(", "),
            });
        }
        crate::note!(
            "record: warning: listening sockets outside the group are on port {port}: {}; they take part in the lookup, so connections they take are counted in options.deliveredElsewhere and as lost",
            foreign.join(", ")
        );
    }
    let slots = model_slots(profile, &plan.setup, port);
    let mut slot_of = vec![None; plan.setup.listeners as usize];
    for (i, &l) in slots.iter().flatten().enumerate() {
        slot_of[l as usize] = Some(i as u32);
    }
    let limits = drive::Limits {
        count: plan.count,
        duration: plan.duration,
        sample: plan.sample,
        dest: group.dest(),
        listeners: plan.setup.listeners,
        slot_of,
        pin_cpus: plan.pin_cpus.clone(),
        progress_every: PROGRESS_EVERY,
    };
    let started = SystemTime::now();
    let clock = drive::Wall(Instant::now());
    let recording = drive::record(
        &mut group,
        &plan.pairs,
        &limits,
        &clock,
        &crate::signals::STOP,
        &mut |p| crate::note!("{}", p.line()),
    )?;
    drop(group);
    let migrate_req_before = migrate.as_ref().map(|m| m.previous().to_string());
    drop(migrate);
    Ok(Measured {
        recording,
        port,
        slots,
        started,
        migrate_req_before,
        foreign,
    })
}

/// Runs `record` and writes the trace to `--output` or standard output.
/// `--output` is checked first ([`crate::output::Output::prepare`]), so a
/// path that cannot take the trace fails before any socket is made; the
/// trace replaces a regular file only once it is whole, and goes through
/// to a device, a FIFO or standard output. When the file cannot be written
/// at the end (a full disk), the trace goes to standard output instead,
/// said on standard error, and the run exits 1.
pub fn run(args: &RecordArgs) -> Result<Outcome, RecordError> {
    let output_error = |p: &Path| {
        let path = p.display().to_string();
        move |source| RecordError::Output { path, source }
    };
    let sink = match &args.output {
        Some(p) => Some(crate::output::Output::prepare(p).map_err(output_error(p))?),
        None => None,
    };
    let (trace, mut outcome) = record(args)?;
    let mut text = trace.to_json();
    text.push('\n');
    match sink {
        None => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(output_error(Path::new("standard output")))?;
        }
        Some(sink) => {
            outcome.diverted = sink
                .commit_or_stdout(text.as_bytes(), "record")
                .map_err(|(path, source)| RecordError::Output { path, source })?;
        }
    }
    if outcome.elsewhere > 0 {
        crate::note!(
            "record: warning: {} of {} connections completed their handshake but reached none of the group's sockets: a listener outside the group took them (options.deliveredElsewhere); the trace counts them as lost",
            outcome.elsewhere,
            outcome.events
        );
    }
    if outcome.interrupted {
        crate::note!(
            "record: interrupted; the trace holds the {} events driven so far",
            outcome.events
        );
    }
    Ok(outcome)
}

impl crate::exit::Ending for Outcome {
    fn status(&self) -> crate::exit::Status {
        if self.interrupted {
            crate::exit::Status::Interrupted
        } else {
            crate::exit::all_or_partial(!self.diverted)
        }
    }
}

crate::exit::interruptible!(RecordError => RecordError::Interrupted);

#[cfg(test)]
mod tests;
