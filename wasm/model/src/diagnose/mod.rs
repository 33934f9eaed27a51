//! A server's sockets on one port, diagnosed: which sockets form a group,
//! who accepts from each, the per-boot key found from who accepted what,
//! every connection predicted, and a verdict with its evidence.
//!
//! The input is a [`Snapshot`]: what `reuseport-agent observe` reads from
//! the kernel's socket tables (sock_diag and `/proc`), or what the page
//! reads from pasted `ss -ltnpe` and `ss -tnpe`. An owner (pid, thread,
//! worker name) is a *label*, never a listener number: which slot of
//! `socks[]` a worker accepts from follows `listen()` order, which no socket
//! table shows, so the key search takes the labels with an unknown map
//! ([`crate::recover::LabelledPlan`]).
//!
//! The work is staged so that the caller can run the 2^32 search in
//! threads or Web Workers with progress and a stop: [`prepare`] groups the
//! sockets and builds the search plan; [`Prepared::search`] takes any part
//! of the key space; [`Prepared::finish`] takes what the parts found and
//! gives the [`Diagnosis`]. Per-worker counts alone (no tuples) go to
//! [`counts::diagnose_counts`].
//!
//! The verdict is data ([`VerdictKind`]); the sentence tables in
//! `messages/` word it per language.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::hash::Keys;
use crate::lookup::Host;
use crate::profile::Profile;
use crate::recover::{Found, LabelledError, LabelledPlan, TARGET, WARN_AT};
use crate::reuseport::{GroupSpec, ReuseportGroup};
use crate::spread::{Skew, SpreadRun};
use crate::tuple::{Proto, Tuple};

pub mod counts;
pub mod paste;

/// Bounds on what one diagnosis takes.
pub const MAX_LISTENERS: usize = 32_768;
/// Connections one snapshot holds at most.
pub const MAX_CONNECTIONS: usize = 1_000_000;
/// Connections the key search takes (the first of each label first): more
/// add nothing once the key is pinned, and every one is still predicted.
pub const SEARCH_CONNECTIONS: usize = 512;
/// Boots simulated for the spread's percentile.
pub const BOOTS: u32 = 1000;

/// A process (or thread) that holds a socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    /// The pid (or the thread id where the thread is what is known).
    pub pid: u32,
    /// The command name (`comm`), as `/proc/PID/comm` or `ss -p` give it.
    #[serde(default)]
    pub comm: String,
}

/// A listening socket on the port (TCP `LISTEN`; UDP: a bound socket).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Listener {
    /// The socket's inode as the socket table shows it, or another stable
    /// name where it does not.
    pub id: String,
    /// The bound address, `ADDR:PORT` (`[ADDR]:PORT` for IPv6).
    pub local: String,
    /// Processes holding a descriptor of it.
    #[serde(default)]
    pub owners: Vec<Owner>,
    /// Pids whose epoll set watches it (from `/proc/PID/fdinfo`), when known:
    /// these accept from it.
    #[serde(default)]
    pub accepting: Option<Vec<u32>>,
    /// How many epoll sets watch it, when known: several in one process
    /// are threads waiting on one socket.
    #[serde(default)]
    pub epoll_sets: Option<u32>,
    /// Connections waiting in its accept queue.
    #[serde(default)]
    pub queue: u32,
    /// Its backlog (the queue's bound).
    #[serde(default)]
    pub backlog: u32,
    /// Packets the socket dropped (`sk_drops`: SYNs to a full queue).
    #[serde(default)]
    pub drops: Option<u64>,
}

/// An established connection to the port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// The client, `ADDR:PORT`.
    pub client: String,
    /// The server side, `ADDR:PORT`.
    pub server: String,
    /// Processes holding it (the worker that accepted it; several after a
    /// fork, none while it waits in an accept queue).
    #[serde(default)]
    pub owners: Vec<Owner>,
}

/// One sample of the listeners' queues and the workers' connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// Milliseconds since the first sample.
    pub t_ms: u64,
    /// Per listener (by [`Listener::id`]): accept queue and drops.
    pub listeners: Vec<ListenerSample>,
    /// Per worker pid: connections held.
    #[serde(default)]
    pub workers: Vec<WorkerSample>,
}

