//! The batched NVFP4 GEMV.

use std::ptr;

use dg_sys as sys;

use crate::error::{check, Result};
use crate::stream::Stream;
use crate::tensor::Tensor;

/// Tuning overrides of [`Stream::nvfp4_gemv`] (`dg_nvfp4_gemv_options`, started from
/// `DG_NVFP4_GEMV_OPTIONS_INIT`). Every field left 0 is chosen by the heuristic. Setters chain.
#[derive(Clone, Copy, Debug)]
pub struct Nvfp4GemvOptions {
    raw: sys::dg_nvfp4_gemv_options,
}

impl Default for Nvfp4GemvOptions {
    fn default() -> Self {
        Nvfp4GemvOptions { raw: sys::DG_NVFP4_GEMV_OPTIONS_INIT }
    }
}

macro_rules! gemv_setters {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, value: i32) -> Self {
                self.raw.$name = value;
                self
            }
        )*
    };
}

impl Nvfp4GemvOptions {
    /// Every choice left to the heuristic.
    pub fn new() -> Self {
        Self::default()
    }

    gemv_setters! {
        /// Threads sharing one row of a: 1, 2, 4, 8, 16 or a multiple of 32 (<= 1024).
        threads_per_row;
        /// Rows a block works on side by side (threads_per_row * row_groups <= 1024).
        row_groups;
        /// Vector loads per thread per row (1..16).
        chunks_per_thread;
        /// Rows each group loads at once (1..8).
        rows_per_round;
        /// 16 or 8: bytes per load of a (8 needs only 8-byte aligned a and b).
        vector_bytes;
        /// Blocks; 0 = at most one wave of the device, as few as keep it as short.
        grid_blocks;
        /// Loads of a and sfa: 0 L1::no_allocate, 1 plain .nc, 2 .cs, 3 L1::no_allocate + L2 prefetch.
        cache_hint;
        /// 0 or 1: prefetch the next rows before computing; -1: off.
        prefetch;
    }

    /// The C struct, for calls through `dg_sys`.
    pub fn as_raw(&self) -> &sys::dg_nvfp4_gemv_options {
        &self.raw
    }
}

impl Stream {
    /// Batched NVFP4 GEMV (`dg_nvfp4_gemv`): for every batch l, c[m, 0, l] = sum_k A[m, k, l] *
    /// b[0, k, l], values being E2M1 codes times the E4M3 scale of their 16 consecutive k.
    /// a [M, K/2, L] and b [Np, K/2, L] FLOAT4_E2M1X2 (only row 0 of b is read), sfa [M, K/16, L]
    /// and sfb [Np', K/16, L] FLOAT8_E4M3, c [M, 1, L] FLOAT16; rank 2 means L = 1. K must be a
    /// multiple of 32 and the K dimensions must have stride 1.
    pub fn nvfp4_gemv(&self, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, c: &Tensor,
                      options: Option<&Nvfp4GemvOptions>) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_nvfp4_gemv(self.as_raw(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(), c.as_raw(),
                               options.map_or(ptr::null(), |o| &o.raw as *const _))
        })
    }
}
