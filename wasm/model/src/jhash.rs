//! Bob Jenkins' lookup3 hash as the kernel writes it, plus the two small
//! arithmetic helpers the reuseport path uses.
//!
//! Source: `include/linux/jhash.h` (identical mix/final constants in every
//! release from 3.9 to 7.2), `include/linux/math.h` (6.x) or
//! `include/linux/kernel.h` (3.14, 4.0) for `reciprocal_scale`,
//! `include/linux/prandom.h` / `random.h` for `next_pseudo_random32`.
//! All arithmetic wraps modulo 2^32.

use serde::{Deserialize, Serialize};

/// `JHASH_INITVAL` from `include/linux/jhash.h`.
pub const JHASH_INITVAL: u32 = 0xdead_beef;

/// `__jhash_mix(a, b, c)`: six subtract/xor-rotate/add rounds.
#[inline(always)]
pub fn mix(mut a: u32, mut b: u32, mut c: u32) -> (u32, u32, u32) {
    a = a.wrapping_sub(c);
    a ^= c.rotate_left(4);
    c = c.wrapping_add(b);
    b = b.wrapping_sub(a);
    b ^= a.rotate_left(6);
    a = a.wrapping_add(c);
    c = c.wrapping_sub(b);
    c ^= b.rotate_left(8);
    b = b.wrapping_add(a);
    a = a.wrapping_sub(c);
    a ^= c.rotate_left(16);
    c = c.wrapping_add(b);
    b = b.wrapping_sub(a);
    b ^= a.rotate_left(19);
    a = a.wrapping_add(c);
    c = c.wrapping_sub(b);
    c ^= b.rotate_left(4);
    b = b.wrapping_add(a);
    (a, b, c)
}

/// `__jhash_final(a, b, c)`: seven xor/subtract-rotate rounds; returns `c`.
#[inline(always)]
pub fn final_c(mut a: u32, mut b: u32, mut c: u32) -> u32 {
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

/// Which body `jhash_3words` has. The change sits between 4.0.5 (old) and
/// 4.1.3 (new) in `include/linux/jhash.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum JhashForm {
    /// 3.9 – 4.0: `a += JHASH_INITVAL; b += JHASH_INITVAL; c += initval`.
    Old,
    /// 4.1 on: `a, b, c += JHASH_INITVAL + (n << 2) + initval` with n the word count.
    New,
}

/// `jhash_3words(a, b, c, initval)` in the given form.
#[inline(always)]
pub fn jhash_3words(form: JhashForm, a: u32, b: u32, c: u32, initval: u32) -> u32 {
    match form {
        JhashForm::Old => final_c(
            a.wrapping_add(JHASH_INITVAL),
            b.wrapping_add(JHASH_INITVAL),
            c.wrapping_add(initval),
        ),
        JhashForm::New => jhash_nwords(
            a,
            b,
            c,
            initval.wrapping_add(JHASH_INITVAL).wrapping_add(3 << 2),
        ),
    }
}

/// `__jhash_nwords(a, b, c, s)` (4.1+): adds `s` to all three words and runs
/// the final step. `s` already contains `JHASH_INITVAL + 4n + initval`.
#[inline(always)]
pub fn jhash_nwords(a: u32, b: u32, c: u32, s: u32) -> u32 {
    final_c(a.wrapping_add(s), b.wrapping_add(s), c.wrapping_add(s))
}

/// `jhash2(k, length, initval)` over 32-bit words.
pub fn jhash2(k: &[u32], initval: u32) -> u32 {
    let len = k.len() as u32;
    let start = JHASH_INITVAL.wrapping_add(len << 2).wrapping_add(initval);
    let (mut a, mut b, mut c) = (start, start, start);
    let mut rest = k;
    while rest.len() > 3 {
        a = a.wrapping_add(rest[0]);
        b = b.wrapping_add(rest[1]);
        c = c.wrapping_add(rest[2]);
        (a, b, c) = mix(a, b, c);
        rest = &rest[3..];
    }
    match rest.len() {
        3 => {
            c = c.wrapping_add(rest[2]);
            b = b.wrapping_add(rest[1]);
            a = a.wrapping_add(rest[0]);
            final_c(a, b, c)
        }
        2 => {
            b = b.wrapping_add(rest[1]);
            a = a.wrapping_add(rest[0]);
            final_c(a, b, c)
        }
        1 => final_c(a.wrapping_add(rest[0]), b, c),
        _ => c,
    }
}

