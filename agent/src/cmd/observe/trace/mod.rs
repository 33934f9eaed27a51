//! `observe --trace`: the kernel's own reuseport choice for every SYN or
//! datagram to the port, recorded by an eBPF program on
//! `reuseport_select_sock()` ([`load`], Linux with the `trace` feature),
//! written as a trace in the project's format and checked against the model
//! record by record: the kernel's hash against the model's, and the socket
//! it chose against the model's choice.
//!
//! Where it cannot trace (no BTF, no capability, no attach point, a kernel
//! without the ring buffer, an agent built without the object) it says why
//! ([`refusal`]) and `observe` goes on with the socket tables alone.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use reuseport_model::jhash::reciprocal_scale;
use reuseport_model::lookup::Host;
use reuseport_model::profile::Profile;
use reuseport_model::recover::{Found, Plan};
use reuseport_model::{GroupSpec, Keys, Proto, Tuple};

use crate::trace::{Counts, Event, KernelInfo, MachineInfo, Trace, TraceGroup, FORMAT, VERSION};

#[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
pub mod load;

/// The kernel function fexit and kprobes attach to.
pub const SYMBOL: &str = "reuseport_select_sock";
/// The tracepoint the fallback attaches to.
pub const TRACEPOINT: &str = "sk_data_ready";

/// Where a way of attaching attaches (`fexit`, `kprobe`, `tracepoint`).
pub fn point(attach: &str) -> &'static str {
    if attach == "tracepoint" {
        TRACEPOINT
    } else {
        SYMBOL
    }
}

/// How the program is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attach {
    /// fexit where the kernel has BTF trampolines (5.5+), else kprobes.
    Auto,
    /// fexit on the selection: one call, arguments and result together.
    Fexit,
    /// A kprobe and a kretprobe on the selection.
    Kprobe,
    /// The `sk_data_ready` tracepoint (6.8+) on the chosen socket, after
    /// the fact: TCP per accepted connection (with its ehash), UDP per
    /// datagram (no hash).
    Tracepoint,
}

/// `--trace`'s options (part of `observe`'s).
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Record the kernel's own choice for every SYN or datagram to the port with eBPF (root or CAP_BPF+CAP_PERFMON, a kernel with BTF, 5.8+); where it cannot, it says why and observes the socket tables alone. Watches for --for (default 10s).
    #[arg(long)]
    pub trace: bool,
    /// Write the trace (format reuseport-lab-trace v1, as `record` writes) to FILE.
    #[arg(long, value_name = "FILE", requires = "trace")]
    pub trace_out: Option<PathBuf>,
    /// How to attach: fexit (BTF trampolines), kprobe, tracepoint (sk_data_ready, 6.8+), or auto (in that order).
    #[arg(long, value_enum, default_value = "auto", requires = "trace")]
    pub trace_attach: Attach,
    /// At most this many records per second on each CPU (1 to 10000000); more are counted as lost.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000), requires = "trace")]
    pub trace_rate: u64,
    /// The ring buffer's size in KiB (a power of two, 64 to 262144); records that find it full are counted as lost.
    #[arg(long, default_value_t = 4096, value_parser = ring_kib, requires = "trace")]
    pub trace_buffer: u32,
    /// Records kept for the trace and the check (1 to 5000000); later ones are counted, not kept.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=5_000_000), requires = "trace")]
    pub trace_keep: u64,
}

fn ring_kib(s: &str) -> Result<u32, String> {
    let v: u32 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of KiB"))?;
    if !(64..=262_144).contains(&v) || !v.is_power_of_two() {
        return Err(format!("{v}: give a power of two from 64 to 262144 (KiB)"));
    }
    Ok(v)
}

/// Flags of a record, as the program sets them (trace.bpf.c).
pub mod flags {
    /// A BPF program was attached to the group.
    pub const PROGRAM: u32 = 1;
    /// The selection returned an error (the program said SK_DROP).
    pub const DROPPED: u32 = 2;
    /// The selection returned no socket.
    pub const NO_SOCKET: u32 = 4;
    /// The chosen socket was past the part of `socks[]` searched.
    pub const SLOT_UNKNOWN: u32 = 8;
    /// An IPv6 packet.
    pub const IPV6: u32 = 16;
    /// Tracepoint, TCP: the hash is the connection's ehash (laddr as bound).
    pub const EHASH: u32 = 32;
    /// Tracepoint, UDP: no hash.
    pub const NO_HASH: u32 = 64;
}

