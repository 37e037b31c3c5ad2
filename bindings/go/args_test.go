package dg

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// wrap + v converts to int32 as v: without a range check libdg would be handed a valid value that
// the caller never passed.
const wrap = 1 << 32

// wantRangeError checks that err is this package's refusal of argument name, with the valid range.
func wantRangeError(t *testing.T, err error, name, expected string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Fatalf("got %v, want DG_ERROR_INVALID_ARGUMENT for %s", err, name)
	}
	if !strings.HasPrefix(e.Message, name+": ") || !strings.Contains(e.Message, expected) {
		t.Errorf("message %q does not open with %q or lacks %q", e.Message, name+": ", expected)
	}
}

const int32Range = "(expected -2147483648 to 2147483647)"

func TestGemmOptionsThatDoNotFitAreRefused(t *testing.T) {
	s := offlineStream(t)
	// Each int field, on a call libdg would otherwise reach with the wrapped value.
	fields := []struct {
		name string
		set  func(*GemmOptions)
	}{
		{"options.block_m", func(o *GemmOptions) { o.BlockM = wrap + 128 }},
		{"options.block_n", func(o *GemmOptions) { o.BlockN = wrap + 128 }},
		{"options.num_stages", func(o *GemmOptions) { o.NumStages = -wrap + 4 }},
		{"options.cluster", func(o *GemmOptions) { o.Cluster = wrap + 1 }},
		{"options.multicast_a", func(o *GemmOptions) { o.MulticastA = wrap - 1 }},
		{"options.num_math_warpgroups", func(o *GemmOptions) { o.NumMathWarpgroups = wrap + 2 }},
		{"options.num_sms", func(o *GemmOptions) { o.NumSMs = wrap + 66 }},
		{"options.fp8_promotion_slices", func(o *GemmOptions) { o.FP8PromotionSlices = wrap + 2 }},
		{"options.split_k", func(o *GemmOptions) { o.SplitK = wrap + 2 }},
	}
	for _, f := range fields {
		o := DefaultGemmOptions()
		f.set(&o)
		wantRangeError(t, s.GemmPrepare(BFloat16, LayoutNT, 256, 512, 384, BFloat16, false, &o), f.name, int32Range)
	}
	o := DefaultGemmOptions()
	o.WorkspaceSize = -1
	wantRangeError(t, s.GemmPrepare(BFloat16, LayoutNT, 256, 512, 384, BFloat16, false, &o),
		"options.workspace_size", "is negative (expected 0 to ")

	// Every entry point that takes GemmOptions converts them before calling libdg (its tensors
	// here are nil: libdg would have named those).
	o = DefaultGemmOptions()
	o.NumSMs = wrap + 66
	ks := []int64{128}
	calls := map[string]func(*GemmOptions) error{
		"BF16GemmNT": func(o *GemmOptions) error { return s.BF16GemmNT(nil, nil, nil, nil, o) },
		"BF16GemmNN": func(o *GemmOptions) error { return s.BF16GemmNN(nil, nil, nil, nil, o) },
		"BF16GemmTN": func(o *GemmOptions) error { return s.BF16GemmTN(nil, nil, nil, nil, o) },
		"BF16GemmTT": func(o *GemmOptions) error { return s.BF16GemmTT(nil, nil, nil, nil, o) },
		"FP8GemmNT":  func(o *GemmOptions) error { return s.FP8GemmNT(nil, nil, nil, nil, nil, nil, o) },
		"FP8GemmNN":  func(o *GemmOptions) error { return s.FP8GemmNN(nil, nil, nil, nil, nil, nil, o) },
		"FP8GemmTN":  func(o *GemmOptions) error { return s.FP8GemmTN(nil, nil, nil, nil, nil, nil, o) },
		"FP8GemmTT":  func(o *GemmOptions) error { return s.FP8GemmTT(nil, nil, nil, nil, nil, nil, o) },
		"FP8GemmNTSkipHeadMid": func(o *GemmOptions) error {
			return s.FP8GemmNTSkipHeadMid(nil, nil, nil, nil, nil, 128, 64, 128, o)
		},
		"MGroupedFP8GemmNTContiguous": func(o *GemmOptions) error {
			return s.MGroupedFP8GemmNTContiguous(nil, nil, nil, nil, nil, nil, MGroupedIndices, 0, o)
		},
		"MGroupedFP8GemmNNContiguous": func(o *GemmOptions) error {
			return s.MGroupedFP8GemmNNContiguous(nil, nil, nil, nil, nil, nil, MGroupedIndices, 0, o)
		},
		"MGroupedBF16GemmNTContiguous": func(o *GemmOptions) error {
			return s.MGroupedBF16GemmNTContiguous(nil, nil, nil, nil, MGroupedPsum, 0, o)
		},
		"MGroupedBF16GemmNNContiguous": func(o *GemmOptions) error {
			return s.MGroupedBF16GemmNNContiguous(nil, nil, nil, nil, MGroupedPsum, 0, o)
		},
		"MGroupedFP8GemmNTMasked": func(o *GemmOptions) error {
			return s.MGroupedFP8GemmNTMasked(nil, nil, nil, nil, nil, nil, 64, o)
		},
		"MGroupedBF16GemmNTMasked": func(o *GemmOptions) error {
			return s.MGroupedBF16GemmNTMasked(nil, nil, nil, nil, 64, o)
		},
		"MGroupedGemmPrepare": func(o *GemmOptions) error {
			return s.MGroupedGemmPrepare(BFloat16, LayoutNT, MGroupedMasked, 4, 256, 512, 384, 64, o)
		},
		"KGroupedFP8GemmNTContiguous": func(o *GemmOptions) error {
			return s.KGroupedFP8GemmNTContiguous(nil, nil, nil, nil, nil, nil, ks, nil, o)
		},
		"KGroupedFP8GemmTNContiguous": func(o *GemmOptions) error {
			return s.KGroupedFP8GemmTNContiguous(nil, nil, nil, nil, nil, nil, ks, nil, o)
		},
		"KGroupedBF16GemmTNContiguous": func(o *GemmOptions) error {
			return s.KGroupedBF16GemmTNContiguous(nil, nil, nil, nil, ks, nil, o)
		},
		"KGroupedGemmPrepare": func(o *GemmOptions) error {
			return s.KGroupedGemmPrepare(BFloat16, LayoutTN, 128, 128, ks, false, o)
		},
		"GemmPrepare": func(o *GemmOptions) error {
			return s.GemmPrepare(BFloat16, LayoutNT, 256, 512, 384, BFloat16, false, o)
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) { wantRangeError(t, call(&o), "options.num_sms", int32Range) })
	}
}

