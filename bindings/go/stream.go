package dg

// #include <stdlib.h>
// #include "calls.h"
import "C"

import (
	"runtime"
	"strings"
	"unsafe"
)

// DeviceCount returns the number of CUDA devices (dg_device_count); ErrNoDevice, with the
// reason, where the driver cannot be loaded.
func DeviceCount() (int, error) {
	var n C.int32_t
	err := check(C.dgw_device_count(&n))
	return int(n), err
}

// DeviceCapability returns a device's compute capability (dg_device_get_capability), e.g. 9, 0
// for an H100.
func DeviceCapability(device int) (major, minor int, err error) {
	var a cArgs
	dev := a.int32("device", device)
	if a.err != nil {
		return 0, 0, a.err
	}
	var ma, mi C.int32_t
	err = check(C.dgw_device_get_capability(dev, &ma, &mi))
	return int(ma), int(mi), err
}

// Stream is where work runs (dg_stream): a device, a CUstream and the config in force. Every
// kernel is a method of Stream. libdg works in the device's primary context (the one the CUDA
// runtime and PyTorch use). A stream may be used from several goroutines at once; do not Close
// it while another goroutine uses it.
type Stream struct {
	ptr *C.dg_stream
}

func newStream(p *C.dg_stream) *Stream {
	s := &Stream{ptr: p}
	runtime.SetFinalizer(s, (*Stream).Close)
	return s
}

func createStream(device int, cuStream uintptr, flags C.int32_t, config *Config) (*Stream, error) {
	var a cArgs
	dev := a.int32("device", device)
	if a.err != nil {
		return nil, a.err
	}
	var p *C.dg_stream
	err := check(C.dgw_stream_create(&p, dev, C.uintptr_t(cuStream), flags, config.raw()))
	runtime.KeepAlive(config)
	if err != nil {
		return nil, err
	}
	return newStream(p), nil
}

// NewStream returns a stream on device with a new non-blocking CUstream that it owns
// (DG_STREAM_CREATE). config is copied; nil follows the process-wide settings at each call.
func NewStream(device int, config *Config) (*Stream, error) {
	return createStream(device, 0, C.DG_STREAM_CREATE, config)
}

// NewStreamOn returns a stream on device that launches on cuStream, a CUstream the caller owns
// (DG_STREAM_BORROW); 0 is the legacy default stream. cuStream must belong to the primary context
// of device and stay alive until the stream is closed and its work has completed.
func NewStreamOn(device int, cuStream uintptr, config *Config) (*Stream, error) {
	return createStream(device, cuStream, C.DG_STREAM_BORROW, config)
}

// NewOfflineStream returns a stream that describes a device instead of using one
// (dg_stream_create_offline): GemmPrepare and MGroupedGemmPrepare on it compile kernels into the
// disk cache for that architecture and SM count with no GPU and no driver; calls that would launch
// return ErrNoDevice. archMajor.archMinor: 9.0 (SM90) or 10.0 (SM100); numSMs: the target's SM
// count (132 for an H100 SXM).
func NewOfflineStream(archMajor, archMinor, numSMs int, config *Config) (*Stream, error) {
	var a cArgs
	major, minor, sms := a.int32("arch_major", archMajor), a.int32("arch_minor", archMinor), a.int32("num_sms", numSMs)
	if a.err != nil {
		return nil, a.err
	}
	var p *C.dg_stream
	err := check(C.dgw_stream_create_offline(&p, major, minor, sms, config.raw()))
	runtime.KeepAlive(config)
	if err != nil {
		return nil, err
	}
	return newStream(p), nil
}

// NewOfflineStreamNamed is NewOfflineStream for a named GPU (dg_stream_create_offline_named):
// gpuName is the name the driver reports on the target (e.g. "NVIDIA H200"), so that the kernels
// prepared are those calls on that GPU choose (its cost-model calibration and its tuning table).
func NewOfflineStreamNamed(archMajor, archMinor, numSMs int, gpuName string, config *Config) (*Stream, error) {
	var a cArgs
	major, minor, sms := a.int32("arch_major", archMajor), a.int32("arch_minor", archMinor), a.int32("num_sms", numSMs)
	if a.err != nil {
		return nil, a.err
	}
	if strings.IndexByte(gpuName, 0) >= 0 {
		return nil, invalid("gpu_name: contains a NUL byte (a C string was expected)")
	}
	name := C.CString(gpuName)
	defer C.free(unsafe.Pointer(name))
	var p *C.dg_stream
	err := check(C.dgw_stream_create_offline_named(&p, major, minor, sms, name, config.raw()))
	runtime.KeepAlive(config)
	if err != nil {
		return nil, err
	}
	return newStream(p), nil
}

// CUStream returns the CUstream work is launched on (0 for the legacy default stream).
func (s *Stream) CUStream() (uintptr, error) {
	var cu uintptr // held as an integer so the GC never reads it as a pointer
	err := check(C.dgw_stream_get_cu_stream(s.ptr, (*unsafe.Pointer)(unsafe.Pointer(&cu))))
	runtime.KeepAlive(s)
	return cu, err
}

// Device returns the stream's device ordinal.
func (s *Stream) Device() (int, error) {
	var d C.int32_t
	err := check(C.dgw_stream_get_device(s.ptr, &d))
	runtime.KeepAlive(s)
	return int(d), err
}

// Synchronize waits until the work launched on the stream has completed.
func (s *Stream) Synchronize() error {
	err := check(C.dgw_stream_synchronize(s.ptr))
	runtime.KeepAlive(s)
	return err
}

// Close destroys the stream and, for NewStream, its CUstream after pending work completes. It is
// safe to call more than once.
func (s *Stream) Close() error {
	if s.ptr != nil {
		C.dg_stream_destroy(s.ptr)
		s.ptr = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

func (s *Stream) raw() *C.dg_stream {
	if s == nil {
		return nil
	}
	return s.ptr
}