/// One record: one call of the selection for a packet to the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelRecord {
    /// Monotonic nanoseconds (`bpf_ktime_get_ns`).
    pub t_ns: u64,
    /// The chosen socket's inode (0: none).
    pub inode: u64,
    /// The hash the kernel passed in.
    pub hash: u32,
    /// The CPU it ran on.
    pub cpu: u32,
    /// Client address and port.
    pub client: SocketAddr,
    /// Server address and port.
    pub server: SocketAddr,
    /// `num_socks` of the group.
    pub num_socks: u16,
    /// `num_closed_socks` (5.14+).
    pub num_closed_socks: u16,
    /// Members with SO_INCOMING_CPU set (6.2+).
    pub incoming_cpu: u16,
    /// The chosen socket's index in `socks[]`.
    pub slot: Option<u16>,
    /// The group's id (4.19+; 0 before).
    pub reuseport_id: u32,
    /// [`flags`].
    pub flags: u32,
}

impl KernelRecord {
    /// Decodes the program's `struct record` (80 bytes, native order;
    /// addresses and ports in network order). The offsets are checked
    /// against clang's layout of the struct at compile time (load.rs).
    pub fn decode(b: &[u8]) -> Option<KernelRecord> {
        if b.len() < RECORD_SIZE {
            return None;
        }
        let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        let u16_at = |o: usize| u16::from_ne_bytes(b[o..o + 2].try_into().unwrap());
        let flags = u32_at(72);
        let addr = |o: usize| -> IpAddr {
            if flags & flags::IPV6 != 0 {
                let mut a = [0u8; 16];
                a.copy_from_slice(&b[o..o + 16]);
                IpAddr::V6(Ipv6Addr::from(a))
            } else {
                IpAddr::V4(Ipv4Addr::new(b[o], b[o + 1], b[o + 2], b[o + 3]))
            }
        };
        let port = |o: usize| u16::from_be_bytes([b[o], b[o + 1]]);
        let slot = u16_at(66);
        Some(KernelRecord {
            t_ns: u64_at(0),
            inode: u64_at(8),
            hash: u32_at(16),
            cpu: u32_at(20),
            client: SocketAddr::new(addr(24), port(56)),
            server: SocketAddr::new(addr(40), port(58)),
            num_socks: u16_at(60),
            num_closed_socks: u16_at(62),
            incoming_cpu: u16_at(64),
            slot: (slot != 0xffff && flags & flags::SLOT_UNKNOWN == 0).then_some(slot),
            reuseport_id: u32_at(68),
            flags,
        })
    }

    /// Whether the hash alone decided this record (no program attached, no
    /// member with SO_INCOMING_CPU).
    pub fn by_hash(&self) -> bool {
        self.flags & flags::PROGRAM == 0 && self.incoming_cpu == 0
    }
}

/// Bytes of the program's `struct record`.
pub const RECORD_SIZE: usize = 80;

/// What the tracer gathered.
#[derive(Debug, Default)]
pub struct Collected {
    /// `fexit` or `kprobe`.
    pub attach: &'static str,
    /// Why fexit was not used, when auto fell back to kprobes.
    pub fexit_refused: Option<String>,
    /// Records kept, in arrival order.
    pub records: Vec<KernelRecord>,
    /// Records delivered (kept or not).
    pub delivered: u64,
    /// Per chosen inode, records delivered (kept or not).
    pub per_inode: BTreeMap<u64, u64>,
    /// Calls for the port that the program saw.
    pub seen: u64,
    /// Lost because the ring buffer was full.
    pub lost_ring_full: u64,
    /// Lost because of the rate bound.
    pub lost_rate: u64,
    /// Calls without a packet (lookups made for no packet: not records).
    pub no_packet: u64,
}

