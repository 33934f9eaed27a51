//! `struct sock_reuseport`: the group's `socks[]` array and its add, detach,
//! grow and closed-tail rules, exactly as `net/core/sock_reuseport.c` keeps
//! them (4.6 for TCP, 4.5 for UDP, through 7.2; the closed tail from 5.14).
//!
//! Entries are listener numbers. The array holds the listening members in
//! `socks[0..num_socks)` and, from 5.14, shut-down members kept for request
//! migration in the tail `socks[max_socks - num_closed_socks .. max_socks)`.

use serde::{Deserialize, Serialize};

use crate::profile::{INIT_SOCKS, MAX_SOCKS};

/// Why an add failed: `reuseport_grow` could not double past `U16_MAX` and
/// there was no closed member to evict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrowFailed;

/// What an add did besides appending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AddEffect {
    /// Appended at `socks[num_socks]`.
    Appended,
    /// `socks[]` doubled first (`reuseport_grow`).
    Grew {
        /// The old size.
        from: u32,
        /// The new size.
        to: u32,
    },
    /// At the cap, the most recently closed member was evicted to make room
    /// (5.14+ `reuseport_grow`).
    EvictedClosed {
        /// The evicted listener.
        listener: u32,
    },
}

/// The group's socket array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SockArray {
    socks: Vec<u32>,
    num_socks: u32,
    num_closed_socks: u32,
}

/// A slot no member occupies.
pub const EMPTY: u32 = u32::MAX;

impl Default for SockArray {
    fn default() -> Self {
        Self::new()
    }
}

impl SockArray {
    /// A new group: `__reuseport_alloc(INIT_SOCKS)`.
    pub fn new() -> Self {
        SockArray {
            socks: vec![EMPTY; INIT_SOCKS as usize],
            num_socks: 0,
            num_closed_socks: 0,
        }
    }

    /// `max_socks`: the allocated size of `socks[]`.
    pub fn max_socks(&self) -> u32 {
        self.socks.len() as u32
    }

    /// `num_socks`: listening members, in `socks[0..num_socks)`.
    pub fn num_socks(&self) -> u32 {
        self.num_socks
    }

    /// `num_closed_socks` (5.14+): members in the closed tail.
    pub fn num_closed_socks(&self) -> u32 {
        self.num_closed_socks
    }

    /// The listening prefix `socks[0..num_socks)`.
    pub fn listening(&self) -> &[u32] {
        &self.socks[..self.num_socks as usize]
    }

    /// The closed tail, lowest index first.
    pub fn closed(&self) -> &[u32] {
        &self.socks[(self.max_socks() - self.num_closed_socks) as usize..]
    }

    /// The whole array; [`EMPTY`] marks unused slots.
    pub fn raw(&self) -> &[u32] {
        &self.socks
    }

    /// `reuseport_grow`: double, copying the listening prefix to the same
    /// indices and the closed tail to the new end; at the cap, evict the most
    /// recently closed member if there is one.
    fn grow(&mut self) -> Result<AddEffect, GrowFailed> {
        let max = self.max_socks();
        if max * 2 > u16::MAX as u32 {
            if self.num_closed_socks > 0 {
                let victim = self.socks[(max - self.num_closed_socks) as usize];
                self.detach_closed(victim);
                return Ok(AddEffect::EvictedClosed { listener: victim });
            }
            return Err(GrowFailed);
        }
        let mut more = vec![EMPTY; (max * 2) as usize];
        let n = self.num_socks as usize;
        more[..n].copy_from_slice(&self.socks[..n]);
        let c = self.num_closed_socks as usize;
        let new_len = more.len();
        more[new_len - c..].copy_from_slice(&self.socks[max as usize - c..]);
        self.socks = more;
        Ok(AddEffect::Grew {
            from: max,
            to: max * 2,
        })
    }

