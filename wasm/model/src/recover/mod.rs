//! Recovering the IPv4 hash key from observed selections.
//!
//! The kernel's IPv4 reuseport hash is keyed by one 32-bit value, the
//! initval `secret + net_hash_mix(net)` (kernel-history.md §2.1, §2.5), and
//! a group of `n` listening members hands the packet to
//! `socks[reciprocal_scale(hash, n)]` (§3.4). An observation, "this 4-tuple
//! went to listener L", therefore says: the hash of the tuple lies in the
//! band of 32-bit values that `reciprocal_scale` maps to L's slot. This
//! module turns observations into such constraints using the model itself
//! ([`ReuseportGroup::accepts`], [`ReuseportGroup::hashed_laddr`], the
//! group's `socks[]`), and finds every initval in a range that satisfies all
//! of them ([`search`]).
//!
//! Only what is picked by the hash alone can be inverted this way. Refused,
//! with the reason: the reservoir eras (TCP up to 4.5, UDP up to 4.4), a
//! 6.2+ group where a member set `SO_INCOMING_CPU` (the receiving CPU
//! decides), a group with a BPF program attached, a 5.4+ group with
//! connected members (the ring scan steps over
//! them), and IPv6 packets, whose hash has two independent 32-bit keys
//! (2^64 candidates).
//!
//! The search is pure: it computes over the range it is given and returns.
//! Threads, progress and cancellation are the caller's business: split the
//! 2^32 range into chunks and call [`Plan::search`] on each.
//!
//! ## The search loop
//!
//! Candidates are taken in blocks of [`BLOCK`] consecutive initvals. For the
//! first (most selective) observation the hash is computed for every
//! candidate of the block, 16 lanes at a time (the model's
//! [`hash_v4`](crate::hash::hash_v4), folded to one form per monomorphic copy as in
//! [`crate::batch`]); the survivors, about `1/n` of them, are packed into a
//! buffer. Each further observation is evaluated on the packed survivors
//! only, 16 at a time, and packs them again, until the buffer is empty or
//! the observations run out. So every candidate costs about
//! `1 + 1/n + 1/n² + …` hash evaluations. On x86-64 the loop is compiled a
//! second time for AVX-512, where packing is one `vpcompressd` per 16
//! lanes, and picked at run time ([`isa_used`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::Range;
use std::sync::OnceLock;

use thiserror::Error;

use crate::error::SetupError;
use crate::hash::Keys;
use crate::isa::Isa;
use crate::jhash::{reciprocal_scale, JhashForm};
use crate::profile::{GroupScan, Profile, Release, Selection, V4Form};
use crate::reuseport::{MemberState, ReuseportGroup};
use crate::tuple::{v4_word, Proto, Tuple};

mod labelled;
mod sweep;
pub use labelled::{LabelledError, LabelledPlan, MAX_LABELS};
pub use sweep::{isa_used, search};

/// Number of 32-bit initvals: the whole search space.
pub const SPACE: u64 = 1 << 32;

/// Candidates a search lists at most (it counts them all).
pub const LIST_CAP: usize = 1000;
/// `expected_false_matches` at or above this means "more evidence is needed".
pub const WARN_AT: f64 = 0.01;
/// The level [`Plan::more_needed`] is asked to reach: below it the key found
/// is, with that probability of error, the only one.
pub const TARGET: f64 = 0.001;

/// Candidates per block of the search loop.
pub const BLOCK: usize = 8192;

/// Lanes evaluated together.
const LANES: usize = 16;

