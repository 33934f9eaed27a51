//! What holds for every secret: per-listener counts of a set of connections over many random boots.
//!
//! Which listener a 4-tuple reaches depends on the per-boot [`Keys`]
//! (kernel-history.md §2.5: `secret + net_hash_mix`, random at every boot).
//! Without the user's own keys, the answer for one tuple means nothing; the
//! distribution of the per-listener counts over many boots does. A
//! [`SpreadRun`] draws `boots` key sets from a seeded SplitMix64 stream
//! ([`boot_keys`]), asks the group's own selection for every tuple
//! ([`ReuseportGroup::select_batch_v4`] when the batch loop is vectorised and
//! every tuple is IPv4, [`ReuseportGroup::select`] otherwise), and keeps, per
//! boot, four skew figures of the counts:
//!
//! - **max/min**: the largest count over the smallest; unbounded (`null`)
//!   when some listener got none;
//! - **Jain's fairness index** `(Σx)² / (n·Σx²)`: 1 for equal counts, `1/n`
//!   when one listener gets everything;
//! - **empty share**: the share of listeners that got no tuple;
//! - **max share**: the largest count over the routed total.
//!
//! Counts are over the *listening* members only (closed, shut-down and
//! closed-tail members are never selected, so counting them would make every
//! boot's max/min unbounded). With no routed tuple in a boot, max/min is
//! unbounded, Jain 0, empty share 1 and max share 0.
//!
//! The run is a value you step ([`SpreadRun::step`]), so a Web Worker can
//! loop with progress and stop. Memory is bounded: four `f64` per boot (at
//! most [`MAX_BOOTS`]) and, per listening member, a histogram of its count
//! (one entry per distinct count seen, a few times `√(tuples/listeners)` for
//! distinct tuples); never a per-boot, per-listener array.
//!
//! [`SpreadRun::compare`] places an observed set of counts in the simulated
//! distribution ([`Verdict`]); [`by_listeners`] shows how the expected skew
//! moves with the group size.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use crate::batch::{V4Batch, NONE};
use crate::error::SetupError;
use crate::hash::Keys;
use crate::lookup::Host;
use crate::profile::Profile;
use crate::reuseport::{GroupSpec, MemberState, ReuseportGroup};
use crate::tuple::Tuple;

/// The most boots one run keeps (four `f64` each: 3.2 MB at the cap).
/// [`SpreadRun::step`] stops there.
pub const MAX_BOOTS: u32 = 100_000;

/// The group sizes [`by_listeners`] always shows, besides the user's own.
pub const LISTENER_SIZES: [u32; 7] = [2, 4, 8, 16, 32, 64, 128];

/// What stops a spread from being computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpreadError {
    /// The group has no listening member, so no tuple can reach one.
    #[error("the group has no listening member, so there is nothing to spread the connections over; give it at least one listener that is not closed or shut down")]
    NoListeners,
    /// No tuples were given.
    #[error("no connections were given; paste at least one 4-tuple")]
    NoTuples,
    /// `compare` before any boot was simulated.
    #[error("no boots have been simulated yet; step the run before comparing")]
    NoBoots,
    /// The observed counts do not have one entry per listening member.
    #[error("{given} observed counts were given but the group has {listeners} listening members; give one count per listening member")]
    ObservedLength {
        /// Counts given.
        given: usize,
        /// Listening members.
        listeners: u32,
    },
    /// The group could not be built for the user's own size.
    #[error("the group could not be built: {0}")]
    Setup(#[from] SetupError),
}

/// SplitMix64 (Steele, Lea, Flood 2014): output `i` (from 1) of the stream
/// seeded with `seed`. Counter-based, so any boot's keys can be drawn alone.
fn splitmix64(seed: u64, i: u64) -> u64 {
    let mut z = seed.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The keys of boot `boot` (from 0) of the stream seeded with `seed`: the
/// SplitMix64 outputs `2·boot + 1` and `2·boot + 2`, split into `v4` (low
/// half of the first), `v6_outer` (its high half) and `v6_inner` (low half
/// of the second). All three are independent and uniform, which is also
/// right for IPv6 UDP before 6.5, whose outer value is the inner secret plus
/// an independent uniform `net_hash_mix` (kernel-history.md §2.4).
pub fn boot_keys(seed: u64, boot: u32) -> Keys {
    let a = splitmix64(seed, 2 * boot as u64 + 1);
    let b = splitmix64(seed, 2 * boot as u64 + 2);
    Keys {
        v4: a as u32,
        v6_outer: (a >> 32) as u32,
        v6_inner: b as u32,
    }
}

/// Mean and percentiles of a figure that is always finite.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Stat {
    /// Mean over boots.
    pub mean: f64,
    /// 5th percentile (nearest rank).
    pub p5: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
}