/// A listener at one sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ListenerSample {
    /// [`Listener::id`].
    pub id: String,
    /// Accept queue length.
    pub queue: u32,
    /// Drop counter.
    #[serde(default)]
    pub drops: Option<u64>,
}

/// A worker at one sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct WorkerSample {
    /// The pid.
    pub pid: u32,
    /// Connections it holds.
    pub connections: u64,
}

/// What the socket tables show of one port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// TCP or UDP.
    pub proto: Proto,
    /// The port.
    pub port: u16,
    /// Listening sockets on the port.
    pub listeners: Vec<Listener>,
    /// Connections to the port.
    #[serde(default)]
    pub connections: Vec<Connection>,
    /// Samples over time, oldest first.
    #[serde(default)]
    pub samples: Vec<Sample>,
}

/// Why a snapshot cannot be diagnosed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiagnoseError {
    /// An address that does not parse.
    #[error("{field}: {value:?} is not ADDR:PORT ([ADDR]:PORT for IPv6)")]
    Address {
        /// Where it was (`listeners[2].local`).
        field: String,
        /// What it was.
        value: String,
    },
    /// Over a bound.
    #[error("{what}: {given} given, at most {max} taken")]
    TooMany {
        /// What.
        what: &'static str,
        /// How many.
        given: usize,
        /// The bound.
        max: usize,
    },
    /// A listener on another port.
    #[error("listeners[{index}].local: {local} is not on port {port}, the port diagnosed")]
    OtherPort {
        /// Which.
        index: usize,
        /// Its address.
        local: String,
        /// The port.
        port: u16,
    },
}

/// The verdict's kind: what decides the spread of this port's connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// The spread is what hashing gives for these clients.
    HashSpread,
    /// More skew than hashing explains.
    BeyondHash,
    /// One socket served by several processes: wake-up order decides.
    SharedListener,
    /// A listener whose queue grows or drops SYNs while the others drain.
    StalledListener,
    /// Too few distinct clients for any hash to spread.
    FewClients,
    /// One socket and one process: nothing to balance on this port.
    SingleListener,
    /// No listening socket on the port.
    NoListener,
    /// The input does not decide; the reason says why.
    Undecided,
}

/// Why something could not be decided or found. Data; the sentence tables
/// word it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Reason {
    /// No connection carries its owner (`ss` without `-p`, or not root).
    NoOwners,
    /// No connection to the group.
    NoConnections,
    /// The group's members are held by one process and its connections by
    /// that process too: threads, whose listener a socket table cannot tell.
    OneProcess {
        /// The pid.
        pid: u32,
    },
    /// The model refuses the search (a program, SO_INCOMING_CPU, IPv6, …).
    Refused {
        /// The model's sentence.
        why: String,
    },
    /// More owners than listeners, or another labelling the search refuses.
    Labels {
        /// The model's sentence.
        why: String,
    },
    /// The search was not run (the caller stopped it, or it was not asked).
    NotSearched,
    /// No key fits who accepted what.
    NoKeyFits {
        /// Connections searched with.
        connections: usize,
    },
    /// Several keys fit: more connections would pin one.
    Ambiguous {
        /// Keys found.
        candidates: u64,
        /// Connections of the same owners that would bring the chance of a
        /// false key below 0.001.
        more_needed: Option<u64>,
    },
    /// Several groups on the port (a specific and a wildcard address).
    SeveralGroups {
        /// Their addresses.
        addresses: Vec<String>,
    },
}

/// A listener in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ListenerReport {
    /// [`Listener::id`].
    pub id: String,
    /// Its address.
    pub local: String,
    /// Its place in `socks[]`, when the key and the epoll sets tell it.
    pub slot: Option<u32>,
    /// Holders.
    pub owners: Vec<Owner>,
    /// Pids that accept from it, when known.
    pub accepting: Option<Vec<u32>>,
    /// Accept queue now, and its bound.
    pub queue: u32,
    /// The backlog.
    pub backlog: u32,
    /// Drops.
    pub drops: Option<u64>,
}

