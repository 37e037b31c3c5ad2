package dg

// #include <stdlib.h>
// #include "calls.h"
import "C"

import "unsafe"

// BF16Einsum runs one of DeepGEMM's einsum forms on BFloat16 operands (dg_bf16_einsum; docs/einsum.md):
//   - "bmk,bnk->mn": d[m, n] = c[m, n] + sum over b, k of a[b, m, k] b[b, n, k]; a [s, m, k], b [s, n, k],
//     d Float32 [m, n]; c nil (d = the sum), a Float32 [m, n] tensor, or d itself (d += the sum).
//   - "bhr,hdr->bhd": d[b, h, d] = sum over r of a[b, h, r] b[h, d, r] (BFloat16 d).
//   - "bhd,hdr->bhr": d[b, h, r] = sum over d of a[b, h, d] b[h, d, r] (BFloat16 d).
//
// Every tensor has stride 1 in its last dimension and its other strides multiples of 16 bytes; the
// operands are read in place (views of wider tensors included). opts: tile overrides, or nil.
func (s *Stream) BF16Einsum(expr string, a, b, d, c *Tensor, opts *GemmOptions) error {
	text := C.CString(expr)
	defer C.free(unsafe.Pointer(text))
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_bf16_einsum(s.ptr, text, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// BF16EinsumPrepare compiles and loads, without launching, the kernels BF16Einsum would use for expr
// with operands of a's sizes aSizes and b's sizes bSizes (3 each), withC when it passes c
// (dg_bf16_einsum_prepare). Works on an offline stream.
func (s *Stream) BF16EinsumPrepare(expr string, aSizes, bSizes [3]int64, withC bool, opts *GemmOptions) error {
	text := C.CString(expr)
	defer C.free(unsafe.Pointer(text))
	flag := C.int32_t(0)
	if withC {
		flag = 1
	}
	as := [3]C.int64_t{C.int64_t(aSizes[0]), C.int64_t(aSizes[1]), C.int64_t(aSizes[2])}
	bs := [3]C.int64_t{C.int64_t(bSizes[0]), C.int64_t(bSizes[1]), C.int64_t(bSizes[2])}
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_bf16_einsum_prepare(s.ptr, text, &as[0], &bs[0], flag, o)
	})
	keep(s)
	return err
}

// FP8Einsum runs DeepGEMM's FP8 "bhr,hdr->bhd" with its SM90 recipe (dg_fp8_einsum; docs/einsum.md):
// d[b, h, j] = sum over r of sfa[b, h, r/128] a[b, h, r] sfb[h, j/128, r/128] b[h, j, r]; a Float8E4M3
// [b, h, r], b Float8E4M3 [h, d, r], d BFloat16 [b, h, d] (strides as for BF16Einsum); sfa Float32
// [b, h, ceil(r/128)] with strides (1, ceil(r/128)*L, L), L a multiple of 4 and >= b (each head's scales
// MN-major and TMA-aligned); sfb Float32 [h, ceil(d/128), ceil(r/128)]. c must be nil (a C term is
// unsupported, as in DeepGEMM's SM90 path). opts: tile and FP8 promotion overrides, or nil.
func (s *Stream) FP8Einsum(expr string, a, sfa, b, sfb, d, c *Tensor, opts *GemmOptions) error {
	text := C.CString(expr)
	defer C.free(unsafe.Pointer(text))
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_einsum(s.ptr, text, a.raw(), sfa.raw(), b.raw(), sfb.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, sfa, b, sfb, d, c)
	return err
}

// FP8EinsumPrepare compiles and loads, without launching, the kernel FP8Einsum would use for expr with
// a of sizes aSizes = [b, h, r] and b of sizes bSizes = [h, d, r] (dg_fp8_einsum_prepare, no C term).
// Works on an offline stream.
func (s *Stream) FP8EinsumPrepare(expr string, aSizes, bSizes [3]int64, opts *GemmOptions) error {
	text := C.CString(expr)
	defer C.free(unsafe.Pointer(text))
	as := [3]C.int64_t{C.int64_t(aSizes[0]), C.int64_t(aSizes[1]), C.int64_t(aSizes[2])}
	bs := [3]C.int64_t{C.int64_t(bSizes[0]), C.int64_t(bSizes[1]), C.int64_t(bSizes[2])}
	err := gemmCall(opts, func(o *C.dg_gemm_options) C.dgw_result {
		return C.dgw_fp8_einsum_prepare(s.ptr, text, &as[0], &bs[0], 0, o)
	})
	keep(s)
	return err
}
