//! K-grouped GEMMs (MoE weight gradient): G problems sharing M and N, each over its own slice of
//! K, `D[g] = alpha * A_g @ B_gᵀ + beta * C[g]` into FLOAT32 D [G, M, N]. `ks` (each group's K, a
//! multiple of 128, 0 allowed) is read on the host; the optional `ks_tensor` (INT32 [G], the device
//! copy DeepGEMM's API takes) is checked and never read. `include/dg.h` gives the operand layouts.

use dg_sys as sys;

use crate::error::{check, Result};
use crate::gemm::{opt_options, GemmLayout, GemmOptions};
use crate::stream::Stream;
use crate::tensor::{opt_tensor, DType, Tensor};

macro_rules! fp8_k_grouped {
    ($($(#[$doc:meta])* $name:ident => $sys:path;)*) => {
        $(
            $(#[$doc])*
            ///
            /// sfa [M, K / 128] and sfb [N, K / 128] FLOAT32 per token x 128 K, MN-major TMA-aligned,
            /// the groups' K blocks concatenated; d FLOAT32 [G, M, N] contiguous; `c` `None`, FLOAT32
            /// [G, M, N], or d itself (D += ...).
            #[allow(clippy::too_many_arguments)]
            pub fn $name(&self, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, d: &Tensor, c: Option<&Tensor>,
                         ks: &[i64], ks_tensor: Option<&Tensor>, options: Option<&GemmOptions<'_>>) -> Result<()> {
                // SAFETY: live handles and a slice of ks.len() values; the memory the tensors describe
                // is covered by Tensor::new's contract.
                check(unsafe { $sys(self.as_raw(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(), d.as_raw(),
                                    opt_tensor(c), ks.as_ptr(), ks.len() as i64, opt_tensor(ks_tensor),
                                    opt_options(options)) })
            }
        )*
    };
}

impl Stream {
    fp8_k_grouped! {
        /// K-grouped FP8 GEMM (`dg_k_grouped_fp8_gemm_nt_contiguous`): a FLOAT8_E4M3 [M * K] (rank
        /// 1), group g's [M, k_g] row-major after the previous groups'; b likewise with N.
        k_grouped_fp8_gemm_nt_contiguous => sys::dg_k_grouped_fp8_gemm_nt_contiguous;
        /// K-grouped FP8 GEMM (`dg_k_grouped_fp8_gemm_tn_contiguous`): a FLOAT8_E4M3 [K, M] and b
        /// [K, N] (stride 1 along M / N), group g the rows of its slice; both are transposed into
        /// the workspace of `options` ([`fp8_gemm_workspace_size`](crate::fp8_gemm_workspace_size)
        /// with [`GemmLayout::TN`] gives the bytes).
        k_grouped_fp8_gemm_tn_contiguous => sys::dg_k_grouped_fp8_gemm_tn_contiguous;
    }

    /// K-grouped BF16 GEMM (`dg_k_grouped_bf16_gemm_tn_contiguous`): a BFLOAT16 [K, M] and b
    /// [K, N] (stride 1 along M / N), group g the rows of its slice, read in place; d, `c`, `ks`
    /// and `ks_tensor` as for [`Stream::k_grouped_fp8_gemm_nt_contiguous`].
    #[allow(clippy::too_many_arguments)]
    pub fn k_grouped_bf16_gemm_tn_contiguous(&self, a: &Tensor, b: &Tensor, d: &Tensor, c: Option<&Tensor>, ks: &[i64],
                                             ks_tensor: Option<&Tensor>, options: Option<&GemmOptions<'_>>) -> Result<()> {
        // SAFETY: live handles and a slice of ks.len() values; the memory the tensors describe is
        // covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_k_grouped_bf16_gemm_tn_contiguous(self.as_raw(), a.as_raw(), b.as_raw(), d.as_raw(), opt_tensor(c),
                                                      ks.as_ptr(), ks.len() as i64, opt_tensor(ks_tensor),
                                                      opt_options(options))
        })
    }

    /// Compiles and loads, without launching, the kernels the matching K-grouped call would use
    /// (`dg_k_grouped_gemm_prepare`): `ab_dtype` FLOAT8_E4M3 with [`GemmLayout::NT`] or
    /// [`GemmLayout::TN`], or BFLOAT16 with [`GemmLayout::TN`]; `m`, `n` and `ks` as the call will
    /// pass them, `with_c` when it passes C. Works on an [offline](Stream::offline) stream.
    pub fn k_grouped_gemm_prepare(&self, ab_dtype: DType, layout: GemmLayout, m: i64, n: i64, ks: &[i64],
                                  with_c: bool, options: Option<&GemmOptions<'_>>) -> Result<()> {
        // SAFETY: a live handle and a slice of ks.len() values; no device memory is touched.
        check(unsafe {
            sys::dg_k_grouped_gemm_prepare(self.as_raw(), ab_dtype.raw(), layout.raw(), m, n, ks.as_ptr(),
                                           ks.len() as i64, i32::from(with_c), opt_options(options))
        })
    }
}
