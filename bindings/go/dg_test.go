package dg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// processState serialises the tests that change process-wide settings (log level and callback,
// SM cap), which would otherwise race when tests run in parallel.
var processState sync.Mutex

// fakeDevicePtr is a made-up, aligned device address: only for calls that fail or stop before
// any launch.
func fakeDevicePtr(i int) uintptr {
	return uintptr(0x7f0000000000 + i*0x100000)
}

func mustTensor(t *testing.T, data uintptr, dtype DType, sizes, strides []int64) *Tensor {
	t.Helper()
	tensor, err := NewTensor(data, dtype, sizes, strides)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tensor.Close() })
	return tensor
}

// wantError checks err's status and that libdg's message contains each of parts.
func wantError(t *testing.T, err error, kind *Error, parts ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("got %v, want %v", err, kind.Status)
	}
	var e *Error
	if !errors.As(err, &e) || e.Message == "" {
		t.Fatalf("no libdg message in %v", err)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Errorf("message %q lacks %q", e.Message, p)
		}
	}
}

func TestVersion(t *testing.T) {
	want := fmt.Sprintf("%d.%d.%d", HeaderVersionNumber/10000, HeaderVersionNumber/100%100, HeaderVersionNumber%100)
	if Version() != want {
		t.Errorf("Version() = %q, the header says %q", Version(), want)
	}
	if VersionNumber() != HeaderVersionNumber {
		t.Errorf("VersionNumber() = %d, the header says %d", VersionNumber(), HeaderVersionNumber)
	}
}

func TestInfoReport(t *testing.T) {
	report, err := InfoReport()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(report, "libdg: "+Version()+"\n") {
		t.Errorf("report starts %q", report)
	}
	for _, key := range []string{"\nnvrtc: ", "\ndriver: ", "\njit cache: ", "\nenv: "} {
		if !strings.Contains(report, key) {
			t.Errorf("%q missing from %q", key, report)
		}
	}
}

func TestNames(t *testing.T) {
	for s, want := range map[Status]string{StatusSuccess: "DG_SUCCESS", StatusNoDevice: "DG_ERROR_NO_DEVICE", 1000: "DG_UNKNOWN_STATUS"} {
		if s.String() != want {
			t.Errorf("Status(%d).String() = %q, want %q", int32(s), s.String(), want)
		}
	}
	for d, want := range map[DType]int{BFloat16: 2, Float8E4M3: 1, Float4E2M1x2: 1, Float32: 4, 1000: 0} {
		if d.Size() != want {
			t.Errorf("%v.Size() = %d, want %d", d, d.Size(), want)
		}
	}
	if BFloat16.String() != "bfloat16" || DType(1000).String() != "unknown" {
		t.Errorf("dtype names: %q, %q", BFloat16.String(), DType(1000).String())
	}
}