/// Mean and percentiles of max/min, which is unbounded in a boot where some
/// listener got nothing: `None` (`null`) means unbounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct RatioStat {
    /// Mean over boots; `null` as soon as one boot is unbounded.
    pub mean: Option<f64>,
    /// 5th percentile (nearest rank); `null` when unbounded.
    pub p5: Option<f64>,
    /// Median (nearest rank); `null` when unbounded.
    pub p50: Option<f64>,
    /// 95th percentile (nearest rank); `null` when unbounded.
    pub p95: Option<f64>,
    /// Share of boots (0 to 1) in which some listener got nothing, so the
    /// ratio was unbounded.
    pub unbounded: f64,
}

/// The expected count of one listener: mean and percentiles over boots.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Band {
    /// Mean count.
    pub mean: f64,
    /// 5th percentile of the count (nearest rank).
    pub p5: u32,
    /// Median count (nearest rank).
    pub p50: u32,
    /// 95th percentile of the count (nearest rank).
    pub p95: u32,
}

/// The expected count of one given listener.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ListenerBand {
    /// The listener (join order).
    pub listener: u32,
    /// Its count over boots.
    #[serde(flatten)]
    pub band: Band,
}

/// The distribution of per-listener counts over the boots simulated so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Spread {
    /// Boots simulated. All figures below are zero when it is 0.
    pub boots: u32,
    /// Tuples given.
    pub tuples: u32,
    /// Listening members the counts are over.
    pub listeners: u32,
    /// Tuples that reached no listener (not addressed to the group, or the
    /// group returned no socket), in the boot that had the most of them. For
    /// every group the model builds this does not depend on the keys.
    pub unrouted: u32,
    /// Largest count over smallest, per boot.
    pub max_min: RatioStat,
    /// Jain's fairness index, per boot.
    pub jain: Stat,
    /// Share of listening members with no tuple, per boot.
    pub empty_share: Stat,
    /// Largest count over the routed total, per boot.
    pub max_share: Stat,
    /// Whether the group's rule treats every listening member alike (no
    /// program, no SO_INCOMING_CPU set, no connected member), so that one
    /// band describes any listener. Closed members do not break this: the
    /// listening ones still share `socks[]` in equal hash ranges.
    pub exchangeable: bool,
    /// The count of a single listener, pooled over all listening members and
    /// boots: the expectation band to draw when `exchangeable`.
    pub band: Band,
    /// The count of each listening member, by listener number: the bands to
    /// draw when not `exchangeable` (a CPU preference or a program favours
    /// some members).
    pub per_listener: Vec<ListenerBand>,
}

/// Skew figures of one set of counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Skew {
    /// Largest count over smallest; `null` when some count is 0 (unbounded).
    pub max_min: Option<f64>,
    /// Jain's fairness index `(Σx)² / (n·Σx²)`.
    pub jain: f64,
    /// Share of counts that are 0.
    pub empty_share: f64,
    /// Largest count over the total.
    pub max_share: f64,
}

impl Skew {
    /// The skew of per-listener counts (one per listening member). With a
    /// zero total: max/min unbounded, Jain 0, empty share 1, max share 0.
    pub fn of(counts: &[u64]) -> Skew {
        let n = counts.len() as f64;
        let (mut total, mut sq, mut max, mut min, mut empty) = (0f64, 0f64, 0u64, u64::MAX, 0u32);
        for &c in counts {
            let x = c as f64;
            total += x;
            sq += x * x;
            max = max.max(c);
            min = min.min(c);
            empty += (c == 0) as u32;
        }
        if total == 0.0 {
            return Skew {
                max_min: None,
                jain: 0.0,
                empty_share: 1.0,
                max_share: 0.0,
            };
        }
        Skew {
            max_min: (min > 0).then(|| max as f64 / min as f64),
            jain: total * total / (n * sq),
            empty_share: empty as f64 / n,
            max_share: max as f64 / total,
        }
    }
}

