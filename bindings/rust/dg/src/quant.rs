//! FP8 quantization (`dg_quantize_fp8_*`; docs/quantization.md): BF16 or FP32 tensors to E4M3
//! codes with FP32 (or packed UE8M0) scales in the layouts the FP8 GEMMs read.

use std::ptr;

use dg_sys as sys;

use crate::error::{check, Result};
use crate::grouped::MGroupedLayout;
use crate::stream::Stream;
use crate::tensor::{opt_tensor, Tensor};

/// Options of the quantization calls (`dg_quant_options`, started from `DG_QUANT_OPTIONS_INIT`):
/// FP32 scales as computed and an amax floor of 1e-4 by default. Setters chain.
#[derive(Clone, Copy, Debug)]
pub struct QuantOptions {
    raw: sys::dg_quant_options,
}

impl Default for QuantOptions {
    fn default() -> Self {
        QuantOptions { raw: sys::DG_QUANT_OPTIONS_INIT }
    }
}

impl QuantOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Scales rounded up to powers of two (UE8M0 values); packed scales imply it.
    pub fn pow2_scales(mut self, on: bool) -> Self {
        self.raw.pow2_scales = on as i32;
        self
    }

    /// The lower clamp of each group's amax: 0 for the default 1e-4, else 1e-30 ..= 1e30.
    pub fn amax_floor(mut self, floor: f32) -> Self {
        self.raw.amax_floor = floor;
        self
    }

    /// The C struct, for calls through `dg_sys`.
    pub fn as_raw(&self) -> &sys::dg_quant_options {
        &self.raw
    }
}

fn opts(o: Option<&QuantOptions>) -> *const sys::dg_quant_options {
    o.map_or(ptr::null(), |o| &o.raw as *const _)
}

impl Stream {
    /// Per-token 1 x 128 quantization (`dg_quantize_fp8_per_token`): x BFLOAT16 / FLOAT32 [M, K] or
    /// [G, M, K] -> out FLOAT8_E4M3 of x's sizes and sf FLOAT32 [(G,) M, ceil(K/128)] in the
    /// MN-major TMA-aligned layout (the FP8 GEMMs' sfa), or packed UE8M0X4.
    pub fn quantize_fp8_per_token(&self, x: &Tensor, out: &Tensor, sf: &Tensor, options: Option<&QuantOptions>)
                                  -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe { sys::dg_quantize_fp8_per_token(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(), opts(options)) })
    }

    /// Per-token quantization for the M-grouped contiguous GEMMs
    /// (`dg_quantize_fp8_per_token_contiguous`): the values of rows of no group are not used (they
    /// may be loaded), their codes and scales written as 0.
    pub fn quantize_fp8_per_token_contiguous(&self, x: &Tensor, out: &Tensor, sf: &Tensor, grouped_layout: &Tensor,
                                             layout: MGroupedLayout, num_groups: i64,
                                             options: Option<&QuantOptions>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_quantize_fp8_per_token_contiguous(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(),
                                                      grouped_layout.as_raw(), layout.raw(), num_groups, opts(options))
        })
    }

    /// Per-token quantization for the masked M-grouped GEMMs (`dg_quantize_fp8_per_token_masked`):
    /// x [G, max_m, K], masked_m INT32 [G] read on the device only; rows past a count untouched.
    pub fn quantize_fp8_per_token_masked(&self, x: &Tensor, out: &Tensor, sf: &Tensor, masked_m: &Tensor,
                                         options: Option<&QuantOptions>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_quantize_fp8_per_token_masked(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(),
                                                  masked_m.as_raw(), opts(options))
        })
    }

    /// Per-block 128 x 128 quantization of weights (`dg_quantize_fp8_per_block`): x [N, K] or
    /// [G, N, K], sf FLOAT32 [(G,) ceil(N/128), ceil(K/128)] contiguous.
    pub fn quantize_fp8_per_block(&self, x: &Tensor, out: &Tensor, sf: &Tensor, options: Option<&QuantOptions>)
                                  -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe { sys::dg_quantize_fp8_per_block(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(), opts(options)) })
    }

    /// MN-major 1 x 128 quantization along K of x [K, MN] (`dg_quantize_fp8_mn_major`): the
    /// K-grouped weight-gradient GEMMs' operands; sf FLOAT32 [MN, ceil(K/128)] MN-major TMA-aligned.
    pub fn quantize_fp8_mn_major(&self, x: &Tensor, out: &Tensor, sf: &Tensor, options: Option<&QuantOptions>)
                                 -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe { sys::dg_quantize_fp8_mn_major(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(), opts(options)) })
    }

    /// K-grouped 1 x 128 quantization along K (`dg_quantize_fp8_k_grouped`), host counts: x
    /// BFLOAT16 / FLOAT32 [rows, MN] (stride 1 along MN) holds group g's `ks[g]` rows (any count)
    /// after the previous groups'; each group is padded to a multiple of 128 rows in the output.
    /// out FLOAT8_E4M3 [P, MN] (MN-major, the tn GEMM's operand) or rank 1 [MN * P] (group g's
    /// [MN, align(k_g, 128)] K-major, the nt GEMM's operand), P = the sum of the padded counts
    /// ([`k_grouped_padded_ks`]); sf FLOAT32 [MN, P / 128] MN-major TMA-aligned. Call the K-grouped
    /// GEMM with the padded counts. `ks_tensor`: the optional INT32 device copy, checked, not read.
    pub fn quantize_fp8_k_grouped(&self, x: &Tensor, out: &Tensor, sf: &Tensor, ks: &[i64], ks_tensor: Option<&Tensor>,
                                  options: Option<&QuantOptions>) -> Result<()> {
        // SAFETY: live handles and a slice of ks.len() values; the memory the tensors describe is
        // covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_quantize_fp8_k_grouped(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(), ks.as_ptr(),
                                           ks.len() as i64, opt_tensor(ks_tensor), opts(options))
        })
    }

    /// [`Stream::quantize_fp8_k_grouped`] with the counts read on the device from `ks_tensor` (INT32
    /// [num_groups]; no host read, so a captured graph replays with new counts). x's and out's rows
    /// are then capacities (out's a multiple of 128): a group that does not fit is not written;
    /// `align(rows, 128) + 128 * num_groups` rows of out always suffice.
    pub fn quantize_fp8_k_grouped_device(&self, x: &Tensor, out: &Tensor, sf: &Tensor, ks_tensor: &Tensor,
                                         num_groups: i64, options: Option<&QuantOptions>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_quantize_fp8_k_grouped(self.as_raw(), x.as_raw(), out.as_raw(), sf.as_raw(), ptr::null(), num_groups,
                                           ks_tensor.as_raw(), opts(options))
        })
    }
}

/// Each count rounded up to 128: the `ks` of the K-grouped GEMMs that read
/// [`Stream::quantize_fp8_k_grouped`]'s output.
pub fn k_grouped_padded_ks(ks: &[i64]) -> Vec<i64> {
    ks.iter().map(|&k| (k + 127) / 128 * 128).collect()
}
