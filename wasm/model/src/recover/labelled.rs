//! The key search when observations name a worker, not a listener.
//!
//! What a server shows (`ss -tnpe`, a per-connection log) is the owner of
//! each accepted connection: a pid, a thread, a worker name. Which slot of
//! `socks[]` each owner accepts from is not shown: sockets enter `socks[]` in
//! `listen()` order (`reuseport_add_sock`, net/core/sock_reuseport.c, 4.5+),
//! which no socket table records. So a label says only this much:
//!
//! - connections with the same label landed in the same slot;
//! - connections with different labels landed in different slots (one
//!   worker per listener, as nginx's `reuseport`, a Go or Python server per
//!   process, HAProxy's `shards` have it).
//!
//! A [`LabelledPlan`] searches the 2^32 initvals for those under which both
//! hold, and for each key found gives the map from labels to slots
//! ([`LabelledPlan::map`]). The loop is the one of [`super::search`] with
//! another test per step: the first observation of a label stores the slot
//! the candidate sends it to; a later one keeps the candidate only if it
//! lands in that stored slot; the first of a new label keeps it only if it
//! lands in a slot no earlier label holds. Observations are ordered so that
//! each label's second observation comes right after its first, so after
//! two hashes about `1/n` of the candidates are left, as after one in
//! [`super::Plan`]: the search costs about twice today's.
//!
//! A key that fits is checked again the slow way through the group's own
//! [`ReuseportGroup::select`] ([`LabelledPlan::verify`]).

use std::collections::HashMap;
use std::ops::Range;

use super::{check_group, observe, Added, Found, Obs, RecoverError, SPACE};
use crate::hash::{hash_v4, Keys};
#[cfg(target_arch = "x86_64")]
use crate::isa::Compiled;
use crate::isa::Isa;
use crate::jhash::{reciprocal_scale_narrow, JhashForm};
use crate::profile::V4Form;
use crate::reuseport::ReuseportGroup;
use crate::tuple::Tuple;

/// Candidates per block of the labelled loop (its per-label slot columns
/// grow with the labels, so the block shrinks to keep them within 4 MiB).
const BLOCK: usize = 8192;
const LANES: usize = 16;

/// The most distinct labels one search takes.
pub const MAX_LABELS: usize = 4096;

/// Why a labelled observation cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelledError {
    /// What [`super::Plan`] refuses too.
    #[error(transparent)]
    Recover(#[from] RecoverError),
    /// More labels than listening members: two labels would share a slot.
    #[error("{labels} different owners accepted connections but the group has {members} listening member(s): with one worker per listener there cannot be more owners than listeners, so these owners do not each hold one listener (threads of one process sharing listeners, or a shared socket); give one label per listener")]
    MoreLabelsThanSlots {
        /// Labels seen.
        labels: usize,
        /// Listening members.
        members: u32,
    },
    /// Too many labels for one search.
    #[error("more than {max} different labels: the search keeps a slot per label and candidate and is bounded there")]
    TooManyLabels {
        /// The bound.
        max: usize,
    },
    /// The same packet under two labels.
    #[error("the connection {tuple} is labelled both {first:?} and {second:?}: one packet lands in one slot, so one connection cannot belong to two owners; check whether the two are one worker (a thread and its process)")]
    TwoLabels {
        /// The tuple.
        tuple: String,
        /// The first label.
        first: String,
        /// The other.
        second: String,
    },
}

/// One observation as the loop consumes it.
#[derive(Debug, Clone, Copy)]
struct Step {
    obs: Obs,
    label: u16,
    /// The label's first observation: stores the slot.
    first: bool,
}

/// Labelled observations of one group's key.
#[derive(Debug, Clone)]
pub struct LabelledPlan {
    group: ReuseportGroup,
    form: V4Form,
    jhash: JhashForm,
    members: u32,
    labels: Vec<String>,
    index: HashMap<String, u16>,
    /// Per observation: the tuple as the group sees it, its label, its words.
    observations: Vec<(Tuple, u16, Option<Obs>)>,
    /// Packet words -> the label first seen with them.
    seen: HashMap<(u32, u32, u16, u16), u16>,
    duplicates: usize,
}