/// Why tracing cannot run here, or `None` when it can be tried.
pub fn refusal(release: Option<&str>) -> Option<String> {
    if !cfg!(all(target_os = "linux", feature = "trace", bpf_object)) {
        return Some(
            "this agent was built without observe --trace's eBPF object (the static build leaves it out; build with the default features on a machine with clang, bpftool and kernel BTF)".into(),
        );
    }
    if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some("the kernel has no BTF (/sys/kernel/btf/vmlinux is missing), so the program's field reads cannot be placed (CO-RE)".into());
    }
    if let Some(r) = release {
        let mut it = r.split(|c: char| !c.is_ascii_digit());
        let major: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let minor: u32 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        if (major, minor) < (5, 8) {
            return Some(format!("kernel {r} has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF, 5.8+), which the program delivers its records through"));
        }
    }
    if !capable() {
        return Some(
            "it needs root, or CAP_BPF and CAP_PERFMON, to load and attach the program".into(),
        );
    }
    match std::fs::read_to_string("/proc/kallsyms") {
        Ok(k) if !k.lines().any(|l| l.split_whitespace().nth(2) == Some(SYMBOL)) => Some(format!(
            "the kernel has no {SYMBOL} (before 4.5 for UDP and 4.6 for TCP there is no group array: the reservoir scan is not traced)"
        )),
        Err(e) => Some(format!("/proc/kallsyms cannot be read: {e}")),
        _ => None,
    }
}

/// Whether this process has CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON.
fn capable() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let has = |bit: u32| eff & (1u64 << bit) != 0;
    // CAP_SYS_ADMIN 21, CAP_PERFMON 38, CAP_BPF 39 (include/uapi/linux/capability.h).
    has(21) || (has(38) && has(39))
}

/// `--trace`'s part of the report.
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TraceReport {
    /// `traced` or `refused`.
    pub status: &'static str,
    /// Why it refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The kernel function attached to.
    pub symbol: &'static str,
    /// `fexit` or `kprobe`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach: Option<&'static str>,
    /// Why fexit was not used where auto fell back to kprobes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fexit_refused: Option<String>,
    /// Records delivered.
    pub records: u64,
    /// Records kept for the trace and the check.
    pub kept: u64,
    /// Records lost: the ring buffer was full.
    pub lost_ring_full: u64,
    /// Records lost: over the rate bound.
    pub lost_rate: u64,
    /// Selections for the port made for no packet.
    pub no_packet: u64,
    /// Groups seen on the port (by the kernel's group id).
    pub groups: u32,
    /// Records of the other groups (not in the trace).
    pub other_groups: u64,
    /// Records after the group changed size (not in the trace).
    pub after_change: u64,
    /// The group traced: bound address and members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind: Option<String>,
    /// Members (`num_socks`).
    pub listeners: u32,
    /// Per slot: the socket's inode and records delivered.
    pub per_listener: Vec<TracedListener>,
    /// The check against the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<TraceCheck>,
    /// Where the trace was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// One member of the traced group.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TracedListener {
    /// Its index in `socks[]`, the trace's listener number.
    pub slot: u32,
    /// Its inode (`listeners[].id` in the report), when a record named it.
    pub inode: Option<u64>,
    /// Records delivered for it.
    pub records: u64,
}

