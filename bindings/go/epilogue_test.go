package dg

import "testing"

// The epilogue reaches libdg field by field (each refusal names the field), on the dense and
// grouped calls, and the calls without one are unchanged; offline, nothing launches.
func TestGemmEpilogueValidation(t *testing.T) {
	s := offlineStream(t)
	const m, n, k = 128, 512, 256
	a := mustTensor(t, fakeDevicePtr(1), BFloat16, []int64{m, k}, nil)
	b := mustTensor(t, fakeDevicePtr(2), BFloat16, []int64{n, k}, nil)
	d := mustTensor(t, fakeDevicePtr(3), BFloat16, []int64{m, n}, nil)
	d8 := mustTensor(t, fakeDevicePtr(4), Float8E4M3, []int64{m, n / 2}, nil)
	shortBias := mustTensor(t, fakeDevicePtr(5), Float32, []int64{n - 8}, nil)
	with := func(e GemmEpilogue) *GemmOptions {
		o := DefaultGemmOptions()
		o.Epilogue = &e
		return &o
	}
	wantError(t, s.BF16GemmNT(a, b, d, nil, with(GemmEpilogue{Bias: shortBias})), ErrInvalidArgument,
		"options.epilogue.bias")
	wantError(t, s.BF16GemmNT(a, b, d, nil, with(GemmEpilogue{Activation: 5})), ErrInvalidArgument,
		"options.epilogue.activation")
	wantError(t, s.BF16GemmNT(a, b, d, nil, with(GemmEpilogue{AmaxFloor: 1e31})), ErrInvalidArgument,
		"options.epilogue.amax_floor")
	wantError(t, s.BF16GemmNT(a, b, d8, nil, with(GemmEpilogue{Activation: ActivationSwiGLU})), ErrInvalidArgument,
		"options.epilogue.d_scales")
	wantError(t, s.BF16GemmNT(a, b, d, d, with(GemmEpilogue{})), ErrUnsupported, "options.epilogue")
	wantError(t, s.BF16GemmNT(a, b, d8, nil, nil), ErrInvalidArgument, "FLOAT8_E4M3 needs a fused epilogue")
	// Prepare checks the epilogue as the call does.
	wantError(t, s.GemmPrepare(BFloat16, LayoutNT, m, n, k, BFloat16, true, with(GemmEpilogue{})), ErrUnsupported,
		"C term")

	// Grouped: no bias.
	gb := mustTensor(t, fakeDevicePtr(6), BFloat16, []int64{4, n, k}, nil)
	groups := mustTensor(t, fakeDevicePtr(7), Int32, []int64{m}, nil)
	bias := mustTensor(t, fakeDevicePtr(8), Float32, []int64{n}, nil)
	wantError(t, s.MGroupedBF16GemmNTContiguous(a, gb, d, groups, MGroupedIndices, 0, with(GemmEpilogue{Bias: bias})),
		ErrUnsupported, "bias")
	counts := mustTensor(t, fakeDevicePtr(9), Int32, []int64{4}, nil)
	ma := mustTensor(t, fakeDevicePtr(10), BFloat16, []int64{4, m, k}, nil)
	md := mustTensor(t, fakeDevicePtr(11), BFloat16, []int64{4, m, n}, nil)
	wantError(t, s.MGroupedBF16GemmNTMasked(ma, gb, md, counts, 64, with(GemmEpilogue{Activation: ActivationSwiGLU})),
		ErrInvalidArgument, "d")

	// The options are converted on this path too.
	o := with(GemmEpilogue{})
	o.NumSMs = wrap + 66
	wantRangeError(t, s.BF16GemmNT(a, b, d, nil, o), "options.num_sms", int32Range)
}

func TestSwiGLUInterleaveValidation(t *testing.T) {
	s := offlineStream(t)
	src := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{2, 512, 256}, nil)
	dst := mustTensor(t, fakeDevicePtr(2), Float8E4M3, []int64{2, 512, 256}, nil)
	wantError(t, s.SwiGLUInterleave(src, dst, 0), ErrInvalidArgument, "block: 0")
	wantError(t, s.SwiGLUInterleave(src, dst, 96), ErrInvalidArgument, "block: 96 does not divide I = 256")
	wantError(t, s.SwiGLUInterleave(src, mustTensor(t, fakeDevicePtr(3), Float8E4M3, []int64{2, 256, 256}, nil), 128),
		ErrInvalidArgument, "dst: shape")
	wantError(t, s.SwiGLUInterleave(src, src, 128), ErrInvalidArgument, "dst: overlaps src")
	wantError(t, s.SwiGLUInterleave(nil, dst, 128), ErrInvalidArgument, "src")
	// Nothing to copy: done without the device.
	empty := mustTensor(t, fakeDevicePtr(4), Float32, []int64{2, 0, 4}, nil)
	if err := s.SwiGLUInterleave(empty, mustTensor(t, fakeDevicePtr(5), Float32, []int64{2, 0, 4}, nil), 1); err != nil {
		t.Fatal(err)
	}
}