func TestConfig(t *testing.T) {
	if lo, hi, err := ConfigBounds(ConfigNumSMs); err != nil || lo != 0 || hi != 1024 {
		t.Errorf("ConfigBounds(NumSMs) = %d, %d, %v; want 0, 1024", lo, hi, err)
	}
	if lo, hi, err := ConfigBounds(ConfigTCUtil); err != nil || lo != 1 || hi != 100 {
		t.Errorf("ConfigBounds(TCUtil) = %d, %d, %v; want 1, 100", lo, hi, err)
	}
	c, err := NewConfig()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetInt(ConfigNumSMs, 66); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetInt(ConfigNumSMs); err != nil || v != 66 {
		t.Errorf("GetInt(NumSMs) = %d, %v; want 66", v, err)
	}
	if err := c.SetInt(ConfigCompiler, CompilerNVCC); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.GetInt(ConfigCompiler); v != CompilerNVCC {
		t.Errorf("GetInt(Compiler) = %d, want nvcc", v)
	}
	wantError(t, c.SetInt(ConfigNumSMs, 1025), ErrInvalidArgument, "1025", "0..1024")
	if v, _ := c.GetInt(ConfigNumSMs); v != 66 {
		t.Errorf("a rejected value was stored: %d", v)
	}
	const dir = "/tmp/dg go cache/é"
	if err := c.SetString(ConfigCacheDir, dir); err != nil {
		t.Fatal(err)
	}
	if v, err := c.GetString(ConfigCacheDir); err != nil || v != dir {
		t.Errorf("GetString(CacheDir) = %q, %v; want %q", v, err, dir)
	}
	if err := c.SetString(ConfigCacheDir, ""); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.GetString(ConfigCacheDir); v != "" {
		t.Errorf("GetString(CacheDir) = %q, want empty", v)
	}
	wantError(t, c.SetString(ConfigCacheDir, "a\x00b"), ErrInvalidArgument, "NUL")
	clone, err := c.Clone()
	if err != nil {
		t.Fatal(err)
	}
	if err := clone.SetInt(ConfigNumSMs, 8); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.GetInt(ConfigNumSMs); v != 66 {
		t.Errorf("a clone is not independent: %d", v)
	}
	clone.Close()
	clone.Close() // idempotent
	_, err = c.GetInt(ConfigKey(999))
	wantError(t, err, ErrInvalidArgument, "999")
	_, err = c.GetInt(ConfigCacheDir)
	wantError(t, err, ErrInvalidArgument)
	_, err = clone.GetInt(ConfigNumSMs)
	wantError(t, err, ErrInvalidArgument, "config") // a closed handle is refused, not used
}

func TestValidationErrors(t *testing.T) {
	if v, err := TMAAlignedSize(5, 2); err != nil || v != 8 {
		t.Errorf("TMAAlignedSize(5, 2) = %d, %v; want 8", v, err)
	}
	_, err := TMAAlignedSize(5, 3)
	wantError(t, err, ErrInvalidArgument, "element_size", "3")
	if !strings.HasPrefix(err.Error(), "DG_ERROR_INVALID_ARGUMENT: ") {
		t.Errorf("Error() = %q", err.Error())
	}
	_, err = NewTensor(0, BFloat16, []int64{1, 2, 3, 4, 5}, nil)
	wantError(t, err, ErrInvalidArgument, "rank")
	_, err = NewTensor(0, BFloat16, []int64{4, -1}, nil)
	wantError(t, err, ErrInvalidArgument, "-1")
	_, err = NewTensor(0, BFloat16, []int64{4, 8}, []int64{8})
	wantError(t, err, ErrInvalidArgument, "strides")
	_, err = NewTensor(0, DType(77), []int64{4}, nil)
	wantError(t, err, ErrInvalidArgument, "77")

	_, err = Fp8GemmWorkspaceSize(GemmLayout(9), 128, 128, 128)
	wantError(t, err, ErrInvalidArgument, "layout")
	if v, err := Fp8GemmWorkspaceSize(LayoutNN, 256, 512, 384); err != nil || v != 512*384 {
		t.Errorf("Fp8GemmWorkspaceSize(NN) = %d, %v; want %d (b's K-major copy)", v, err, 512*384)
	}
	l, err := MNMajorTMAAlignedTensorLayout([]int64{1001, 56})
	if err != nil || fmt.Sprint(l.Sizes, l.Strides, l.Bytes) != fmt.Sprint([]int64{1001, 56}, []int64{1, 1004}, 1004*56*4) {
		t.Errorf("MNMajorTMAAlignedTensorLayout = %+v, %v", l, err)
	}
	p, err := MNMajorTMAAlignedPackedUE8M0TensorLayout([]int64{2, 1001, 9})
	if err != nil || fmt.Sprint(p.Sizes, p.Strides) != fmt.Sprint([]int64{2, 1001, 3}, []int64{3 * 1004, 1, 1004}) {
		t.Errorf("MNMajorTMAAlignedPackedUE8M0TensorLayout = %+v, %v", p, err)
	}
	_, err = MNMajorTMAAlignedTensorLayout(nil)
	wantError(t, err, ErrInvalidArgument, "rank")
	// K-grouped packing: 4 + 0 + 5 K blocks -> 1 + 0 + 2 packed rows, rows padded to 4 words.
	kg, err := KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout(1001, []int64{512, 0, 640})
	if err != nil || fmt.Sprint(kg.Sizes, kg.Strides, kg.Bytes) != fmt.Sprint([]int64{3, 1001}, []int64{1004, 1}, 3*1004*4) {
		t.Errorf("KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout = %+v, %v", kg, err)
	}
	_, err = KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout(1001, []int64{512, 100})
	wantError(t, err, ErrInvalidArgument, "ks[1]: 100")
	_, err = KGroupedMNMajorTMAAlignedPackedUE8M0TensorLayout(1001, nil)
	wantError(t, err, ErrInvalidArgument, "num_groups")
}

