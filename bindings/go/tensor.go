package dg

// #include "calls.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// DType is an element type (dg_dtype).
type DType int32

// The element types of dg.h.
const (
	Float32      DType = C.DG_DTYPE_FLOAT32
	Float16      DType = C.DG_DTYPE_FLOAT16
	BFloat16     DType = C.DG_DTYPE_BFLOAT16
	Float8E4M3   DType = C.DG_DTYPE_FLOAT8_E4M3 // "e4m3fn": finite, max 448
	Float8E5M2   DType = C.DG_DTYPE_FLOAT8_E5M2
	Int32        DType = C.DG_DTYPE_INT32
	Float4E2M1x2 DType = C.DG_DTYPE_FLOAT4_E2M1X2 // two E2M1 values per byte, the even index in the low nibble
	UE8M0x4      DType = C.DG_DTYPE_UE8M0X4       // four UE8M0 exponents per int32, the lowest index in byte 0
	Uint8        DType = C.DG_DTYPE_UINT8
)

// Size is the bytes per element (dg_dtype_size; an E2M1X2 element is one byte), 0 if unknown.
func (d DType) Size() int {
	return int(C.dg_dtype_size(C.dg_dtype(d)))
}

// String is libdg's name of the dtype (dg_dtype_name), e.g. "bfloat16"; "unknown" otherwise.
func (d DType) String() string {
	return C.GoString(C.dg_dtype_name(C.dg_dtype(d)))
}

// MaxRank is the largest rank of a tensor (DG_MAX_RANK).
const MaxRank = C.DG_MAX_RANK

// Tensor describes device memory (dg_tensor): a pointer, a dtype, and sizes and strides in
// elements. It never owns the memory; Close destroys only the descriptor. Major-ness (K-major or
// MN-major) is read from the strides.
type Tensor struct {
	ptr *C.dg_tensor
}

// TensorInfo is what a descriptor holds (dg_tensor_get).
type TensorInfo struct {
	Data    uintptr
	DType   DType
	Sizes   []int64
	Strides []int64
}

func int64Ptr(v []int64) *C.int64_t {
	if len(v) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&v[0]))
}

// NewTensor describes data, a device address, as a tensor of dtype with sizes (rank 1 to 4) and
// strides in elements (nil: contiguous row-major). data may be 0 for the layout queries; kernel
// calls reject it.
//
// data must address device memory (of the device of the streams the tensor is used on) covering
// every element the sizes and strides reach, and that memory must stay allocated until the work
// of every kernel call given this tensor has completed on its stream. Kernels write through the
// pointers of their output tensors.
func NewTensor(data uintptr, dtype DType, sizes []int64, strides []int64) (*Tensor, error) {
	if strides != nil && len(strides) != len(sizes) {
		return nil, invalid("strides: %d entries for %d sizes (one stride per dimension expected)", len(strides), len(sizes))
	}
	var a cArgs
	rank := a.int32("rank", len(sizes))
	if a.err != nil {
		return nil, a.err
	}
	var p *C.dg_tensor
	err := check(C.dgw_tensor_create(&p, C.uintptr_t(data), C.dg_dtype(dtype), rank, int64Ptr(sizes), int64Ptr(strides)))
	if err != nil {
		return nil, err
	}
	t := &Tensor{ptr: p}
	runtime.SetFinalizer(t, (*Tensor).Close)
	return t, nil
}

// SetData points the descriptor at other memory of the same shape (dg_tensor_set_data), with the
// requirements of NewTensor.
func (t *Tensor) SetData(data uintptr) error {
	err := check(C.dgw_tensor_set_data(t.ptr, C.uintptr_t(data)))
	runtime.KeepAlive(t)
	return err
}

// Info returns the descriptor's pointer, dtype, sizes and strides (dg_tensor_get).
func (t *Tensor) Info() (TensorInfo, error) {
	var data uintptr // a device address: held as an integer so the GC never reads it as a pointer
	var dtype C.dg_dtype
	var rank C.int32_t
	var sizes, strides [MaxRank]C.int64_t
	err := check(C.dgw_tensor_get(t.ptr, (*unsafe.Pointer)(unsafe.Pointer(&data)), &dtype, &rank, &sizes[0], &strides[0]))
	runtime.KeepAlive(t)
	if err != nil {
		return TensorInfo{}, err
	}
	info := TensorInfo{Data: data, DType: DType(dtype)}
	for i := 0; i < int(rank) && i < MaxRank; i++ {
		info.Sizes = append(info.Sizes, int64(sizes[i]))
		info.Strides = append(info.Strides, int64(strides[i]))
	}
	return info, nil
}

// Close destroys the descriptor (not the memory). It is safe to call more than once; a closed
// tensor given to a call is an ErrInvalidArgument.
func (t *Tensor) Close() error {
	if t.ptr != nil {
		C.dg_tensor_destroy(t.ptr)
		t.ptr = nil
		runtime.SetFinalizer(t, nil)
	}
	return nil
}

// raw is the handle of an optional tensor (nil for nil).
func (t *Tensor) raw() *C.dg_tensor {
	if t == nil {
		return nil
	}
	return t.ptr
}