/// Every kept record against the model.
#[derive(Debug, Clone, Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TraceCheck {
    /// The model profile.
    pub profile: String,
    /// Whether the key was found from the kernel's hashes.
    pub key_found: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_reason: Option<String>,
    /// Records whose hash was checked, and those equal to the model's.
    pub hash_tested: u64,
    /// See `hash_tested`.
    pub hash_agreed: u64,
    /// Records chosen by the hash whose socket was checked, and those the
    /// model chose too.
    pub choice_tested: u64,
    /// See `choice_tested`.
    pub choice_agreed: u64,
    /// Records a program or SO_INCOMING_CPU could have decided (hash
    /// checked, choice not).
    pub not_by_hash: u64,
    /// IPv4 records (their key is searched, their hash and choice checked).
    pub ipv4: u64,
    /// IPv6 records. Their hash has two per-boot secrets (`inet6_ehashfn`'s
    /// `inet6_ehash_secret` and `ipv6_hash_secret`, function statics no
    /// interface shows) that a trace cannot pin down, so the kernel's hash is
    /// not checked; the socket it chose is, against the model's pick from
    /// that hash (counted in `choice_tested`).
    pub ipv6: u64,
    /// IPv6 records whose choice was checked from the kernel's own hash.
    pub ipv6_choice_tested: u64,
    /// IPv6 records that carry no hash (the UDP tracepoint's), or no slot:
    /// neither checked.
    pub ipv6_unchecked: u64,
    /// The first disagreements.
    pub mismatches: Vec<String>,
}

impl TraceCheck {
    /// Whether every checked record agreed and something was checked (an
    /// IPv6 record's choice, from the kernel's hash, counts as checked).
    pub fn exact(&self) -> bool {
        (self.key_found || self.ipv4 == 0)
            && self.ipv6_unchecked == 0
            && self.hash_tested + self.choice_tested > 0
            && self.hash_agreed == self.hash_tested
            && self.choice_agreed == self.choice_tested
    }
}

/// Records used for the key search: each pins 15 bits of the hash.
const SEARCH_RECORDS: usize = 8;
/// The members of the search's stand-in group: the top 15 bits of a hash
/// choose among them (`reciprocal_scale(hash, 32768)`), so each record of
/// any real group pins as much of the key as it can.
const SEARCH_MEMBERS: u32 = 32_768;

/// What a finished trace gives: the file's content, and the report's part.
pub struct Built {
    /// The trace, when a group was traced.
    pub trace: Option<Trace>,
    /// The report's part.
    pub report: TraceReport,
}