impl LabelledPlan {
    /// An empty plan for `group`, which must pick by the hash alone
    /// ([`check_group`]).
    pub fn new(group: &ReuseportGroup) -> Result<LabelledPlan, LabelledError> {
        check_group(group)?;
        let p = group.profile();
        let form = match group.proto() {
            crate::tuple::Proto::Tcp => p.tcp4,
            crate::tuple::Proto::Udp => p.udp4,
        };
        Ok(LabelledPlan {
            group: group.clone(),
            form,
            jhash: p.jhash,
            members: group.listening().len() as u32,
            labels: Vec::new(),
            index: HashMap::new(),
            observations: Vec::new(),
            seen: HashMap::new(),
            duplicates: 0,
        })
    }

    /// Adds "`t` was accepted by `label`".
    pub fn add(&mut self, t: &Tuple, label: &str) -> Result<Added, LabelledError> {
        // Any listening member works to derive the packet's words: only the
        // words are kept, the band is not.
        let any = self.group.listening()[0];
        let o = observe(&self.group, t, any)?;
        let li = match self.index.get(label) {
            Some(&i) => i,
            None => {
                if self.labels.len() >= MAX_LABELS {
                    return Err(LabelledError::TooManyLabels { max: MAX_LABELS });
                }
                if self.labels.len() as u32 >= self.members {
                    return Err(LabelledError::MoreLabelsThanSlots {
                        labels: self.labels.len() + 1,
                        members: self.members,
                    });
                }
                let i = self.labels.len() as u16;
                self.labels.push(label.to_string());
                self.index.insert(label.to_string(), i);
                i
            }
        };
        let added = match o.obs {
            None => Added::Uninformative,
            Some(k) => match self.seen.get(&(k.laddr, k.faddr, k.lport, k.sport)) {
                Some(&other) if other != li => {
                    return Err(LabelledError::TwoLabels {
                        tuple: o.tuple.to_string(),
                        first: self.labels[other as usize].clone(),
                        second: label.to_string(),
                    })
                }
                Some(_) => {
                    self.duplicates += 1;
                    Added::Duplicate
                }
                None => {
                    self.seen.insert((k.laddr, k.faddr, k.lport, k.sport), li);
                    Added::New
                }
            },
        };
        self.observations.push((o.tuple, li, o.obs));
        Ok(added)
    }

    /// The labels in the order first seen.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// Listening members of the group.
    pub fn members(&self) -> u32 {
        self.members
    }

    /// Observations that repeated an earlier packet.
    pub fn duplicates(&self) -> usize {
        self.duplicates
    }

    /// Observations added, in order: the tuple and its label's index.
    pub fn observations(&self) -> impl Iterator<Item = (&Tuple, usize)> {
        self.observations.iter().map(|(t, l, _)| (t, *l as usize))
    }

    /// The loop's steps: labels by how many observations they have, most
    /// first; every observation of the first label, then each other label's
    /// first two, then the rest.
    fn steps(&self) -> Vec<Step> {
        let mut per: Vec<Vec<Obs>> = vec![Vec::new(); self.labels.len()];
        let mut dedup = std::collections::HashSet::new();
        for (_, l, o) in &self.observations {
            if let Some(o) = o {
                if dedup.insert((o.laddr, o.faddr, o.lport, o.sport)) {
                    per[*l as usize].push(*o);
                }
            }
        }
        let mut order: Vec<usize> = (0..per.len()).filter(|&l| !per[l].is_empty()).collect();
        order.sort_by_key(|&l| std::cmp::Reverse(per[l].len()));
        // The first label's connections all come first: each after its
        // first keeps about 1/n of the candidates while reading one column,
        // the cheapest test there is. Then each other label's first two.
        let lead = order.first().map_or(0, |&l| per[l].len());
        let mut steps = Vec::new();
        for (rank, &l) in order.iter().enumerate() {
            let take = if rank == 0 { lead } else { 2 };
            for (i, o) in per[l].iter().take(take).enumerate() {
                steps.push(Step {
                    obs: *o,
                    label: l as u16,
                    first: i == 0,
                });
            }
        }
        for &l in order.iter().skip(1) {
            for o in per[l].iter().skip(2) {
                steps.push(Step {
                    obs: *o,
                    label: l as u16,
                    first: false,
                });
            }
        }
        steps
    }