/// Why observations cannot be used for recovery.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecoverError {
    /// An IPv6 packet.
    #[error("{tuple} is IPv6: the IPv6 reuseport hash is keyed by two independent 32-bit values (the outer initval and the inner key of the foreign-address hash; on 7.2 the inner secret and net_hash_mix), so there are 2^64 candidates, out of reach of an exhaustive search; observe IPv4 traffic (or ::ffff:a.b.c.d clients) to recover the IPv4 key")]
    Ipv6 {
        /// The tuple.
        tuple: String,
    },
    /// Reservoir era: no group array.
    #[error("on {release} a {proto} group has no socks[] array: the member is picked by the reservoir scan over the listener chain (TCP up to 4.5, UDP up to 4.4), not by socks[reciprocal_scale(hash, n)], so observations cannot be inverted slot by slot; recovery needs TCP 4.6+ or UDP 4.5+")]
    Reservoir {
        /// The profile.
        release: Release,
        /// The protocol.
        proto: &'static str,
    },
    /// 6.2+ with SO_INCOMING_CPU set on some member.
    #[error("{count} member(s) set SO_INCOMING_CPU: on {release} (6.2+ ring scan) the receiving CPU, not the hash alone, picks the member, so an observation does not fix the hash's slot; observe a group without SO_INCOMING_CPU")]
    IncomingCpu {
        /// The profile.
        release: Release,
        /// Members with the option set.
        count: u32,
    },
    /// 5.4+ with connected members.
    #[error("listener {listener} is connected: on {release} (5.4+) select-by-hash steps over connected members, so a slot no longer maps to one listener; observe a group without connected members")]
    Connected {
        /// The profile.
        release: Release,
        /// A connected member.
        listener: u32,
    },
    /// A program attached to the group picks the member.
    #[error("a program is attached to the group ({program}): it, not socks[reciprocal_scale(hash, n)], picks the member (the hash is only a fallback), so observations cannot be inverted slot by slot; observe a group without a program")]
    Program {
        /// The program, described.
        program: String,
    },
    /// The group has no listening member.
    #[error(
        "the group has no listening member: nothing is selected, so there is nothing to observe"
    )]
    NoMembers,
    /// The packet does not reach the group.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The observed listener does not exist.
    #[error("listener {listener} does not exist: the group has {count} listener(s), numbered from 0 (the last is {})", .count.saturating_sub(1))]
    NoSuchListener {
        /// The listener named.
        listener: u32,
        /// How many there are.
        count: u32,
    },
    /// The observed listener cannot receive anything.
    #[error("listener {listener} is {state}, not listening: no packet can reach it, so the observation contradicts the group described (check --closed and the listener numbers)")]
    NotListening {
        /// The listener named.
        listener: u32,
        /// Its state.
        state: &'static str,
    },
    /// Two observations hash the same inputs but name different slots.
    #[error("this packet hashes exactly like observation {earlier} (same addresses and ports, same group size), yet it names slot {slot} where that one named slot {earlier_slot}: no key explains both; the observations mix groups, boots or network namespaces, or the group options are wrong")]
    Contradiction {
        /// Index of the earlier observation (0-based, in the order added).
        earlier: usize,
        /// Its slot.
        earlier_slot: u32,
        /// The slot of this one.
        slot: u32,
    },
    /// Groups of different kernels or protocols in one plan.
    #[error("observations of {first} and {other} cannot share one key: each protocol has its own secret and each boot its own values; recover them separately")]
    Mixed {
        /// The first group's kernel and protocol.
        first: String,
        /// The other's.
        other: String,
    },
}

/// The hashes that select one slot of an `n`-member group: `h` with
/// `h - lo` (wrapping) below `width`, that is `reciprocal_scale(h, n) == slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    /// The smallest such hash.
    pub lo: u32,
    /// How many 32-bit hashes select the slot (`2^32` when `n == 1`).
    pub width: u64,
}

impl Band {
    /// The band of `slot` in an `n`-member group, found from
    /// [`reciprocal_scale`] itself (the first hash at or past each slot).
    pub fn of(slot: u32, n: u32) -> Band {
        assert!(n > 0 && slot < n, "slot {slot} of a {n}-member group");
        let first_at = |s: u32| -> u64 {
            // The smallest h with reciprocal_scale(h, n) >= s (monotone in h).
            let (mut lo, mut hi) = (0u64, SPACE);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if reciprocal_scale(mid as u32, n) >= s {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            lo
        };
        let lo = first_at(slot);
        let hi = if slot + 1 == n {
            SPACE
        } else {
            first_at(slot + 1)
        };
        Band {
            lo: lo as u32,
            width: hi - lo,
        }
    }

    /// Whether hash `h` selects this slot.
    #[inline(always)]
    pub fn contains(&self, h: u32) -> bool {
        (h.wrapping_sub(self.lo) as u64) < self.width
    }

    /// The probability that a random hash lands here: `width / 2^32`.
    pub fn probability(&self) -> f64 {
        self.width as f64 / SPACE as f64
    }
}

/// One observation as the search loop consumes it: the words the hash
/// reads and the band of the observed slot. Only observations that
/// constrain the key (`n >= 2`) become an `Obs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Obs {
    /// The hashed local address, as the kernel's raw word ([`v4_word`]).
    pub laddr: u32,
    /// The client address, raw word.
    pub faddr: u32,
    /// The local port (number).
    pub lport: u16,
    /// The client port (number; [`hash_v4`](crate::hash::hash_v4) takes it raw).
    pub sport: u16,
    /// The band's first hash.
    pub lo: u32,
    /// The band's width (below 2^32 because `n >= 2`).
    pub width: u32,
}

