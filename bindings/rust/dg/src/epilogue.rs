//! Fused GEMM epilogues (`dg_gemm_epilogue`; docs/gemm_epilogues.md) and the SwiGLU weight
//! reordering they need (`dg_swiglu_interleave`).
//!
//! An epilogue goes to a call through [`GemmOptions::epilogue`](crate::GemmOptions::epilogue), on
//! the dense BF16 / FP8 (1D2D) GEMMs and the M-grouped contiguous and masked calls. In order:
//! `v = alpha * (A @ Bᵀ)[row, col] + bias[col]` (bias: dense calls only); with SwiGLU
//! `d[row, j] = silu(v[gate j]) * v[up j]`, d having N / 2 columns and B's rows alternating blocks
//! of 128 gate rows and the 128 matching up rows ([`Stream::swiglu_interleave`]); and for a
//! FLOAT8_E4M3 d, per row and 128 columns of D, the codes and scales of
//! [`Stream::quantize_fp8_per_token`] (`*_contiguous` / `*_masked` for the grouped calls) of the
//! same call's BF16 D, bit for bit. Not with a C term, the 1D1D recipe, split_k > 1, K == 0 or the
//! skinny kernel ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) naming the reason).

use std::marker::PhantomData;
use std::ptr;

use dg_sys as sys;

use crate::error::{check, Result};
use crate::stream::Stream;
use crate::tensor::Tensor;

/// The activation of a fused epilogue (`DG_ACTIVATION_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Activation(i32);

impl Activation {
    /// None (the default).
    pub const NONE: Activation = Activation(sys::DG_ACTIVATION_NONE);
    /// SwiGLU over B's interleaved 128-row gate / up blocks: d has N / 2 columns (N % 256 == 0).
    pub const SWIGLU: Activation = Activation(sys::DG_ACTIVATION_SWIGLU);

    /// The activation with this raw `DG_ACTIVATION_*` value (libdg rejects unknown values).
    pub const fn from_raw(raw: i32) -> Activation {
        Activation(raw)
    }

    /// The raw `DG_ACTIVATION_*` value.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

/// A fused epilogue (`dg_gemm_epilogue`, started from `DG_GEMM_EPILOGUE_INIT`), borrowing its
/// tensors for `'t`. Setters chain: `GemmEpilogue::new().activation(Activation::SWIGLU).d_scales(&sf)`.
#[derive(Clone, Copy, Debug)]
pub struct GemmEpilogue<'t> {
    raw: sys::dg_gemm_epilogue,
    tensors: PhantomData<&'t Tensor>,
}

// SAFETY: the pointers are the handles of borrowed Tensors, which are Send and Sync.
unsafe impl Send for GemmEpilogue<'_> {}
unsafe impl Sync for GemmEpilogue<'_> {}

impl Default for GemmEpilogue<'_> {
    fn default() -> Self {
        GemmEpilogue { raw: sys::DG_GEMM_EPILOGUE_INIT, tensors: PhantomData }
    }
}

impl<'t> GemmEpilogue<'t> {
    /// The defaults of `DG_GEMM_EPILOGUE_INIT`: no activation, no bias, no scales.
    pub fn new() -> Self {
        Self::default()
    }

    /// The activation.
    pub fn activation(mut self, activation: Activation) -> Self {
        self.raw.activation = activation.0;
        self
    }

    /// A per-column bias: BFLOAT16 or FLOAT32 [N] (the GEMM's columns, before SwiGLU), stride 1,
    /// 8-byte aligned. Dense calls only.
    pub fn bias(mut self, bias: &'t Tensor) -> Self {
        self.raw.bias = bias.as_raw();
        self
    }

    /// The scales of a FLOAT8_E4M3 d: FLOAT32 [(G,) M, ceil(N_d / 128)] in the layout
    /// [`mn_major_tma_aligned_tensor_layout`](crate::mn_major_tma_aligned_tensor_layout) gives, or
    /// packed UE8M0X4 / INT32 words as [`Stream::quantize_fp8_per_token`] takes them; G and M as
    /// d's (masked: [G, max_m, ...]).
    pub fn d_scales(mut self, scales: &'t Tensor) -> Self {
        self.raw.d_scales = scales.as_raw();
        self
    }

    /// FP32 scales rounded up to powers of two (packed scales always are).
    pub fn pow2_scales(mut self, on: bool) -> Self {
        self.raw.pow2_scales = i32::from(on);
        self
    }

    /// The lower clamp of each group's amax: 0 for the default 1e-4, else 1e-30 ..= 1e30.
    pub fn amax_floor(mut self, floor: f32) -> Self {
        self.raw.amax_floor = floor;
        self
    }

    /// The C struct, for calls through `dg_sys`.
    pub fn as_raw(&self) -> &sys::dg_gemm_epilogue {
        &self.raw
    }
}

pub(crate) fn epilogue_ptr(e: Option<&GemmEpilogue<'_>>) -> *const sys::dg_gemm_epilogue {
    e.map_or(ptr::null(), |e| &e.raw as *const _)
}

impl Stream {
    /// Reorders SwiGLU weights for [`Activation::SWIGLU`] (`dg_swiglu_interleave`): src
    /// [(G,) 2I, C] holds the gate rows [0, I) then the up rows [I, 2I); dst, of the same shape and
    /// dtype, gets blocks of `block` rows alternating gate block j, up block j. `block` 128 for the
    /// weights ([G, 2I, K], I % 128 == 0) and 1 for their 128 x 128 block scales
    /// ([G, 2I / 128, ceil(K / 128)]). Rows packed (stride along rows = C, stride 1 along C); src
    /// and dst must not overlap; any dtype. Copies on the stream, no kernel.
    pub fn swiglu_interleave(&self, src: &Tensor, dst: &Tensor, block: i64) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe { sys::dg_swiglu_interleave(self.as_raw(), src.as_raw(), dst.as_raw(), block) })
    }
}
