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
//! [`hash_v4`], folded to one form per monomorphic copy as in
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
use crate::hash::{hash_v4, Keys};
#[cfg(target_arch = "x86_64")]
use crate::isa::Compiled;
use crate::isa::Isa;
use crate::jhash::{reciprocal_scale, JhashForm};
use crate::profile::{GroupScan, Profile, Release, Selection, V4Form};
use crate::reuseport::{MemberState, ReuseportGroup};
use crate::tuple::{v4_word, Proto, Tuple};

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
    /// The client port (number; [`hash_v4`] takes it raw).
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

// ---------------------------------------------------------------------------
// The search loop.

/// Keeps the lanes whose hash lies in the band: appends their initvals to
/// `buf[*k..]`, in lane order, and advances `*k`. Lanes from `valid` on are
/// dropped. `buf` has room for 16 values past `*k`.
trait Keep {
    fn keep(
        h: &[u32; LANES],
        iv: &[u32; LANES],
        o: &Obs,
        valid: usize,
        buf: &mut Buf,
        k: &mut usize,
    );
}

type Buf = [u32; BLOCK + LANES];

/// Any target: a branch-free scalar store per lane.
struct Scalar;

impl Keep for Scalar {
    #[inline(always)]
    fn keep(
        h: &[u32; LANES],
        iv: &[u32; LANES],
        o: &Obs,
        valid: usize,
        buf: &mut Buf,
        k: &mut usize,
    ) {
        let mut w = *k;
        for (i, (&h, &v)) in h.iter().zip(iv).enumerate() {
            let hit = (h.wrapping_sub(o.lo) < o.width) & (i < valid);
            buf[w] = v;
            w += hit as usize;
        }
        *k = w;
    }
}

/// AVX-512: one compare into a mask register and one `vpcompressd`.
/// Instantiated only inside [`search_avx512`].
#[cfg(target_arch = "x86_64")]
struct Compress;