/// One observed packet, checked against the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The tuple, with `::ffff:` addresses made IPv4.
    pub tuple: Tuple,
    /// The listener that received it.
    pub listener: u32,
    /// Its slot in `socks[]`.
    pub slot: u32,
    /// Listening members (`num_socks`).
    pub members: u32,
    /// The local address the hash reads (0.0.0.0 for a 5.0+ wildcard group).
    pub hashed_laddr: IpAddr,
    /// The hashes that select `slot`.
    pub band: Band,
    /// Index of the group (see [`Plan::add_group`]).
    pub group: usize,
    /// The constraint, or `None` for a one-member group (no information).
    pub obs: Option<Obs>,
}

/// Checks that a group picks by the hash alone (see the module docs).
pub fn check_group(group: &ReuseportGroup) -> Result<(), RecoverError> {
    let p = group.profile();
    if group.selection() == Selection::Reservoir {
        return Err(RecoverError::Reservoir {
            release: p.release,
            proto: proto_name(group.proto()),
        });
    }
    if let Some(program) = group.program() {
        return Err(RecoverError::Program {
            program: format!("{program:?}"),
        });
    }
    if p.group_scan == GroupScan::SkipConnectedPreferCpu && group.incoming_cpu_count() > 0 {
        return Err(RecoverError::IncomingCpu {
            release: p.release,
            count: group.incoming_cpu_count(),
        });
    }
    if p.group_scan != GroupScan::Plain {
        if let Some(l) = group
            .listening()
            .iter()
            .find(|&&l| group.members()[l as usize].connected)
        {
            return Err(RecoverError::Connected {
                release: p.release,
                listener: *l,
            });
        }
    }
    if group.listening().is_empty() {
        return Err(RecoverError::NoMembers);
    }
    Ok(())
}

fn proto_name(p: Proto) -> &'static str {
    match p {
        Proto::Tcp => "TCP",
        Proto::Udp => "UDP",
    }
}

fn state_word(s: MemberState) -> &'static str {
    match s {
        MemberState::Listening => "listening",
        MemberState::ClosedTail => "shut down (in the closed tail)",
        MemberState::ShutDown => "shut down",
        MemberState::Closed => "closed",
    }
}

/// Turns "`t` went to `listener`" into a constraint, with the model's rules
/// for which packets reach the group, which local address is hashed and
/// which slot holds the listener. `group` must pass [`check_group`].
pub fn observe(
    group: &ReuseportGroup,
    t: &Tuple,
    listener: u32,
) -> Result<Observation, RecoverError> {
    let v6 = |t: &Tuple| RecoverError::Ipv6 {
        tuple: t.to_string(),
    };
    if matches!(t.daddr, IpAddr::V6(d) if d.to_ipv4_mapped().is_none()) {
        return Err(v6(t));
    }
    let t = group.accepts(t)?;
    let (laddr, _) = group.hashed_laddr(&t);
    let (IpAddr::V4(l), IpAddr::V4(f)) = (laddr, t.saddr) else {
        return Err(v6(&t));
    };
    let socks = group.sock_array().ok_or(RecoverError::Reservoir {
        release: group.profile().release,
        proto: proto_name(group.proto()),
    })?;
    let socks = socks.listening();
    let Some(slot) = socks.iter().position(|&s| s == listener) else {
        let members = group.members();
        return Err(match members.get(listener as usize) {
            None => RecoverError::NoSuchListener {
                listener,
                count: members.len() as u32,
            },
            Some(m) => RecoverError::NotListening {
                listener,
                state: state_word(m.state),
            },
        });
    };
    let (slot, n) = (slot as u32, socks.len() as u32);
    let band = Band::of(slot, n);
    let obs = (n >= 2).then(|| Obs {
        laddr: v4_word(l),
        faddr: v4_word(f),
        lport: t.dport,
        sport: t.sport,
        lo: band.lo,
        width: band.width as u32,
    });
    Ok(Observation {
        tuple: t,
        listener,
        slot,
        members: n,
        hashed_laddr: laddr,
        band,
        group: 0,
        obs,
    })
}

