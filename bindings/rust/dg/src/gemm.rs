//! The dense GEMMs (BF16 and FP8), their options and kernel preparation.
//!
//! DeepGEMM's NT naming, all matrices 2-D: `nt`: a [M, K], b [N, K]; `nn`: a [M, K], b [K, N];
//! `tn`: a [K, M], b [K, N]; `tt`: a [K, M], b [N, K]. D = alpha * (A @ Bᵀ) + beta * C, where A is
//! the [M, K] view of a and B the [N, K] view of b; d is [M, N] row-major, BFLOAT16 or FLOAT32; c
//! is `None` or [M, N] row-major with d's dtype and may alias d. Everything runs on the stream
//! with no host synchronisation and no allocation; `include/dg.h` gives every rule. A fused
//! epilogue (bias, SwiGLU, FP8 D) goes through [`GemmOptions::epilogue`].

use std::marker::PhantomData;
use std::os::raw::c_void;
use std::ptr;

use dg_sys as sys;

use crate::epilogue::{epilogue_ptr, GemmEpilogue};
use crate::error::{check, Result};
use crate::stream::Stream;
use crate::tensor::{opt_tensor, DType, Tensor};

/// How a and b are stored, in DeepGEMM's naming (`DG_GEMM_LAYOUT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmLayout(i32);

impl GemmLayout {
    /// a [M, K], b [N, K].
    pub const NT: GemmLayout = GemmLayout(sys::DG_GEMM_LAYOUT_NT);
    /// a [M, K], b [K, N].
    pub const NN: GemmLayout = GemmLayout(sys::DG_GEMM_LAYOUT_NN);
    /// a [K, M], b [K, N].
    pub const TN: GemmLayout = GemmLayout(sys::DG_GEMM_LAYOUT_TN);
    /// a [K, M], b [N, K].
    pub const TT: GemmLayout = GemmLayout(sys::DG_GEMM_LAYOUT_TT);

    /// The layout with this raw `DG_GEMM_LAYOUT_*` value (libdg rejects unknown values).
    pub const fn from_raw(raw: i32) -> GemmLayout {
        GemmLayout(raw)
    }

    /// The raw `DG_GEMM_LAYOUT_*` value.
    pub const fn raw(self) -> i32 {
        self.0
    }
}

/// FP8 scaling recipe (`DG_FP8_RECIPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fp8Recipe(i32);

impl Fp8Recipe {
    /// DeepGEMM's 1D2D (the default): sfa per token x 128 K, sfb per 128 x 128 block.
    pub const RECIPE_1D2D: Fp8Recipe = Fp8Recipe(sys::DG_FP8_RECIPE_1D2D);
    /// DeepGEMM's 1D1D (weight gradients): sfa and sfb per token x 128 K; d FLOAT32.
    pub const RECIPE_1D1D: Fp8Recipe = Fp8Recipe(sys::DG_FP8_RECIPE_1D1D);
}

/// Kernel family of a dense GEMM (`DG_GEMM_KERNEL_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmKernel(i32);

impl GemmKernel {
    /// The heuristic's choice (the default).
    pub const AUTO: GemmKernel = GemmKernel(sys::DG_GEMM_KERNEL_AUTO);
    /// The persistent WGMMA kernel.
    pub const TILED: GemmKernel = GemmKernel(sys::DG_GEMM_KERNEL_TILED);
    /// The few-token kernel (M <= 32) that streams B once; an unsupported problem is
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) with the reason.
    pub const SKINNY: GemmKernel = GemmKernel(sys::DG_GEMM_KERNEL_SKINNY);
}

/// When the FP8 kernels fold each 128-K block's partial sums into the FP32 accumulators
/// (`DG_FP8_PROMOTION_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fp8Promotion(i32);

impl Fp8Promotion {
    /// The heuristic's choice (the default).
    pub const HEURISTIC: Fp8Promotion = Fp8Promotion(0);
    /// After the block's WGMMAs complete.
    pub const AFTER: Fp8Promotion = Fp8Promotion(sys::DG_FP8_PROMOTION_AFTER);
    /// While the next block's WGMMAs run (a second set of partial-sum registers).
    pub const OVERLAP: Fp8Promotion = Fp8Promotion(sys::DG_FP8_PROMOTION_OVERLAP);
}

