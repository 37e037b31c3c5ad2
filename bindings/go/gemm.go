package dg

// #include "calls.h"
import "C"

import "runtime"

// GemmLayout names how a and b are stored, in DeepGEMM's naming (DG_GEMM_LAYOUT_*): all
// matrices 2-D, D = alpha * (A @ Bᵀ) + beta * C with A the [M, K] view of a, B the [N, K] view of b.
type GemmLayout int32

// The layouts of dg.h.
const (
	LayoutNT GemmLayout = C.DG_GEMM_LAYOUT_NT // a [M, K], b [N, K]
	LayoutNN GemmLayout = C.DG_GEMM_LAYOUT_NN // a [M, K], b [K, N]
	LayoutTN GemmLayout = C.DG_GEMM_LAYOUT_TN // a [K, M], b [K, N]
	LayoutTT GemmLayout = C.DG_GEMM_LAYOUT_TT // a [K, M], b [N, K]
)

// Fp8Recipe is an FP8 scaling recipe (DG_FP8_RECIPE_*).
type Fp8Recipe int32

// The recipes of dg.h.
const (
	Recipe1D2D Fp8Recipe = C.DG_FP8_RECIPE_1D2D // sfa per token x 128 K, sfb per 128 x 128 block (default)
	Recipe1D1D Fp8Recipe = C.DG_FP8_RECIPE_1D1D // sfa and sfb per token x 128 K (weight gradient); d FLOAT32
)

// GemmKernel is the kernel family of a dense GEMM (DG_GEMM_KERNEL_*).
type GemmKernel int32

// The kernel families of dg.h.
const (
	KernelAuto   GemmKernel = C.DG_GEMM_KERNEL_AUTO   // the heuristic's choice
	KernelTiled  GemmKernel = C.DG_GEMM_KERNEL_TILED  // the persistent WGMMA kernel
	KernelSkinny GemmKernel = C.DG_GEMM_KERNEL_SKINNY // few tokens (M <= 32), streaming B once
)

// Fp8Promotion is when the FP8 kernels fold partial sums into the accumulators (DG_FP8_PROMOTION_*).
type Fp8Promotion int32

// The promotion modes of dg.h; 0 is the heuristic's choice.
const (
	PromotionHeuristic Fp8Promotion = 0
	PromotionAfter     Fp8Promotion = C.DG_FP8_PROMOTION_AFTER   // after the block's WGMMAs complete
	PromotionOverlap   Fp8Promotion = C.DG_FP8_PROMOTION_OVERLAP // while the next block's WGMMAs run
)

// GemmOptions are the options of the GEMMs (dg_gemm_options). Start from DefaultGemmOptions: its
// Alpha and Beta are 1 and MulticastA is -1, which a zero GemmOptions is not. Kernel configuration
// fields left 0 are chosen by the heuristic; a combination that cannot run the problem is an
// ErrInvalidArgument naming the option. A nil *GemmOptions means the defaults.
type GemmOptions struct {
	Recipe             Fp8Recipe    // FP8 only
	Alpha              float32      // D = Alpha * (A @ Bᵀ) + Beta * C
	Beta               float32      // read only when c is given
	DisableUE8M0Cast   bool         // accepted for DeepGEMM parity; no effect on SM90
	BlockM             int          // 64, 128 or 256 (BF16)
	BlockN             int          // a multiple of 16 (8 for FP32 d), up to 256
	NumStages          int          // shared-memory pipeline depth
	Cluster            int          // 1 or 2 CTAs (TMA multicast between the pair)
	MulticastA         int          // cluster 2: 1 = the pair shares A, 0 = shares B, -1 = heuristic
	NumMathWarpgroups  int          // 1 or 2 WGMMA warp-groups
	NumSMs             int          // SMs to use, at most the stream's cap; 0 = the cap
	FP8Promotion       Fp8Promotion // FP8: when partial sums are promoted
	FP8PromotionSlices int          // FP8: 1, 2 or 4 column slices per K block; 0 = heuristic
	SplitK             int          // CTAs sharing each tile's K blocks: 1, 2, 4 or 8; needs cluster 1
	Kernel             GemmKernel   // which kernel family runs the call
	// Workspace is device memory (256-byte aligned, WorkspaceSize bytes, see Fp8GemmWorkspaceSize)
	// for K-major copies of FP8 operands that are MN-major in memory; 0 = none. It must overlap no
	// operand and nothing else may use it until the call's work has completed on its stream.
	Workspace     uintptr
	WorkspaceSize int
	// Epilogue is nil or a fused epilogue (bias, SwiGLU, FP8 d) for the dense and M-grouped calls;
	// the other calls and the prepare functions refuse one.
	Epilogue *GemmEpilogue
}

