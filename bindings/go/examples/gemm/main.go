// Command gemm runs D = A @ Bᵀ with libdg's BF16 GEMM on device 0 and checks it against a CPU
// reference in double precision; without a GPU it says so and exits 0.
//
//	go run ./examples/gemm
//
// libdg takes device pointers and never allocates them; this example gets its memory from the
// CUDA driver (loaded with dlopen, so that it also starts where there is none). A program that
// uses the CUDA runtime or a framework passes that allocator's pointers instead.
package main

// #cgo LDFLAGS: -ldl
// #include <dlfcn.h>
// #include <stddef.h>
// #include <stdint.h>
//
// /* The few driver entry points the example needs for memory. */
// static int (*ctx_retain)(void**, int);
// static int (*ctx_set)(void*);
// static int (*mem_alloc)(uint64_t*, size_t);
// static int (*mem_free)(uint64_t);
// static int (*htod)(uint64_t, const void*, size_t);
// static int (*dtoh)(void*, uint64_t, size_t);
// static int (*memset8)(uint64_t, unsigned char, size_t);
//
// static int driver_load(void) {
//   void* lib = dlopen("libcuda.so.1", RTLD_NOW);
//   if (!lib) return 0;
//   *(void**)&ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
//   *(void**)&ctx_set = dlsym(lib, "cuCtxSetCurrent");
//   *(void**)&mem_alloc = dlsym(lib, "cuMemAlloc_v2");
//   *(void**)&mem_free = dlsym(lib, "cuMemFree_v2");
//   *(void**)&htod = dlsym(lib, "cuMemcpyHtoD_v2");
//   *(void**)&dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
//   *(void**)&memset8 = dlsym(lib, "cuMemsetD8_v2");
//   return ctx_retain && ctx_set && mem_alloc && mem_free && htod && dtoh && memset8;
// }
// /* Makes device 0's primary context (the one libdg uses) current on this thread; it is retained
//  * once, on first use. */
// static void* device0_ctx;
// static int driver_use_device0(void) {
//   if (!device0_ctx) {
//     int r = ctx_retain(&device0_ctx, 0);
//     if (r) return r;
//   }
//   return ctx_set(device0_ctx);
// }
// static int driver_alloc(uint64_t* p, size_t n) { return driver_use_device0() || mem_alloc(p, n); }
// static int driver_free(uint64_t p) { return driver_use_device0() || mem_free(p); }
// static int driver_htod(uint64_t d, const void* h, size_t n) { return driver_use_device0() || htod(d, h, n); }
// static int driver_dtoh(void* h, uint64_t d, size_t n) { return driver_use_device0() || dtoh(h, d, n); }
// static int driver_memset(uint64_t d, unsigned char v, size_t n) { return driver_use_device0() || memset8(d, v, n); }
import "C"

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"time"
	"unsafe"

	"libdg.dev/dg"
)

const m, n, k = 256, 1024, 768

// Each driver call makes the context current first: the goroutine may run on another OS thread
// than the previous call.
func alloc(bytes int) (uint64, error) {
	var p C.uint64_t
	if C.driver_alloc(&p, C.size_t(bytes)) != 0 {
		return 0, errors.New("cuMemAlloc failed")
	}
	return uint64(p), nil
}

func toBF16(x float32) uint16 {
	u := math.Float32bits(x)
	return uint16((u + 0x7fff + (u>>16)&1) >> 16) // round to nearest even
}

func fromBF16(b uint16) float64 {
	return float64(math.Float32frombits(uint32(b) << 16))
}

func randomBF16(count int, r *rand.Rand) []uint16 {
	v := make([]uint16, count)
	for i := range v {
		v[i] = toBF16(float32(r.NormFloat64()))
	}
	return v
}

func runGemm() error {
	if C.driver_load() == 0 {
		return errors.New("the CUDA driver's memory functions cannot be loaded")
	}
	r := rand.New(rand.NewSource(time.Now().UnixNano()))
	a, b := randomBF16(m*k, r), randomBF16(n*k, r)
	da, err := alloc(2 * m * k)
	if err != nil {
		return err
	}
	defer C.driver_free(C.uint64_t(da))
	db, err := alloc(2 * n * k)
	if err != nil {
		return err
	}
	defer C.driver_free(C.uint64_t(db))
	dd, err := alloc(2 * m * n)
	if err != nil {
		return err
	}
	defer C.driver_free(C.uint64_t(dd))
	if C.driver_htod(C.uint64_t(da), unsafe.Pointer(&a[0]), C.size_t(2*m*k)) != 0 ||
		C.driver_htod(C.uint64_t(db), unsafe.Pointer(&b[0]), C.size_t(2*n*k)) != 0 ||
		C.driver_memset(C.uint64_t(dd), 0xff, C.size_t(2*m*n)) != 0 { // NaN until written
		return errors.New("copying the inputs to the device failed")
	}

	stream, err := dg.NewStream(0, nil)
	if err != nil {
		return err
	}
	defer stream.Close()
	ta, err := dg.NewTensor(uintptr(da), dg.BFloat16, []int64{m, k}, nil)
	if err != nil {
		return err
	}
	defer ta.Close()
	tb, err := dg.NewTensor(uintptr(db), dg.BFloat16, []int64{n, k}, nil)
	if err != nil {
		return err
	}
	defer tb.Close()
	td, err := dg.NewTensor(uintptr(dd), dg.BFloat16, []int64{m, n}, nil)
	if err != nil {
		return err
	}
	defer td.Close()

	start := time.Now()
	if err := stream.BF16GemmNT(ta, tb, td, nil, nil); err != nil {
		return err
	}
	if err := stream.Synchronize(); err != nil {
		return err
	}
	cold := time.Since(start)
	d := make([]uint16, m*n)
	if C.driver_dtoh(unsafe.Pointer(&d[0]), C.uint64_t(dd), C.size_t(2*m*n)) != 0 {
		return errors.New("copying the result back failed")
	}

	// DeepGEMM's calc_diff: 1 - 2 sum(x y) / sum(x^2 + y^2), against a double-precision reference.
	var xy, xxyy float64
	nonFinite := 0
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			ref := 0.0
			for p := 0; p < k; p++ {
				ref += fromBF16(a[i*k+p]) * fromBF16(b[j*k+p])
			}
			got := fromBF16(d[i*n+j])
			if math.IsNaN(got) || math.IsInf(got, 0) {
				nonFinite++
			}
			xy += got * ref
			xxyy += got*got + ref*ref
		}
	}
	diff := 1 - 2*xy/xxyy
	fmt.Printf("BF16 GEMM %dx%dx%d: first call (JIT + run) %.3f s, calc_diff %.2e, %d non-finite\n",
		m, n, k, cold.Seconds(), diff, nonFinite)
	if nonFinite > 0 || !(diff < 1e-5) {
		return errors.New("the result differs from the reference")
	}
	return nil
}

func main() {
	fmt.Println("libdg", dg.Version())
	count, err := dg.DeviceCount()
	if err != nil {
		var e *dg.Error
		if errors.As(err, &e) && errors.Is(err, dg.ErrNoDevice) {
			fmt.Printf("skipped: no GPU here (%s)\n", e.Message)
			return
		}
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
	if count == 0 {
		fmt.Println("skipped: no CUDA device here")
		return
	}
	major, minor, _ := dg.DeviceCapability(0)
	fmt.Printf("device 0: compute capability %d.%d, %d SMs\n", major, minor, dg.NumSMs())
	if err := runGemm(); err != nil {
		fmt.Fprintln(os.Stderr, "FAILED:", err)
		os.Exit(1)
	}
	fmt.Println("OK")
}
