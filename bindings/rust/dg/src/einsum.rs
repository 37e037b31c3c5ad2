//! DeepGEMM's einsum forms on BF16 operands (`dg_bf16_einsum`, docs/einsum.md): the batch sum
//! `bmk,bnk->mn` and the MLA weight-absorption products `bhr,hdr->bhd` and `bhd,hdr->bhr`, each one
//! launch of the batched GEMM kernel reading the operands in place; and DeepGEMM's FP8 `bhr,hdr->bhd`
//! (`dg_fp8_einsum`) on the same kernel with the 1D2D scales.

use std::ffi::CString;

use dg_sys as sys;

use crate::error::{check, Error, Result};
use crate::gemm::{opt_options, GemmOptions};
use crate::stream::Stream;
use crate::tensor::{opt_tensor, Tensor};

fn expr_string(expr: &str) -> Result<CString> {
    CString::new(expr).map_err(|_| Error::new(sys::DG_ERROR_INVALID_ARGUMENT, "expr: contains a NUL byte".to_string()))
}

impl Stream {
    /// One of `"bmk,bnk->mn"` (`d[m, n] = c[m, n] + Σ_b,k a[b, m, k] b[b, n, k]`: a [s, m, k], b
    /// [s, n, k], d FLOAT32 [m, n], `c` None, a FLOAT32 [m, n] tensor or d itself), `"bhr,hdr->bhd"`
    /// and `"bhd,hdr->bhr"` (BFLOAT16 a [b, h, r or d], b [h, d, r], d [b, h, d or r], no `c`)
    /// (`dg_bf16_einsum`). Every tensor has stride 1 in its last dimension and its other strides
    /// multiples of 16 bytes; `options`: tile overrides, or None.
    pub fn bf16_einsum(&self, expr: &str, a: &Tensor, b: &Tensor, d: &Tensor, c: Option<&Tensor>,
                       options: Option<&GemmOptions<'_>>) -> Result<()> {
        let text = expr_string(expr)?;
        // SAFETY: live handles and a NUL-terminated string; the memory the tensors describe is covered by
        // Tensor::new's contract.
        check(unsafe {
            sys::dg_bf16_einsum(self.as_raw(), text.as_ptr(), a.as_raw(), b.as_raw(), d.as_raw(), opt_tensor(c),
                                opt_options(options))
        })
    }

    /// Compiles and loads, without launching, the kernels [`Stream::bf16_einsum`] would use for
    /// `expr` with operands of a's sizes `a_sizes` and b's sizes `b_sizes`, `with_c` when it passes C
    /// (`dg_bf16_einsum_prepare`). Works on an [offline](Stream::offline) stream.
    pub fn bf16_einsum_prepare(&self, expr: &str, a_sizes: [i64; 3], b_sizes: [i64; 3], with_c: bool,
                               options: Option<&GemmOptions<'_>>) -> Result<()> {
        let text = expr_string(expr)?;
        // SAFETY: a live handle, a NUL-terminated string and two arrays of 3 values; no device memory
        // is touched.
        check(unsafe {
            sys::dg_bf16_einsum_prepare(self.as_raw(), text.as_ptr(), a_sizes.as_ptr(), b_sizes.as_ptr(),
                                        i32::from(with_c), opt_options(options))
        })
    }

    /// `"bhr,hdr->bhd"` on FP8 operands with DeepGEMM's recipe (`dg_fp8_einsum`, docs/einsum.md#fp8):
    /// `d[b, h, j] = Σ_r sfa[b, h, r/128] a[b, h, r] · sfb[h, j/128, r/128] b[h, j, r]`; a FLOAT8_E4M3
    /// [b, h, r], b FLOAT8_E4M3 [h, d, r], d BFLOAT16 [b, h, d] (strides as for
    /// [`Stream::bf16_einsum`]); sfa FLOAT32 [b, h, ceil(r/128)] with strides (1, ceil(r/128)·L, L),
    /// L a multiple of 4 and >= b (each head's scales MN-major and TMA-aligned); sfb FLOAT32
    /// [h, ceil(d/128), ceil(r/128)]. `c` must be None (a C term is `DG_ERROR_UNSUPPORTED`, as in
    /// DeepGEMM's SM90 path); `options`: tile and FP8 promotion overrides, or None.
    #[allow(clippy::too_many_arguments)]
    pub fn fp8_einsum(&self, expr: &str, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, d: &Tensor,
                      c: Option<&Tensor>, options: Option<&GemmOptions<'_>>) -> Result<()> {
        let text = expr_string(expr)?;
        // SAFETY: live handles and a NUL-terminated string; the memory the tensors describe is covered by
        // Tensor::new's contract.
        check(unsafe {
            sys::dg_fp8_einsum(self.as_raw(), text.as_ptr(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(),
                               d.as_raw(), opt_tensor(c), opt_options(options))
        })
    }

    /// Compiles and loads, without launching, the kernel [`Stream::fp8_einsum`] would use for `expr`
    /// with a of sizes `a_sizes` = [b, h, r] and b of sizes `b_sizes` = [h, d, r]
    /// (`dg_fp8_einsum_prepare`, with no C term). Works on an [offline](Stream::offline) stream.
    pub fn fp8_einsum_prepare(&self, expr: &str, a_sizes: [i64; 3], b_sizes: [i64; 3],
                              options: Option<&GemmOptions<'_>>) -> Result<()> {
        let text = expr_string(expr)?;
        // SAFETY: a live handle, a NUL-terminated string and two arrays of 3 values; no device memory
        // is touched.
        check(unsafe {
            sys::dg_fp8_einsum_prepare(self.as_raw(), text.as_ptr(), a_sizes.as_ptr(), b_sizes.as_ptr(), 0,
                                       opt_options(options))
        })
    }
}
