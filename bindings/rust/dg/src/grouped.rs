//! M-grouped GEMMs (MoE experts): G problems sharing N and K, A's rows grouped either
//! contiguously (row indices or group ends in a device tensor) or masked (a fixed `max_m` rows
//! per group of which a device-side count is valid). D is BFLOAT16; FP8 calls use the 1D2D
//! recipe. `include/dg.h` gives each layout's rules, including how group data the host cannot
//! check is made safe on the device.

use dg_sys as sys;

use crate::error::{check, Result};
use crate::gemm::{opt_options, GemmLayout, GemmOptions};
use crate::stream::Stream;
use crate::tensor::{DType, Tensor};

/// How the groups of an M-grouped call are described (`DG_M_GROUPED_LAYOUT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MGroupedLayout(i32);

impl MGroupedLayout {
    /// Contiguous: INT32 [M], each row's group in [0, G), -1 for a padding row; groups start at
    /// multiples of [`mk_alignment_for_contiguous_layout`](crate::mk_alignment_for_contiguous_layout).
    pub const INDICES: MGroupedLayout = MGroupedLayout(sys::DG_M_GROUPED_LAYOUT_INDICES);
    /// Contiguous: INT32 [G], each group's end row (exclusive, a prefix sum).
    pub const PSUM: MGroupedLayout = MGroupedLayout(sys::DG_M_GROUPED_LAYOUT_PSUM);
    /// The masked calls (for [`Stream::m_grouped_gemm_prepare`] only).
    pub const MASKED: MGroupedLayout = MGroupedLayout(sys::DG_M_GROUPED_LAYOUT_MASKED);

    /// The layout with this raw `DG_M_GROUPED_LAYOUT_*` value (libdg rejects unknown values).
    pub const fn from_raw(raw: i32) -> MGroupedLayout {
        MGroupedLayout(raw)
    }