/// Whether hashing alone explains an observed imbalance. `percentile` is the
/// percentile rank (0 to 100) of the observed max/min among the simulated
/// boots (ties count half). A message: the sentence tables say it as
/// `verdict.within_hashing` and `verdict.beyond_hashing` (the records around
/// it are numbers, so they are exported beside `message/`, not in it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(export_to = "message/"))]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Verdict {
    /// The observed max/min is at or below the simulated 95th percentile and
    /// the observed Jain index at or above the 5th: random keys alone give
    /// skews like this.
    WithinHashing {
        /// Percentile rank of the observed max/min.
        percentile: f64,
    },
    /// The observation is more skewed than 95% of boots: something besides
    /// the hash is at work (long-lived connections, a slow worker, a program
    /// steering traffic).
    BeyondHashing {
        /// Percentile rank of the observed max/min.
        percentile: f64,
    },
}

/// An observed set of per-listener counts next to the simulated range.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The observed skew.
    pub observed: Skew,
    /// The observed total (the simulation routed `tuples - unrouted` per boot).
    pub observed_total: u64,
    /// Simulated max/min.
    pub max_min: RatioStat,
    /// Simulated Jain index.
    pub jain: Stat,
    /// Simulated empty share.
    pub empty_share: Stat,
    /// Percentile rank (0 to 100) of the observed max/min among the boots;
    /// high means more skewed than hashing usually gives.
    pub max_min_percentile: f64,
    /// Percentile rank (0 to 100) of the observed Jain index among the
    /// boots; low means less fair than hashing usually gives.
    pub jain_percentile: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// The expected skew of one group size, from [`by_listeners`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ListenerRow {
    /// Listeners the spec was built with.
    pub listeners: u32,
    /// Whether this is the user's own size.
    pub yours: bool,
    /// Boots simulated.
    pub boots: u32,
    /// Largest count over smallest.
    pub max_min: RatioStat,
    /// Jain's fairness index.
    pub jain: Stat,
    /// Share of listening members with no tuple.
    pub empty_share: Stat,
    /// Largest count over the routed total.
    pub max_share: Stat,
}

/// The tuples a run selects for, in the form its path wants.
#[derive(Debug, Clone)]
enum Packets {
    /// Structure of arrays for [`ReuseportGroup::select_batch_v4`].
    V4 {
        saddr: Vec<u32>,
        sport: Vec<u16>,
        daddr: Vec<u32>,
        dport: Vec<u16>,
    },
    /// One at a time through [`ReuseportGroup::select`].
    Any(Vec<Tuple>),
}

/// A seeded spread simulation you step: see the module docs.
#[derive(Debug, Clone)]
pub struct SpreadRun {
    group: ReuseportGroup,
    seed: u64,
    cpu: u32,
    tuples: u32,
    /// Tuples the group does not accept (wrong address, port or family):
    /// unrouted whatever the keys.
    unaddressed: u32,
    packets: Packets,
    /// Listening members, by number.
    listening: Vec<u32>,
    exchangeable: bool,
    /// Per boot: max/min (infinite when unbounded), Jain, empty share, max share.
    max_min: Vec<f64>,
    jain: Vec<f64>,
    empty_share: Vec<f64>,
    max_share: Vec<f64>,
    unrouted_max: u32,
    /// Per listening member (same order as `listening`): count -> boots.
    hist: Vec<BTreeMap<u32, u32>>,
    /// Scratch: the listener per packet, and per-listener counts (the last
    /// entry collects NONE).
    out: Vec<u32>,
    counts: Vec<u32>,
}

