package dg

// #include "calls.h"
import "C"

// CublasLtOptions are the options of the cuBLASLt baseline GEMMs (dg_cublaslt_options). Start
// from DefaultCublasLtOptions (Alpha and Beta 1). A nil *CublasLtOptions means the defaults.
type CublasLtOptions struct {
	Alpha float32 // D = Alpha * (A @ op(B)) + Beta * C
	Beta  float32 // read only when c is given
	// Workspace is device scratch for split-K algorithms (256-byte aligned, WorkspaceSize bytes;
	// CublasLtWorkspaceSize recommends a size), 0 for none. Nothing else may use it until the
	// call's work has completed on its stream.
	Workspace     uintptr
	WorkspaceSize int
}

// DefaultCublasLtOptions returns the options of DG_CUBLASLT_OPTIONS_INIT.
func DefaultCublasLtOptions() CublasLtOptions {
	o := C.dgw_cublaslt_options_init()
	return CublasLtOptions{Alpha: float32(o.alpha), Beta: float32(o.beta), WorkspaceSize: int(o.workspace_size)}
}

// cCublasLtOptions fills dst from o; it returns nil for nil options (libdg's defaults), and an
// error when WorkspaceSize is negative.
func cCublasLtOptions(o *CublasLtOptions, dst *C.dg_cublaslt_options) (*C.dg_cublaslt_options, error) {
	if o == nil {
		return nil, nil
	}
	var a cArgs
	*dst = C.dgw_cublaslt_options_init()
	dst.alpha = C.float(o.Alpha)
	dst.beta = C.float(o.Beta)
	dst.workspace = C.dgw_pointer(C.uintptr_t(o.Workspace))
	dst.workspace_size = a.size("options.workspace_size", o.WorkspaceSize)
	return dst, a.err
}

// cublasLtCall makes call with opts converted, or returns the conversion's error without calling it.
func cublasLtCall(opts *CublasLtOptions, call func(*C.dg_cublaslt_options) C.dgw_result) error {
	var o C.dg_cublaslt_options
	p, err := cCublasLtOptions(opts, &o)
	if err != nil {
		return err
	}
	return check(call(p))
}

// CublasLtWorkspaceSize is the recommended cuBLASLt workspace in bytes (32 MiB, as DeepGEMM uses;
// dg_cublaslt_workspace_size).
func CublasLtWorkspaceSize() int {
	return int(C.dg_cublaslt_workspace_size())
}

// CublasLtAvailable returns nil when cuBLASLt can be loaded, else ErrUnsupported with the reason
// (dg_cublaslt_available).
func CublasLtAvailable() error {
	return check(C.dgw_cublaslt_available())
}

// CublasLtGemmNT is the cuBLASLt GEMM with a [M, K], b [N, K] (dg_cublaslt_gemm_nt): a and b both
// BFLOAT16, or both FLOAT8_E4M3 used raw (no scales; nt with K-major operands only); d [M, N]
// row-major BFLOAT16 or FLOAT32; c nil or like d. The baseline libdg's GEMMs are timed against.
func (s *Stream) CublasLtGemmNT(a, b, d, c *Tensor, opts *CublasLtOptions) error {
	err := cublasLtCall(opts, func(o *C.dg_cublaslt_options) C.dgw_result {
		return C.dgw_cublaslt_gemm_nt(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// CublasLtGemmNN is the cuBLASLt GEMM with a [M, K], b [K, N] (dg_cublaslt_gemm_nn); see CublasLtGemmNT.
func (s *Stream) CublasLtGemmNN(a, b, d, c *Tensor, opts *CublasLtOptions) error {
	err := cublasLtCall(opts, func(o *C.dg_cublaslt_options) C.dgw_result {
		return C.dgw_cublaslt_gemm_nn(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// CublasLtGemmTN is the cuBLASLt GEMM with a [K, M], b [K, N] (dg_cublaslt_gemm_tn); see CublasLtGemmNT.
func (s *Stream) CublasLtGemmTN(a, b, d, c *Tensor, opts *CublasLtOptions) error {
	err := cublasLtCall(opts, func(o *C.dg_cublaslt_options) C.dgw_result {
		return C.dgw_cublaslt_gemm_tn(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}

// CublasLtGemmTT is the cuBLASLt GEMM with a [K, M], b [N, K] (dg_cublaslt_gemm_tt); see CublasLtGemmNT.
func (s *Stream) CublasLtGemmTT(a, b, d, c *Tensor, opts *CublasLtOptions) error {
	err := cublasLtCall(opts, func(o *C.dg_cublaslt_options) C.dgw_result {
		return C.dgw_cublaslt_gemm_tt(s.ptr, a.raw(), b.raw(), d.raw(), c.raw(), o)
	})
	keep(s, a, b, d, c)
	return err
}