    /// Expected number of initvals that fit by chance, for independent
    /// uniform hashes: `2^32` times, per label after the first, the chance
    /// that its first connection misses the slots of the labels before it,
    /// and per further connection of a label the chance `Σ p_s²` that it
    /// lands where the label's first did (`p_s` the exact share of hashes
    /// that select slot `s`).
    pub fn expected_false_matches(&self) -> f64 {
        let (same, new) = self.factors();
        let mut e = SPACE as f64;
        for step in self.steps() {
            e *= if step.first {
                new[step.label as usize]
            } else {
                same
            };
        }
        e
    }

    /// The chance that two hashes select the same slot, and per label the
    /// chance that its first connection avoids the earlier labels' slots.
    fn factors(&self) -> (f64, Vec<f64>) {
        let n = self.members.max(1);
        let same: f64 = (0..n)
            .map(|s| super::Band::of(s, n).probability().powi(2))
            .sum();
        let mut new = vec![1.0; self.labels.len()];
        for (j, step) in self.steps().iter().filter(|s| s.first).enumerate() {
            new[step.label as usize] = (n as f64 - j as f64) / n as f64;
        }
        (same, new)
    }

    /// How many more connections of the labels seen would bring
    /// [`Self::expected_false_matches`] below `target`; 0 when it already
    /// is, `None` when more connections cannot help (one member).
    pub fn more_needed(&self, target: f64) -> Option<u64> {
        let e = self.expected_false_matches();
        if e < target {
            return Some(0);
        }
        let (same, _) = self.factors();
        if same >= 1.0 {
            return None;
        }
        Some(((target / e).ln() / same.ln()).floor() as u64 + 1)
    }

    /// Searches `range` (within `0..2^32`) for initvals under which every
    /// label's connections share a slot and different labels' do not, on
    /// the compiled copy `isa` resolves to (as [`super::search`]).
    pub fn search(&self, isa: Isa, range: Range<u64>, found: &mut Found) {
        assert!(
            range.start <= range.end && range.end <= SPACE,
            "range {range:?} is not within 0..2^32"
        );
        let steps = self.steps();
        let job = Job {
            form: self.form,
            jh: self.jhash,
            steps: &steps,
            labels: self.labels.len(),
            n: self.members,
        };
        match isa.resolve() {
            // SAFETY: `resolve` found every feature the copy was compiled for.
            #[cfg(target_arch = "x86_64")]
            Compiled::Avx512 => unsafe { search_avx512(&job, range, found) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Compiled::Avx2 => unsafe { search_avx2(&job, range, found) },
            _ => dispatch::<false>(&job, range, found),
        }
    }

    /// The slot of `socks[]` each label accepts from under initval `iv`
    /// (`None` for a label whose every connection is uninformative), as the
    /// model's own selection gives it.
    pub fn map(&self, iv: u32) -> Vec<Option<u32>> {
        let mut g = self.group.clone();
        g.set_keys(Keys { v4: iv, ..g.keys() });
        let socks = g
            .sock_array()
            .map(|s| s.listening().to_vec())
            .unwrap_or_default();
        let mut map = vec![None; self.labels.len()];
        for (t, l, _) in &self.observations {
            if map[*l as usize].is_none() {
                if let Ok(Some(listener)) = g.select(t, 0).map(|c| c.listener) {
                    map[*l as usize] = socks.iter().position(|&s| s == listener).map(|s| s as u32);
                }
            }
        }
        map
    }

    /// Checks a candidate the slow way, through the group's own selection:
    /// the index of the first observation that breaks the labelling, or
    /// `None` when every one fits.
    pub fn verify(&self, iv: u32) -> Option<usize> {
        let mut g = self.group.clone();
        g.set_keys(Keys { v4: iv, ..g.keys() });
        let mut slot_of: Vec<Option<u32>> = vec![None; self.labels.len()];
        let mut label_of: HashMap<u32, u16> = HashMap::new();
        for (i, (t, l, _)) in self.observations.iter().enumerate() {
            let Ok(Some(listener)) = g.select(t, 0).map(|c| c.listener) else {
                return Some(i);
            };
            match (slot_of[*l as usize], label_of.get(&listener)) {
                (Some(s), _) if s != listener => return Some(i),
                (_, Some(&other)) if other != *l => return Some(i),
                _ => {
                    slot_of[*l as usize] = Some(listener);
                    label_of.insert(listener, *l);
                }
            }
        }
        None
    }
}

/// What one search needs, besides the range.
struct Job<'a> {
    form: V4Form,
    jh: JhashForm,
    steps: &'a [Step],
    labels: usize,
    n: u32,
}