/// Builds the trace of the group with most records from what was collected
/// and checks it: `locals` maps inodes to the bound address the socket
/// tables show; `search` runs the key search over a range of keys.
pub fn build(
    c: &Collected,
    profile: &'static Profile,
    release: &str,
    proto: Proto,
    port: u16,
    locals: &BTreeMap<u64, SocketAddr>,
    search: &mut dyn FnMut(&Plan) -> Option<Found>,
) -> Built {
    let mut report = TraceReport {
        status: "traced",
        symbol: point(c.attach),
        attach: Some(c.attach),
        fexit_refused: c.fexit_refused.clone(),
        records: c.delivered,
        kept: c.records.len() as u64,
        lost_ring_full: c.lost_ring_full,
        lost_rate: c.lost_rate,
        no_packet: c.no_packet,
        ..TraceReport::default()
    };
    let mut by_group: BTreeMap<u32, u64> = BTreeMap::new();
    for r in &c.records {
        *by_group.entry(r.reuseport_id).or_default() += 1;
    }
    report.groups = by_group.len() as u32;
    let Some((&gid, _)) = by_group.iter().max_by_key(|(_, n)| **n) else {
        return Built {
            trace: None,
            report,
        };
    };
    let mine: Vec<&KernelRecord> = c.records.iter().filter(|r| r.reuseport_id == gid).collect();
    report.other_groups = (c.records.len() - mine.len()) as u64;
    let first = mine[0];
    let n = u32::from(first.num_socks).max(1);
    let same: Vec<&KernelRecord> = mine
        .iter()
        .copied()
        .take_while(|r| {
            r.num_socks == first.num_socks && r.num_closed_socks == first.num_closed_socks
        })
        .collect();
    report.after_change = (mine.len() - same.len()) as u64;
    report.listeners = n;
    // The group's bound address: the socket tables' local address of a
    // chosen socket; the packet's destination when the tables missed it.
    let bind = same
        .iter()
        .find_map(|r| locals.get(&r.inode).map(|a| a.ip()))
        .unwrap_or(first.server.ip());
    report.bind = Some(bind.to_string());
    let mut inode_of: BTreeMap<u32, u64> = BTreeMap::new();
    for r in &same {
        if let Some(s) = r.slot {
            inode_of.entry(u32::from(s)).or_insert(r.inode);
        }
    }
    let mut per_slot = vec![0u64; n as usize];
    let mut events = Vec::with_capacity(same.len());
    let t0 = first.t_ns;
    for (i, r) in same.iter().enumerate() {
        let Some(slot) = r.slot.map(u32::from).filter(|s| *s < n) else {
            continue;
        };
        per_slot[slot as usize] += 1;
        events.push(Event {
            seq: Some(i as u64),
            saddr: r.client.ip(),
            sport: r.client.port(),
            daddr: r.server.ip(),
            dport: r.server.port(),
            listener: slot,
            slot: Some(slot),
            cpu: Some(r.cpu),
            t_ns: Some(r.t_ns.saturating_sub(t0)),
            latency_ns: None,
            // Only the selection's own hash is the trace's `hash`.
            hash: (r.flags & (flags::EHASH | flags::NO_HASH) == 0).then_some(r.hash),
        });
    }
    report.per_listener = (0..n)
        .map(|s| TracedListener {
            slot: s,
            inode: inode_of.get(&s).copied(),
            records: c
                .per_inode
                .get(inode_of.get(&s).unwrap_or(&0))
                .copied()
                .unwrap_or(0),
        })
        .collect();
    let group = TraceGroup {
        proto,
        bind,
        port,
        listeners: n,
        v6only: false,
        closed: Vec::new(),
        incoming_cpu: Vec::new(),
        bpf: None,
        tcp_migrate_req: false,
        slots: (0..n).collect(),
    };
    let trace = Trace {
        format: FORMAT.into(),
        version: VERSION,
        recorded: jiff::Timestamp::now().to_string().into(),
        command: Some(crate::trace::bounded_command(
            std::env::args().collect::<Vec<_>>().join(" "),
        )),
        kernel: KernelInfo {
            release: release.to_string(),
            profile: Some(profile.release.to_string()),
        },
        machine: MachineInfo {
            cpus: std::thread::available_parallelism()
                .ok()
                .map(|n| n.get() as u32),
            netns: Some("host".into()),
        },
        group,
        options: serde_json::json!({
            "source": "observe --trace",
            "symbol": point(c.attach),
            "attach": c.attach,
            "listenersNumbered": "by their slot in socks[] at the first record",
            "program": same.iter().any(|r| r.flags & flags::PROGRAM != 0),
            "incomingCpuMembers": same.iter().map(|r| r.incoming_cpu).max().unwrap_or(0),
        }),
        counts: Counts {
            events: same.len() as u64,
            recorded: Some(events.len() as u64),
            per_listener: per_slot,
            lost: Some(c.lost_ring_full + c.lost_rate),
        },
        sampling: None,
        events,
    };
    report.check = Some(check(&trace, &same, profile, search));
    Built {
        trace: Some(trace),
        report,
    }
}

