//! The search loop of [`super`]: candidates in blocks of [`BLOCK`], the
//! first observation hashed for every candidate 16 lanes at a time, the
//! survivors packed and tested against the next, one compiled copy per
//! instruction set (see the module overview of [`super`]).

use std::ops::Range;

use super::{Found, Obs, BLOCK, LANES, SPACE};
use crate::hash::hash_v4;
#[cfg(target_arch = "x86_64")]
use crate::isa::Compiled;
use crate::isa::Isa;
use crate::jhash::JhashForm;
use crate::profile::V4Form;

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
/// evaluated in the order given (put the most selective first; [`Plan`](super::Plan)
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