    /// `reuseport_add_sock` for a socket not yet in the group: grow when
    /// `num_socks + num_closed_socks == max_socks`, then append.
    pub fn add(&mut self, listener: u32) -> Result<AddEffect, GrowFailed> {
        let mut effect = AddEffect::Appended;
        if self.num_socks + self.num_closed_socks == self.max_socks() {
            effect = self.grow()?;
        }
        self.socks[self.num_socks as usize] = listener;
        self.num_socks += 1;
        Ok(effect)
    }

    /// `__reuseport_detach_sock`: the last listening member moves into the
    /// hole. Returns the slot that was freed and the listener moved into it
    /// (if any), or `None` when the listener is not in the prefix.
    pub fn detach(&mut self, listener: u32) -> Option<(u32, Option<u32>)> {
        let i = self.listening().iter().position(|&s| s == listener)?;
        let last = self.num_socks as usize - 1;
        let moved = (i != last).then(|| self.socks[last]);
        self.socks[i] = self.socks[last];
        self.socks[last] = EMPTY;
        self.num_socks -= 1;
        Some((i as u32, moved))
    }

    /// `__reuseport_add_closed_sock`: store at `socks[max - closed - 1]`.
    pub fn add_closed(&mut self, listener: u32) {
        let i = self.max_socks() - self.num_closed_socks - 1;
        self.socks[i as usize] = listener;
        self.num_closed_socks += 1;
    }

    /// `__reuseport_detach_closed_sock`: the lowest closed entry moves into
    /// the hole. Returns false when the listener is not in the tail.
    pub fn detach_closed(&mut self, listener: u32) -> bool {
        let lo = (self.max_socks() - self.num_closed_socks) as usize;
        let Some(off) = self.socks[lo..].iter().position(|&s| s == listener) else {
            return false;
        };
        self.socks[lo + off] = self.socks[lo];
        self.socks[lo] = EMPTY;
        self.num_closed_socks -= 1;
        true
    }

    /// `reuseport_stop_listen_sock` with migration on: move from the listening
    /// prefix to the closed tail.
    pub fn stop_listen(&mut self, listener: u32) -> Option<(u32, Option<u32>)> {
        let r = self.detach(listener)?;
        self.add_closed(listener);
        Some(r)
    }

    /// `reuseport_resurrect` within the same group: out of the closed tail,
    /// appended to the listening prefix (no grow: the slot it leaves is free).
    pub fn resurrect(&mut self, listener: u32) -> bool {
        if !self.detach_closed(listener) {
            return false;
        }
        self.socks[self.num_socks as usize] = listener;
        self.num_socks += 1;
        true
    }

    /// Whether the group is at its size limit and full.
    pub fn at_cap(&self) -> bool {
        self.max_socks() == MAX_SOCKS && self.num_socks + self.num_closed_socks == MAX_SOCKS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A plain reference: the listening members as a list where closing
    /// swaps the last into the hole, and the closed members as a stack.
    #[derive(Default)]
    struct Reference {
        listening: Vec<u32>,
        closed: Vec<u32>, // most recently closed last
        cap: usize,
    }

    impl Reference {
        fn capacity(&self) -> usize {
            let mut c = 128;
            while c < self.cap {
                c *= 2;
            }
            c
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add,
        Close(usize),
        Shutdown(usize),
        Relisten(usize),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                6 => Just(Op::Add),
                2 => (0usize..1000).prop_map(Op::Close),
                1 => (0usize..1000).prop_map(Op::Shutdown),
                1 => (0usize..1000).prop_map(Op::Relisten),
            ],
            0..600,
        )
    }

