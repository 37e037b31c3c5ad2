package dg

// #include "calls.h"
import "C"

// MGroupedLayout is how the groups of an M-grouped GEMM are described (DG_M_GROUPED_LAYOUT_*).
// M-grouped GEMMs (MoE experts) run G problems that share N and K; D is BFLOAT16 and FP8 calls
// use the 1D2D recipe. dg.h gives each layout's rules, including how group data the host cannot
// check is made safe on the device.
type MGroupedLayout int32

// The layouts of dg.h.
const (
	// Contiguous: INT32 [M], each row's group in [0, G), -1 for a padding row; groups start at
	// multiples of MKAlignmentForContiguousLayout().
	MGroupedIndices MGroupedLayout = C.DG_M_GROUPED_LAYOUT_INDICES
	// Contiguous: INT32 [G], each group's end row (exclusive, a prefix sum).
	MGroupedPsum MGroupedLayout = C.DG_M_GROUPED_LAYOUT_PSUM
	// The masked calls (for MGroupedGemmPrepare only).
	MGroupedMasked MGroupedLayout = C.DG_M_GROUPED_LAYOUT_MASKED
)

// MGroupedFP8GemmNTContiguous is the M-grouped FP8 GEMM, contiguous layout, b [G, N, K]
// (dg_m_grouped_fp8_gemm_nt_contiguous): a [M, K] FLOAT8_E4M3 with sfa per token x 128 K
// (MN-major TMA-aligned), sfb [G, ceil(N/128), ceil(K/128)] FLOAT32, d [M, N] BFLOAT16;
// groupedLayout INT32 as layout says; expectedM the rows per group to plan for (0 = M / G).
func (s *Stream) MGroupedFP8GemmNTContiguous(a, sfa, b, sfb, d, groupedLayout *Tensor, layout MGroupedLayout,
	expectedM int64, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_fp8_gemm_nt_contiguous(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(),
			groupedLayout.raw(), C.int32_t(layout), C.int64_t(expectedM), o)
	})
	keep(s, a, sfa, b, sfb, d, groupedLayout)
	return err
}

// MGroupedFP8GemmNNContiguous is MGroupedFP8GemmNTContiguous with b [G, K, N]
// (dg_m_grouped_fp8_gemm_nn_contiguous); it runs only when b's [N, K] views are K-major in memory,
// else ErrUnsupported.
func (s *Stream) MGroupedFP8GemmNNContiguous(a, sfa, b, sfb, d, groupedLayout *Tensor, layout MGroupedLayout,
	expectedM int64, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_fp8_gemm_nn_contiguous(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(),
			groupedLayout.raw(), C.int32_t(layout), C.int64_t(expectedM), o)
	})
	keep(s, a, sfa, b, sfb, d, groupedLayout)
	return err
}

// MGroupedBF16GemmNTContiguous is the M-grouped BF16 GEMM, contiguous layout, b [G, N, K]
// (dg_m_grouped_bf16_gemm_nt_contiguous): a [M, K], d [M, N] BFLOAT16; groupedLayout INT32 as
// layout says; expectedM the rows per group to plan for (0 = M / G).
func (s *Stream) MGroupedBF16GemmNTContiguous(a, b, d, groupedLayout *Tensor, layout MGroupedLayout, expectedM int64,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_bf16_gemm_nt_contiguous(s.ptr, a.raw(), b.raw(), d.raw(), groupedLayout.raw(),
			C.int32_t(layout), C.int64_t(expectedM), o)
	})
	keep(s, a, b, d, groupedLayout)
	return err
}

// MGroupedBF16GemmNNContiguous is MGroupedBF16GemmNTContiguous with b [G, K, N]
// (dg_m_grouped_bf16_gemm_nn_contiguous).
func (s *Stream) MGroupedBF16GemmNNContiguous(a, b, d, groupedLayout *Tensor, layout MGroupedLayout, expectedM int64,
	opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_bf16_gemm_nn_contiguous(s.ptr, a.raw(), b.raw(), d.raw(), groupedLayout.raw(),
			C.int32_t(layout), C.int64_t(expectedM), o)
	})
	keep(s, a, b, d, groupedLayout)
	return err
}

// MGroupedFP8GemmNTMasked is the M-grouped FP8 GEMM, masked layout
// (dg_m_grouped_fp8_gemm_nt_masked): a [G, max_m, K], sfa [G, max_m, ceil(K/128)] MN-major
// TMA-aligned, b [G, N, K], sfb [G, ceil(N/128), ceil(K/128)], d [G, max_m, N] BFLOAT16; maskedM
// INT32 [G] in device memory gives each group's valid rows; expectedM (> 0) the rows per group to
// plan for.
func (s *Stream) MGroupedFP8GemmNTMasked(a, sfa, b, sfb, d, maskedM *Tensor, expectedM int64, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_fp8_gemm_nt_masked(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(),
			maskedM.raw(), C.int64_t(expectedM), o)
	})
	keep(s, a, sfa, b, sfb, d, maskedM)
	return err
}

// MGroupedBF16GemmNTMasked is the M-grouped BF16 GEMM, masked layout
// (dg_m_grouped_bf16_gemm_nt_masked): a [G, max_m, K], b [G, N, K], d [G, max_m, N]; maskedM INT32
// [G] in device memory gives each group's valid rows; expectedM (> 0) the rows per group to plan for.
func (s *Stream) MGroupedBF16GemmNTMasked(a, b, d, maskedM *Tensor, expectedM int64, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_bf16_gemm_nt_masked(s.ptr, a.raw(), b.raw(), d.raw(), maskedM.raw(),
			C.int64_t(expectedM), o)
	})
	keep(s, a, b, d, maskedM)
	return err
}

// MGroupedGemmPrepare compiles and loads, without launching, the kernel the matching M-grouped
// call would use (dg_m_grouped_gemm_prepare): abDType BFloat16 or Float8E4M3, gemmLayout LayoutNT
// or LayoutNN, grouping the call's layout, m the rows of A (contiguous) or max_m (masked), and
// numGroups, n, k, expectedM as the call will pass them; d is Float8E4M3 exactly when
// opts.Epilogue has DScales. Works on an offline stream.
func (s *Stream) MGroupedGemmPrepare(abDType DType, gemmLayout GemmLayout, grouping MGroupedLayout,
	numGroups, m, n, k, expectedM int64, opts *GemmOptions) error {
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_m_grouped_gemm_prepare(s.ptr, C.dg_dtype(abDType), C.int32_t(gemmLayout), C.int32_t(grouping),
			C.int64_t(numGroups), C.int64_t(m), C.int64_t(n), C.int64_t(k), C.int64_t(expectedM), o)
	})
	keep(s)
	return err
}