/// Finds the key and checks every record against the model.
///
/// With the selection's own hash (fexit, kprobe) the key comes from the
/// hashes of the first records (a search over all 2^32 keys of a stand-in
/// group whose 32768 members let each record pin the top 15 bits of its
/// hash); with the tracepoint's TCP records the hash is the connection's
/// ehash, which hashes the local address as it is (not 0 for a wildcard
/// group), so the stand-in group is bound to that address. Then each
/// record: the model's hash against the kernel's, and, where the hash alone
/// decided, the model's choice against the socket the kernel chose. UDP
/// records from the tracepoint carry no hash: the key comes from the
/// choices of the first records (as `verify` finds it) and the later ones
/// are checked.
fn check(
    trace: &Trace,
    records: &[&KernelRecord],
    profile: &'static Profile,
    search: &mut dyn FnMut(&Plan) -> Option<Found>,
) -> TraceCheck {
    let mut out = TraceCheck {
        profile: profile.release.to_string(),
        ..TraceCheck::default()
    };
    let g = &trace.group;
    let v4: Vec<&KernelRecord> = records
        .iter()
        .copied()
        .filter(|r| r.client.is_ipv4() && r.slot.is_some())
        .collect();
    out.ipv4 = records.iter().filter(|r| r.client.is_ipv4()).count() as u64;
    out.ipv6 = records.iter().filter(|r| r.client.is_ipv6()).count() as u64;
    check_v6(&mut out, g, records, profile);
    if v4.is_empty() {
        out.key_reason = Some(if out.ipv6 > 0 {
            "every record is IPv6: its hash has two per-boot secrets that a trace cannot pin down, \
             so each record's choice is checked against the model's pick from the kernel's hash, \
             and the hash itself is not"
                .into()
        } else {
            "no record to check".into()
        });
        return out;
    }
    let no_hash = v4[0].flags & flags::NO_HASH != 0;
    let ehash = v4[0].flags & flags::EHASH != 0;
    let mut checked_from = 0;
    let plan = if no_hash {
        let decided: Vec<&&KernelRecord> = v4.iter().filter(|r| r.by_hash()).collect();
        let train = (crate::cmd::verify::events_needed(g.listeners) + 4).min(decided.len() / 2);
        checked_from = train;
        Host::spec_group(profile, &g.spec(Keys::default()))
            .map_err(|e| e.to_string())
            .and_then(|rg| Plan::new(&rg).map_err(|e| e.to_string()))
            .and_then(|mut plan| {
                for r in decided.iter().take(train) {
                    plan.add(0, &tuple(r), u32::from(r.slot.unwrap_or(0)))
                        .map_err(|e| e.to_string())?;
                }
                Ok(plan)
            })
    } else {
        let bind = if ehash { v4[0].server.ip() } else { g.bind };
        let stand_in = GroupSpec::new(g.proto, SEARCH_MEMBERS, bind, g.port, Keys::default());
        Host::spec_group(profile, &stand_in)
            .map_err(|e| e.to_string())
            .and_then(|sg| Plan::new(&sg).map_err(|e| e.to_string()))
            .and_then(|mut plan| {
                for r in v4.iter().take(SEARCH_RECORDS) {
                    plan.add(0, &tuple(r), reciprocal_scale(r.hash, SEARCH_MEMBERS))
                        .map_err(|e| e.to_string())?;
                }
                Ok(plan)
            })
    };
    let key = plan.and_then(|plan| {
        let found = search(&plan).ok_or("the key search was interrupted")?;
        match found.count {
            1 => Ok(found.values[0]),
            0 => Err("no key fits the records under this kernel's rules".to_string()),
            n => Err(format!("{n} keys fit the records searched")),
        }
    });
    let key = match key {
        Ok(k) => k,
        Err(why) => {
            out.key_reason = Some(why);
            return out;
        }
    };
    out.key_found = true;
    let keys = Keys {
        v4: key,
        v6_outer: 0,
        v6_inner: 0,
    };
    let model = match Host::spec_group(profile, &g.spec(keys)) {
        Ok(m) => m,
        Err(e) => {
            out.key_reason = Some(e.to_string());
            return out;
        }
    };
    for r in v4.iter().skip(checked_from) {
        let t = tuple(r);
        let choice = model.select(&t, r.cpu);
        let listener = choice.as_ref().ok().and_then(|c| c.listener);
        // The hash the kernel kept: the selection's, or the connection's ehash.
        let model_hash = if ehash {
            reuseport_model::hash::reuseport_hash(
                profile, g.proto, t.daddr, t.dport, t.saddr, t.sport, &keys,
            )
        } else {
            choice.as_ref().ok().map(|c| c.hash)
        };
        let hash_ok = if no_hash {
            true
        } else {
            out.hash_tested += 1;
            let ok = model_hash == Some(r.hash);
            out.hash_agreed += u64::from(ok);
            ok
        };
        let slot = u32::from(r.slot.unwrap_or(0));
        let choice_ok = if r.by_hash() {
            out.choice_tested += 1;
            let ok = listener == Some(slot);
            out.choice_agreed += u64::from(ok);
            ok
        } else {
            out.not_by_hash += 1;
            true
        };
        if (!hash_ok || !choice_ok) && out.mismatches.len() < 5 {
            out.mismatches.push(format!(
                "{} -> {}: kernel hash {:#010x} slot {slot}, model hash {} slot {}",
                r.client,
                r.server,
                r.hash,
                model_hash
                    .map(|h| format!("{h:#010x}"))
                    .unwrap_or_else(|| "none".into()),
                listener
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "none".into()),
            ));
        }
    }
    out
}