impl SpreadRun {
    /// A run over `tuples` for `group` (whose own keys are ignored), drawing
    /// keys from the stream seeded with `seed` ([`boot_keys`]). Packets are
    /// received on CPU 0 (see [`Self::on_cpu`]).
    pub fn new(
        group: ReuseportGroup,
        tuples: &[Tuple],
        seed: u64,
    ) -> Result<SpreadRun, SpreadError> {
        if tuples.is_empty() {
            return Err(SpreadError::NoTuples);
        }
        let mut listening = group.listening().to_vec();
        listening.sort_unstable();
        if listening.is_empty() {
            return Err(SpreadError::NoListeners);
        }
        // Whether a tuple reaches the group does not depend on the keys:
        // sort those out once.
        let accepted: Vec<Tuple> = tuples
            .iter()
            .filter_map(|t| group.accepts(t).ok())
            .collect();
        let unaddressed = (tuples.len() - accepted.len()) as u32;
        let all_v4 = accepted
            .iter()
            .all(|t| t.saddr.is_ipv4() && t.daddr.is_ipv4());
        let packets = if all_v4 && group.batch_is_vectorised() {
            let v4 = |a: IpAddr| match a {
                IpAddr::V4(a) => u32::from(a),
                IpAddr::V6(_) => unreachable!("checked above"),
            };
            Packets::V4 {
                saddr: accepted.iter().map(|t| v4(t.saddr)).collect(),
                sport: accepted.iter().map(|t| t.sport).collect(),
                daddr: accepted.iter().map(|t| v4(t.daddr)).collect(),
                dport: accepted.iter().map(|t| t.dport).collect(),
            }
        } else {
            Packets::Any(accepted)
        };
        let exchangeable = group.program().is_none()
            && listening.iter().all(|&l| {
                let m = group.members()[l as usize];
                m.incoming_cpu < 0 && !m.connected && m.state == MemberState::Listening
            });
        let members = group.members().len();
        Ok(SpreadRun {
            group,
            seed,
            cpu: 0,
            tuples: tuples.len() as u32,
            unaddressed,
            packets,
            hist: vec![BTreeMap::new(); listening.len()],
            listening,
            exchangeable,
            max_min: Vec::new(),
            jain: Vec::new(),
            empty_share: Vec::new(),
            max_share: Vec::new(),
            unrouted_max: 0,
            out: Vec::new(),
            counts: vec![0; members + 1],
        })
    }

    /// The same run with packets received on `cpu` (it matters with
    /// SO_INCOMING_CPU and CPU programs). Call before the first step.
    pub fn on_cpu(mut self, cpu: u32) -> SpreadRun {
        self.cpu = cpu;
        self
    }

    /// The same run sent one packet at a time through
    /// [`ReuseportGroup::select`] even when the batch loop could take it
    /// (tests and benchmarks compare the two; the answers are the same).
    pub fn one_at_a_time(mut self) -> SpreadRun {
        if let Packets::V4 {
            saddr,
            sport,
            daddr,
            dport,
        } = &self.packets
        {
            let tuples = (0..saddr.len())
                .map(|i| Tuple::v4(saddr[i].into(), sport[i], daddr[i].into(), dport[i]))
                .collect();
            self.packets = Packets::Any(tuples);
        }
        self
    }

    /// Whether the run takes the vectorised batch loop.
    pub fn vectorised(&self) -> bool {
        matches!(self.packets, Packets::V4 { .. })
    }

    /// Boots simulated so far.
    pub fn done(&self) -> u32 {
        self.max_min.len() as u32
    }

    /// Simulates up to `boots` more boots (never past [`MAX_BOOTS`]) and
    /// returns how many it did.
    pub fn step(&mut self, boots: u32) -> u32 {
        let todo = boots.min(MAX_BOOTS - self.done());
        for _ in 0..todo {
            self.boot();
        }
        todo
    }