/// A connection in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ConnectionReport {
    /// `ADDR:PORT`.
    pub client: String,
    /// `ADDR:PORT`.
    pub server: String,
    /// The one pid holding it, if one.
    pub pid: Option<u32>,
    /// The slot the model sends it to under the key found.
    pub predicted: Option<u32>,
    /// The slot its owner accepts from under the key found.
    pub owner_slot: Option<u32>,
    /// Whether the two agree (`None` without a key or an owner).
    pub agrees: Option<bool>,
}

/// A worker in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "DiagnosisWorker"))]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    /// The pid.
    pub pid: u32,
    /// Its command name.
    pub comm: String,
    /// Connections it holds.
    pub connections: u64,
    /// The slot it accepts from, under the key found.
    pub slot: Option<u32>,
}

/// The key found.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct KeyReport {
    /// The initval (`secret + net_hash_mix`), `0x…`.
    pub initval: String,
    /// Keys that fit (1 when pinned).
    pub candidates: u64,
    /// Expected keys that fit by chance.
    pub expected_false_matches: f64,
    /// Connections the search used.
    pub connections: usize,
}

/// Where the observed spread falls among simulated boots.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct SpreadReport {
    /// Skew of the per-worker counts (listeners without a worker count 0).
    pub observed: Skew,
    /// Percentile rank of the observed max/min among boots.
    pub percentile: f64,
    /// Boots simulated.
    pub boots: u32,
    /// Workers hashing would leave empty on average for this many distinct
    /// clients: `n·(1 − 1/n)^m`.
    pub expected_empty: f64,
}

/// The verdict, with the pids it is about.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// What decides.
    pub kind: VerdictKind,
    /// The pids it names.
    pub pids: Vec<u32>,
    /// Why it could not say more, where it could not.
    pub reason: Option<Reason>,
    /// Listeners it names, by id.
    pub listeners: Vec<String>,
}

/// The verdict as the sentence tables say it (`diagnosis_verdict.*` in
/// `messages/`): its kind, with the pids and listeners it names as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum DiagnosisVerdict {
    /// See [`VerdictKind::HashSpread`].
    HashSpread {
        /// The pids, comma-separated.
        pids: String,
    },
    /// See [`VerdictKind::BeyondHash`].
    BeyondHash {
        /// The pids, comma-separated.
        pids: String,
    },
    /// See [`VerdictKind::SharedListener`].
    SharedListener {
        /// The pids, comma-separated.
        pids: String,
    },
    /// See [`VerdictKind::StalledListener`].
    StalledListener {
        /// The pids, comma-separated.
        pids: String,
        /// The listeners, comma-separated.
        listeners: String,
    },
    /// See [`VerdictKind::FewClients`].
    FewClients,
    /// See [`VerdictKind::SingleListener`].
    SingleListener,
    /// See [`VerdictKind::NoListener`].
    NoListener,
    /// See [`VerdictKind::Undecided`].
    Undecided,
}

impl Verdict {
    /// The verdict as a message for the sentence tables.
    pub fn message(&self) -> DiagnosisVerdict {
        let pids = self
            .pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        match self.kind {
            VerdictKind::HashSpread => DiagnosisVerdict::HashSpread { pids },
            VerdictKind::BeyondHash => DiagnosisVerdict::BeyondHash { pids },
            VerdictKind::SharedListener => DiagnosisVerdict::SharedListener { pids },
            VerdictKind::StalledListener => DiagnosisVerdict::StalledListener {
                pids,
                listeners: self.listeners.join(", "),
            },
            VerdictKind::FewClients => DiagnosisVerdict::FewClients,
            VerdictKind::SingleListener => DiagnosisVerdict::SingleListener,
            VerdictKind::NoListener => DiagnosisVerdict::NoListener,
            VerdictKind::Undecided => DiagnosisVerdict::Undecided,
        }
    }
}