// DefaultGemmOptions returns the options of DG_GEMM_OPTIONS_INIT.
func DefaultGemmOptions() GemmOptions {
	o := C.dgw_gemm_options_init()
	return GemmOptions{
		Recipe: Fp8Recipe(o.recipe), Alpha: float32(o.alpha), Beta: float32(o.beta),
		DisableUE8M0Cast: o.disable_ue8m0_cast != 0, BlockM: int(o.block_m), BlockN: int(o.block_n),
		NumStages: int(o.num_stages), Cluster: int(o.cluster), MulticastA: int(o.multicast_a),
		NumMathWarpgroups: int(o.num_math_warpgroups), NumSMs: int(o.num_sms),
		FP8Promotion: Fp8Promotion(o.fp8_promotion), FP8PromotionSlices: int(o.fp8_promotion_slices),
		SplitK: int(o.split_k), Kernel: GemmKernel(o.kernel), WorkspaceSize: int(o.workspace_size),
	}
}

func cBool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// cGemmOptions fills dst from o; it returns nil for nil options (libdg's defaults), and an error
// naming the first field whose value does not fit its C type.
func cGemmOptions(o *GemmOptions, dst *C.dg_gemm_options) (*C.dg_gemm_options, error) {
	if o == nil {
		return nil, nil
	}
	var a cArgs
	*dst = C.dgw_gemm_options_init()
	dst.recipe = C.int32_t(o.Recipe)
	dst.alpha = C.float(o.Alpha)
	dst.beta = C.float(o.Beta)
	dst.disable_ue8m0_cast = cBool(o.DisableUE8M0Cast)
	dst.block_m = a.int32("options.block_m", o.BlockM)
	dst.block_n = a.int32("options.block_n", o.BlockN)
	dst.num_stages = a.int32("options.num_stages", o.NumStages)
	dst.cluster = a.int32("options.cluster", o.Cluster)
	dst.multicast_a = a.int32("options.multicast_a", o.MulticastA)
	dst.num_math_warpgroups = a.int32("options.num_math_warpgroups", o.NumMathWarpgroups)
	dst.num_sms = a.int32("options.num_sms", o.NumSMs)
	dst.fp8_promotion = C.int32_t(o.FP8Promotion)
	dst.fp8_promotion_slices = a.int32("options.fp8_promotion_slices", o.FP8PromotionSlices)
	dst.split_k = a.int32("options.split_k", o.SplitK)
	dst.workspace = C.dgw_pointer(C.uintptr_t(o.Workspace))
	dst.workspace_size = a.size("options.workspace_size", o.WorkspaceSize)
	dst.kernel = C.int32_t(o.Kernel)
	return dst, a.err
}

// gemmCall makes call with opts converted, or returns the conversion's error without calling it.
func gemmCall(opts *GemmOptions, call func(*C.dg_gemm_options) C.dgw_result) error {
	if opts != nil && opts.Epilogue != nil {
		return epilogueCall(opts, call)
	}
	var o C.dg_gemm_options
	p, err := cGemmOptions(opts, &o)
	if err != nil {
		return err
	}
	return check(call(p))
}

// keep keeps handles alive until the C call that uses their raw pointers has returned.
func keep(objects ...interface{}) {
	runtime.KeepAlive(objects)
}