/// Candidates found: how many, and the first `cap` of them in search order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Every candidate that satisfied all observations.
    pub count: u64,
    /// The first of them, at most `cap`.
    pub values: Vec<u32>,
    /// How many values to keep.
    pub cap: usize,
}

impl Found {
    /// Keeps up to `cap` values; counts all.
    pub fn new(cap: usize) -> Found {
        Found {
            count: 0,
            values: Vec::new(),
            cap,
        }
    }

    fn extend(&mut self, v: &[u32]) {
        self.count += v.len() as u64;
        let room = self.cap.saturating_sub(self.values.len());
        self.values.extend_from_slice(&v[..v.len().min(room)]);
    }

    fn extend_range(&mut self, r: Range<u64>) {
        self.count += r.end - r.start;
        let room = self.cap.saturating_sub(self.values.len()) as u64;
        let take = (r.end - r.start).min(room);
        self.values
            .extend((r.start..r.start + take).map(|v| v as u32));
    }

    /// Adds another part's findings (parts searched in increasing order keep
    /// `values` in increasing order).
    pub fn merge(&mut self, other: &Found) {
        self.count += other.count;
        let room = self.cap.saturating_sub(self.values.len());
        self.values
            .extend_from_slice(&other.values[..other.values.len().min(room)]);
    }
}

/// Observations of one key: the hash form they share and their constraints,
/// most selective first.
#[derive(Debug, Clone)]
pub struct Plan {
    profile: &'static Profile,
    proto: Proto,
    form: V4Form,
    jhash: JhashForm,
    groups: Vec<ReuseportGroup>,
    observations: Vec<Observation>,
    /// The first observation of each packet (members, addresses, ports):
    /// a repeat is found in constant time, not by a scan.
    first: HashMap<(u32, u32, u32, u16, u16), usize>,
    duplicates: usize,
    /// The constraints in the order they came.
    kernel: Vec<Obs>,
    /// The same, most selective first (stable), sorted when first asked for
    /// after an addition: inserting each in place cost a shift per addition.
    sorted: OnceLock<Vec<Obs>>,
}

/// What [`Plan::add`] did with an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// A new constraint.
    New,
    /// The same packet as an earlier observation, same slot: no new information.
    Duplicate,
    /// A one-member group: every hash selects slot 0, no information.
    Uninformative,
}

impl Plan {
    /// An empty plan for the key of `group`'s kernel and protocol; the group
    /// is added as group 0.
    pub fn new(group: &ReuseportGroup) -> Result<Plan, RecoverError> {
        let p = group.profile();
        let proto = group.proto();
        let form = match proto {
            Proto::Tcp => p.tcp4,
            Proto::Udp => p.udp4,
        };
        let mut plan = Plan {
            profile: p,
            proto,
            form,
            jhash: p.jhash,
            groups: Vec::new(),
            observations: Vec::new(),
            first: HashMap::new(),
            duplicates: 0,
            kernel: Vec::new(),
            sorted: OnceLock::new(),
        };
        plan.add_group(group)?;
        Ok(plan)
    }

    /// Adds another group of the same kernel and protocol (same key, for
    /// example another port); returns its index for [`Plan::add`].
    pub fn add_group(&mut self, group: &ReuseportGroup) -> Result<usize, RecoverError> {
        if group.profile() != self.profile || group.proto() != self.proto {
            return Err(RecoverError::Mixed {
                first: format!("{} {}", proto_name(self.proto), self.profile.release),
                other: format!("{} {}", proto_name(group.proto()), group.profile().release),
            });
        }
        check_group(group)?;
        self.groups.push(group.clone());
        Ok(self.groups.len() - 1)
    }