/// The whole diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// The kernel profile whose rules were used.
    pub kernel: String,
    /// TCP or UDP.
    pub proto: Proto,
    /// The port.
    pub port: u16,
    /// The group's address (the listeners' common local address).
    pub group: Option<String>,
    /// Listeners on the port.
    pub listeners: Vec<ListenerReport>,
    /// Connections to the group.
    pub connections: Vec<ConnectionReport>,
    /// Workers, by pid.
    pub workers: Vec<WorkerReport>,
    /// The key, or `null` with `keyReason`.
    pub key: Option<KeyReport>,
    /// Why there is no key.
    pub key_reason: Option<Reason>,
    /// Connections whose owner matches the prediction, of those with both.
    pub agreement: Option<(u64, u64)>,
    /// The spread among boots.
    pub spread: Option<SpreadReport>,
    /// The verdict.
    pub verdict: Verdict,
}

/// A snapshot grouped and ready for the key search.
#[derive(Debug, Clone)]
pub struct Prepared {
    profile: &'static Profile,
    snap: Snapshot,
    /// The listeners of the group diagnosed (indices into `snap.listeners`).
    members: Vec<usize>,
    group: Option<ReuseportGroup>,
    /// Per connection: its tuple as the group sees it, and its one pid.
    conns: Vec<(Tuple, Option<u32>)>,
    plan: Option<LabelledPlan>,
    /// Why there is no plan.
    no_plan: Option<Reason>,
    groups_seen: Vec<String>,
}

fn parse_addr(field: String, value: &str) -> Result<SocketAddr, DiagnoseError> {
    let v = value.trim();
    let v = v.strip_prefix("*:").map(|p| format!("0.0.0.0:{p}"));
    let v = v.as_deref().unwrap_or(value.trim());
    v.parse().map_err(|_| DiagnoseError::Address {
        field,
        value: value.to_string(),
    })
}

fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(a),
        a => a,
    }
}

/// Whether a bound address covers a destination.
fn covers(bind: IpAddr, dst: IpAddr) -> bool {
    bind.is_unspecified() || canonical(bind) == canonical(dst)
}

/// Groups the snapshot's sockets, labels its connections and builds the key
/// search for `profile`'s rules.
pub fn prepare(profile: &'static Profile, snap: &Snapshot) -> Result<Prepared, DiagnoseError> {
    if snap.listeners.len() > MAX_LISTENERS {
        return Err(DiagnoseError::TooMany {
            what: "listeners",
            given: snap.listeners.len(),
            max: MAX_LISTENERS,
        });
    }
    if snap.connections.len() > MAX_CONNECTIONS {
        return Err(DiagnoseError::TooMany {
            what: "connections",
            given: snap.connections.len(),
            max: MAX_CONNECTIONS,
        });
    }
    let mut locals = Vec::with_capacity(snap.listeners.len());
    for (i, l) in snap.listeners.iter().enumerate() {
        let a = parse_addr(format!("listeners[{i}].local"), &l.local)?;
        if a.port() != snap.port {
            return Err(DiagnoseError::OtherPort {
                index: i,
                local: l.local.clone(),
                port: snap.port,
            });
        }
        locals.push(a.ip());
    }
    let mut conns = Vec::with_capacity(snap.connections.len());
    for (i, c) in snap.connections.iter().enumerate() {
        let client = parse_addr(format!("connections[{i}].client"), &c.client)?;
        let server = parse_addr(format!("connections[{i}].server"), &c.server)?;
        conns.push((client, server));
    }
    // The group diagnosed: the local address most connections reach (a
    // specific bind wins over the wildcard, as the lookup scores it); with no
    // connection, the address with most listeners.
    let mut addresses: Vec<IpAddr> = locals.clone();
    addresses.sort();
    addresses.dedup();
    let groups_seen: Vec<String> = addresses
        .iter()
        .map(|a| SocketAddr::new(*a, snap.port).to_string())
        .collect();
    let reach = |a: IpAddr| -> usize {
        conns
            .iter()
            .filter(|(_, s)| {
                covers(a, s.ip())
                    && !addresses
                        .iter()
                        .any(|b| !b.is_unspecified() && a.is_unspecified() && covers(*b, s.ip()))
            })
            .count()
    };
    let chosen = addresses.iter().copied().max_by_key(|&a| {
        (
            reach(a),
            locals.iter().filter(|&&l| l == a).count(),
            !a.is_unspecified(),
        )
    });
    let members: Vec<usize> = match chosen {
        Some(a) => (0..locals.len()).filter(|&i| locals[i] == a).collect(),
        None => Vec::new(),
    };
    let mut prepared = Prepared {
        profile,
        snap: snap.clone(),
        members: members.clone(),
        group: None,
        conns: Vec::new(),
        plan: None,
        no_plan: None,
        groups_seen,
    };
    let Some(bind) = chosen else {
        return Ok(prepared);
    };
    let spec = GroupSpec::new(
        snap.proto,
        members.len() as u32,
        bind,
        snap.port,
        Keys::default(),
    );
    let group = match Host::shorthand_group(profile, &spec) {
        Ok(g) => g,
        Err(e) => {
            prepared.no_plan = Some(Reason::Refused { why: e.to_string() });
            return Ok(prepared);
        }
    };
    for (i, (client, server)) in conns.iter().enumerate() {
        let t = Tuple {
            saddr: client.ip(),
            sport: client.port(),
            daddr: server.ip(),
            dport: server.port(),
        };
        let pids: BTreeSet<u32> = snap.connections[i].owners.iter().map(|o| o.pid).collect();
        let pid = (pids.len() == 1).then(|| *pids.iter().next().expect("one"));
        if let Ok(t) = group.accepts(&t) {
            prepared.conns.push((t, pid));
        }
    }
    prepared.group = Some(group.clone());
    prepared.no_plan = plan_reason(&prepared, &group);
    if prepared.no_plan.is_none() {
        match build_plan(&group, &prepared.conns) {
            Ok(p) => prepared.plan = Some(p),
            Err(r) => prepared.no_plan = Some(r),
        }
    }
    Ok(prepared)
}

