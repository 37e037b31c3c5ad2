package dg

/*
#include "calls.h"

// Options and their epilogue in one C allocation: the options point at the epilogue, and cgo
// does not let Go memory that holds a pointer to Go memory be handed to C.
typedef struct dgw_options_with_epilogue {
  dg_gemm_options options;
  dg_gemm_epilogue epilogue;
} dgw_options_with_epilogue;

static inline dgw_options_with_epilogue* dgw_options_with_epilogue_new(void) {
  return (dgw_options_with_epilogue*)malloc(sizeof(dgw_options_with_epilogue));
}
*/
import "C"

import "unsafe"

// Activation is the activation of a fused GEMM epilogue (DG_ACTIVATION_*).
type Activation int32

// The activations of dg.h.
const (
	ActivationNone Activation = C.DG_ACTIVATION_NONE
	// ActivationSwiGLU: d[row, j] = silu(v[gate j]) * v[up j] over B's rows in alternating blocks
	// of 128 gate and 128 up rows (Stream.SwiGLUInterleave); d has N / 2 columns (N % 256 == 0).
	ActivationSwiGLU Activation = C.DG_ACTIVATION_SWIGLU
)

// GemmEpilogue is a fused GEMM epilogue (dg_gemm_epilogue; docs/gemm_epilogues.md), given to the
// dense BF16 / FP8 (1D2D) GEMMs and the M-grouped contiguous and masked calls through
// GemmOptions.Epilogue. In order: v = alpha * (A @ Bᵀ)[row, col] + Bias[col]; the activation; and
// for a Float8E4M3 d, per row and 128 columns of D, the codes and scales QuantizeFP8PerToken
// (*Contiguous / *Masked for the grouped calls) gives for the same call's BFloat16 D, bit for bit.
// Not with a C term, the 1D1D recipe, SplitK > 1, K == 0 or KernelSkinny (ErrUnsupported naming
// the reason). The zero value is DG_GEMM_EPILOGUE_INIT: no activation, no bias, no scales.
type GemmEpilogue struct {
	Activation Activation
	// Bias is nil or BFloat16 / Float32 [N] (the GEMM's columns, before SwiGLU), stride 1, 8-byte
	// aligned; dense calls only.
	Bias *Tensor
	// DScales goes with a Float8E4M3 d only: Float32 [(G,) M, ceil(N_d / 128)] in the layout
	// MnMajorTMAAlignedTensorLayout gives (the FP8 GEMMs' sfa), or packed UE8M0x4 / Int32 words as
	// QuantizeFP8PerToken takes them; G and M as d's (masked: [G, max_m, ...]).
	DScales    *Tensor
	Pow2Scales bool    // Float32 scales rounded up to powers of two (packed scales always are)
	AmaxFloor  float32 // lower clamp of each group's amax; 0 = 1e-4, else 1e-30 .. 1e30
}

// epilogueCall makes call with opts (whose Epilogue is set) converted into C memory.
func epilogueCall(opts *GemmOptions, call func(*C.dg_gemm_options) C.dgw_result) error {
	p := C.dgw_options_with_epilogue_new()
	if p == nil {
		return &Error{Status: StatusOutOfMemory, Message: "options.epilogue: allocating the C options failed"}
	}
	defer C.free(unsafe.Pointer(p))
	if _, err := cGemmOptions(opts, &p.options); err != nil {
		return err
	}
	e := opts.Epilogue
	p.epilogue = C.dgw_gemm_epilogue_init()
	p.epilogue.activation = C.int32_t(e.Activation)
	p.epilogue.bias = e.Bias.raw()
	p.epilogue.d_scales = e.DScales.raw()
	p.epilogue.pow2_scales = cBool(e.Pow2Scales)
	p.epilogue.amax_floor = C.float(e.AmaxFloor)
	p.options.epilogue = &p.epilogue
	err := check(call(&p.options))
	keep(e.Bias, e.DScales)
	return err
}

// SwiGLUInterleave reorders SwiGLU weights for ActivationSwiGLU (dg_swiglu_interleave): src
// [(G,) 2I, C] holds the gate rows [0, I) then the up rows [I, 2I); dst, of the same shape and
// dtype, gets blocks of block rows alternating gate block j, up block j. block 128 for the weights
// ([G, 2I, K], I % 128 == 0) and 1 for their 128 x 128 block scales ([G, 2I / 128, ceil(K / 128)]).
// Rows packed (stride along rows = C, stride 1 along C); src and dst must not overlap; any dtype.
// Copies on the stream, no kernel.
func (s *Stream) SwiGLUInterleave(src, dst *Tensor, block int64) error {
	err := check(C.dgw_swiglu_interleave(s.ptr, src.raw(), dst.raw(), C.int64_t(block)))
	keep(s, src, dst)
	return err
}
