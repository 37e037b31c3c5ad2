// Package dg is the Go binding of libdg: DeepGEMM's FP8 and BF16 GEMMs, M- and K-grouped GEMMs,
// scaling-factor layout utilities, the MQA logits of the DeepSeek-V3.2 indexer and a batched NVFP4
// GEMV, JIT-compiled with NVRTC, behind libdg's C ABI (include/dg.h documents every function).
//
// Config, Stream and Tensor hold libdg handles: Close releases them (a finalizer does it for a
// handle that becomes unreachable, but Close is what releases it at a known time). Every failure
// is an *Error carrying libdg's status and the message dg_last_error() gave for it, read inside
// the same C call as the failure (a goroutine can move to another OS thread between two cgo
// calls, and libdg's message is per thread). Match kinds with errors.Is(err, dg.ErrNoDevice).
//
// libdg never allocates device memory on a launch path: device pointers, held as uintptr, come
// from the caller's allocator (the CUDA runtime or driver, a framework) and are described with
// NewTensor. libdg cannot check them: a pointer that does not address the memory its tensor
// describes, or memory freed before the work using it completes, is undefined behaviour.
//
// The package is built with cgo against libdg found through pkg-config ("#cgo pkg-config: dg"):
// after `cmake --install build --prefix PREFIX`, set PKG_CONFIG_PATH=PREFIX/lib/pkgconfig, and
// LD_LIBRARY_PATH=PREFIX/lib at run time unless PREFIX is a system prefix.
package dg

// #cgo pkg-config: dg
// #include "calls.h"
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// Status is a libdg status (dg_status).
type Status int32

// The statuses of dg.h. Values are only ever appended.
const (
	StatusSuccess         Status = C.DG_SUCCESS
	StatusInvalidArgument Status = C.DG_ERROR_INVALID_ARGUMENT // a NULL handle, a wrong dtype, sizes that disagree, ...
	StatusUnsupported     Status = C.DG_ERROR_UNSUPPORTED      // valid input that this build or device cannot run
	StatusNoDevice        Status = C.DG_ERROR_NO_DEVICE        // no driver, no such device, or a launch on an offline stream
	StatusCUDA            Status = C.DG_ERROR_CUDA             // the CUDA driver returned an error
	StatusCompile         Status = C.DG_ERROR_COMPILE          // NVRTC or nvcc failed; the message holds the log
	StatusOutOfMemory     Status = C.DG_ERROR_OUT_OF_MEMORY    // a host allocation failed
	StatusInternal        Status = C.DG_ERROR_INTERNAL         // a bug in libdg
)

// String is the status's static name (dg_status_string), e.g. "DG_ERROR_NO_DEVICE".
func (s Status) String() string {
	return C.GoString(C.dg_status_string(C.dg_status(s)))
}

// Error is a failed libdg call: its status and libdg's message naming the argument, its value
// and what was expected.
type Error struct {
	Status  Status
	Message string
}

// Error is "<status name>: <message>".
func (e *Error) Error() string {
	return e.Status.String() + ": " + e.Message
}

// Is reports whether target is an *Error with the same status and no message (the Err*
// values below), so that errors.Is(err, dg.ErrNoDevice) matches any NoDevice failure.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// Values to match with errors.Is.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrUnsupported     = &Error{Status: StatusUnsupported}
	ErrNoDevice        = &Error{Status: StatusNoDevice}
	ErrCUDA            = &Error{Status: StatusCUDA}
	ErrCompile         = &Error{Status: StatusCompile}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrInternal        = &Error{Status: StatusInternal}
)

// check turns a wrapper's result into an error, freeing the message copy.
func check(r C.dgw_result) error {
	if r.status == C.DG_SUCCESS {
		return nil
	}
	message := "(libdg's message could not be copied: out of memory)"
	if r.message != nil {
		message = C.GoString(r.message)
		C.free(unsafe.Pointer(r.message))
	}
	return &Error{Status: Status(r.status), Message: message}
}

// invalid is an error of this binding's own, with libdg's status for that kind of failure.
func invalid(format string, args ...interface{}) error {
	return &Error{Status: StatusInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// cArgs converts Go ints to the C integer types of libdg's parameters and fields and keeps the
// first value that does not fit as err: a conversion that wrapped would have libdg check, and act
// on, a different number. Check err before the C call.
type cArgs struct {
	err error
}

// int32 converts v for an int32_t parameter or field called name.
func (a *cArgs) int32(name string, v int) C.int32_t {
	if (v < math.MinInt32 || v > math.MaxInt32) && a.err == nil {
		a.err = invalid("%s: %d does not fit in int32 (expected %d to %d)", name, v, math.MinInt32, math.MaxInt32)
	}
	return C.int32_t(v)
}

// size converts v for a size_t parameter or field called name.
func (a *cArgs) size(name string, v int) C.size_t {
	if v < 0 && a.err == nil {
		a.err = invalid("%s: %d is negative (expected 0 to %d)", name, v, math.MaxInt)
	}
	return C.size_t(v)
}

// Version is libdg's run-time version, "MAJOR.MINOR.PATCH" (dg_version).
func Version() string {
	return C.GoString(C.dg_version())
}

// InfoReport is libdg's report on itself and this machine (dg_info_report, what the dg-info
// command prints): version and build, the NVRTC and CUDA driver in use and their files, each GPU
// and whether libdg runs on it, the JIT cache, and the DG_* variables set; one "key: value" line
// per item. Needs no GPU.
func InfoReport() (string, error) {
	// The report can grow between the size query and the copy (a cache entry appears): retry.
	const tries = 3
	var err error
	for i := 0; i < tries; i++ {
		var size C.size_t
		if err = check(C.dgw_info_report(nil, 0, &size)); err != nil {
			return "", err
		}
		buf := make([]byte, int(size)+1)
		if err = check(C.dgw_info_report((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), nil)); err == nil {
			return C.GoString((*C.char)(unsafe.Pointer(&buf[0]))), nil
		}
	}
	return "", err
}

// VersionNumber is the run-time version as MAJOR*10000 + MINOR*100 + PATCH (dg_version_number).
func VersionNumber() int {
	return int(C.dg_version_number())
}

// HeaderVersionNumber is DG_VERSION_NUMBER of the dg.h this package was compiled against.
const HeaderVersionNumber = C.DG_VERSION_NUMBER
