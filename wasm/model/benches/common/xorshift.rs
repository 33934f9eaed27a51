//! xorshift32 (Marsaglia's 13/17/5 triple): deterministic "random" numbers
//! with no dependency, for the benchmarks' generated inputs and the tests
//! that want varied clients. Not the kernel's generator: nothing here
//! models a kernel rule.

/// The generator's state; never 0 (0 is its fixed point).
pub struct Xorshift32(u32);

impl Xorshift32 {
    /// Starts from `seed`, or from 1 when `seed` is 0.
    pub fn new(seed: u32) -> Self {
        Xorshift32(if seed == 0 { 1 } else { seed })
    }

    /// The next number.
    pub fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }
}
