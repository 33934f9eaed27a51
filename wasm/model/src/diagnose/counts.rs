//! Per-worker counts alone: how likely that spread is under hashing, for
//! that many connections on that many workers, and which accept model gives
//! that shape.
//!
//! Without the tuples, the key cannot be searched and no connection can be
//! predicted; what is left is the shape. With `m` distinct clients hashed
//! into `n` equal bands (`reciprocal_scale` splits the 2^32 hashes into `n`
//! bands that differ by at most one value), the counts are multinomial with
//! `m` trials and `n` equal chances, whatever the key. [`diagnose_counts`]
//! draws that multinomial [`BOOTS`](super::BOOTS) times (seeded, so the
//! answer repeats) and ranks the observed largest count among the draws.
//!
//! Simplification, said in the report: each count of a draw is binomial,
//! drawn exactly for fewer than 256 trials and by the normal approximation
//! above (continuity-corrected, clamped), and the connections are taken to
//! be distinct clients (long-lived connections counted once each).

use serde::Serialize;

use super::VerdictKind;
use crate::spread::Skew;

/// Workers one count list may have.
pub const MAX_WORKERS: usize = 32_768;

/// Why counts cannot be diagnosed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountsError {
    /// No counts.
    #[error("no counts were given: give one count per worker")]
    Empty,
    /// A zero total.
    #[error("every count is 0: there is no spread to judge")]
    Zero,
    /// More counts than workers.
    #[error("{given} counts were given for {workers} workers: give at most one count per worker")]
    MoreThanWorkers {
        /// Counts given.
        given: usize,
        /// Workers said.
        workers: u32,
    },
    /// Too many workers.
    #[error("{given} workers: at most {max} are taken (the socks[] cap)")]
    TooMany {
        /// Given.
        given: usize,
        /// The bound.
        max: usize,
    },
}

/// The shape of the counts, as the accept models make them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "CountsShape"))]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Within what hashing gives.
    Even,
    /// One worker holds half or more: a shared queue whose waiters are woken
    /// last-in first-out (epoll's exclusive wake-up) makes this.
    OneDominant,
    /// Some workers got none while others got many.
    IdleWorkers,
    /// Uneven beyond hashing, without one dominant worker.
    Uneven,
}

/// The range of one worker's count under hashing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "CountsBand"))]
#[serde(rename_all = "camelCase")]
pub struct Band {
    /// 5th percentile.
    pub p5: u64,
    /// The mean.
    pub mean: f64,
    /// 95th percentile.
    pub p95: u64,
}

/// The diagnosis of per-worker counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct CountsDiagnosis {
    /// Connections counted.
    pub total: u64,
    /// Workers (counts given, padded with zeros to the number said).
    pub workers: u32,
    /// The observed skew.
    pub observed: Skew,
    /// Share of hashings (of `total` distinct clients) whose largest count
    /// is at least the observed largest (ties count half): small means
    /// hashing rarely gives this.
    pub p_value: f64,
    /// The largest count hashing gives at the median and the 99.9th
    /// percentile of draws.
    pub max_median: u64,
    /// See [`Self::max_median`].
    pub max_p999: u64,
    /// Draws.
    pub boots: u32,
    /// What hashing gives any one worker: its count's 5th and 95th
    /// percentiles among the draws, and the mean (`total / workers`).
    pub band: Band,
    /// Workers hashing leaves empty on average: `n·(1 − 1/n)^m`.
    pub expected_empty: f64,
    /// The shape.
    pub shape: Shape,
    /// The verdict: `hash-spread`, `beyond-hash` or `few-clients`.
    pub verdict: VerdictKind,
}

/// Below this share of draws, hashing is not taken to explain the counts.
pub const P_BEYOND: f64 = 0.001;

/// Diagnoses per-worker counts; `workers` says how many there are when some
/// got none and are not listed.
pub fn diagnose_counts(
    counts: &[u64],
    workers: Option<u32>,
) -> Result<CountsDiagnosis, CountsError> {
    if counts.is_empty() {
        return Err(CountsError::Empty);
    }
    let n = workers.map(|w| w as usize).unwrap_or(counts.len());
    if n > MAX_WORKERS || counts.len() > MAX_WORKERS {
        return Err(CountsError::TooMany {
            given: n.max(counts.len()),
            max: MAX_WORKERS,
        });
    }
    if counts.len() > n {
        return Err(CountsError::MoreThanWorkers {
            given: counts.len(),
            workers: n as u32,
        });
    }
    let mut c = counts.to_vec();
    c.resize(n, 0);
    let total: u64 = c.iter().sum();
    if total == 0 {
        return Err(CountsError::Zero);
    }
    let observed = Skew::of(&c);
    let max = *c.iter().max().expect("non-empty");
    let boots = super::BOOTS;
    let mut rng = SplitMix(0x00c0_ffee);
    let mut maxes = Vec::with_capacity(boots as usize);
    let mut firsts = Vec::with_capacity(boots as usize);
    let (mut above, mut ties) = (0u32, 0u32);
    for _ in 0..boots {
        let (m, first) = draw_max(&mut rng, total, n as u32);
        firsts.push(first);
        above += (m > max) as u32;
        ties += (m == max) as u32;
        maxes.push(m);
    }
    maxes.sort_unstable();
    // The workers are exchangeable: the first one's count stands for any.
    firsts.sort_unstable();
    let at = |q: f64| firsts[((firsts.len() as f64 * q) as usize).min(firsts.len() - 1)];
    let band = Band {
        p5: at(0.05),
        mean: total as f64 / n as f64,
        p95: at(0.95),
    };
    let p_value = (above as f64 + ties as f64 / 2.0) / boots as f64;
    let expected_empty = n as f64 * (1.0 - 1.0 / n as f64).powf(total as f64);
    let beyond = p_value < P_BEYOND;
    let shape = if !beyond {
        Shape::Even
    } else if n >= 2 && observed.max_share >= 0.5 {
        Shape::OneDominant
    } else if c.contains(&0) {
        Shape::IdleWorkers
    } else {
        Shape::Uneven
    };
    let verdict = if expected_empty >= 1.0 {
        VerdictKind::FewClients
    } else if beyond {
        VerdictKind::BeyondHash
    } else {
        VerdictKind::HashSpread
    };
    Ok(CountsDiagnosis {
        total,
        workers: n as u32,
        observed,
        p_value,
        max_median: maxes[maxes.len() / 2],
        max_p999: maxes[((maxes.len() as f64 * 0.999) as usize).min(maxes.len() - 1)],
        boots,
        band,
        expected_empty,
        shape,
        verdict,
    })
}