func TestTensorRoundTrip(t *testing.T) {
	tensor := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{128, 512}, nil)
	info, err := tensor.Info()
	if err != nil || info.Data != fakeDevicePtr(1) || info.DType != Float8E4M3 ||
		fmt.Sprint(info.Sizes, info.Strides) != "[128 512] [512 1]" {
		t.Errorf("Info() = %+v, %v", info, err)
	}
	if err := tensor.SetData(fakeDevicePtr(2)); err != nil {
		t.Fatal(err)
	}
	if info, _ := tensor.Info(); info.Data != fakeDevicePtr(2) {
		t.Errorf("SetData did not rebind: %+v", info)
	}
}

func TestNoDevice(t *testing.T) {
	n, err := DeviceCount()
	if err != nil {
		// No driver here: every call that needs one says so.
		wantError(t, err, ErrNoDevice, "libcuda")
		_, err = NewStream(0, nil)
		wantError(t, err, ErrNoDevice)
		_, _, err = DeviceCapability(0)
		wantError(t, err, ErrNoDevice)
		return
	}
	// A GPU machine: an ordinal past the last device is NoDevice.
	_, err = NewStream(n, nil)
	wantError(t, err, ErrNoDevice)
}

func TestOfflineStreamValidatesAndRefusesLaunches(t *testing.T) {
	s, err := NewOfflineStream(9, 0, 132, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const m, n, k = 128, 256, 512
	a := mustTensor(t, fakeDevicePtr(1), BFloat16, []int64{m, k}, nil)
	b := mustTensor(t, fakeDevicePtr(2), BFloat16, []int64{n, k}, nil)
	d := mustTensor(t, fakeDevicePtr(3), BFloat16, []int64{m, n}, nil)
	shortB := mustTensor(t, fakeDevicePtr(4), BFloat16, []int64{n, k - 64}, nil)
	nullD := mustTensor(t, 0, BFloat16, []int64{m, n}, nil)
	wantError(t, s.BF16GemmNT(a, shortB, d, nil, nil), ErrInvalidArgument, "b")
	wantError(t, s.BF16GemmNT(a, b, nullD, nil, nil), ErrInvalidArgument, "d: data is NULL")
	opts := DefaultGemmOptions()
	opts.BlockM = 96
	wantError(t, s.BF16GemmNT(a, b, d, nil, &opts), ErrInvalidArgument, "block_m")
	wantError(t, s.Synchronize(), ErrNoDevice)

	groups := mustTensor(t, fakeDevicePtr(5), Float32, []int64{m}, nil)
	gb := mustTensor(t, fakeDevicePtr(6), BFloat16, []int64{4, n, k}, nil)
	wantError(t, s.MGroupedBF16GemmNTContiguous(a, gb, d, groups, MGroupedIndices, 0, nil), ErrInvalidArgument,
		"grouped_layout")

	// K-grouped: ks must sum to the data's K and be multiples of 128; d holds one matrix per group.
	ka := mustTensor(t, fakeDevicePtr(7), BFloat16, []int64{640, m}, nil)
	kb := mustTensor(t, fakeDevicePtr(8), BFloat16, []int64{640, n}, nil)
	kd := mustTensor(t, fakeDevicePtr(9), Float32, []int64{3, m, n}, nil)
	wantError(t, s.KGroupedBF16GemmTNContiguous(ka, kb, kd, nil, []int64{256, 0, 256}, nil, nil), ErrInvalidArgument, "ks")
	fa := mustTensor(t, fakeDevicePtr(10), Float8E4M3, []int64{m * 640}, nil)
	fb := mustTensor(t, fakeDevicePtr(11), Float8E4M3, []int64{n * 640}, nil)
	sfa := mustTensor(t, fakeDevicePtr(12), Float32, []int64{m, 5}, []int64{1, m})
	sfb := mustTensor(t, fakeDevicePtr(13), Float32, []int64{n, 5}, []int64{1, n})
	wantError(t, s.KGroupedFP8GemmNTContiguous(fa, sfa, fb, sfb, kd, kd, []int64{320, 0, 320}, nil, nil),
		ErrInvalidArgument, "ks")
	wantError(t, s.KGroupedFP8GemmTNContiguous(ka, sfa, kb, sfb, kd, nil, []int64{640}, nil, nil), ErrInvalidArgument)
	wantError(t, s.KGroupedGemmPrepare(BFloat16, LayoutNT, m, n, []int64{256, 384}, false, nil), ErrUnsupported, "layout")
	if err := s.KGroupedGemmPrepare(BFloat16, LayoutTN, m, n, []int64{256, 0, 384}, true, nil); err != nil {
		t.Fatal(err)
	}
}

func TestOfflineKGroupedQuantization(t *testing.T) {
	s, err := NewOfflineStream(9, 0, 132, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ks := []int64{100, 30}
	if p := KGroupedPaddedKs(ks); p[0] != 128 || p[1] != 128 {
		t.Errorf("KGroupedPaddedKs(%v) = %v", ks, p)
	}
	x := mustTensor(t, fakeDevicePtr(1), BFloat16, []int64{130, 64}, nil)
	out := mustTensor(t, fakeDevicePtr(2), Float8E4M3, []int64{256, 64}, nil)
	flat := mustTensor(t, fakeDevicePtr(2), Float8E4M3, []int64{256 * 64}, nil)
	sf := mustTensor(t, fakeDevicePtr(3), Float32, []int64{64, 2}, []int64{1, 64})
	unpadded := mustTensor(t, fakeDevicePtr(2), Float8E4M3, []int64{130, 64}, nil)
	ksT := mustTensor(t, fakeDevicePtr(4), Int32, []int64{2}, nil)
	// Valid calls get past validation: the offline device compiles the kernel and cannot run it.
	opts := QuantOptions{Pow2Scales: true}
	wantError(t, s.QuantizeFP8KGrouped(x, out, sf, ks, ksT, &opts), ErrNoDevice)
	wantError(t, s.QuantizeFP8KGrouped(x, flat, sf, ks, nil, nil), ErrNoDevice)
	wantError(t, s.QuantizeFP8KGroupedDevice(x, out, sf, ksT, 2, nil), ErrNoDevice)
	wantError(t, s.QuantizeFP8KGrouped(x, unpadded, sf, ks, nil, nil), ErrInvalidArgument, "out:")
	wantError(t, s.QuantizeFP8KGrouped(x, out, sf, []int64{100, 31}, nil, nil), ErrInvalidArgument, "x:")
	wantError(t, s.QuantizeFP8KGroupedDevice(x, out, sf, ksT, 3, nil), ErrInvalidArgument, "ks_tensor:")
}

func TestOfflineFP8GemmNTSkipHeadMidValidates(t *testing.T) {
	s, err := NewOfflineStream(9, 0, 132, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const m, n, k = 128, 512, 512
	a := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{m, k}, nil)
	sfa := mustTensor(t, fakeDevicePtr(2), Float32, []int64{m, k / 128}, []int64{1, m})
	b := mustTensor(t, fakeDevicePtr(3), Float8E4M3, []int64{n, k}, nil)
	sfb := mustTensor(t, fakeDevicePtr(4), Float32, []int64{n / 128, k / 128}, nil)
	d := mustTensor(t, fakeDevicePtr(5), BFloat16, []int64{m, 2 * 320}, nil)
	wantError(t, s.FP8GemmNTSkipHeadMid(a, sfa, b, sfb, d, -8, 64, 264, nil), ErrInvalidArgument, "left, mid, right")
	wantError(t, s.FP8GemmNTSkipHeadMid(a, sfa, b, sfb, d, 96, 64, 96, nil), ErrInvalidArgument, "left + right")
	wantError(t, s.FP8GemmNTSkipHeadMid(a, sfa, b, sfb, d, 128, 32, 128, nil), ErrInvalidArgument, "d:")
}

func TestOfflineFP8EinsumValidates(t *testing.T) {
	s, err := NewOfflineStream(9, 0, 132, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const b, h, r, d = 8, 2, 256, 128
	a := mustTensor(t, fakeDevicePtr(1), Float8E4M3, []int64{b, h, r}, nil)
	// Each head's [b, r / 128] scales MN-major, K blocks align(b, 4) = 8 apart.
	sfa := mustTensor(t, fakeDevicePtr(2), Float32, []int64{b, h, r / 128}, []int64{1, 16, 8})
	w := mustTensor(t, fakeDevicePtr(3), Float8E4M3, []int64{h, d, r}, nil)
	sfb := mustTensor(t, fakeDevicePtr(4), Float32, []int64{h, 1, r / 128}, nil)
	out := mustTensor(t, fakeDevicePtr(5), BFloat16, []int64{b, h, d}, nil)
	rowMajor := mustTensor(t, fakeDevicePtr(6), Float32, []int64{b, h, r / 128}, nil)
	wantError(t, s.FP8Einsum("bhr,hdr->bhd", a, sfa, w, sfb, out, out, nil), ErrUnsupported, "c:")
	wantError(t, s.FP8Einsum("bhd,hdr->bhr", a, sfa, w, sfb, out, nil, nil), ErrUnsupported, "SM100")
	wantError(t, s.FP8Einsum("bhr,hdr->bhd", a, rowMajor, w, sfb, out, nil, nil), ErrInvalidArgument, "sfa:")
	wantError(t, s.FP8EinsumPrepare("bhr,hdr->bhd", [3]int64{b, h, r}, [3]int64{h, d, r + 128}, nil),
		ErrInvalidArgument, "b_sizes")
	wantError(t, s.FP8EinsumPrepare("bmk,bnk->mn", [3]int64{b, h, r}, [3]int64{h, d, r}, nil), ErrUnsupported, "expr")
}

func TestOfflinePrepareCompilesAKernel(t *testing.T) {
	processState.Lock()
	defer processState.Unlock()
	cache := t.TempDir()
	c, err := NewConfig()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetString(ConfigCacheDir, cache); err != nil {
		t.Fatal(err)
	}
	if err := c.SetInt(ConfigPrintConfigs, 1); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var messages []string
	err = SetLogCallback(func(level LogLevel, message string) {
		mu.Lock()
		defer mu.Unlock()
		messages = append(messages, fmt.Sprintf("%d %s", level, message))
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewOfflineStream(9, 0, 132, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, _ := GetJitStats()
	err = s.GemmPrepare(BFloat16, LayoutNT, 256, 512, 384, BFloat16, false, nil)
	after, _ := GetJitStats()
	if cerr := SetLogCallback(nil); cerr != nil {
		t.Error(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if after.Compiled <= before.Compiled {
		t.Errorf("no kernel compiled: %+v -> %+v", before, after)
	}
	cubins, _ := filepath.Glob(filepath.Join(cache, "libdg", "*.cubin"))
	if len(cubins) == 0 {
		entries, _ := os.ReadDir(filepath.Join(cache, "libdg"))
		t.Errorf("no cubin in the cache directory: %v", entries)
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, m := range messages {
		found = found || (strings.HasPrefix(m, fmt.Sprint(int(LogWarn))+" ") && strings.Contains(m, "m=256"))
	}
	if !found {
		t.Errorf("the configuration was not logged through the callback: %q", messages)
	}

	// The M-grouped prepare path too.
	before = after
	if err := s.MGroupedGemmPrepare(BFloat16, LayoutNT, MGroupedMasked, 4, 256, 512, 384, 64, nil); err != nil {
		t.Fatal(err)
	}
	if after, _ = GetJitStats(); after.Compiled+after.LoadedFromDisk+after.MemoryHits <=
		before.Compiled+before.LoadedFromDisk+before.MemoryHits {
		t.Errorf("no grouped kernel prepared: %+v -> %+v", before, after)
	}
}

func TestScaleLayoutQuery(t *testing.T) {
	s, err := NewOfflineStream(9, 0, 132, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sf := mustTensor(t, 0, Float32, []int64{1000, 56}, nil)
	l, err := TransformSFLayout(s, sf, 1000, 56*128, DefaultSfRecipe())
	if err != nil || l.IsInput || l.DType != Float32 || fmt.Sprint(l.Strides) != "[1 1000]" {
		t.Errorf("TransformSFLayout = %+v, %v", l, err)
	}
	bad := DefaultSfRecipe()
	bad.GranK = 7
	_, err = TransformSFLayout(s, sf, 1000, 56*128, bad)
	wantError(t, err, ErrInvalidArgument)
}

func TestProcessWideSettings(t *testing.T) {
	processState.Lock()
	defer processState.Unlock()
	level := GetLogLevel()
	if err := SetLogLevel(LogError); err != nil || GetLogLevel() != LogError {
		t.Errorf("SetLogLevel(Error): %v, level %d", err, GetLogLevel())
	}
	wantError(t, SetLogLevel(LogLevel(42)), ErrInvalidArgument)
	if err := SetLogLevel(level); err != nil {
		t.Fatal(err)
	}
	if err := SetNumSMs(66); err != nil || NumSMs() != 66 {
		t.Errorf("SetNumSMs(66): %v, NumSMs() = %d", err, NumSMs())
	}
	wantError(t, SetNumSMs(-1), ErrInvalidArgument)
	if err := SetNumSMs(0); err != nil {
		t.Fatal(err)
	}
	if err := SetTCUtil(0.5); err != nil || TCUtil() != 0.5 {
		t.Errorf("SetTCUtil(0.5): %v, TCUtil() = %g", err, TCUtil())
	}
	wantError(t, SetTCUtil(1.5), ErrInvalidArgument)
	if err := SetTCUtil(0); err != nil || TCUtil() != 1 {
		t.Errorf("SetTCUtil(0): %v, TCUtil() = %g", err, TCUtil())
	}
	if MKAlignmentForContiguousLayout() != 128 || CublasLtWorkspaceSize() != 32<<20 {
		t.Errorf("MKAlignment %d, cuBLASLt workspace %d", MKAlignmentForContiguousLayout(), CublasLtWorkspaceSize())
	}
	if o := DefaultGemmOptions(); o.Alpha != 1 || o.Beta != 1 || o.MulticastA != -1 {
		t.Errorf("DefaultGemmOptions() = %+v", o)
	}
}

func TestOfflineTuneValidatesAndWritesNothing(t *testing.T) {
	table := filepath.Join(t.TempDir(), "table.txt")
	c, err := NewConfig()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetString(ConfigTuningTable, table); err != nil {
		t.Fatal(err)
	}
	s, err := NewOfflineStream(9, 0, 132, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	list := "dense fp8 nt n=7168 k=2048 m=128,4096\nmasked fp8 n=4096 k=7168 g=32 m=8\n"
	_, err = s.Tune(list, nil)
	wantError(t, err, ErrNoDevice, "offline")
	_, err = s.Tune("dense fp8 nt n=7168 m=1\n", nil)
	wantError(t, err, ErrInvalidArgument, "problems: line 1")
	_, err = s.Tune(list, &TuneOptions{Candidates: 17})
	wantError(t, err, ErrInvalidArgument, "options.candidates: 17")
	_, err = s.Tune("dense\x00", nil)
	wantError(t, err, ErrInvalidArgument, "NUL")
	if _, err := os.Stat(table); err == nil {
		t.Fatalf("a failing Tune wrote %s", table)
	}
}