/// Options of the GEMMs (`dg_gemm_options`, started from `DG_GEMM_OPTIONS_INIT`). Kernel
/// configuration fields left at 0 are chosen by the heuristic; a combination that cannot run the
/// problem is an [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) naming the
/// option. Setters chain: `GemmOptions::new().alpha(2.0).block_n(128)`. `'e` is the borrow of a
/// fused [`GemmEpilogue`] ([`GemmOptions::epilogue`]).
#[derive(Clone, Copy, Debug)]
pub struct GemmOptions<'e> {
    raw: sys::dg_gemm_options,
    epilogue: PhantomData<&'e GemmEpilogue<'e>>,
}

// SAFETY: the pointers are the workspace, a device address that workspace's contract covers, and a
// borrowed GemmEpilogue, which is Send and Sync.
unsafe impl Send for GemmOptions<'_> {}
unsafe impl Sync for GemmOptions<'_> {}

impl Default for GemmOptions<'_> {
    fn default() -> Self {
        GemmOptions { raw: sys::DG_GEMM_OPTIONS_INIT, epilogue: PhantomData }
    }
}

macro_rules! option_setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => $field:ident $(via $conv:expr)?;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, value: $ty) -> Self {
                self.raw.$field = option_setters!(@conv value $(, $conv)?);
                self
            }
        )*
    };
    (@conv $v:ident) => { $v };
    (@conv $v:ident, $conv:expr) => { ($conv)($v) };
}

impl<'e> GemmOptions<'e> {
    /// The defaults of `DG_GEMM_OPTIONS_INIT` (alpha 1, beta 1, every kernel choice heuristic).
    pub fn new() -> Self {
        Self::default()
    }

    option_setters! {
        /// FP8 only: the scaling recipe.
        recipe: Fp8Recipe => recipe via |r: Fp8Recipe| r.0;
        /// D = alpha * (A @ Bᵀ) + beta * C.
        alpha: f32 => alpha;
        /// Read only when c is given.
        beta: f32 => beta;
        /// Accepted for DeepGEMM parity; no effect on SM90.
        disable_ue8m0_cast: bool => disable_ue8m0_cast via i32::from;
        /// Tile rows: 64, 128 or 256 (BF16); 0 = heuristic.
        block_m: i32 => block_m;
        /// Tile columns: a multiple of 16 (8 for FP32 d), up to 256; 0 = heuristic.
        block_n: i32 => block_n;
        /// Shared-memory pipeline depth; 0 = heuristic.
        num_stages: i32 => num_stages;
        /// CTAs per cluster, 1 or 2 (TMA multicast between the pair); 0 = heuristic.
        cluster: i32 => cluster;
        /// Cluster 2: 1 = the pair shares A, 0 = shares B, -1 = heuristic.
        multicast_a: i32 => multicast_a;
        /// WGMMA warp-groups, 1 or 2; 0 = heuristic.
        num_math_warpgroups: i32 => num_math_warpgroups;
        /// SMs to use, at most the stream's cap; 0 = the cap.
        num_sms: i32 => num_sms;
        /// FP8: when partial sums are promoted.
        fp8_promotion: Fp8Promotion => fp8_promotion via |p: Fp8Promotion| p.0;
        /// FP8: column slices each K block is issued and promoted in: 1, 2 or 4; 0 = heuristic.
        fp8_promotion_slices: i32 => fp8_promotion_slices;
        /// CTAs of a cluster sharing each tile's K blocks: 1 (off), 2, 4 or 8; needs cluster 1;
        /// 0 = heuristic.
        split_k: i32 => split_k;
        /// Which kernel family runs the call.
        kernel: GemmKernel => kernel via |k: GemmKernel| k.0;
    }

