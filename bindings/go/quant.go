package dg

// #include "calls.h"
import "C"

// QuantOptions are the options of the FP8 quantization calls (dg_quant_options); the zero value is
// the default: FP32 scales as computed and an amax floor of 1e-4.
type QuantOptions struct {
	Pow2Scales bool    // scales rounded up to powers of two (UE8M0 values); packed scales imply it
	AmaxFloor  float32 // lower clamp of each group's amax; 0 = 1e-4, else 1e-30 .. 1e30
}

// quantOptions fills *o from opts and returns it, or nil (libdg's defaults) for nil opts.
func quantOptions(opts *QuantOptions, o *C.dg_quant_options) *C.dg_quant_options {
	if opts == nil {
		return nil
	}
	*o = C.dgw_quant_options_init()
	if opts.Pow2Scales {
		o.pow2_scales = 1
	}
	o.amax_floor = C.float(opts.AmaxFloor)
	return o
}

// QuantizeFP8PerToken is per-token 1 x 128 quantization (dg_quantize_fp8_per_token): x BFloat16 or
// Float32 [M, K] or [G, M, K] -> out Float8E4M3 of x's sizes and sf Float32 [(G,) M, ceil(K/128)]
// in the MN-major TMA-aligned layout the FP8 GEMMs read as sfa (or packed UE8M0x4). opts may be nil.
func (s *Stream) QuantizeFP8PerToken(x, out, sf *Tensor, opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_per_token(s.ptr, x.raw(), out.raw(), sf.raw(), po))
	keep(s, x, out, sf)
	return err
}

// QuantizeFP8PerTokenContiguous quantizes the A operand of the M-grouped contiguous GEMMs
// (dg_quantize_fp8_per_token_contiguous): the values of rows of no group are not used (they may be
// loaded), their codes and scales are written as 0. opts may be nil.
func (s *Stream) QuantizeFP8PerTokenContiguous(x, out, sf, groupedLayout *Tensor, layout MGroupedLayout, numGroups int64,
	opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_per_token_contiguous(s.ptr, x.raw(), out.raw(), sf.raw(), groupedLayout.raw(),
		C.int32_t(layout), C.int64_t(numGroups), po))
	keep(s, x, out, sf, groupedLayout)
	return err
}

// QuantizeFP8PerTokenMasked quantizes the A operand of the masked M-grouped GEMMs
// (dg_quantize_fp8_per_token_masked): x [G, max_m, K], maskedM Int32 [G] read on the device only;
// rows past a group's count are neither read nor written. opts may be nil.
func (s *Stream) QuantizeFP8PerTokenMasked(x, out, sf, maskedM *Tensor, opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_per_token_masked(s.ptr, x.raw(), out.raw(), sf.raw(), maskedM.raw(), po))
	keep(s, x, out, sf, maskedM)
	return err
}

// QuantizeFP8PerBlock is 128 x 128 per-block quantization of weights (dg_quantize_fp8_per_block):
// x [N, K] or [G, N, K], sf Float32 [(G,) ceil(N/128), ceil(K/128)] contiguous. opts may be nil.
func (s *Stream) QuantizeFP8PerBlock(x, out, sf *Tensor, opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_per_block(s.ptr, x.raw(), out.raw(), sf.raw(), po))
	keep(s, x, out, sf)
	return err
}

// QuantizeFP8MNMajor is 1 x 128 quantization along K of x [K, MN] stored MN-major
// (dg_quantize_fp8_mn_major), the K-grouped weight-gradient GEMMs' operands: out [K, MN], sf
// Float32 [MN, ceil(K/128)] MN-major TMA-aligned. opts may be nil.
func (s *Stream) QuantizeFP8MNMajor(x, out, sf *Tensor, opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_mn_major(s.ptr, x.raw(), out.raw(), sf.raw(), po))
	keep(s, x, out, sf)
	return err
}

// QuantizeFP8KGrouped is 1 x 128 quantization along K of the K-grouped GEMMs' operands
// (dg_quantize_fp8_k_grouped), counts from the host: x BFloat16 or Float32 [rows, MN] (stride 1
// along MN) holds group g's ks[g] rows (any count) after the previous groups'; each group is padded
// to a multiple of 128 rows in the output. out Float8E4M3 [P, MN] (MN-major, the tn GEMM's operand)
// or rank 1 [MN * P] (group g's [MN, align(k_g, 128)] K-major, the nt GEMM's operand), P the sum of
// KGroupedPaddedKs(ks); sf Float32 [MN, P / 128] MN-major TMA-aligned. Call the K-grouped GEMM with
// the padded counts. ksTensor (may be nil): the Int32 device copy, checked, not read. opts may be nil.
func (s *Stream) QuantizeFP8KGrouped(x, out, sf *Tensor, ks []int64, ksTensor *Tensor, opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_k_grouped(s.ptr, x.raw(), out.raw(), sf.raw(), int64Ptr(ks), C.int64_t(len(ks)),
		ksTensor.raw(), po))
	keep(s, x, out, sf, ksTensor)
	return err
}

// QuantizeFP8KGroupedDevice is QuantizeFP8KGrouped with the counts read on the device from ksTensor
// (Int32 [numGroups]; no host read, so a captured graph replays with new counts). x's and out's rows
// are then capacities (out's a multiple of 128): a group that does not fit is not written;
// align(rows, 128) + 128 * numGroups rows of out always suffice. opts may be nil.
func (s *Stream) QuantizeFP8KGroupedDevice(x, out, sf, ksTensor *Tensor, numGroups int64, opts *QuantOptions) error {
	var o C.dg_quant_options
	po := quantOptions(opts, &o)
	err := check(C.dgw_quantize_fp8_k_grouped(s.ptr, x.raw(), out.raw(), sf.raw(), nil, C.int64_t(numGroups),
		ksTensor.raw(), po))
	keep(s, x, out, sf, ksTensor)
	return err
}

// KGroupedPaddedKs rounds each count up to 128: the ks of the K-grouped GEMMs that read
// QuantizeFP8KGrouped's output.
func KGroupedPaddedKs(ks []int64) []int64 {
	out := make([]int64, len(ks))
	for i, k := range ks {
		out[i] = (k + 127) / 128 * 128
	}
	return out
}
