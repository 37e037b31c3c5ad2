package dg

// #include "calls.h"
import "C"

// K-grouped GEMMs (MoE weight gradient) run G problems that share M and N, each over its own slice
// of K: D[g] = alpha * A_g @ B_gᵀ + beta * C[g] into FLOAT32 d [G, M, N] (contiguous). ks holds each
// group's K (multiples of 128, 0 allowed) and is read on the host; ksTensor (INT32 [G], the device
// copy DeepGEMM's API takes) may be nil and is checked, never read. c may be nil, a FLOAT32
// [G, M, N] tensor, or d itself (D += ...). dg.h gives the operand layouts.

// KGroupedFP8GemmNTContiguous is the K-grouped FP8 GEMM with flat K-major operands
// (dg_k_grouped_fp8_gemm_nt_contiguous): a FLOAT8_E4M3 [M * K] (rank 1), group g's [M, k_g]
// row-major after the previous groups'; b likewise with N; sfa [M, K / 128] and sfb [N, K / 128]
// FLOAT32 per token x 128 K, MN-major TMA-aligned, the groups' K blocks concatenated.
func (s *Stream) KGroupedFP8GemmNTContiguous(a, sfa, b, sfb, d, c *Tensor, ks []int64, ksTensor *Tensor,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_k_grouped_fp8_gemm_nt_contiguous(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(),
			c.raw(), int64Ptr(ks), C.int64_t(len(ks)), ksTensor.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c, ksTensor)
	return err
}

// KGroupedFP8GemmTNContiguous is KGroupedFP8GemmNTContiguous with a FLOAT8_E4M3 [K, M] and b
// [K, N] (stride 1 along M / N), group g the rows of its slice
// (dg_k_grouped_fp8_gemm_tn_contiguous); both are transposed into the workspace of opts
// (FP8GemmWorkspaceSize(LayoutTN, M, N, K) bytes).
func (s *Stream) KGroupedFP8GemmTNContiguous(a, sfa, b, sfb, d, c *Tensor, ks []int64, ksTensor *Tensor,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_k_grouped_fp8_gemm_tn_contiguous(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(),
			c.raw(), int64Ptr(ks), C.int64_t(len(ks)), ksTensor.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c, ksTensor)
	return err
}

// KGroupedBF16GemmTNContiguous is the K-grouped BF16 GEMM (dg_k_grouped_bf16_gemm_tn_contiguous):
// a BFLOAT16 [K, M] and b [K, N] (stride 1 along M / N), group g the rows of its slice, read in
// place.
func (s *Stream) KGroupedBF16GemmTNContiguous(a, b, d, c *Tensor, ks []int64, ksTensor *Tensor,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_k_grouped_bf16_gemm_tn_contiguous(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), int64Ptr(ks),
			C.int64_t(len(ks)), ksTensor.raw(), o)
	})
	keep(s, a, b, d, c, ksTensor)
	return err
}

// KGroupedGemmPrepare compiles and loads, without launching, the kernels the matching K-grouped
// call would use (dg_k_grouped_gemm_prepare): abDType Float8E4M3 with LayoutNT or LayoutTN, or
// BFloat16 with LayoutTN; m, n and ks as the call will pass them, withC when it passes c. Works on
// an offline stream.
func (s *Stream) KGroupedGemmPrepare(abDType DType, layout GemmLayout, m, n int64, ks []int64, withC bool,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_k_grouped_gemm_prepare(s.ptr, C.dg_dtype(abDType), C.int32_t(layout), C.int64_t(m), C.int64_t(n),
			int64Ptr(ks), C.int64_t(len(ks)), cBool(withC), o)
	})
	keep(s)
	return err
}
