//! Which compiled copy of a vectorised loop runs on this CPU. The batch
//! selection ([`crate::batch`]) and the key search ([`crate::recover`])
//! compile their loops once for the baseline target and, on x86-64, again
//! for AVX2 and AVX-512; this module is the one place that decides.

/// Which copy the caller asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// The widest the CPU supports (AVX-512 where present).
    Best,
    /// The AVX2 copy on x86-64 (the baseline where the CPU lacks AVX2).
    Avx2,
    /// The baseline target's copy (SSE2 on x86-64, SIMD128 on wasm).
    Portable,
}

/// The copy that actually runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiled {
    /// `#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,…")]`.
    Avx512,
    /// `#[target_feature(enable = "avx2")]`.
    Avx2,
    /// The target's baseline.
    Baseline,
}

#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512dq")
        && std::arch::is_x86_feature_detected!("popcnt")
}

impl Isa {
    /// The copy that runs for this request on this CPU.
    pub fn resolve(self) -> Compiled {
        #[cfg(target_arch = "x86_64")]
        {
            if self == Isa::Best && has_avx512() {
                return Compiled::Avx512;
            }
            if self != Isa::Portable && std::arch::is_x86_feature_detected!("avx2") {
                return Compiled::Avx2;
            }
        }
        Compiled::Baseline
    }

    /// The name of the copy `Best` resolves to on this CPU.
    pub fn best_name() -> &'static str {
        Isa::Best.resolve().name()
    }
}

impl Compiled {
    /// `avx512`, `avx2`, `baseline sse2` or `simd128`.
    pub fn name(self) -> &'static str {
        match self {
            Compiled::Avx512 => "avx512",
            Compiled::Avx2 => "avx2",
            Compiled::Baseline if cfg!(target_arch = "wasm32") => "simd128",
            Compiled::Baseline => "baseline sse2",
        }
    }
}