func TestGemvOptionsThatDoNotFitAreRefused(t *testing.T) {
	s := offlineStream(t)
	fields := []struct {
		name string
		set  func(*Nvfp4GemvOptions)
	}{
		{"options.threads_per_row", func(o *Nvfp4GemvOptions) { o.ThreadsPerRow = wrap + 32 }},
		{"options.row_groups", func(o *Nvfp4GemvOptions) { o.RowGroups = wrap + 8 }},
		{"options.chunks_per_thread", func(o *Nvfp4GemvOptions) { o.ChunksPerThread = wrap + 1 }},
		{"options.rows_per_round", func(o *Nvfp4GemvOptions) { o.RowsPerRound = wrap + 2 }},
		{"options.vector_bytes", func(o *Nvfp4GemvOptions) { o.VectorBytes = wrap + 16 }},
		{"options.grid_blocks", func(o *Nvfp4GemvOptions) { o.GridBlocks = wrap + 132 }},
		{"options.cache_hint", func(o *Nvfp4GemvOptions) { o.CacheHint = wrap + 1 }},
		{"options.prefetch", func(o *Nvfp4GemvOptions) { o.Prefetch = -wrap - 1 }},
	}
	for _, f := range fields {
		var o Nvfp4GemvOptions
		f.set(&o)
		wantRangeError(t, s.NVFP4Gemv(nil, nil, nil, nil, nil, &o), f.name, int32Range)
	}
}