/// Why the labelled search cannot run on this group, if it cannot.
fn plan_reason(p: &Prepared, group: &ReuseportGroup) -> Option<Reason> {
    if p.members.len() < 2 {
        return None;
    }
    if p.conns.is_empty() {
        return Some(Reason::NoConnections);
    }
    let pids: BTreeSet<u32> = p.conns.iter().filter_map(|c| c.1).collect();
    if pids.is_empty() {
        return Some(Reason::NoOwners);
    }
    if pids.len() == 1 {
        let pid = *pids.iter().next().expect("one");
        // Every member held by that one process: its threads share them.
        let holds_all = p.members.iter().all(|&i| {
            p.snap.listeners[i].owners.is_empty()
                || p.snap.listeners[i].owners.iter().any(|o| o.pid == pid)
        });
        if holds_all && p.conns.len() > 1 {
            return Some(Reason::OneProcess { pid });
        }
    }
    if let Err(e) = crate::recover::check_group(group) {
        return Some(Reason::Refused { why: e.to_string() });
    }
    None
}

/// The plan over the labelled connections: each label's connections
/// interleaved, so that a bounded number still covers every label.
fn build_plan(
    group: &ReuseportGroup,
    conns: &[(Tuple, Option<u32>)],
) -> Result<LabelledPlan, Reason> {
    let mut per: BTreeMap<u32, Vec<&Tuple>> = BTreeMap::new();
    for (t, pid) in conns {
        if let Some(pid) = pid {
            per.entry(*pid).or_default().push(t);
        }
    }
    let mut plan = LabelledPlan::new(group).map_err(|e| Reason::Refused { why: e.to_string() })?;
    let deepest = per.values().map(Vec::len).max().unwrap_or(0);
    let mut taken = 0;
    'rounds: for round in 0..deepest {
        for (pid, ts) in &per {
            if let Some(t) = ts.get(round) {
                match plan.add(t, &pid.to_string()) {
                    Ok(_) => {}
                    Err(LabelledError::Recover(e)) => {
                        return Err(Reason::Refused { why: e.to_string() })
                    }
                    Err(e) => return Err(Reason::Labels { why: e.to_string() }),
                }
                taken += 1;
                if taken >= SEARCH_CONNECTIONS {
                    break 'rounds;
                }
            }
        }
    }
    Ok(plan)
}

impl Prepared {
    /// Whether there is a key to search for.
    pub fn searchable(&self) -> bool {
        self.plan.is_some()
    }

    /// Why there is no search, if there is none.
    pub fn no_search(&self) -> Option<&Reason> {
        self.no_plan.as_ref()
    }