    /// One boot: new keys, a listener per tuple, the figures of the counts.
    fn boot(&mut self) {
        let boot = self.done();
        self.group.set_keys(boot_keys(self.seed, boot));
        let none = self.counts.len() - 1;
        self.counts.fill(0);
        match &self.packets {
            Packets::V4 {
                saddr,
                sport,
                daddr,
                dport,
            } => {
                self.out.resize(saddr.len(), 0);
                let b = V4Batch {
                    saddr,
                    sport,
                    daddr,
                    dport,
                };
                self.group
                    .select_batch_v4(b, self.cpu, &mut self.out)
                    .expect("the arrays are built with one length");
                count(&self.out, &mut self.counts);
            }
            Packets::Any(tuples) => {
                for t in tuples {
                    let l = self
                        .group
                        .select(t, self.cpu)
                        .ok()
                        .and_then(|c| c.listener)
                        .unwrap_or(NONE);
                    self.counts[(l as usize).min(none)] += 1;
                }
            }
        }
        let unrouted = self.unaddressed + self.counts[none];
        self.unrouted_max = self.unrouted_max.max(unrouted);
        let counts: Vec<u64> = self
            .listening
            .iter()
            .map(|&l| self.counts[l as usize] as u64)
            .collect();
        for (h, &c) in self.hist.iter_mut().zip(&counts) {
            *h.entry(c as u32).or_insert(0) += 1;
        }
        let s = Skew::of(&counts);
        self.max_min.push(s.max_min.unwrap_or(f64::INFINITY));
        self.jain.push(s.jain);
        self.empty_share.push(s.empty_share);
        self.max_share.push(s.max_share);
    }

    /// The distribution so far.
    pub fn summary(&self) -> Spread {
        let boots = self.done();
        let per_listener = self
            .listening
            .iter()
            .zip(&self.hist)
            .map(|(&listener, h)| ListenerBand {
                listener,
                band: band(std::iter::once(h)),
            })
            .collect();
        Spread {
            boots,
            tuples: self.tuples,
            listeners: self.listening.len() as u32,
            unrouted: if boots == 0 {
                self.unaddressed
            } else {
                self.unrouted_max
            },
            max_min: ratio_stat(&self.max_min),
            jain: stat(&self.jain),
            empty_share: stat(&self.empty_share),
            max_share: stat(&self.max_share),
            exchangeable: self.exchangeable,
            band: band(self.hist.iter()),
            per_listener,
        }
    }

    /// Places observed per-listener counts (one per listening member, in any
    /// order) in the simulated distribution.
    pub fn compare(&self, observed_counts: &[u64]) -> Result<Comparison, SpreadError> {
        if self.done() == 0 {
            return Err(SpreadError::NoBoots);
        }
        if observed_counts.len() != self.listening.len() {
            return Err(SpreadError::ObservedLength {
                given: observed_counts.len(),
                listeners: self.listening.len() as u32,
            });
        }
        let observed = Skew::of(observed_counts);
        let max_min_percentile =
            percentile_rank(&self.max_min, observed.max_min.unwrap_or(f64::INFINITY));
        let jain_percentile = percentile_rank(&self.jain, observed.jain);
        let percentile = max_min_percentile;
        let verdict = if max_min_percentile <= 95.0 && jain_percentile >= 5.0 {
            Verdict::WithinHashing { percentile }
        } else {
            Verdict::BeyondHashing { percentile }
        };
        Ok(Comparison {
            observed,
            observed_total: observed_counts.iter().sum(),
            max_min: ratio_stat(&self.max_min),
            jain: stat(&self.jain),
            empty_share: stat(&self.empty_share),
            max_min_percentile,
            jain_percentile,
            verdict,
        })
    }
}

/// Adds one to the count of each packet's listener; NONE goes to the last
/// entry. Four interleaved tallies, so that runs of one listener do not wait
/// on each other's stores.
fn count(out: &[u32], counts: &mut [u32]) {
    let none = counts.len() - 1;
    let mut t = [
        vec![0u32; counts.len()],
        vec![0; counts.len()],
        vec![0; counts.len()],
    ];
    let mut chunks = out.chunks_exact(4);
    for c in &mut chunks {
        counts[(c[0] as usize).min(none)] += 1;
        t[0][(c[1] as usize).min(none)] += 1;
        t[1][(c[2] as usize).min(none)] += 1;
        t[2][(c[3] as usize).min(none)] += 1;
    }
    for &o in chunks.remainder() {
        counts[(o as usize).min(none)] += 1;
    }
    for (i, c) in counts.iter_mut().enumerate() {
        *c += t[0][i] + t[1][i] + t[2][i];
    }
}