func TestRecipeFieldsThatDoNotFitAreRefused(t *testing.T) {
	s := offlineStream(t)
	sf := mustTensor(t, fakeDevicePtr(1), Float32, []int64{1000, 56}, nil)
	fields := []struct {
		name string
		set  func(*SfRecipe)
	}{
		{"recipe.gran_mn", func(r *SfRecipe) { r.GranMN = wrap + 1 }},
		{"recipe.gran_k", func(r *SfRecipe) { r.GranK = wrap + 128 }},
		{"recipe.num_groups", func(r *SfRecipe) { r.NumGroups = wrap }},
		{"recipe.arch_major", func(r *SfRecipe) { r.ArchMajor = wrap + 9 }},
	}
	for _, f := range fields {
		r := DefaultSfRecipe()
		f.set(&r)
		_, err := TransformSFLayout(s, sf, 1000, 56*128, r)
		wantRangeError(t, err, f.name, int32Range)
		wantRangeError(t, s.TransformSFIntoRequiredLayout(sf, 1000, 56*128, r, nil), f.name, int32Range)
	}
}

func TestIntArgumentsThatDoNotFitAreRefused(t *testing.T) {
	// Wrapped, these would have created a stream for sm_90 with 132 SMs.
	_, err := NewOfflineStream(wrap+9, 0, 132, nil)
	wantRangeError(t, err, "arch_major", int32Range)
	_, err = NewOfflineStream(9, wrap, 132, nil)
	wantRangeError(t, err, "arch_minor", int32Range)
	_, err = NewOfflineStream(9, 0, wrap+132, nil)
	wantRangeError(t, err, "num_sms", int32Range)
	_, err = NewStream(wrap, nil)
	wantRangeError(t, err, "device", int32Range)
	_, err = NewStreamOn(-wrap, 0, nil)
	wantRangeError(t, err, "device", int32Range)
	_, _, err = DeviceCapability(wrap)
	wantRangeError(t, err, "device", int32Range)
	_, err = TMAAlignedSize(5, -2)
	wantRangeError(t, err, "element_size", "is negative (expected 0 to ")

	lt := DefaultCublasLtOptions()
	lt.WorkspaceSize = -1
	s := offlineStream(t)
	wantRangeError(t, s.CublasLtGemmNT(nil, nil, nil, nil, &lt), "options.workspace_size", "is negative")
	wantRangeError(t, s.CublasLtGemmNN(nil, nil, nil, nil, &lt), "options.workspace_size", "is negative")
	wantRangeError(t, s.CublasLtGemmTN(nil, nil, nil, nil, &lt), "options.workspace_size", "is negative")
	wantRangeError(t, s.CublasLtGemmTT(nil, nil, nil, nil, &lt), "options.workspace_size", "is negative")

	processState.Lock()
	defer processState.Unlock()
	before := NumSMs()
	wantRangeError(t, SetNumSMs(wrap+66), "num_sms", int32Range)
	if NumSMs() != before {
		t.Errorf("SetNumSMs(2^32 + 66) changed the SM cap: %d -> %d", before, NumSMs())
	}
}

func TestSliceLengthsThatDoNotFitAreRefused(t *testing.T) {
	// A slice of 2^32 + 2 sizes is rank 2 once wrapped to int32: libdg would describe the first two
	// and succeed. The slice is a header over four entries; a refusal reads none of them.
	backing := [4]int64{128, 512, 1, 1}
	long := unsafe.Slice(&backing[0], wrap+2)
	_, err := NewTensor(0, BFloat16, long, nil)
	wantRangeError(t, err, "rank", int32Range)
	_, err = NewTensor(0, BFloat16, long, long)
	wantRangeError(t, err, "rank", int32Range)
	_, err = MNMajorTMAAlignedTensorLayout(long)
	wantRangeError(t, err, "sizes", "(expected 1 to 4)")
	_, err = MNMajorTMAAlignedPackedUE8M0TensorLayout(long)
	wantRangeError(t, err, "sizes", "(expected 1 to 4)")
}