    /// Adds "`t` went to `listener`" in group `group` (0 for the group given
    /// to [`Plan::new`]).
    pub fn add(&mut self, group: usize, t: &Tuple, listener: u32) -> Result<Added, RecoverError> {
        let mut o = observe(&self.groups[group], t, listener)?;
        o.group = group;
        let added = match o.obs {
            None => Added::Uninformative,
            Some(k) => {
                let packet = (o.members, k.laddr, k.faddr, k.lport, k.sport);
                let same = self.first.get(&packet).map(|&i| (i, &self.observations[i]));
                match same {
                    Some((i, e)) if e.slot != o.slot => {
                        return Err(RecoverError::Contradiction {
                            earlier: i,
                            earlier_slot: e.slot,
                            slot: o.slot,
                        })
                    }
                    Some(_) => {
                        self.duplicates += 1;
                        Added::Duplicate
                    }
                    None => {
                        self.first.insert(packet, self.observations.len());
                        self.kernel.push(k);
                        self.sorted = OnceLock::new();
                        Added::New
                    }
                }
            }
        };
        self.observations.push(o);
        Ok(added)
    }

    /// The profile whose rules built the constraints.
    pub fn profile(&self) -> &'static Profile {
        self.profile
    }

    /// The protocol.
    pub fn proto(&self) -> Proto {
        self.proto
    }

    /// The hash form searched.
    pub fn form(&self) -> (V4Form, JhashForm) {
        (self.form, self.jhash)
    }

    /// Every observation added, in order.
    pub fn observations(&self) -> &[Observation] {
        &self.observations
    }

    /// Observations that repeated an earlier packet.
    pub fn duplicates(&self) -> usize {
        self.duplicates
    }

    /// The constraints the search evaluates, in evaluation order: most
    /// selective (narrowest band) first, in arrival order for equal widths.
    pub fn constraints(&self) -> &[Obs] {
        self.sorted.get_or_init(|| {
            let mut v = self.kernel.clone();
            v.sort_by_key(|x| x.width);
            v
        })
    }

    /// Expected number of initvals that satisfy every constraint by chance:
    /// `2^32 · Π p_i`, with `p_i` the exact share of hashes that select the
    /// observed slot. Below 1 the true key is, with that probability of
    /// error, the only candidate.
    pub fn expected_false_matches(&self) -> f64 {
        expected_false_matches(self.constraints())
    }

    /// How many more observations (of typical selectivity, the geometric
    /// mean of those so far) would bring [`Self::expected_false_matches`]
    /// below `target`; 0 when it already is, `None` without any constraint
    /// to judge by.
    pub fn more_needed(&self, target: f64) -> Option<u64> {
        more_needed(self.constraints(), target)
    }

    /// Searches `range` (within `0..2^32`) for initvals that satisfy every
    /// constraint, on the chosen compiled copy.
    pub fn search(&self, isa: Isa, range: Range<u64>, found: &mut Found) {
        search(isa, self.form, self.jhash, self.constraints(), range, found)
    }

    /// Checks candidates the slow way: every observed tuple through the
    /// model's [`ReuseportGroup::select`] with the candidate as the key.
    /// Returns, per candidate, the index of the first observation it does
    /// not reproduce, or `None` when it reproduces all.
    pub fn verify(&self, candidates: &[u32]) -> Vec<Option<usize>> {
        let mut groups = self.groups.clone();
        candidates
            .iter()
            .map(|&iv| {
                for g in groups.iter_mut() {
                    g.set_keys(Keys { v4: iv, ..g.keys() });
                }
                self.observations.iter().position(|o| {
                    groups[o.group]
                        .select(&o.tuple, 0)
                        .map(|c| c.listener != Some(o.listener))
                        .unwrap_or(true)
                })
            })
            .collect()
    }
}

/// `2^32 · Π p_i` over the constraints (see [`Plan::expected_false_matches`]).
pub fn expected_false_matches(obs: &[Obs]) -> f64 {
    obs.iter()
        .fold(SPACE as f64, |e, o| e * (o.width as f64 / SPACE as f64))
}

/// See [`Plan::more_needed`].
pub fn more_needed(obs: &[Obs], target: f64) -> Option<u64> {
    let e = expected_false_matches(obs);
    if e < target {
        return Some(0);
    }
    if obs.is_empty() {
        return None;
    }
    let mean_ln_p = obs
        .iter()
        .map(|o| (o.width as f64 / SPACE as f64).ln())
        .sum::<f64>()
        / obs.len() as f64;
    Some(((target / e).ln() / mean_ln_p).floor() as u64 + 1)
}

#[cfg(test)]
mod tests;
