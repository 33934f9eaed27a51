//! Bulk selection for IPv4 packets: the same answer as
//! [`ReuseportGroup::select`] for each packet, computed for many at once.
//!
//! Layout (structure of arrays, one entry per packet, all the same length):
//! - `saddr`, `daddr`: IPv4 addresses as host-order numbers
//!   (`a.b.c.d` is `a << 24 | b << 16 | c << 8 | d`, so 127.0.0.1 is `0x7f000001`);
//! - `sport`, `dport`: ports as host-order numbers.
//!
//! The output holds the chosen listener per packet, or [`NONE`] when the
//! packet does not reach the group or the group returns no socket.
//!
//! The common case (group era, no connected member, no SO_INCOMING_CPU
//! preference in force) runs a branch-free loop that the compiler
//! vectorises; on x86-64 it is compiled a second time for AVX-512 and picked
//! at run time. Every other case goes packet by packet through the general
//! path, so the answers never differ.

use std::net::Ipv4Addr;

use crate::hash::hash_v4;
use crate::jhash::{reciprocal_scale, reciprocal_scale_narrow, JhashForm};
use crate::profile::{GroupScan, V4Form};
use crate::reuseport::{MemberState, ReuseportGroup};
use crate::tuple::{Proto, Tuple};

/// The output value for "no listener".
pub const NONE: u32 = u32::MAX;

/// IPv4 packets in structure-of-arrays form (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct V4Batch<'a> {
    /// Client addresses, host-order numbers.
    pub saddr: &'a [u32],
    /// Client ports.
    pub sport: &'a [u16],
    /// Destination addresses, host-order numbers.
    pub daddr: &'a [u32],
    /// Destination ports.
    pub dport: &'a [u16],
}

/// Batch arrays of unequal length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("batch arrays differ in length: saddr {saddr}, sport {sport}, daddr {daddr}, dport {dport}, out {out}; give one entry per packet in each")]
pub struct LengthMismatch {
    /// Length of `saddr`.
    pub saddr: usize,
    /// Length of `sport`.
    pub sport: usize,
    /// Length of `daddr`.
    pub daddr: usize,
    /// Length of `dport`.
    pub dport: usize,
    /// Length of the output.
    pub out: usize,
}

/// The loop-invariant facts of the fast path.
#[derive(Clone, Copy)]
struct Fast<'a> {
    socks: &'a [u32],
    laddr_zero: bool,
    bind_any: bool,
    bind_addr: u32,
    port: u16,
}

/// `reciprocal_scale` in the form each target vectorises best: wasm SIMD128
/// has a 32-bit lane multiply but no 32×32→64 one; x86 has both.
#[inline(always)]
fn scale(h: u32, n: u32) -> u32 {
    if cfg!(target_arch = "wasm32") {
        reciprocal_scale_narrow(h, n)
    } else {
        reciprocal_scale(h, n)
    }
}

#[inline(always)]
fn run<H: Fn(u32, u32, u16, u16) -> u32>(h: H, f: Fast<'_>, b: V4Batch<'_>, out: &mut [u32]) {
    let n = f.socks.len() as u32;
    // Pass 1, branch-free and vectorised: the slot, or NONE when the packet
    // does not reach the group.
    let iter = out
        .iter_mut()
        .zip(b.saddr)
        .zip(b.sport)
        .zip(b.daddr)
        .zip(b.dport);
    for ((((o, &sa), &sp), &da), &dp) in iter {
        // Host-order number to the kernel's raw word on little-endian.
        let laddr = if f.laddr_zero { 0 } else { da.swap_bytes() };
        let hv = h(laddr, sa.swap_bytes(), dp, sp);
        let slot = scale(hv, n);
        let reaches = (dp == f.port) & (f.bind_any | (da == f.bind_addr));
        *o = if reaches { slot } else { NONE };
    }
    // Pass 2: slot to listener (a gather; skipped when socks[i] == i).
    if f.socks.iter().enumerate().all(|(i, &l)| l == i as u32) {
        return;
    }
    let last = f.socks.len() - 1;
    for o in out.iter_mut() {
        if *o != NONE {
            *o = f.socks[(*o as usize).min(last)];
        }
    }
}

/// One monomorphic copy of the loop per hash form: the form is a constant in
/// each arm, so `hash_v4` folds to that form's arithmetic alone.
#[inline(always)]
fn dispatch(form: V4Form, jh: JhashForm, iv: u32, f: Fast<'_>, b: V4Batch<'_>, out: &mut [u32]) {
    use JhashForm::{New, Old};
    use V4Form::{Classic, ClassicNumericFport, LportPlus};
    match (form, jh) {
        (Classic, New) => run(
            |l, fa, lp, sp| hash_v4(Classic, New, l, fa, lp, sp, iv),
            f,
            b,
            out,
        ),
        (Classic, Old) => run(
            |l, fa, lp, sp| hash_v4(Classic, Old, l, fa, lp, sp, iv),
            f,
            b,
            out,
        ),
        (ClassicNumericFport, New) => run(
            |l, fa, lp, sp| hash_v4(ClassicNumericFport, New, l, fa, lp, sp, iv),
            f,
            b,
            out,
        ),
        (ClassicNumericFport, Old) => run(
            |l, fa, lp, sp| hash_v4(ClassicNumericFport, Old, l, fa, lp, sp, iv),
            f,
            b,
            out,
        ),
        (LportPlus, New) => run(
            |l, fa, lp, sp| hash_v4(LportPlus, New, l, fa, lp, sp, iv),
            f,
            b,
            out,
        ),
        (LportPlus, Old) => run(
            |l, fa, lp, sp| hash_v4(LportPlus, Old, l, fa, lp, sp, iv),
            f,
            b,
            out,
        ),
    }
}