    /// The plan, for callers that drive the search themselves.
    pub fn plan(&self) -> Option<&LabelledPlan> {
        self.plan.as_ref()
    }

    /// Searches a part of the key space (see [`LabelledPlan::search`]).
    pub fn search(&self, range: Range<u64>, found: &mut Found) {
        if let Some(p) = &self.plan {
            p.search(crate::isa::Isa::Best, range, found);
        }
    }

    /// The diagnosis, given what the search found over the whole space
    /// (`None`: not searched, or stopped before the end).
    pub fn finish(&self, found: Option<&Found>) -> Diagnosis {
        finish(self, found)
    }
}

fn finish(p: &Prepared, found: Option<&Found>) -> Diagnosis {
    let snap = &p.snap;
    let members: Vec<&Listener> = p.members.iter().map(|&i| &snap.listeners[i]).collect();
    let n = members.len() as u32;
    // The key: pinned when one candidate fits, verified the slow way.
    let mut key_reason = p.no_plan.clone();
    let mut key = None;
    let mut map: BTreeMap<u32, u32> = BTreeMap::new();
    let mut keyed_group = None;
    if let (Some(plan), Some(group)) = (&p.plan, &p.group) {
        match found {
            None => key_reason = Some(Reason::NotSearched),
            Some(f) => {
                let ok: Vec<u32> = f
                    .values
                    .iter()
                    .copied()
                    .filter(|&iv| plan.verify(iv).is_none())
                    .collect();
                let e = plan.expected_false_matches();
                if f.count == 0 || ok.is_empty() {
                    key_reason = Some(Reason::NoKeyFits {
                        connections: plan.observations().count(),
                    });
                } else if f.count == 1 && e < WARN_AT {
                    let iv = ok[0];
                    for (i, s) in plan.map(iv).into_iter().enumerate() {
                        if let (Some(s), Ok(pid)) = (s, plan.labels()[i].parse::<u32>()) {
                            map.insert(pid, s);
                        }
                    }
                    let mut g = group.clone();
                    g.set_keys(Keys { v4: iv, ..g.keys() });
                    keyed_group = Some(g);
                    key = Some(KeyReport {
                        initval: format!("{iv:#010x}"),
                        candidates: 1,
                        expected_false_matches: e,
                        connections: plan.observations().count(),
                    });
                } else {
                    key_reason = Some(Reason::Ambiguous {
                        candidates: f.count,
                        more_needed: plan.more_needed(TARGET),
                    });
                }
            }
        }
    }
    // Listeners: the slot of a listener whose accepting pids map to one slot.
    let listeners: Vec<ListenerReport> = snap
        .listeners
        .iter()
        .map(|l| {
            let slot = l.accepting.as_ref().and_then(|pids| {
                let slots: BTreeSet<u32> =
                    pids.iter().filter_map(|p| map.get(p).copied()).collect();
                (slots.len() == 1).then(|| *slots.iter().next().expect("one"))
            });
            ListenerReport {
                id: l.id.clone(),
                local: l.local.clone(),
                slot,
                owners: l.owners.clone(),
                accepting: l.accepting.clone(),
                queue: l.queue,
                backlog: l.backlog,
                drops: l.drops,
            }
        })
        .collect();
    // Connections, each predicted under the key.
    let socks: Vec<u32> = keyed_group
        .as_ref()
        .and_then(|g| g.sock_array().map(|s| s.listening().to_vec()))
        .unwrap_or_default();
    let mut agree = (0u64, 0u64);
    let connections: Vec<ConnectionReport> = p
        .conns
        .iter()
        .map(|(t, pid)| {
            let predicted = keyed_group.as_ref().and_then(|g| {
                let l = g.select(t, 0).ok()?.listener?;
                socks.iter().position(|&s| s == l).map(|s| s as u32)
            });
            let owner_slot = pid.and_then(|pid| map.get(&pid).copied());
            let agrees = match (predicted, owner_slot) {
                (Some(a), Some(b)) => Some(a == b),
                _ => None,
            };
            if let Some(a) = agrees {
                agree.1 += 1;
                agree.0 += a as u64;
            }
            ConnectionReport {
                client: sa(t.saddr, t.sport),
                server: sa(t.daddr, t.dport),
                pid: *pid,
                predicted,
                owner_slot,
                agrees,
            }
        })
        .collect();
    // Workers: every pid holding a connection, with its comm.
    let mut comm: BTreeMap<u32, String> = BTreeMap::new();
    for o in snap
        .listeners
        .iter()
        .flat_map(|l| &l.owners)
        .chain(snap.connections.iter().flat_map(|c| &c.owners))
    {
        comm.entry(o.pid).or_insert_with(|| o.comm.clone());
    }
    let mut per_pid: BTreeMap<u32, u64> = BTreeMap::new();
    for (_, pid) in &p.conns {
        if let Some(pid) = pid {
            *per_pid.entry(*pid).or_default() += 1;
        }
    }
    let workers: Vec<WorkerReport> = per_pid
        .iter()
        .map(|(&pid, &c)| WorkerReport {
            pid,
            comm: comm.get(&pid).cloned().unwrap_or_default(),
            connections: c,
            slot: map.get(&pid).copied(),
        })
        .collect();
    let spread = spread_report(p, n, &per_pid);
    let verdict = verdict(
        p,
        &members,
        &per_pid,
        key.is_some(),
        agree,
        key_reason.as_ref(),
        spread.as_ref(),
    );
    Diagnosis {
        kernel: p.profile.release.to_string(),
        proto: snap.proto,
        port: snap.port,
        group: p.members.first().map(|&i| snap.listeners[i].local.clone()),
        listeners,
        connections,
        workers,
        key,
        key_reason,
        agreement: (agree.1 > 0).then_some(agree),
        spread,
        verdict,
    }
}