#[cfg(target_arch = "x86_64")]
impl Keep for Compress {
    #[inline(always)]
    fn keep(
        h: &[u32; LANES],
        iv: &[u32; LANES],
        o: &Obs,
        valid: usize,
        buf: &mut Buf,
        k: &mut usize,
    ) {
        // SAFETY: `Compress` is used only by `search_avx512`, which runs only
        // after `Isa::resolve` confirmed the CPU features; `*k + 16 <= buf.len()`
        // because `*k <= BLOCK` (survivors never outnumber the lanes seen).
        unsafe { compress(h, iv, o.lo, o.width, valid, buf, k) }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
#[inline]
unsafe fn compress(
    h: &[u32; LANES],
    iv: &[u32; LANES],
    lo: u32,
    width: u32,
    valid: usize,
    buf: &mut Buf,
    k: &mut usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(*k <= BLOCK);
    let hv = _mm512_loadu_si512(h.as_ptr().cast());
    let ivv = _mm512_loadu_si512(iv.as_ptr().cast());
    let d = _mm512_sub_epi32(hv, _mm512_set1_epi32(lo as i32));
    let live = if valid >= LANES {
        0xffff
    } else {
        ((1u32 << valid) - 1) as u16
    };
    let m = _mm512_mask_cmplt_epu32_mask(live, d, _mm512_set1_epi32(width as i32));
    let packed = _mm512_maskz_compress_epi32(m, ivv);
    _mm512_storeu_si512(buf.as_mut_ptr().add(*k).cast(), packed);
    *k += m.count_ones() as usize;
}

#[inline(always)]
fn run<K: Keep, H: Fn(&Obs, u32) -> u32>(
    hash: H,
    obs: &[Obs],
    range: Range<u64>,
    found: &mut Found,
) {
    let Some((first, rest)) = obs.split_first() else {
        // No constraint: every candidate qualifies.
        found.extend_range(range);
        return;
    };
    let mut buf: Buf = [0; BLOCK + LANES];
    let mut start = range.start;
    while start < range.end {
        let len = (range.end - start).min(BLOCK as u64) as usize;
        let base = start as u32;
        // First constraint over every candidate of the block.
        let mut iv = [0u32; LANES];
        for (i, v) in iv.iter_mut().enumerate() {
            *v = base.wrapping_add(i as u32);
        }
        let mut k = 0;
        for _ in 0..BLOCK / LANES {
            let mut h = [0u32; LANES];
            for (h, &v) in h.iter_mut().zip(&iv) {
                *h = hash(first, v);
            }
            K::keep(&h, &iv, first, LANES, &mut buf, &mut k);
            for v in iv.iter_mut() {
                *v = v.wrapping_add(LANES as u32);
            }
        }
        if len < BLOCK {
            // The last, partial block: drop survivors past the range's end
            // (the buffer is in increasing lane order).
            k = buf[..k].partition_point(|&v| (v.wrapping_sub(base) as usize) < len);
        }
        // The others over the survivors, packed in place.
        for o in rest {
            if k == 0 {
                break;
            }
            let n = k;
            k = 0;
            let mut c = 0;
            while c < n {
                let iv: [u32; LANES] = buf[c..c + LANES].try_into().expect("16 lanes");
                let mut h = [0u32; LANES];
                for (h, &v) in h.iter_mut().zip(&iv) {
                    *h = hash(o, v);
                }
                K::keep(&h, &iv, o, n - c, &mut buf, &mut k);
                c += LANES;
            }
        }
        found.extend(&buf[..k]);
        start += len as u64;
    }
}

/// One monomorphic copy of the loop per hash form: the form is a constant
/// in each arm, so [`hash_v4`] folds to that form's arithmetic alone.
#[inline(always)]
fn dispatch<K: Keep>(form: V4Form, jh: JhashForm, obs: &[Obs], r: Range<u64>, found: &mut Found) {
    use JhashForm::{New, Old};
    use V4Form::{Classic, ClassicNumericFport, LportPlus};
    macro_rules! go {
        ($f:expr, $j:expr) => {
            run::<K, _>(
                |o: &Obs, iv| hash_v4($f, $j, o.laddr, o.faddr, o.lport, o.sport, iv),
                obs,
                r,
                found,
            )
        };
    }
    match (form, jh) {
        (Classic, New) => go!(Classic, New),
        (Classic, Old) => go!(Classic, Old),
        (ClassicNumericFport, New) => go!(ClassicNumericFport, New),
        (ClassicNumericFport, Old) => go!(ClassicNumericFport, Old),
        (LportPlus, New) => go!(LportPlus, New),
        (LportPlus, Old) => go!(LportPlus, Old),
    }
}

fn search_generic(form: V4Form, jh: JhashForm, obs: &[Obs], r: Range<u64>, found: &mut Found) {
    dispatch::<Scalar>(form, jh, obs, r, found)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn search_avx2(form: V4Form, jh: JhashForm, obs: &[Obs], r: Range<u64>, found: &mut Found) {
    dispatch::<Scalar>(form, jh, obs, r, found)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,popcnt")]
fn search_avx512(form: V4Form, jh: JhashForm, obs: &[Obs], r: Range<u64>, found: &mut Found) {
    dispatch::<Compress>(form, jh, obs, r, found)
}

/// The compiled copy [`search`] runs for `isa` on this CPU: `avx512`,
/// `avx2`, `baseline sse2` or `simd128`.
pub fn isa_used(isa: Isa) -> &'static str {
    isa.resolve().name()
}

/// Finds every initval in `range` (a part of `0..2^32`) under which each
/// constraint's hash, in the given form, lands in its band. Constraints are
/// evaluated in the order given (put the most selective first; [`Plan`]
/// does). Counts all matches in `found` and keeps the first `found.cap`, in
/// increasing order.
pub fn search(
    isa: Isa,
    form: V4Form,
    jh: JhashForm,
    obs: &[Obs],
    range: Range<u64>,
    found: &mut Found,
) {
    assert!(
        range.start <= range.end && range.end <= SPACE,
        "range {range:?} is not within 0..2^32"
    );
    match isa.resolve() {
        // SAFETY: `resolve` found every feature the copy was compiled for.
        #[cfg(target_arch = "x86_64")]
        Compiled::Avx512 => unsafe { search_avx512(form, jh, obs, range, found) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Compiled::Avx2 => unsafe { search_avx2(form, jh, obs, range, found) },
        _ => search_generic(form, jh, obs, range, found),
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::reuseport::CpuPin;
    use crate::GroupSpec;

    /// xorshift32, for reproducible "random" keys and flows.
    struct Rng(u32);

    impl Rng {
        fn next(&mut self) -> u32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 17;
            self.0 ^= self.0 << 5;
            self.0
        }
    }

    fn group(kernel: &str, proto: Proto, n: u32, bind: &str, key: u32) -> ReuseportGroup {
        let spec = GroupSpec::new(
            proto,
            n,
            bind.parse().unwrap(),
            8080,
            Keys {
                v4: key,
                ..Keys::default()
            },
        );
        ReuseportGroup::build(Profile::named(kernel).unwrap(), &spec).unwrap()
    }

    fn flows(rng: &mut Rng, count: usize, daddr: Ipv4Addr) -> Vec<Tuple> {
        (0..count)
            .map(|_| {
                let a = rng.next();
                Tuple::v4(
                    Ipv4Addr::from(0x0a00_0000 | (a & 0x00ff_ffff)),
                    (32768 + (a >> 20) % 28000) as u16,
                    daddr,
                    8080,
                )
            })
            .collect()
    }

    /// Observations made by the model's own `select` under the true key.
    fn plan_from(g: &ReuseportGroup, ts: &[Tuple]) -> Plan {
        let mut plan = Plan::new(g).unwrap();
        for t in ts {
            let l = g.select(t, 0).unwrap().listener.unwrap();
            plan.add(0, t, l).unwrap();
        }
        plan
    }

    /// The slow oracle: every key of the window through `select`.
    fn brute(g: &ReuseportGroup, ts: &[Tuple], window: Range<u64>) -> Vec<u32> {
        let want: Vec<_> = ts
            .iter()
            .map(|t| g.select(t, 0).unwrap().listener)
            .collect();
        let mut g = g.clone();
        window
            .map(|iv| iv as u32)
            .filter(|&iv| {
                g.set_keys(Keys { v4: iv, ..g.keys() });
                ts.iter()
                    .zip(&want)
                    .all(|(t, w)| g.select(t, 0).unwrap().listener == *w)
            })
            .collect()
    }

    fn window(key: u32, half: u64) -> Range<u64> {
        let k = key as u64;
        k.saturating_sub(half)..(k + half).min(SPACE)
    }

    fn every_isa(plan: &Plan, r: Range<u64>) -> Found {
        let mut results = [Isa::Best, Isa::Avx2, Isa::Portable].map(|isa| {
            let mut f = Found::new(1000);
            plan.search(isa, r.clone(), &mut f);
            f
        });
        assert_eq!(results[0], results[1], "avx2 copy differs");
        assert_eq!(results[0], results[2], "portable copy differs");
        std::mem::take(&mut results[0])
    }

    #[test]
    fn bands_are_exactly_the_preimages_of_reciprocal_scale() {
        let mut rng = Rng(7);
        for n in [1, 2, 3, 5, 7, 8, 64, 100, 129, 1000, 32768] {
            let mut total = 0u64;
            for slot in 0..n.min(200) {
                let b = Band::of(slot, n);
                total += b.width;
                let hi = b.lo as u64 + b.width - 1;
                assert_eq!(reciprocal_scale(b.lo, n), slot);
                assert_eq!(reciprocal_scale(hi as u32, n), slot);
                if b.lo > 0 {
                    assert_eq!(reciprocal_scale(b.lo - 1, n), slot - 1);
                }
                if hi + 1 < SPACE {
                    assert_eq!(reciprocal_scale(hi as u32 + 1, n), slot + 1);
                }
                for _ in 0..50 {
                    let h = rng.next();
                    assert_eq!(
                        b.contains(h),
                        reciprocal_scale(h, n) == slot,
                        "h={h:#x} n={n}"
                    );
                }
            }
            if n <= 200 {
                assert_eq!(total, SPACE, "bands of n={n} cover every hash once");
            }
        }
        assert_eq!(Band::of(0, 2).width, 1 << 31);
        assert_eq!(Band::of(0, 1).width, SPACE);
    }

    #[test]
    fn finds_the_key_lport_plus_form_and_nothing_else_in_the_window() {
        let mut rng = Rng(0x1b87_3593);
        for _ in 0..3 {
            let key = rng.next();
            let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", key);
            let ts = flows(&mut rng, 32, Ipv4Addr::LOCALHOST);
            let plan = plan_from(&g, &ts);
            assert_eq!(plan.form(), (V4Form::LportPlus, JhashForm::New));
            assert!(plan.expected_false_matches() < 1e-18);
            let r = window(key, 1 << 17);
            let f = every_isa(&plan, r.clone());
            assert_eq!((f.count, f.values.clone()), (1, vec![key]), "key {key:#x}");
            assert_eq!(plan.verify(&f.values), vec![None]);
        }
    }

    #[test]
    fn finds_the_key_classic_form_specific_and_wildcard_binds() {
        let mut rng = Rng(0x9e37_79b9);
        for (kernel, proto, bind) in [
            ("6.12", Proto::Tcp, "127.0.0.1"),
            ("6.12", Proto::Tcp, "0.0.0.0"),
            ("4.17", Proto::Tcp, "0.0.0.0"),
            ("6.18", Proto::Udp, "0.0.0.0"),
            ("4.6", Proto::Udp, "0.0.0.0"),
        ] {
            let key = rng.next();
            let g = group(kernel, proto, 5, bind, key);
            let ts = flows(&mut rng, 24, Ipv4Addr::new(127, 0, 0, 1));
            let plan = plan_from(&g, &ts);
            if bind == "0.0.0.0" && kernel.starts_with('6') {
                // 5.0+: the wildcard pass hashes laddr 0 (kernel-history.md §2.6).
                assert_eq!(plan.constraints()[0].laddr, 0, "{kernel} {proto:?}");
            }
            let f = every_isa(&plan, window(key, 1 << 16));
            assert_eq!(f.values, vec![key], "{kernel} {proto:?} {bind}");
        }
    }

    #[test]
    fn agrees_with_brute_force_select_over_a_window() {
        // Few observations, so the window holds many false candidates: the
        // search must return exactly the keys `select` cannot tell apart.
        let mut rng = Rng(0x0bad_cafe);
        for (kernel, n, obs) in [
            ("6.18", 8, 4),
            ("6.12", 3, 6),
            ("6.18", 64, 2),
            ("4.6", 2, 9),
        ] {
            let key = rng.next();
            let g = group(kernel, Proto::Tcp, n, "127.0.0.1", key);
            let ts = flows(&mut rng, obs, Ipv4Addr::LOCALHOST);
            let plan = plan_from(&g, &ts);
            let r = window(key, 3000);
            let f = every_isa(&plan, r.clone());
            let want = brute(&g, &ts, r);
            assert!(want.contains(&key));
            assert_eq!(f.count, want.len() as u64, "{kernel} n={n}");
            assert_eq!(f.values, want, "{kernel} n={n}");
        }
    }

    #[test]
    fn one_observation_of_two_members_leaves_half_the_keys() {
        let g = group("6.18", Proto::Tcp, 2, "127.0.0.1", 0x1234_5678);
        let ts = flows(&mut Rng(3), 1, Ipv4Addr::LOCALHOST);
        let plan = plan_from(&g, &ts);
        assert_eq!(plan.expected_false_matches(), (1u64 << 31) as f64);
        // 2^22 keys: expect 2^21, standard deviation 2^10.
        let mut f = Found::new(10);
        plan.search(Isa::Best, 0x4000_0000..0x4040_0000, &mut f);
        let dev = (f.count as i64 - (1 << 21)).abs();
        assert!(dev < 5 << 10, "{} candidates, {dev} from 2^21", f.count);
        assert_eq!(f.values.len(), 10);
        assert_eq!(plan.more_needed(0.001), Some(41), "2^31 · 2^-k < 0.001");
    }

    #[test]
    fn closed_listeners_use_the_slot_after_the_swap() {
        // Close 1 of 6: listener 5 moves into slot 1 (kernel-history.md §10 E4).
        let key = 0x7777_1234;
        let spec = GroupSpec {
            closed: vec![1, 3],
            ..GroupSpec::new(
                Proto::Tcp,
                6,
                "127.0.0.1".parse().unwrap(),
                8080,
                Keys {
                    v4: key,
                    ..Keys::default()
                },
            )
        };
        let g = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
        let ts = flows(&mut Rng(11), 30, Ipv4Addr::LOCALHOST);
        let plan = plan_from(&g, &ts);
        assert!(plan.observations().iter().all(|o| o.members == 4));
        let moved = plan
            .observations()
            .iter()
            .find(|o| o.listener == 5)
            .expect("5 gets traffic");
        assert_eq!(moved.slot, 1);
        let f = every_isa(&plan, window(key, 1 << 15));
        assert_eq!(f.values, vec![key]);
        let e = observe(&g, &ts[0], 3).unwrap_err();
        assert!(e.to_string().contains("listener 3 is closed"), "{e}");
        let e = observe(&g, &ts[0], 9).unwrap_err();
        assert!(e.to_string().contains("has 6 listener(s)"), "{e}");
    }

    #[test]
    fn several_groups_of_one_key_combine() {
        let key = 0xfeed_f00d;
        let a = group("6.18", Proto::Tcp, 4, "127.0.0.1", key);
        let spec = GroupSpec::new(
            Proto::Tcp,
            16,
            "0.0.0.0".parse().unwrap(),
            9090,
            Keys {
                v4: key,
                ..Keys::default()
            },
        );
        let b = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
        let mut plan = Plan::new(&a).unwrap();
        let gb = plan.add_group(&b).unwrap();
        let mut rng = Rng(5);
        for t in flows(&mut rng, 10, Ipv4Addr::LOCALHOST) {
            plan.add(0, &t, a.select(&t, 0).unwrap().listener.unwrap())
                .unwrap();
            let t = Tuple { dport: 9090, ..t };
            plan.add(gb, &t, b.select(&t, 0).unwrap().listener.unwrap())
                .unwrap();
        }
        // The 16-member group's constraints are the most selective: first.
        assert!(plan.constraints()[..10].iter().all(|o| o.lport == 9090));
        let f = every_isa(&plan, window(key, 1 << 15));
        assert_eq!(f.values, vec![key]);
        let udp = group("6.18", Proto::Udp, 4, "127.0.0.1", key);
        assert!(matches!(
            plan.add_group(&udp),
            Err(RecoverError::Mixed { .. })
        ));
    }

    #[test]
    fn duplicates_add_nothing_and_contradictions_are_refused() {
        let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", 42);
        let t = flows(&mut Rng(9), 1, Ipv4Addr::LOCALHOST)[0];
        let l = g.select(&t, 0).unwrap().listener.unwrap();
        let mut plan = Plan::new(&g).unwrap();
        assert_eq!(plan.add(0, &t, l).unwrap(), Added::New);
        assert_eq!(plan.add(0, &t, l).unwrap(), Added::Duplicate);
        assert_eq!(plan.constraints().len(), 1);
        // A new packet after the constraints were read is in the next read.
        let u = Tuple {
            sport: t.sport ^ 1,
            ..t
        };
        let lu = g.select(&u, 0).unwrap().listener.unwrap();
        assert_eq!(plan.add(0, &u, lu).unwrap(), Added::New);
        assert_eq!(plan.constraints().len(), 2);
        assert_eq!(plan.constraints()[1].sport, u.sport);
        let e = plan.add(0, &t, (l + 1) % 8).unwrap_err();
        assert!(
            matches!(e, RecoverError::Contradiction { earlier: 0, .. }),
            "{e}"
        );
    }

    #[test]
    fn the_range_end_is_exact() {
        // No constraint: the range itself, to the last key.
        let mut f = Found::new(5);
        search(
            Isa::Best,
            V4Form::Classic,
            JhashForm::New,
            &[],
            SPACE - 3..SPACE,
            &mut f,
        );
        assert_eq!(
            (f.count, f.values),
            (3, vec![u32::MAX - 2, u32::MAX - 1, u32::MAX])
        );
        // A key at the very end of 2^32, searched with a partial last block.
        let key = u32::MAX - 1;
        let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", key);
        let plan = plan_from(&g, &flows(&mut Rng(13), 32, Ipv4Addr::LOCALHOST));
        for r in [SPACE - 5000..SPACE, SPACE - 2..SPACE - 1, SPACE - 1..SPACE] {
            let f = every_isa(&plan, r.clone());
            let want = u64::from(r.contains(&(key as u64)));
            assert_eq!(f.count, want, "{r:?}");
        }
        let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", 0);
        let plan = plan_from(&g, &flows(&mut Rng(17), 32, Ipv4Addr::LOCALHOST));
        assert_eq!(every_isa(&plan, 0..1).values, vec![0]);
        assert_eq!(every_isa(&plan, 1..3000).count, 0);
    }

    #[test]
    fn ipv6_reservoir_and_cpu_pins_are_refused() {
        let spec = GroupSpec::new(Proto::Tcp, 4, "::".parse().unwrap(), 8080, Keys::default());
        let g = ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap();
        let t6 = Tuple {
            saddr: "fd00::2".parse().unwrap(),
            sport: 40000,
            daddr: "fd00::1".parse().unwrap(),
            dport: 8080,
        };
        let e = observe(&g, &t6, 0).unwrap_err();
        assert!(matches!(e, RecoverError::Ipv6 { .. }));
        assert!(e.to_string().contains("2^64"), "{e}");
        // An IPv4 client of the dual-stack wildcard group is fine.
        let t4 = Tuple::v4(
            Ipv4Addr::new(10, 0, 0, 2),
            40000,
            Ipv4Addr::new(10, 0, 0, 1),
            8080,
        );
        assert!(observe(&g, &t4, g.select(&t4, 0).unwrap().listener.unwrap()).is_ok());

        for (kernel, proto) in [
            ("4.4", Proto::Tcp),
            ("4.5", Proto::Tcp),
            ("4.4", Proto::Udp),
            ("3.9", Proto::Udp),
        ] {
            let g = group(kernel, proto, 4, "127.0.0.1", 0);
            let e = Plan::new(&g).unwrap_err();
            assert!(
                matches!(e, RecoverError::Reservoir { .. }),
                "{kernel} {proto:?}"
            );
            assert!(e.to_string().contains("reservoir"), "{e}");
        }

        let spec = GroupSpec {
            incoming_cpu: vec![CpuPin {
                listener: 1,
                cpu: 0,
            }],
            ..GroupSpec::new(
                Proto::Tcp,
                4,
                "127.0.0.1".parse().unwrap(),
                8080,
                Keys::default(),
            )
        };
        let pinned = |k: &str| ReuseportGroup::build(Profile::named(k).unwrap(), &spec).unwrap();
        let e = Plan::new(&pinned("6.18")).unwrap_err();
        assert!(
            matches!(e, RecoverError::IncomingCpu { count: 1, .. }),
            "{e}"
        );
        // Before the 6.2 ring scan the pin does not change a group's pick.
        assert!(Plan::new(&pinned("5.15")).is_ok());

        let spec = GroupSpec {
            program: Some(crate::reuseport::Program::Cpu),
            ..GroupSpec::new(
                Proto::Udp,
                4,
                "127.0.0.1".parse().unwrap(),
                8080,
                Keys::default(),
            )
        };
        let e = Plan::new(&ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap())
            .unwrap_err();
        assert!(matches!(e, RecoverError::Program { .. }), "{e}");

        let spec = GroupSpec {
            connected: vec![2],
            ..GroupSpec::new(
                Proto::Udp,
                4,
                "127.0.0.1".parse().unwrap(),
                8080,
                Keys::default(),
            )
        };
        let e = Plan::new(&ReuseportGroup::build(Profile::named("6.18").unwrap(), &spec).unwrap())
            .unwrap_err();
        assert!(
            matches!(e, RecoverError::Connected { listener: 2, .. }),
            "{e}"
        );
    }

    #[test]
    fn packets_for_another_group_are_refused() {
        let g = group("6.18", Proto::Tcp, 4, "127.0.0.1", 0);
        let t = Tuple::v4(
            Ipv4Addr::new(10, 0, 0, 2),
            1,
            Ipv4Addr::new(127, 0, 0, 2),
            8080,
        );
        let e = observe(&g, &t, 0).unwrap_err();
        assert!(e.to_string().contains("does not reach the group"), "{e}");
    }

    /// tests/fixtures/vectors/ipv4-hash.jsonl: hashes and indices computed
    /// by independent Python and C code from kernel-history.md §1–§3. Each
    /// vector's indices for 200, 1000 and 32768 members, as observations of
    /// three groups sharing the key, must be satisfied by the vector's
    /// initval, in both TCP forms.
    #[test]
    fn independent_vectors_are_satisfied_by_their_initval() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/vectors/ipv4-hash.jsonl"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let mut checked = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()).step_by(10) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let iv = crate::tuple::parse_hex32(v["initval"].as_str().unwrap()).unwrap();
            let laddr: IpAddr = v["laddr"].as_str().unwrap().parse().unwrap();
            let lport = v["lport"].as_u64().unwrap() as u16;
            let t = Tuple {
                saddr: v["faddr"].as_str().unwrap().parse().unwrap(),
                sport: v["fport"].as_u64().unwrap() as u16,
                daddr: laddr,
                dport: lport,
            };
            for (kernel, key) in [("6.12", "index_classic"), ("6.18", "index_lport_plus")] {
                let mut plan: Option<Plan> = None;
                for n in [200u32, 1000, 32768] {
                    let spec = GroupSpec::new(Proto::Tcp, n, laddr, lport, Keys::default());
                    let g = ReuseportGroup::build(Profile::named(kernel).unwrap(), &spec).unwrap();
                    let gi = match &mut plan {
                        None => {
                            plan = Some(Plan::new(&g).unwrap());
                            0
                        }
                        Some(p) => p.add_group(&g).unwrap(),
                    };
                    let want = v[key][n.to_string()].as_u64().unwrap() as u32;
                    plan.as_mut().unwrap().add(gi, &t, want).unwrap();
                }
                let plan = plan.unwrap();
                let f = every_isa(&plan, window(iv, 1 << 12));
                assert!(f.values.contains(&iv), "{kernel} {line}: {:?}", f.values);
                assert_eq!(plan.verify(&[iv]), vec![None]);
                checked += 1;
            }
        }
        assert_eq!(checked, 100);
    }

    #[test]
    fn expected_false_matches_and_more_needed() {
        let g = group("6.18", Proto::Tcp, 8, "127.0.0.1", 1);
        let ts = flows(&mut Rng(21), 10, Ipv4Addr::LOCALHOST);
        let plan = plan_from(&g, &ts);
        let e = plan.expected_false_matches();
        // Each band of 8 is 2^29 or 2^29 + 1 wide: 2^32 · 8^-10 = 2^2, a hair more.
        assert!((4.0..4.0001).contains(&e), "{e}");
        // 4 · 8^-k < 0.001 needs k = 4 (8^4 = 4096).
        assert_eq!(plan.more_needed(0.001), Some(4));
        let one = group("6.18", Proto::Tcp, 1, "127.0.0.1", 1);
        let mut p1 = Plan::new(&one).unwrap();
        assert_eq!(p1.add(0, &ts[0], 0).unwrap(), Added::Uninformative);
        assert_eq!(p1.expected_false_matches(), SPACE as f64);
        assert_eq!(p1.more_needed(0.001), None);
    }
}