/// `reciprocal_scale(val, ep_ro)`: maps a 32-bit value onto `[0, ep_ro)` by
/// taking the high half of the 64-bit product. `include/linux/math.h` (6.x).
#[inline(always)]
pub fn reciprocal_scale(val: u32, ep_ro: u32) -> u32 {
    ((val as u64 * ep_ro as u64) >> 32) as u32
}

/// [`reciprocal_scale`] computed in 32-bit arithmetic only, exact for
/// `ep_ro <= 65536` (every group size: `num_socks <= 32768`). With
/// `val = H * 2^16 + L`, `val * n >> 32 = (H * n + (L * n >> 16)) >> 16`, and
/// neither product nor the sum leaves 32 bits. Vector units without a
/// 32×32→64 multiply per lane (SSE2, wasm SIMD128) run this much faster.
#[inline(always)]
pub fn reciprocal_scale_narrow(val: u32, ep_ro: u32) -> u32 {
    debug_assert!(ep_ro <= 65536);
    ((val >> 16) * ep_ro + (((val & 0xffff) * ep_ro) >> 16)) >> 16
}

/// `next_pseudo_random32(seed)`: the LCG the 3.9–4.15 reservoir scan steps
/// through (`include/linux/random.h`).
#[inline(always)]
pub fn next_pseudo_random32(seed: u32) -> u32 {
    seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Reference values from kernel-history.md §1.5, computed there by two
    // independent implementations of the kernel's definitions.
    #[test]
    fn jhash_3words_matches_reference_values_in_both_forms() {
        assert_eq!(jhash_3words(JhashForm::New, 1, 2, 3, 0), 0xa461_58f5);
        assert_eq!(jhash_3words(JhashForm::Old, 1, 2, 3, 0), 0xe169_88d7);
    }

    #[test]
    fn jhash2_matches_reference_value() {
        assert_eq!(jhash2(&[1, 2, 3, 4], 0), 0x6649_1246);
    }

    #[test]
    fn lcg_matches_reference_values() {
        assert_eq!(next_pseudo_random32(0), 0x3c6e_f35f);
        assert_eq!(next_pseudo_random32(1), 0x3c88_596c);
    }

    #[test]
    fn jhash2_of_three_words_equals_jhash_3words_new_form() {
        // Both reduce to final(a+s, b+s, c+s) with s = INITVAL + 12 + iv.
        for &(a, b, c, iv) in &[(1, 2, 3, 0), (0xffff_ffff, 7, 0x1234_5678, 0x9abc_def0)] {
            assert_eq!(
                jhash2(&[a, b, c], iv),
                jhash_3words(JhashForm::New, a, b, c, iv)
            );
        }
    }

    #[test]
    fn jhash2_of_no_words_returns_the_start_value_without_final() {
        assert_eq!(jhash2(&[], 5), JHASH_INITVAL.wrapping_add(5));
    }

    #[test]
    fn narrow_reciprocal_scale_is_exact_for_every_group_size() {
        let mut x = 0x9e37_79b9u32;
        for n in 1..=65536u32 {
            for v in [
                0,
                1,
                0xffff,
                0x1_0000,
                0x7fff_ffff,
                0x8000_0000,
                u32::MAX,
                x,
                x.rotate_left(13),
            ] {
                assert_eq!(
                    reciprocal_scale_narrow(v, n),
                    reciprocal_scale(v, n),
                    "v={v:#x} n={n}"
                );
            }
            x = next_pseudo_random32(x);
        }
    }

    #[test]
    fn reciprocal_scale_edges() {
        assert_eq!(reciprocal_scale(0, 8), 0);
        assert_eq!(reciprocal_scale(u32::MAX, 8), 7);
        assert_eq!(reciprocal_scale(0x8000_0000, 2), 1);
        assert_eq!(reciprocal_scale(0x7fff_ffff, 2), 0);
        assert_eq!(reciprocal_scale(u32::MAX, 32768), 32767);
    }
}