fn sa(a: IpAddr, port: u16) -> String {
    SocketAddr::new(a, port).to_string()
}

/// The per-worker counts placed among simulated boots of these clients.
fn spread_report(p: &Prepared, n: u32, per_pid: &BTreeMap<u32, u64>) -> Option<SpreadReport> {
    let group = p.group.as_ref()?;
    if n < 2 || per_pid.is_empty() || per_pid.len() as u32 > n {
        return None;
    }
    let tuples: Vec<Tuple> = p
        .conns
        .iter()
        .filter(|c| c.1.is_some())
        .map(|c| c.0)
        .collect();
    let distinct: BTreeSet<(IpAddr, u16)> = tuples.iter().map(|t| (t.saddr, t.sport)).collect();
    let m = distinct.len() as f64;
    let expected_empty = n as f64 * (1.0 - 1.0 / n as f64).powf(m);
    let mut counts: Vec<u64> = per_pid.values().copied().collect();
    counts.resize(n as usize, 0);
    // Boots bounded so that a million connections stay within ~2·10^8 selections.
    let boots = (200_000_000u64 / tuples.len().max(1) as u64).clamp(50, BOOTS as u64) as u32;
    let mut run = SpreadRun::new(group.clone(), &tuples, 0x5eed_0b5e).ok()?;
    run.step(boots);
    let c = run.compare(&counts).ok()?;
    Some(SpreadReport {
        observed: c.observed,
        percentile: c.max_min_percentile,
        boots,
        expected_empty,
    })
}