/// A record's packet, client first.
fn tuple(r: &KernelRecord) -> Tuple {
    Tuple {
        saddr: r.client.ip(),
        sport: r.client.port(),
        daddr: r.server.ip(),
        dport: r.server.port(),
    }
}

/// Checks the IPv6 records' choices: the model, given the hash the kernel
/// computed (the selection's, or the connection's ehash, which hashes the
/// same four values), must pick the socket the kernel chose. Records the
/// hash alone did not decide are counted in `not_by_hash`; records without
/// a hash (the UDP tracepoint's) or a slot in `ipv6_unchecked`.
fn check_v6(
    out: &mut TraceCheck,
    g: &TraceGroup,
    records: &[&KernelRecord],
    profile: &'static Profile,
) {
    let v6: Vec<&KernelRecord> = records
        .iter()
        .copied()
        .filter(|r| r.client.is_ipv6())
        .collect();
    if v6.is_empty() {
        return;
    }
    // The secrets only make a hash; the pick from a given hash does not read them.
    let model = match Host::spec_group(profile, &g.spec(Keys::default())) {
        Ok(m) => m,
        Err(e) => {
            out.ipv6_unchecked += v6.len() as u64;
            out.mismatches
                .push(format!("IPv6 records not checked: {e}"));
            return;
        }
    };
    for r in v6 {
        let Some(slot) = r
            .slot
            .map(u32::from)
            .filter(|_| r.flags & flags::NO_HASH == 0)
        else {
            out.ipv6_unchecked += 1;
            continue;
        };
        if !r.by_hash() {
            out.not_by_hash += 1;
            continue;
        }
        let listener = model
            .select_with_hash(&tuple(r), r.hash, r.cpu)
            .ok()
            .and_then(|c| c.listener);
        out.choice_tested += 1;
        out.ipv6_choice_tested += 1;
        let ok = listener == Some(slot);
        out.choice_agreed += u64::from(ok);
        if !ok && out.mismatches.len() < 5 {
            out.mismatches.push(format!(
                "{} -> {}: kernel hash {:#010x} slot {slot}, the model's pick from that hash {}",
                r.client,
                r.server,
                r.hash,
                listener
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "none".into()),
            ));
        }
    }
}

/// The refusal's report part.
pub fn refused(reason: String) -> TraceReport {
    TraceReport {
        status: "refused",
        reason: Some(reason),
        symbol: SYMBOL,
        ..TraceReport::default()
    }
}

/// Counts a running tracer has delivered so far: per chosen inode, and
/// lost (ring full, rate).
pub type LiveCounts = (BTreeMap<u64, u64>, u64, u64);

/// A running tracer: the program attached on its own thread.
pub struct Tracer {
    #[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
    thread: std::thread::JoinHandle<Result<Collected, String>>,
    #[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    #[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
    live: std::sync::Arc<std::sync::Mutex<load::Live>>,
    /// `fexit` or `kprobe`.
    pub attach: &'static str,
}

