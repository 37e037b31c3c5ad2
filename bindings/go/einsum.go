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
