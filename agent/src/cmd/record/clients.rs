//! The client side of a recording: which client addresses exist (`--client`
//! given, or `--clients K` generated from the seed) and in which order the
//! (address, source port) pairs are used.
//!
//! Both come from seeded permutations ([`Permutation`]), so a run never
//! repeats a pair, and two runs with the same seed, clients and port range
//! drive the same pairs in the same order: that is what lets two recordings
//! of different groups be compared flow by flow.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// `splitmix64`: a well-mixed 64-bit step, used both as the generator of
/// round keys and as the Feistel round function.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A bijection of `[0, n)` chosen by a seed: a four-round Feistel network on
/// the smallest even bit width that covers `n`, with cycle walking for the
/// values past `n`. Constant memory, O(1) expected per lookup.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// The permutation of `[0, n)` for `seed`; `n` must be at least 1 and
    /// below 2^62.
    pub fn new(n: u64, seed: u64) -> Self {
        assert!(
            (1..1 << 62).contains(&n),
            "permutation size {n} out of range"
        );
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let half_bits = bits.div_ceil(2);
        let mut k = seed;
        let keys = std::array::from_fn(|_| {
            k = splitmix64(k);
            k
        });
        Permutation { n, half_bits, keys }
    }

    /// How many values it permutes.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether it permutes nothing (never: `n` is at least 1).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn encrypt(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = splitmix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The image of `i`, which must be below [`Self::len`].
    pub fn get(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = i;
        loop {
            x = self.encrypt(x);
            if x < self.n {
                return x;
            }
        }
    }
}

/// Octets 1..=254 in each of the last three places of 127.0.0.0/8: no `.0`
/// or `.255` octet, so never 127.0.0.0 and never a broadcast-looking address.
const V4_SPACE: u64 = 254 * 254 * 254;
/// The last 16 bits of fd00::/112, from 1 to 0xfffe.
const V6_SPACE: u64 = 0xfffe;

/// The `i`-th address of the IPv4 client space, 127.a.b.c with a, b, c in
/// 1..=254.
fn v4_at(i: u64) -> IpAddr {
    let o = |x: u64| (1 + x % 254) as u8;
    Ipv4Addr::new(127, o(i / (254 * 254)), o(i / 254), o(i)).into()
}

/// The `i`-th address of the IPv6 client space, fd00::1 to fd00::fffe.
fn v6_at(i: u64) -> IpAddr {
    Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, (1 + i) as u16).into()
}

/// `k` distinct client addresses drawn from the seed: from 127.0.0.0/8 for
/// IPv4 (octets 1..=254 only), from fd00::/112 for IPv6 (only usable inside
/// the private namespace of `--netns`, where the agent adds them to `lo`).
/// Addresses in `avoid` (the group's and the destination address) are
/// skipped. `None` when the space cannot hold `k` of them.
pub fn generate(v6: bool, k: u32, seed: u64, avoid: &[IpAddr]) -> Option<Vec<IpAddr>> {
    let (space, at): (u64, fn(u64) -> IpAddr) = if v6 {
        (V6_SPACE, v6_at)
    } else {
        (V4_SPACE, v4_at)
    };
    if u64::from(k) + avoid.len() as u64 > space {
        return None;
    }
    let perm = Permutation::new(space, splitmix64(seed ^ 0xc11e_47ad_d2e5));
    Some(
        (0..space)
            .map(|i| at(perm.get(i)))
            .filter(|a| !avoid.contains(a))
            .take(k as usize)
            .collect(),
    )
}

/// The largest number of clients [`generate`] can give for a family.
pub fn space(v6: bool) -> u64 {
    if v6 {
        V6_SPACE
    } else {
        V4_SPACE
    }
}

/// Every (client address, source port) pair, in a seeded order with no
/// repeats.
#[derive(Debug, Clone)]
pub struct Pairs {
    clients: Vec<IpAddr>,
    first_port: u16,
    perm: Permutation,
}