// BF16GemmNT is the BF16 GEMM with a [M, K], b [N, K] (dg_bf16_gemm_nt). d [M, N] row-major,
// BFLOAT16 or FLOAT32; c nil or like d (it may alias d); opts nil for the defaults.
func (s *Stream) BF16GemmNT(a, b, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_bf16_gemm_nt(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// BF16GemmNN is the BF16 GEMM with a [M, K], b [K, N] (dg_bf16_gemm_nn); see BF16GemmNT.
func (s *Stream) BF16GemmNN(a, b, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_bf16_gemm_nn(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// BF16GemmTN is the BF16 GEMM with a [K, M], b [K, N] (dg_bf16_gemm_tn); see BF16GemmNT.
func (s *Stream) BF16GemmTN(a, b, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_bf16_gemm_tn(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// BF16GemmTT is the BF16 GEMM with a [K, M], b [N, K] (dg_bf16_gemm_tt); see BF16GemmNT.
func (s *Stream) BF16GemmTT(a, b, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_bf16_gemm_tt(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// FP8GemmNT is the FP8 GEMM with a [M, K], b [N, K] (dg_fp8_gemm_nt): a and b FLOAT8_E4M3 with
// FLOAT32 scales sfa ([M, ceil(K/128)] view, MN-major TMA-aligned: see
// TransformSFIntoRequiredLayout) and sfb (1D2D: [ceil(N/128), ceil(K/128)], any strides; 1D1D:
// like sfa). Operands that are MN-major in memory need opts.Workspace. d, c as for BF16GemmNT.
func (s *Stream) FP8GemmNT(a, sfa, b, sfb, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_gemm_nt(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c)
	return err
}

// FP8GemmNN is the FP8 GEMM with a [M, K], b [K, N] (dg_fp8_gemm_nn); see FP8GemmNT.
func (s *Stream) FP8GemmNN(a, sfa, b, sfb, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_gemm_nn(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c)
	return err
}

// FP8GemmTN is the FP8 GEMM with a [K, M], b [K, N] (dg_fp8_gemm_tn); see FP8GemmNT.
func (s *Stream) FP8GemmTN(a, sfa, b, sfb, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_gemm_tn(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c)
	return err
}

// FP8GemmTT is the FP8 GEMM with a [K, M], b [N, K] (dg_fp8_gemm_tt); see FP8GemmNT.
func (s *Stream) FP8GemmTT(a, sfa, b, sfb, d, c *Tensor, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_gemm_tt(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c)
	return err
}

// FP8GemmNTSkipHeadMid is the FP8 GEMM of FP8GemmNT (1D2D recipe, no C) whose store skips the middle
// columns of each head (dg_fp8_gemm_nt_skip_head_mid): b's N rows are heads of left + right, d is
// [M, N / (left + right) * (left + mid + right)] BFLOAT16 or FLOAT32, and GEMM column
// h*(left+right) + o goes to d's column h*(left+mid+right) + (o < left ? o : o + mid); the mid
// columns are never written. left and right multiples of 16 (BFLOAT16 d) or 8 (FLOAT32) take the TMA
// store, other values a slower per-element store.
func (s *Stream) FP8GemmNTSkipHeadMid(a, sfa, b, sfb, d *Tensor, left, mid, right int64, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_gemm_nt_skip_head_mid(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(),
			C.int64_t(left), C.int64_t(mid), C.int64_t(right), o)
	})
	keep(s, a, sfa, b, sfb, d)
	return err
}

// Fp8GemmWorkspaceSize returns the workspace bytes the FP8 GEMMs need when a and b are stored as
// layout names them (dg_fp8_gemm_workspace_size; 0 for LayoutNT).
func Fp8GemmWorkspaceSize(layout GemmLayout, m, n, k int64) (int, error) {
	var bytes C.size_t
	err := check(C.dgw_fp8_gemm_workspace_size(C.int32_t(layout), C.int64_t(m), C.int64_t(n), C.int64_t(k), &bytes))
	return int(bytes), err
}

// GemmPrepare compiles and loads, without launching or touching device memory, every kernel the
// matching GEMM would use (dg_gemm_prepare), for contiguous a and b in layout: abDType BFloat16
// or Float8E4M3, dDType BFloat16 or Float32 (Float8E4M3 with an epilogue's DScales), withC when a
// C term will be given; opts.Epilogue is checked as the call checks it (its tensors' shapes and
// dtypes, not their memory). On an offline stream it fills the disk cache with no GPU. Call it
// before capturing a CUDA graph.
func (s *Stream) GemmPrepare(abDType DType, layout GemmLayout, m, n, k int64, dDType DType, withC bool,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_gemm_prepare(s.ptr, C.dg_dtype(abDType), C.int32_t(layout), C.int64_t(m), C.int64_t(n),
			C.int64_t(k), C.dg_dtype(dDType), cBool(withC), o)
	})
	keep(s)
	return err
}

// JitStats are the JIT counters of this process (dg_jit_get_stats).
type JitStats struct {
	Compiled       int64 // kernels compiled (NVRTC or nvcc)
	LoadedFromDisk int64 // kernels loaded from the disk cache
	MemoryHits     int64 // requests served by the in-memory cache
}

// GetJitStats returns the JIT counters, for tests and for checking that a warm-up covered a workload.
func GetJitStats() (JitStats, error) {
	var c, d, m C.int64_t
	err := check(C.dgw_jit_get_stats(&c, &d, &m))
	return JitStats{Compiled: int64(c), LoadedFromDisk: int64(d), MemoryHits: int64(m)}, err
}