/// Nearest-rank percentile `p` (0 to 100) of sorted values.
fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> T {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s = v.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    s
}

fn stat(v: &[f64]) -> Stat {
    if v.is_empty() {
        return Stat::default();
    }
    let s = sorted(v);
    Stat {
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p5: nearest_rank(&s, 5.0),
        p50: nearest_rank(&s, 50.0),
        p95: nearest_rank(&s, 95.0),
    }
}

fn ratio_stat(v: &[f64]) -> RatioStat {
    if v.is_empty() {
        return RatioStat::default();
    }
    let s = sorted(v);
    let finite = |x: f64| x.is_finite().then_some(x);
    RatioStat {
        mean: finite(v.iter().sum::<f64>() / v.len() as f64),
        p5: finite(nearest_rank(&s, 5.0)),
        p50: finite(nearest_rank(&s, 50.0)),
        p95: finite(nearest_rank(&s, 95.0)),
        unbounded: v.iter().filter(|x| x.is_infinite()).count() as f64 / v.len() as f64,
    }
}

/// Percentile rank (0 to 100) of `x` among `v`: the share below it, plus
/// half the share equal to it.
fn percentile_rank(v: &[f64], x: f64) -> f64 {
    let below = v.iter().filter(|&&y| y < x).count() as f64;
    let equal = v.iter().filter(|&&y| y == x).count() as f64;
    100.0 * (below + equal / 2.0) / v.len() as f64
}

/// The band of the merged count histograms.
fn band<'a>(hists: impl Iterator<Item = &'a BTreeMap<u32, u32>>) -> Band {
    let mut merged = BTreeMap::<u32, u64>::new();
    for h in hists {
        for (&c, &k) in h {
            *merged.entry(c).or_insert(0) += k as u64;
        }
    }
    let total: u64 = merged.values().sum();
    if total == 0 {
        return Band::default();
    }
    let at = |p: f64| {
        let rank = ((p / 100.0 * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (&c, &k) in &merged {
            seen += k;
            if seen >= rank {
                return c;
            }
        }
        unreachable!("rank is at most the total")
    };
    Band {
        mean: merged
            .iter()
            .map(|(&c, &k)| c as f64 * k as f64)
            .sum::<f64>()
            / total as f64,
        p5: at(5.0),
        p50: at(50.0),
        p95: at(95.0),
    }
}

/// How the expected skew of `tuples` moves with the group size: one row per
/// size of [`LISTENER_SIZES`] and the spec's own, ascending, each from
/// `boots` boots of the stream seeded with `seed` (the same keys for every
/// size). Each size is the spec with only `listeners` changed; closes,
/// shutdowns, CPU pins and connects of listeners beyond that size are
/// dropped, and a size the group cannot be built with (beyond the era's
/// limit, or refused) is left out. The spec's own size is always there.
pub fn by_listeners(
    profile: &'static Profile,
    spec: &GroupSpec,
    tuples: &[Tuple],
    seed: u64,
    boots: u32,
) -> Result<Vec<ListenerRow>, SpreadError> {
    let mut sizes: Vec<u32> = LISTENER_SIZES.into_iter().chain([spec.listeners]).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut rows = Vec::new();
    for n in sizes {
        let yours = n == spec.listeners;
        let mut s = spec.clone();
        s.listeners = n;
        s.closed.retain(|&l| l < n);
        s.shutdown.retain(|&l| l < n);
        s.connected.retain(|&l| l < n);
        s.incoming_cpu.retain(|p| p.listener < n);
        let group = match Host::shorthand_group(profile, &s) {
            Ok(g) => g,
            Err(e) if yours => return Err(e.into()),
            Err(_) => continue,
        };
        let mut run = match SpreadRun::new(group, tuples, seed) {
            Ok(r) => r,
            Err(e) if yours => return Err(e),
            Err(_) => continue,
        };
        run.step(boots);
        let sum = run.summary();
        rows.push(ListenerRow {
            listeners: n,
            yours,
            boots: sum.boots,
            max_min: sum.max_min,
            jain: sum.jain,
            empty_share: sum.empty_share,
            max_share: sum.max_share,
        });
    }
    Ok(rows)
}