impl Pairs {
    /// The pairs of `clients` × `ports` (inclusive range), ordered by `seed`.
    /// `clients` must not be empty and the range not reversed.
    pub fn new(clients: Vec<IpAddr>, ports: (u16, u16), seed: u64) -> Self {
        assert!(!clients.is_empty() && ports.0 <= ports.1);
        let n = clients.len() as u64 * (u64::from(ports.1 - ports.0) + 1);
        Pairs {
            perm: Permutation::new(n, splitmix64(seed ^ 0x9a12_5eed)),
            clients,
            first_port: ports.0,
        }
    }

    /// How many pairs there are.
    pub fn len(&self) -> u64 {
        self.perm.len()
    }

    /// Whether there are none (never).
    pub fn is_empty(&self) -> bool {
        self.perm.is_empty()
    }

    /// The client addresses.
    pub fn clients(&self) -> &[IpAddr] {
        &self.clients
    }

    /// The `i`-th pair of the run (`i` below [`Self::len`]).
    pub fn get(&self, i: u64) -> SocketAddr {
        let j = self.perm.get(i);
        let k = self.clients.len() as u64;
        SocketAddr::new(
            self.clients[(j % k) as usize],
            self.first_port + (j / k) as u16,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn permutations_are_bijections_for_awkward_sizes() {
        for n in [1, 2, 3, 5, 17, 254, 1000, 4097] {
            let p = Permutation::new(n, 42);
            let seen: HashSet<u64> = (0..n).map(|i| p.get(i)).collect();
            assert_eq!(seen.len() as u64, n, "n = {n}");
            assert!(seen.iter().all(|&x| x < n));
        }
    }

    #[test]
    fn the_seed_decides_the_order() {
        let a: Vec<u64> = (0..50).map(|i| Permutation::new(1000, 1).get(i)).collect();
        let b: Vec<u64> = (0..50).map(|i| Permutation::new(1000, 1).get(i)).collect();
        let c: Vec<u64> = (0..50).map(|i| Permutation::new(1000, 2).get(i)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn generated_v4_clients_are_distinct_tidy_loopback_addresses() {
        let avoid: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
        let c = generate(false, 500, 7, &avoid).unwrap();
        assert_eq!(c.len(), 500);
        assert_eq!(c.iter().collect::<HashSet<_>>().len(), 500);
        for a in &c {
            let IpAddr::V4(v4) = a else { panic!("{a}") };
            let o = v4.octets();
            assert_eq!(o[0], 127);
            assert!(o[1..].iter().all(|&x| x != 0 && x != 255), "{a}");
            assert!(!avoid.contains(a));
        }
        assert_eq!(c, generate(false, 500, 7, &avoid).unwrap());
        assert_ne!(c, generate(false, 500, 8, &avoid).unwrap());
    }

    #[test]
    fn generated_v6_clients_stay_in_fd00_slash_112_and_skip_the_bind_address() {
        let avoid: Vec<IpAddr> = vec!["fd00::1".parse().unwrap()];
        let c = generate(true, 0xfffd, 1, &avoid).unwrap();
        assert_eq!(c.len(), 0xfffd);
        assert!(!c.contains(&avoid[0]));
        assert!(c
            .iter()
            .all(|a| a.to_string().starts_with("fd00::")
                && *a != "fd00::".parse::<IpAddr>().unwrap()));
        assert!(
            generate(true, 0xfffe, 1, &avoid).is_none(),
            "one address is avoided"
        );
    }

    #[test]
    fn pairs_cover_every_address_and_port_once() {
        let clients: Vec<IpAddr> = vec!["127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap()];
        let p = Pairs::new(clients, (20000, 20009), 3);
        assert_eq!(p.len(), 20);
        let all: HashSet<SocketAddr> = (0..p.len()).map(|i| p.get(i)).collect();
        assert_eq!(all.len(), 20);
        assert!(all.iter().all(|s| (20000..=20009).contains(&s.port())));
    }
}
