package dg

// #include "calls.h"
import "C"

// Nvfp4GemvOptions are tuning overrides of NVFP4Gemv (dg_nvfp4_gemv_options); every field left 0
// is chosen by the heuristic, so the zero value is the default.
type Nvfp4GemvOptions struct {
	ThreadsPerRow   int // threads sharing one row of a: 1, 2, 4, 8, 16 or a multiple of 32 (<= 1024)
	RowGroups       int // rows a block works on side by side (ThreadsPerRow * RowGroups <= 1024)
	ChunksPerThread int // vector loads per thread per row (1..16)
	RowsPerRound    int // rows each group loads at once (1..8)
	VectorBytes     int // 16 or 8: bytes per load of a (8 needs only 8-byte aligned a and b)
	GridBlocks      int // blocks; 0 = at most one wave of the device, as few as keep it as short
	CacheHint       int // loads of a and sfa: 0 L1::no_allocate, 1 .nc, 2 .cs, 3 L1::no_allocate + L2 prefetch
	Prefetch        int // 0 or 1: prefetch the next rows before computing; -1: off
}

// NVFP4Gemv is the batched NVFP4 GEMV (dg_nvfp4_gemv): for every batch l, c[m, 0, l] = sum_k
// A[m, k, l] * b[0, k, l], values being E2M1 codes times the E4M3 scale of their 16 consecutive k.
// a [M, K/2, L] and b [Np, K/2, L] Float4E2M1x2 (only row 0 of b is read), sfa [M, K/16, L] and
// sfb [Np', K/16, L] Float8E4M3, c [M, 1, L] Float16; rank 2 means L = 1. K must be a multiple of
// 32 and the K dimensions must have stride 1. opts may be nil.
func (s *Stream) NVFP4Gemv(a, sfa, b, sfb, c *Tensor, opts *Nvfp4GemvOptions) error {
	var o C.dg_nvfp4_gemv_options
	var po *C.dg_nvfp4_gemv_options
	if opts != nil {
		var c cArgs
		o = C.dgw_nvfp4_gemv_options_init()
		o.threads_per_row = c.int32("options.threads_per_row", opts.ThreadsPerRow)
		o.row_groups = c.int32("options.row_groups", opts.RowGroups)
		o.chunks_per_thread = c.int32("options.chunks_per_thread", opts.ChunksPerThread)
		o.rows_per_round = c.int32("options.rows_per_round", opts.RowsPerRound)
		o.vector_bytes = c.int32("options.vector_bytes", opts.VectorBytes)
		o.grid_blocks = c.int32("options.grid_blocks", opts.GridBlocks)
		o.cache_hint = c.int32("options.cache_hint", opts.CacheHint)
		o.prefetch = c.int32("options.prefetch", opts.Prefetch)
		if c.err != nil {
			return c.err
		}
		po = &o
	}
	err := check(C.dgw_nvfp4_gemv(s.ptr, a.raw(), sfa.raw(), b.raw(), sfb.raw(), c.raw(), po))
	keep(s, a, sfa, b, sfb, c)
	return err
}

// TF32HCPrenormGemm is DeepGEMM's tf32_hc_prenorm_gemm (dg_tf32_hc_prenorm_gemm): d = a @ bᵀ
// (a [M, K] BFloat16, b [N, K] Float32 with N <= 32, TF32 tensor cores) and each row's sum of
// squares of a into sqrSum [M], in one pass over a. numSplits 0: full sums; 1..65535: d
// [numSplits, M, N] and sqrSum [numSplits, M] hold partial sums over K that the caller adds up.
func (s *Stream) TF32HCPrenormGemm(a, b, d, sqrSum *Tensor, numSplits int) error {
	var c cArgs
	splits := c.int32("num_splits", numSplits)
	if c.err != nil {
		return c.err
	}
	err := check(C.dgw_tf32_hc_prenorm_gemm(s.ptr, a.raw(), b.raw(), d.raw(), sqrSum.raw(), splits))
	keep(s, a, b, d, sqrSum)
	return err
}