    /// The FP8 workspace for K-major copies of operands that are MN-major in memory
    /// ([`fp8_gemm_workspace_size`] gives the bytes); NULL with 0 bytes = none.
    ///
    /// # Safety
    /// `workspace` must be NULL or device memory of at least `bytes` bytes, 256-byte aligned,
    /// that overlaps no operand of the calls given these options and that nothing else uses until
    /// the work of those calls has completed on their stream.
    pub unsafe fn workspace(mut self, workspace: *mut c_void, bytes: usize) -> Self {
        self.raw.workspace = workspace;
        self.raw.workspace_size = bytes;
        self
    }

    /// A fused epilogue (`options.epilogue`): the dense BF16 / FP8 (1D2D) GEMMs and the M-grouped
    /// contiguous and masked calls; the other calls and the prepare functions refuse one. The
    /// options borrow it (and so its tensors) for as long as they live.
    pub fn epilogue(mut self, epilogue: &'e GemmEpilogue<'e>) -> Self {
        self.raw.epilogue = epilogue_ptr(Some(epilogue));
        self
    }

    /// Without a fused epilogue (the default).
    pub fn no_epilogue(mut self) -> Self {
        self.raw.epilogue = ptr::null();
        self
    }

    /// The C struct, for calls through `dg_sys`.
    pub fn as_raw(&self) -> &sys::dg_gemm_options {
        &self.raw
    }
}

pub(crate) fn opt_options(o: Option<&GemmOptions<'_>>) -> *const sys::dg_gemm_options {
    o.map_or(ptr::null(), |o| &o.raw as *const _)
}

/// Bytes of workspace the FP8 GEMMs need when a and b are stored as `layout` names them
/// (`dg_fp8_gemm_workspace_size`; 0 for NT): each MN-major operand gets a K-major copy.
pub fn fp8_gemm_workspace_size(layout: GemmLayout, m: i64, n: i64, k: i64) -> Result<usize> {
    let mut bytes = 0;
    // SAFETY: a valid out-pointer.
    check(unsafe { sys::dg_fp8_gemm_workspace_size(layout.0, m, n, k, &mut bytes) })?;
    Ok(bytes)
}

/// Kernels compiled or loaded by this process so far (`dg_jit_get_stats`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// Kernels compiled (NVRTC or nvcc).
    pub compiled: i64,
    /// Kernels loaded from the disk cache.
    pub loaded_from_disk: i64,
    /// Requests served by the in-memory cache.
    pub memory_hits: i64,
}

/// The JIT counters of this process, for tests and for checking that a warm-up covered a workload.
pub fn jit_stats() -> Result<JitStats> {
    let mut s = JitStats::default();
    // SAFETY: valid out-pointers.
    check(unsafe { sys::dg_jit_get_stats(&mut s.compiled, &mut s.loaded_from_disk, &mut s.memory_hits) })?;
    Ok(s)
}