/// SplitMix64 (Steele, Lea, Flood 2014).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// One binomial draw: `trials` with chance `p`.
fn binomial(rng: &mut SplitMix, trials: u64, p: f64) -> u64 {
    if trials < 256 {
        return (0..trials).filter(|_| rng.unit() < p).count() as u64;
    }
    let mean = trials as f64 * p;
    let sd = (mean * (1.0 - p)).sqrt();
    // Box–Muller with libm, for the same bits natively and in wasm.
    let (u1, u2) = (rng.unit().max(f64::MIN_POSITIVE), rng.unit());
    let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(std::f64::consts::TAU * u2);
    (mean + sd * z).round().clamp(0.0, trials as f64) as u64
}

/// The largest count of one multinomial draw of `m` over `n` equal chances,
/// drawn count by count: each is binomial over what is left; and the first
/// count.
fn draw_max(rng: &mut SplitMix, m: u64, n: u32) -> (u64, u64) {
    let mut left = m;
    let mut max = 0;
    let mut first = 0;
    for i in 0..n {
        let k = if i + 1 == n {
            left
        } else {
            binomial(rng, left, 1.0 / (n - i) as f64)
        };
        if i == 0 {
            first = k;
        }
        max = max.max(k);
        left -= k;
    }
    (max, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_counts_over_four_workers_are_what_hashing_gives() {
        // 400 connections, 4 workers, 97..104 each: well inside binomial
        // noise (sd = √(400·¼·¾) ≈ 8.7).
        let d = diagnose_counts(&[97, 104, 99, 100], None).unwrap();
        assert_eq!(d.verdict, VerdictKind::HashSpread);
        assert_eq!(d.shape, Shape::Even);
        assert!(d.p_value > 0.5, "{}", d.p_value);
        // One worker's count is Binomial(400, ¼): 100 ± 1.645·8.66.
        assert!(
            (84..=88).contains(&d.band.p5) && (112..=116).contains(&d.band.p95),
            "{:?}",
            d.band
        );
        assert_eq!(d.band.mean, 100.0);
    }

    #[test]
    fn a_shared_queue_pile_up_is_beyond_hashing_and_one_dominant() {
        // 101k connections where one worker of four took 90 %: hashing's
        // largest count is about 25.5k; 91k is impossible for it.
        let d = diagnose_counts(&[91_000, 4_000, 3_500, 2_500], None).unwrap();
        assert_eq!(d.verdict, VerdictKind::BeyondHash);
        assert_eq!(d.shape, Shape::OneDominant);
        assert_eq!(d.p_value, 0.0);
        assert!(
            d.max_p999 < 26_500 && d.max_median > 25_000,
            "{} {}",
            d.max_median,
            d.max_p999
        );
    }

    #[test]
    fn the_same_shape_over_few_connections_is_not_beyond_hashing() {
        // 6 over 4 workers as 3,1,1,1: hashing gives a 3 often. The total
        // decides, not the shape alone.
        let d = diagnose_counts(&[3, 1, 1, 1], None).unwrap();
        assert_ne!(d.verdict, VerdictKind::BeyondHash);
        assert!(d.p_value > 0.05, "{}", d.p_value);
    }

    #[test]
    fn fewer_connections_than_workers_is_few_clients() {
        // 3 connections on 8 workers: at least 5 idle whatever the hash;
        // 8·(7/8)^3 ≈ 5.36 expected empty.
        let d = diagnose_counts(&[1, 1, 1], Some(8)).unwrap();
        assert_eq!(d.verdict, VerdictKind::FewClients);
        assert!((d.expected_empty - 8.0 * (7.0f64 / 8.0).powi(3)).abs() < 1e-9);
    }

    #[test]
    fn bad_count_lists_are_refused_by_name() {
        assert_eq!(diagnose_counts(&[], None), Err(CountsError::Empty));
        assert_eq!(diagnose_counts(&[0, 0], None), Err(CountsError::Zero));
        assert_eq!(
            diagnose_counts(&[1, 2, 3], Some(2)),
            Err(CountsError::MoreThanWorkers {
                given: 3,
                workers: 2
            })
        );
    }
}