impl Tracer {
    /// Checks that tracing can run ([`refusal`]), then loads and attaches
    /// the program; `Err` says why it cannot.
    #[allow(unused_variables)]
    pub fn start(
        args: &TraceArgs,
        port: u16,
        proto: Proto,
        release: Option<&str>,
    ) -> Result<Tracer, String> {
        if let Some(why) = refusal(release) {
            return Err(why);
        }
        #[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
        {
            use std::sync::atomic::AtomicBool;
            use std::sync::{Arc, Mutex};
            let cfg = load::Config {
                port,
                proto: match proto {
                    Proto::Tcp => libc::IPPROTO_TCP as u16,
                    Proto::Udp => libc::IPPROTO_UDP as u16,
                },
                rate: args.trace_rate,
                ring_bytes: args.trace_buffer * 1024,
                keep: args.trace_keep,
                attach: args.trace_attach,
            };
            let done = Arc::new(AtomicBool::new(false));
            let live = Arc::new(Mutex::new(load::Live::default()));
            let (tx, rx) = std::sync::mpsc::channel();
            let (d, l) = (done.clone(), live.clone());
            let thread = std::thread::spawn(move || load::run(&cfg, &d, tx, &l));
            match rx.recv_timeout(std::time::Duration::from_secs(120)) {
                Ok(Ok(attach)) => Ok(Tracer {
                    thread,
                    done,
                    live,
                    attach,
                }),
                Ok(Err(e)) => {
                    let _ = thread.join();
                    Err(e)
                }
                Err(_) => {
                    done.store(true, std::sync::atomic::Ordering::Relaxed);
                    Err("the program was not attached within 120 s".into())
                }
            }
        }
        #[cfg(not(all(target_os = "linux", feature = "trace", bpf_object)))]
        unreachable!("refusal() refuses where the object is not built in")
    }

    /// What it has delivered so far.
    pub fn live(&self) -> LiveCounts {
        #[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
        if let Ok(l) = self.live.lock() {
            return (l.per_inode.clone(), l.lost_ring_full, l.lost_rate);
        }
        Default::default()
    }

    /// Detaches and gives what was collected.
    pub fn finish(self) -> Result<Collected, String> {
        #[cfg(all(target_os = "linux", feature = "trace", bpf_object))]
        {
            self.done.store(true, std::sync::atomic::Ordering::Relaxed);
            self.thread
                .join()
                .map_err(|_| "the tracer's thread panicked".to_string())?
        }
        #[cfg(not(all(target_os = "linux", feature = "trace", bpf_object)))]
        unreachable!("a tracer is only started where the object is built in")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record written at the offsets clang gives `struct record` (load.rs
    /// asserts them against the skeleton): the decoder must read each field
    /// from its own offset.
    #[test]
    fn decode_reads_each_field_of_the_programs_record() {
        let mut b = vec![0u8; RECORD_SIZE];
        b[0..8].copy_from_slice(&7u64.to_ne_bytes());
        b[8..16].copy_from_slice(&123_456u64.to_ne_bytes());
        b[16..20].copy_from_slice(&0xdead_beefu32.to_ne_bytes());
        b[20..24].copy_from_slice(&1u32.to_ne_bytes());
        b[24..28].copy_from_slice(&[127, 0, 0, 9]);
        b[40..44].copy_from_slice(&[127, 0, 0, 1]);
        b[56..58].copy_from_slice(&40000u16.to_be_bytes());
        b[58..60].copy_from_slice(&8080u16.to_be_bytes());
        b[60..62].copy_from_slice(&4u16.to_ne_bytes());
        b[64..66].copy_from_slice(&0u16.to_ne_bytes());
        b[66..68].copy_from_slice(&3u16.to_ne_bytes());
        b[68..72].copy_from_slice(&99u32.to_ne_bytes());
        b[72..76].copy_from_slice(&flags::EHASH.to_ne_bytes());
        let r = KernelRecord::decode(&b).unwrap();
        assert_eq!(r.t_ns, 7);
        assert_eq!(r.inode, 123_456);
        assert_eq!(r.hash, 0xdead_beef);
        assert_eq!(r.cpu, 1);
        assert_eq!(r.client, "127.0.0.9:40000".parse().unwrap());
        assert_eq!(r.server, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(r.num_socks, 4);
        assert_eq!(r.slot, Some(3));
        assert_eq!(r.reuseport_id, 99);
        assert_eq!(r.flags, flags::EHASH);
        assert!(r.by_hash());
        assert!(KernelRecord::decode(&b[..79]).is_none());
    }

    #[test]
    fn ring_size_is_a_bounded_power_of_two() {
        assert_eq!(ring_kib("4096"), Ok(4096));
        assert!(ring_kib("100").is_err());
        assert!(ring_kib("32").is_err());
        assert!(ring_kib("524288").is_err());
    }
}