    proptest! {
        // The kernel array and the plain reference agree on which listener is
        // at each listening index and on the closed set, through any sequence
        // of joins, closes, shutdowns and re-listens, across growth.
        #[test]
        fn array_matches_reference(ops in ops()) {
            let mut a = SockArray::new();
            let mut r = Reference::default();
            let mut next = 0u32;
            for op in ops {
                match op {
                    Op::Add => {
                        let eff = a.add(next).unwrap();
                        r.listening.push(next);
                        let total = r.listening.len() + r.closed.len();
                        if total > r.capacity() { r.cap = total; }
                        if let AddEffect::Grew { to, .. } = eff { prop_assert_eq!(to as usize, r.capacity()); }
                        next += 1;
                    }
                    Op::Close(k) if !r.listening.is_empty() => {
                        let l = r.listening[k % r.listening.len()];
                        let i = r.listening.iter().position(|&x| x == l).unwrap();
                        r.listening.swap_remove(i);
                        let (slot, _) = a.detach(l).unwrap();
                        prop_assert_eq!(slot as usize, i);
                    }
                    Op::Shutdown(k) if !r.listening.is_empty() => {
                        let l = r.listening[k % r.listening.len()];
                        let i = r.listening.iter().position(|&x| x == l).unwrap();
                        r.listening.swap_remove(i);
                        r.closed.push(l);
                        a.stop_listen(l).unwrap();
                    }
                    Op::Relisten(k) if !r.closed.is_empty() => {
                        let l = r.closed[k % r.closed.len()];
                        r.closed.retain(|&x| x != l);
                        r.listening.push(l);
                        prop_assert!(a.resurrect(l));
                    }
                    _ => {}
                }
                prop_assert_eq!(a.listening(), &r.listening[..]);
                let mut got: Vec<u32> = a.closed().to_vec();
                let mut want = r.closed.clone();
                got.sort_unstable();
                want.sort_unstable();
                prop_assert_eq!(got, want);
                prop_assert_eq!(a.max_socks() as usize, r.capacity());
            }
        }
    }

    #[test]
    fn the_129th_member_doubles_the_array_to_256() {
        let mut a = SockArray::new();
        for l in 0..128 {
            assert_eq!(a.add(l).unwrap(), AddEffect::Appended);
        }
        assert_eq!(a.add(128).unwrap(), AddEffect::Grew { from: 128, to: 256 });
        assert_eq!(a.listening(), (0..129).collect::<Vec<_>>().as_slice());
    }

    #[test]
    fn the_32769th_member_is_refused() {
        let mut a = SockArray::new();
        for l in 0..32768 {
            a.add(l).unwrap();
        }
        assert_eq!(a.max_socks(), 32768);
        assert!(a.at_cap());
        assert_eq!(a.add(32768), Err(GrowFailed));
    }

    #[test]
    fn at_the_cap_the_most_recently_closed_member_is_evicted() {
        // 5.14+ reuseport_grow: socks[max - num_closed] is the most recent.
        let mut a = SockArray::new();
        for l in 0..32768 {
            a.add(l).unwrap();
        }
        a.stop_listen(5).unwrap();
        a.stop_listen(9).unwrap();
        assert_eq!(a.closed(), &[9, 5]);
        assert_eq!(
            a.add(40000).unwrap(),
            AddEffect::EvictedClosed { listener: 9 }
        );
        assert_eq!(a.closed(), &[5]);
        assert_eq!(a.num_socks(), 32767);
    }

    #[test]
    fn closing_moves_the_last_member_into_the_hole() {
        // kernel-history.md §10 E4: 4 members, close #1 -> [0, 3, 2].
        let mut a = SockArray::new();
        for l in 0..4 {
            a.add(l).unwrap();
        }
        assert_eq!(a.detach(1), Some((1, Some(3))));
        assert_eq!(a.listening(), &[0, 3, 2]);
        assert_eq!(a.detach(2), Some((2, None)));
        assert_eq!(a.listening(), &[0, 3]);
    }

    #[test]
    fn growth_keeps_the_closed_tail_at_the_new_end() {
        let mut a = SockArray::new();
        for l in 0..128 {
            a.add(l).unwrap();
        }
        a.stop_listen(0).unwrap(); // prefix 127, tail 1: full again
        a.stop_listen(1).unwrap();
        a.add(500).unwrap();
        a.add(501).unwrap();
        assert_eq!(a.max_socks(), 256);
        assert_eq!(a.closed(), &[1, 0]);
        assert_eq!(a.raw()[254..], [1, 0]);
    }
}