/// One monomorphic copy of the loop per hash form (as in [`super::search`]).
#[inline(always)]
fn dispatch<const W: bool>(job: &Job, range: Range<u64>, found: &mut Found) {
    use JhashForm::{New, Old};
    use V4Form::{Classic, ClassicNumericFport, LportPlus};
    macro_rules! go {
        ($f:expr, $j:expr) => {
            run::<_, W>(
                |o: &Obs, iv| hash_v4($f, $j, o.laddr, o.faddr, o.lport, o.sport, iv),
                job,
                range,
                found,
            )
        };
    }
    match (job.form, job.jh) {
        (Classic, New) => go!(Classic, New),
        (Classic, Old) => go!(Classic, Old),
        (ClassicNumericFport, New) => go!(ClassicNumericFport, New),
        (ClassicNumericFport, Old) => go!(ClassicNumericFport, Old),
        (LportPlus, New) => go!(LportPlus, New),
        (LportPlus, Old) => go!(LportPlus, Old),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn search_avx2(job: &Job, range: Range<u64>, found: &mut Found) {
    dispatch::<false>(job, range, found)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,popcnt")]
fn search_avx512(job: &Job, range: Range<u64>, found: &mut Found) {
    dispatch::<true>(job, range, found)
}

/// Stores the 16 consecutive initvals from `first` whose `mask` bit is set
/// at `buf[*k..]` with one `vpcompressd`, and advances `*k`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
#[inline]
unsafe fn compress(first: u32, mask: u16, buf: &mut [u32], k: &mut usize) {
    use std::arch::x86_64::*;
    assert!(*k + LANES <= buf.len());
    let lanes = _mm512_add_epi32(
        _mm512_set1_epi32(first as i32),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    );
    let packed = _mm512_maskz_compress_epi32(mask, lanes);
    _mm512_storeu_si512(buf.as_mut_ptr().add(*k).cast(), packed);
    *k += mask.count_ones() as usize;
}

/// The loop: survivors as initvals plus, per label seen so far, the slot
/// each survivor sends that label to. When the first label has two
/// connections (the usual case), both are hashed for every candidate in one
/// pass that the compiler vectorises, and only the `1/n` that send both to
/// one slot go on to the per-survivor steps.
#[inline(always)]
fn run<H: Fn(&Obs, u32) -> u32, const W: bool>(
    hash: H,
    job: &Job,
    range: Range<u64>,
    found: &mut Found,
) {
    let (steps, labels, n) = (job.steps, job.labels, job.n);
    if steps.is_empty() {
        found.extend_range(range);
        return;
    }
    let block = BLOCK.min((1usize << 21) / labels.max(1)).max(LANES);
    let cap = block + LANES;
    let mut ivs = vec![0u32; cap];
    let mut slots = vec![0u16; cap * labels.max(1)];
    // Which labels hold a slot so far (their columns in `slots`).
    let mut held: Vec<usize> = Vec::with_capacity(labels);
    let pair = steps.len() >= 2 && !steps[1].first;
    let mut start = range.start;
    while start < range.end {
        let len = (range.end - start).min(block as u64) as usize;
        let base = start as u32;
        held.clear();
        let (mut k, rest) = if pair {
            let (a, b) = (&steps[0].obs, &steps[1].obs);
            let col = steps[0].label as usize * cap;
            let mut k = 0;
            let mut c = 0;
            while c < len {
                let mut mask = 0u32;
                for j in 0..LANES {
                    let iv = base.wrapping_add((c + j) as u32);
                    let same = reciprocal_scale_narrow(hash(a, iv), n)
                        == reciprocal_scale_narrow(hash(b, iv), n);
                    mask |= ((same & (c + j < len)) as u32) << j;
                }
                let first = base.wrapping_add(c as u32);
                if W {
                    // SAFETY: W is true only in `search_avx512`, run after
                    // `Isa::resolve` confirmed AVX-512F; k + 16 <= cap.
                    #[cfg(target_arch = "x86_64")]
                    unsafe {
                        compress(first, mask as u16, &mut ivs, &mut k)
                    }
                } else {
                    for j in 0..LANES {
                        ivs[k] = first.wrapping_add(j as u32);
                        k += ((mask >> j) & 1) as usize;
                    }
                }
                c += LANES;
            }
            // The first label's slot, for the survivors only (about 1/n).
            for (i, &iv) in ivs[..k].iter().enumerate() {
                slots[col + i] = reciprocal_scale_narrow(hash(a, iv), n) as u16;
            }
            held.push(steps[0].label as usize);
            (k, &steps[2..])
        } else {
            for (i, v) in ivs[..len].iter_mut().enumerate() {
                *v = base.wrapping_add(i as u32);
            }
            (len, steps)
        };
        for step in rest {
            if k == 0 {
                break;
            }
            let col = step.label as usize * cap;
            let n_before = k;
            k = 0;
            let mut c = 0;
            while c < n_before {
                let lanes = (n_before - c).min(LANES);
                // Compute apart from packing, so that the compiler
                // vectorises it: the slots of 16 survivors, then the test.
                let iv: [u32; LANES] = ivs[c..c + LANES].try_into().expect("16 lanes");
                let mut sl = [0u16; LANES];
                for (s, &v) in sl.iter_mut().zip(&iv) {
                    *s = reciprocal_scale_narrow(hash(&step.obs, v), n) as u16;
                }
                let mut ok = [true; LANES];
                if step.first {
                    for &l in &held {
                        let other: &[u16] = &slots[l * cap + c..l * cap + c + LANES];
                        for j in 0..LANES {
                            ok[j] &= other[j] != sl[j];
                        }
                    }
                } else {
                    let mine: &[u16] = &slots[col + c..col + c + LANES];
                    for j in 0..LANES {
                        ok[j] = mine[j] == sl[j];
                    }
                }
                // Packed in place: k <= i, so nothing unread is overwritten.
                for j in 0..lanes {
                    let i = c + j;
                    ivs[k] = iv[j];
                    for &l in &held {
                        slots[l * cap + k] = slots[l * cap + i];
                    }
                    if step.first {
                        slots[col + k] = sl[j];
                    }
                    k += ok[j] as usize;
                }
                c += LANES;
            }
            if step.first {
                held.push(step.label as usize);
            }
        }
        found.extend(&ivs[..k]);
        start += len as u64;
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::profile::Profile;
    use crate::tuple::Proto;
    use crate::GroupSpec;

    fn group(kernel: &str, n: u32, bind: &str, key: u32) -> ReuseportGroup {
        let spec = GroupSpec::new(
            Proto::Tcp,
            n,
            bind.parse().unwrap(),
            8080,
            Keys {
                v4: key,
                ..Keys::default()
            },
        );
        crate::lookup::Host::spec_group(Profile::named(kernel).unwrap(), &spec).unwrap()
    }

    fn flows(seed: u32, count: usize) -> Vec<Tuple> {
        let mut x = seed;
        (0..count)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                Tuple::v4(
                    Ipv4Addr::from(0x7f00_0000 | (x & 0x00ff_ffff)),
                    (32768 + (x >> 20) % 28000) as u16,
                    Ipv4Addr::new(127, 0, 0, 1),
                    8080,
                )
            })
            .collect()
    }

    /// Labels as a server shows them: the listener's number turned into a
    /// made-up pid, in an order unrelated to the slots.
    fn pid_of(listener: u32) -> String {
        format!("pid={}", 7919 * (listener + 3) % 10007)
    }

    fn plan_for(g: &ReuseportGroup, ts: &[Tuple]) -> LabelledPlan {
        let mut p = LabelledPlan::new(g).unwrap();
        for t in ts {
            let l = g.select(t, 0).unwrap().listener.unwrap();
            p.add(t, &pid_of(l)).unwrap();
        }
        p
    }

    /// The slow oracle over a window: every key through `select`, kept when
    /// the labelling holds (same pid, same listener; different pids,
    /// different listeners).
    fn brute(p: &LabelledPlan, window: Range<u64>) -> Vec<u32> {
        window
            .map(|iv| iv as u32)
            .filter(|&iv| p.verify(iv).is_none())
            .collect()
    }

    #[test]
    fn labelled_search_finds_the_keys_the_slow_oracle_finds_in_a_window() {
        // The loop and select() must agree key for key, including keys that
        // fit by chance when there are few connections.
        for (kernel, n, count, key) in [
            ("6.18", 4, 6, 0x0001_2345u32),
            ("5.10", 8, 10, 0x0000_f00d),
            ("4.19", 3, 4, 0x0000_0777),
            ("6.18", 2, 3, 0x0000_1234),
        ] {
            let g = group(kernel, n, "127.0.0.1", key);
            let p = plan_for(&g, &flows(key | 1, count));
            let window = 0..(1u64 << 17);
            let mut found = Found::new(1 << 17);
            p.search(Isa::Portable, window.clone(), &mut found);
            let mut best = Found::new(1 << 17);
            p.search(Isa::Best, window.clone(), &mut best);
            assert_eq!(
                best.values, found.values,
                "{kernel}: the widest copy and the baseline agree"
            );
            let want = brute(&p, window);
            assert!(want.contains(&key), "{kernel}: the true key fits");
            assert_eq!(found.values, want, "{kernel} n={n}");
            assert_eq!(found.count, want.len() as u64);
        }
    }

    #[test]
    fn labelled_search_pins_one_key_and_the_map_with_enough_connections() {
        // 60 connections over 4 workers: the true key alone, and each pid
        // mapped to the slot its listener holds.
        let key = 0x0000_9abc;
        let g = group("6.18", 4, "0.0.0.0", key);
        let ts = flows(99, 60);
        let p = plan_for(&g, &ts);
        assert!(
            p.expected_false_matches() < 1e-3,
            "{}",
            p.expected_false_matches()
        );
        let mut found = Found::new(10);
        p.search(Isa::Best, 0..(1u64 << 18), &mut found);
        assert_eq!(found.values, vec![key]);
        let map = p.map(key);
        for (i, label) in p.labels().iter().enumerate() {
            let slot = map[i].unwrap();
            assert_eq!(
                &pid_of(slot),
                label,
                "slot {slot} is the listener of that pid in a group never closed"
            );
        }
    }

    #[test]
    fn a_connection_under_two_owners_is_refused_by_name() {
        let g = group("6.18", 4, "127.0.0.1", 1);
        let t = flows(5, 1)[0];
        let mut p = LabelledPlan::new(&g).unwrap();
        p.add(&t, "pid=10").unwrap();
        let e = p.add(&t, "pid=11").unwrap_err();
        assert!(matches!(e, LabelledError::TwoLabels { .. }), "{e}");
        assert!(e.to_string().contains("pid=10") && e.to_string().contains("pid=11"));
    }

    #[test]
    fn more_owners_than_listeners_is_refused() {
        // Three pids over a two-member group cannot each hold a listener.
        let g = group("6.18", 2, "127.0.0.1", 1);
        let ts = flows(7, 3);
        let mut p = LabelledPlan::new(&g).unwrap();
        p.add(&ts[0], "a").unwrap();
        p.add(&ts[1], "b").unwrap();
        let e = p.add(&ts[2], "c").unwrap_err();
        assert_eq!(
            e,
            LabelledError::MoreLabelsThanSlots {
                labels: 3,
                members: 2
            }
        );
    }

    #[test]
    fn expected_false_matches_follows_the_hand_count() {
        // Two members, bands of exactly 2^31: Σp² = 1/2. Labels a (3
        // connections) and b (1): 2^32 · (1/2)² for a's two repeats · (1/2)
        // for b missing a's slot = 2^29.
        let g = group("6.18", 2, "127.0.0.1", 42);
        let ts = flows(11, 4);
        let mut p = LabelledPlan::new(&g).unwrap();
        for t in &ts[..3] {
            p.add(t, "a").unwrap();
        }
        p.add(&ts[3], "b").unwrap();
        assert_eq!(p.expected_false_matches(), (1u64 << 29) as f64);
        // Each more connection halves it: from 2^29 to below 0.001 takes 39.
        assert_eq!(p.more_needed(1e-3), Some(39));
    }
}
