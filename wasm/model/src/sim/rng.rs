//! The simulator's random numbers: SplitMix64 streams, one per purpose, so
//! that changing how one thing is drawn leaves every other draw as it was.
//! The logarithm comes from the `libm` crate, so a seed gives the same run
//! natively and in wasm.

/// One stream.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The stream `purpose` of run `seed`.
    pub fn new(seed: u64, purpose: u64) -> Rng {
        let mut r = Rng {
            state: seed ^ purpose.wrapping_mul(0xd1b5_4a32_d192_ed03),
        };
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (`n` > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    /// Exponential with this mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * libm::log(1.0 - self.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_of_one_seed_differ_and_repeat() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, 1);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, 2);
                move |_| r.next_u64()
            })
            .collect();
        let a2: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, 1);
                move |_| r.next_u64()
            })
            .collect();
        assert_ne!(a, b);
        assert_eq!(a, a2);
    }

    #[test]
    fn exponential_mean_is_close_to_the_mean_asked_for() {
        let mut r = Rng::new(3, 3);
        let n = 200_000;
        let m: f64 = (0..n).map(|_| r.exp(50.0)).sum::<f64>() / n as f64;
        // The standard error of the mean is 50/sqrt(n) ≈ 0.11.
        assert!((m - 50.0).abs() < 0.6, "mean {m}");
    }

    #[test]
    fn below_stays_below_and_reaches_every_value() {
        let mut r = Rng::new(1, 9);
        let mut seen = [0u32; 5];
        for _ in 0..10_000 {
            seen[r.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 1800), "{seen:?}");
    }
}