    /// The raw `DG_M_GROUPED_LAYOUT_*` value.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

macro_rules! fp8_contiguous {
    ($($(#[$doc:meta])* $name:ident => $sys:path;)*) => {
        $(
            $(#[$doc])*
            ///
            /// a [M, K] FLOAT8_E4M3 (K-major) with sfa per token x 128 K (MN-major TMA-aligned),
            /// sfb [G, ceil(N/128), ceil(K/128)] FLOAT32, d [M, N] BFLOAT16; `grouped_layout` INT32
            /// as `layout` says; `expected_m` the rows per group to plan for (0 = M / G). A fused
            /// [`GemmEpilogue`](crate::GemmEpilogue) (SwiGLU, FP8 d; no bias) goes in `options`.
            #[allow(clippy::too_many_arguments)]
            pub fn $name(&self, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, d: &Tensor,
                         grouped_layout: &Tensor, layout: MGroupedLayout, expected_m: i64,
                         options: Option<&GemmOptions<'_>>) -> Result<()> {
                // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
                check(unsafe { $sys(self.as_raw(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(), d.as_raw(),
                                    grouped_layout.as_raw(), layout.0, expected_m, opt_options(options)) })
            }
        )*
    };
}

macro_rules! bf16_contiguous {
    ($($(#[$doc:meta])* $name:ident => $sys:path;)*) => {
        $(
            $(#[$doc])*
            ///
            /// a [M, K] BFLOAT16, d [M, N] BFLOAT16; `grouped_layout` INT32 as `layout` says;
            /// `expected_m` the rows per group to plan for (0 = M / G). A fused
            /// [`GemmEpilogue`](crate::GemmEpilogue) (SwiGLU, FP8 d; no bias) goes in `options`.
            #[allow(clippy::too_many_arguments)]
            pub fn $name(&self, a: &Tensor, b: &Tensor, d: &Tensor, grouped_layout: &Tensor,
                         layout: MGroupedLayout, expected_m: i64, options: Option<&GemmOptions<'_>>) -> Result<()> {
                // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
                check(unsafe { $sys(self.as_raw(), a.as_raw(), b.as_raw(), d.as_raw(), grouped_layout.as_raw(),
                                    layout.0, expected_m, opt_options(options)) })
            }
        )*
    };
}

impl Stream {
    fp8_contiguous! {
        /// M-grouped FP8 GEMM, contiguous layout, b [G, N, K] (`dg_m_grouped_fp8_gemm_nt_contiguous`).
        m_grouped_fp8_gemm_nt_contiguous => sys::dg_m_grouped_fp8_gemm_nt_contiguous;
        /// M-grouped FP8 GEMM, contiguous layout, b [G, K, N] (`dg_m_grouped_fp8_gemm_nn_contiguous`):
        /// runs only when b's [N, K] views are K-major in memory, else
        /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported).
        m_grouped_fp8_gemm_nn_contiguous => sys::dg_m_grouped_fp8_gemm_nn_contiguous;
    }

    bf16_contiguous! {
        /// M-grouped BF16 GEMM, contiguous layout, b [G, N, K] (`dg_m_grouped_bf16_gemm_nt_contiguous`).
        m_grouped_bf16_gemm_nt_contiguous => sys::dg_m_grouped_bf16_gemm_nt_contiguous;
        /// M-grouped BF16 GEMM, contiguous layout, b [G, K, N] (`dg_m_grouped_bf16_gemm_nn_contiguous`).
        m_grouped_bf16_gemm_nn_contiguous => sys::dg_m_grouped_bf16_gemm_nn_contiguous;
    }

    /// M-grouped FP8 GEMM, masked layout (`dg_m_grouped_fp8_gemm_nt_masked`): a [G, max_m, K],
    /// sfa [G, max_m, ceil(K/128)] MN-major TMA-aligned, b [G, N, K], sfb [G, ceil(N/128),
    /// ceil(K/128)], d [G, max_m, N] BFLOAT16; `masked_m` INT32 [G] in device memory gives each
    /// group's valid rows; `expected_m` (> 0) the rows per group to plan for. A fused
    /// [`GemmEpilogue`](crate::GemmEpilogue) (SwiGLU, FP8 d; no bias) goes in `options`.
    #[allow(clippy::too_many_arguments)]
    pub fn m_grouped_fp8_gemm_nt_masked(&self, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, d: &Tensor,
                                        masked_m: &Tensor, expected_m: i64, options: Option<&GemmOptions<'_>>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_m_grouped_fp8_gemm_nt_masked(self.as_raw(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(),
                                                 d.as_raw(), masked_m.as_raw(), expected_m, opt_options(options))
        })
    }

    /// M-grouped BF16 GEMM, masked layout (`dg_m_grouped_bf16_gemm_nt_masked`): a [G, max_m, K],
    /// b [G, N, K], d [G, max_m, N]; `masked_m` INT32 [G] in device memory gives each group's valid
    /// rows; `expected_m` (> 0) the rows per group to plan for. A fused
    /// [`GemmEpilogue`](crate::GemmEpilogue) (SwiGLU, FP8 d; no bias) goes in `options`.
    pub fn m_grouped_bf16_gemm_nt_masked(&self, a: &Tensor, b: &Tensor, d: &Tensor, masked_m: &Tensor,
                                         expected_m: i64, options: Option<&GemmOptions<'_>>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_m_grouped_bf16_gemm_nt_masked(self.as_raw(), a.as_raw(), b.as_raw(), d.as_raw(), masked_m.as_raw(),
                                                  expected_m, opt_options(options))
        })
    }

    /// Compiles and loads, without launching, the kernel the matching M-grouped call would use
    /// (`dg_m_grouped_gemm_prepare`): `ab_dtype` BFLOAT16 or FLOAT8_E4M3, `gemm_layout` NT or NN,
    /// `grouping` the call's layout, `m` the rows of A (contiguous) or max_m (masked), and
    /// `num_groups`, `n`, `k`, `expected_m` as the call will pass them; d is FLOAT8_E4M3 exactly
    /// when the options' epilogue has `d_scales`. Works on an [offline](Stream::offline) stream.
    #[allow(clippy::too_many_arguments)]
    pub fn m_grouped_gemm_prepare(&self, ab_dtype: DType, gemm_layout: GemmLayout, grouping: MGroupedLayout,
                                  num_groups: i64, m: i64, n: i64, k: i64, expected_m: i64,
                                  options: Option<&GemmOptions<'_>>) -> Result<()> {
        // SAFETY: a live handle; no memory is touched.
        check(unsafe {
            sys::dg_m_grouped_gemm_prepare(self.as_raw(), ab_dtype.raw(), gemm_layout.raw(), grouping.0, num_groups, m,
                                           n, k, expected_m, opt_options(options))
        })
    }
}