macro_rules! bf16_gemms {
    ($($(#[$doc:meta])* $name:ident => $sys:path;)*) => {
        $(
            $(#[$doc])*
            ///
            /// a and b BFLOAT16; every layout runs natively. `options`: `None` for the defaults.
            pub fn $name(&self, a: &Tensor, b: &Tensor, d: &Tensor, c: Option<&Tensor>,
                         options: Option<&GemmOptions<'_>>) -> Result<()> {
                // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
                check(unsafe { $sys(self.as_raw(), a.as_raw(), b.as_raw(), d.as_raw(), opt_tensor(c),
                                    opt_options(options)) })
            }
        )*
    };
}

macro_rules! fp8_gemms {
    ($($(#[$doc:meta])* $name:ident => $sys:path;)*) => {
        $(
            $(#[$doc])*
            ///
            /// a and b FLOAT8_E4M3 with FLOAT32 scales `sfa` ([M, ceil(K/128)] view, MN-major
            /// TMA-aligned: see [`Stream::transform_sf_into_required_layout`]) and `sfb`
            /// (1D2D: [ceil(N/128), ceil(K/128)], any strides; 1D1D: like sfa). Operands that are
            /// MN-major in memory need a workspace ([`GemmOptions::workspace`]).
            #[allow(clippy::too_many_arguments)]
            pub fn $name(&self, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, d: &Tensor,
                         c: Option<&Tensor>, options: Option<&GemmOptions<'_>>) -> Result<()> {
                // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
                check(unsafe { $sys(self.as_raw(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(),
                                    d.as_raw(), opt_tensor(c), opt_options(options)) })
            }
        )*
    };
}

impl Stream {
    bf16_gemms! {
        /// BF16 GEMM, a [M, K], b [N, K] (`dg_bf16_gemm_nt`).
        bf16_gemm_nt => sys::dg_bf16_gemm_nt;
        /// BF16 GEMM, a [M, K], b [K, N] (`dg_bf16_gemm_nn`).
        bf16_gemm_nn => sys::dg_bf16_gemm_nn;
        /// BF16 GEMM, a [K, M], b [K, N] (`dg_bf16_gemm_tn`).
        bf16_gemm_tn => sys::dg_bf16_gemm_tn;
        /// BF16 GEMM, a [K, M], b [N, K] (`dg_bf16_gemm_tt`).
        bf16_gemm_tt => sys::dg_bf16_gemm_tt;
    }

    fp8_gemms! {
        /// FP8 GEMM, a [M, K], b [N, K] (`dg_fp8_gemm_nt`).
        fp8_gemm_nt => sys::dg_fp8_gemm_nt;
        /// FP8 GEMM, a [M, K], b [K, N] (`dg_fp8_gemm_nn`).
        fp8_gemm_nn => sys::dg_fp8_gemm_nn;
        /// FP8 GEMM, a [K, M], b [K, N] (`dg_fp8_gemm_tn`).
        fp8_gemm_tn => sys::dg_fp8_gemm_tn;
        /// FP8 GEMM, a [K, M], b [N, K] (`dg_fp8_gemm_tt`).
        fp8_gemm_tt => sys::dg_fp8_gemm_tt;
    }

    /// FP8 GEMM, a [M, K], b [N, K], whose store skips the middle columns of each head
    /// (`dg_fp8_gemm_nt_skip_head_mid`): b's N rows are heads of `left + right`, d is
    /// [M, N / (left + right) * (left + mid + right)] BFLOAT16 or FLOAT32, and GEMM column
    /// h (left + right) + o goes to d's column h (left + mid + right) + (o < left ? o : o + mid);
    /// the mid columns are never written. a, sfa, b, sfb as for [`Stream::fp8_gemm_nt`] with the
    /// 1D2D recipe. `left` and `right` multiples of 16 (BFLOAT16 d) or 8 (FLOAT32 d) take the TMA
    /// store, other values a slower per-element store.
    #[allow(clippy::too_many_arguments)]
    pub fn fp8_gemm_nt_skip_head_mid(&self, a: &Tensor, sfa: &Tensor, b: &Tensor, sfb: &Tensor, d: &Tensor,
                                     left: i64, mid: i64, right: i64, options: Option<&GemmOptions<'_>>)
                                     -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_fp8_gemm_nt_skip_head_mid(self.as_raw(), a.as_raw(), sfa.as_raw(), b.as_raw(), sfb.as_raw(),
                                              d.as_raw(), left, mid, right, opt_options(options))
        })
    }

    /// Compiles and loads, without launching or touching device memory, every kernel the
    /// matching GEMM would use (`dg_gemm_prepare`), for contiguous a and b in `layout`:
    /// `ab_dtype` BFLOAT16 or FLOAT8_E4M3, `d_dtype` BFLOAT16 or FLOAT32 (FLOAT8_E4M3 with an
    /// epilogue's `d_scales`), `with_c` when a C term will be given; the options' epilogue is
    /// checked as the call checks it (its tensors' shapes and dtypes, not their memory). On an
    /// [offline](Stream::offline) stream it fills the disk cache with no GPU. Call it before
    /// capturing a CUDA graph.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_prepare(&self, ab_dtype: DType, layout: GemmLayout, m: i64, n: i64, k: i64, d_dtype: DType,
                        with_c: bool, options: Option<&GemmOptions<'_>>) -> Result<()> {
        // SAFETY: a live handle; no memory is touched.
        check(unsafe {
            sys::dg_gemm_prepare(self.as_raw(), ab_dtype.raw(), layout.0, m, n, k, d_dtype.raw(), i32::from(with_c),
                                 opt_options(options))
        })
    }
}