/// The listeners whose queue grows or that drop while another drains.
fn stalled(members: &[&Listener], samples: &[Sample]) -> Vec<String> {
    let mut out = Vec::new();
    let last_of = |id: &str| -> Option<&ListenerSample> {
        samples.last()?.listeners.iter().find(|s| s.id == id)
    };
    let first_of = |id: &str| -> Option<&ListenerSample> {
        samples.first()?.listeners.iter().find(|s| s.id == id)
    };
    let queue_now = |l: &Listener| last_of(&l.id).map(|s| s.queue).unwrap_or(l.queue);
    let draining = members.iter().any(|l| queue_now(l) == 0);
    if !draining {
        return out;
    }
    for l in members {
        let now = queue_now(l);
        let grew = match (first_of(&l.id), last_of(&l.id)) {
            (Some(a), Some(b)) if samples.len() >= 2 => {
                b.queue > a.queue || b.drops.unwrap_or(0) > a.drops.unwrap_or(0)
            }
            // One look: a full queue beside an empty one.
            _ => l.backlog > 0 && now >= l.backlog,
        };
        if now > 0 && grew {
            out.push(l.id.clone());
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn verdict(
    p: &Prepared,
    members: &[&Listener],
    per_pid: &BTreeMap<u32, u64>,
    keyed: bool,
    agree: (u64, u64),
    key_reason: Option<&Reason>,
    spread: Option<&SpreadReport>,
) -> Verdict {
    let v = |kind, pids: Vec<u32>, reason: Option<Reason>, listeners: Vec<String>| Verdict {
        kind,
        pids,
        reason,
        listeners,
    };
    if members.is_empty() {
        return v(VerdictKind::NoListener, vec![], None, vec![]);
    }
    let holders = |l: &Listener| -> Vec<u32> {
        let mut pids: Vec<u32> = match &l.accepting {
            Some(a) => a.clone(),
            None => l.owners.iter().map(|o| o.pid).collect(),
        };
        pids.sort_unstable();
        pids.dedup();
        pids
    };
    if members.len() == 1 {
        let l = members[0];
        let accepted: Vec<u32> = per_pid.keys().copied().collect();
        // Who waits on the one socket: the epoll sets that watch it when
        // known; else the processes that took its connections; else, with
        // none taken yet, its holders.
        let waiting = match &l.accepting {
            Some(_) => holders(l),
            None if !accepted.is_empty() => accepted,
            None => holders(l),
        };
        // Several waiters: processes, or threads of one process each with
        // its own epoll set.
        if waiting.len() >= 2 || l.epoll_sets.is_some_and(|n| n >= 2) {
            return v(
                VerdictKind::SharedListener,
                waiting,
                None,
                vec![l.id.clone()],
            );
        }
        return v(
            VerdictKind::SingleListener,
            waiting,
            None,
            vec![l.id.clone()],
        );
    }
    let stalled = stalled(members, &p.snap.samples);
    if !stalled.is_empty() {
        let mut pids: Vec<u32> = members
            .iter()
            .filter(|l| stalled.contains(&l.id))
            .flat_map(|l| holders(l))
            .collect();
        pids.sort_unstable();
        pids.dedup();
        // Without epoll sets, a listener's holders include processes that
        // accept nothing (nginx's master): keep those that hold connections.
        let working: Vec<u32> = pids
            .iter()
            .copied()
            .filter(|p| per_pid.contains_key(p))
            .collect();
        if !working.is_empty() {
            pids = working;
        }
        return v(VerdictKind::StalledListener, pids, None, stalled);
    }
    if let Some(r @ Reason::OneProcess { .. }) = key_reason {
        // Per-pid counts are not per-listener counts here.
        return v(VerdictKind::Undecided, vec![], Some(r.clone()), vec![]);
    }
    let several = (p.groups_seen.len() > 1).then(|| Reason::SeveralGroups {
        addresses: p.groups_seen.clone(),
    });
    let Some(spread) = spread else {
        let reason = key_reason.cloned().or(several).or(Some(Reason::NoOwners));
        return v(VerdictKind::Undecided, vec![], reason, vec![]);
    };
    let pids: Vec<u32> = per_pid.keys().copied().collect();
    if spread.expected_empty >= 1.0 {
        return v(VerdictKind::FewClients, pids, None, vec![]);
    }
    if keyed && agree.0 == agree.1 {
        // Every connection where the key sends it: hashing decided.
        return v(VerdictKind::HashSpread, pids, None, vec![]);
    }
    if keyed {
        // The key fits the searched connections but not all: name the pids
        // of those that went elsewhere.
        return v(VerdictKind::BeyondHash, pids, None, vec![]);
    }
    match key_reason {
        Some(r @ Reason::NoKeyFits { .. }) => {
            v(VerdictKind::BeyondHash, pids, Some(r.clone()), vec![])
        }
        r => {
            let kind = if spread.percentile <= 95.0 {
                VerdictKind::HashSpread
            } else {
                VerdictKind::BeyondHash
            };
            v(kind, pids, r.cloned(), vec![])
        }
    }
}

#[cfg(test)]
mod tests;