fn fast_generic(
    form: V4Form,
    jh: JhashForm,
    initval: u32,
    f: Fast<'_>,
    b: V4Batch<'_>,
    out: &mut [u32],
) {
    dispatch(form, jh, initval, f, b, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fast_avx2(
    form: V4Form,
    jh: JhashForm,
    initval: u32,
    f: Fast<'_>,
    b: V4Batch<'_>,
    out: &mut [u32],
) {
    dispatch(form, jh, initval, f, b, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2")]
fn fast_avx512(
    form: V4Form,
    jh: JhashForm,
    initval: u32,
    f: Fast<'_>,
    b: V4Batch<'_>,
    out: &mut [u32],
) {
    dispatch(form, jh, initval, f, b, out)
}

#[cfg(target_arch = "x86_64")]
use crate::isa::Compiled;
pub use crate::isa::Isa;

fn fast(
    isa: Isa,
    form: V4Form,
    jh: JhashForm,
    initval: u32,
    f: Fast<'_>,
    b: V4Batch<'_>,
    out: &mut [u32],
) {
    match isa.resolve() {
        // SAFETY: `resolve` found every feature the copy was compiled for.
        #[cfg(target_arch = "x86_64")]
        Compiled::Avx512 => unsafe { fast_avx512(form, jh, initval, f, b, out) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Compiled::Avx2 => unsafe { fast_avx2(form, jh, initval, f, b, out) },
        _ => fast_generic(form, jh, initval, f, b, out),
    }
}

impl ReuseportGroup {
    /// The invariants of the fast path, or `None` when this group needs the
    /// general path (reservoir era, connected members, CPU preference).
    fn fast_path(&self) -> Option<Fast<'_>> {
        let a = self.sock_array()?;
        if a.num_socks() == 0 || self.program().is_some() {
            return None;
        }
        let p = self.profile();
        let any_connected = self
            .members()
            .iter()
            .any(|m| m.connected && m.state == MemberState::Listening);
        let scan = p.group_scan;
        if (scan != GroupScan::Plain && any_connected)
            || (scan == GroupScan::SkipConnectedPreferCpu && self.incoming_cpu_count() > 0)
        {
            return None;
        }
        let (bind, port) = self.bound();
        let (bind_any, bind_addr) = match bind {
            std::net::IpAddr::V4(b) => (b.is_unspecified(), u32::from(b)),
            // Dual-stack groups take the general path: they follow v6only and mapped rules.
            std::net::IpAddr::V6(_) => return None,
        };
        let laddr_zero = bind_any && self.hashes_laddr_zero();
        Some(Fast {
            socks: a.listening(),
            laddr_zero,
            bind_any,
            bind_addr,
            port,
        })
    }

    /// Selects a listener for every packet of an IPv4 batch received on
    /// `cpu`, writing listener numbers (or [`NONE`]) to `out`.
    pub fn select_batch_v4(
        &self,
        b: V4Batch<'_>,
        cpu: u32,
        out: &mut [u32],
    ) -> Result<(), LengthMismatch> {
        self.select_batch_v4_on(Isa::Best, b, cpu, out)
    }

    /// [`Self::select_batch_v4`] on a chosen copy of the vectorised loop
    /// (benchmarks compare them; the answers are the same).
    pub fn select_batch_v4_on(
        &self,
        isa: Isa,
        b: V4Batch<'_>,
        cpu: u32,
        out: &mut [u32],
    ) -> Result<(), LengthMismatch> {
        let len = out.len();
        if b.saddr.len() != len
            || b.sport.len() != len
            || b.daddr.len() != len
            || b.dport.len() != len
        {
            return Err(LengthMismatch {
                saddr: b.saddr.len(),
                sport: b.sport.len(),
                daddr: b.daddr.len(),
                dport: b.dport.len(),
                out: len,
            });
        }
        if let Some(f) = self.fast_path() {
            let p = self.profile();
            let form = match self.proto() {
                Proto::Tcp => p.tcp4,
                Proto::Udp => p.udp4,
            };
            fast(isa, form, p.jhash, self.keys().v4, f, b, out);
            return Ok(());
        }
        for (i, o) in out.iter_mut().enumerate() {
            let t = Tuple::v4(
                Ipv4Addr::from(b.saddr[i]),
                b.sport[i],
                Ipv4Addr::from(b.daddr[i]),
                b.dport[i],
            );
            // A packet that does not reach the group gets NONE, as one that reaches no member.
            *o = self
                .select(&t, cpu)
                .ok()
                .and_then(|c| c.listener)
                .unwrap_or(NONE);
        }
        Ok(())
    }

    /// Whether [`Self::select_batch_v4`] takes the vectorised path for this group.
    pub fn batch_is_vectorised(&self) -> bool {
        self.fast_path().is_some()
    }
}
