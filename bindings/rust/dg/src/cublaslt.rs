//! The cuBLASLt baseline GEMMs (DeepGEMM's `cublaslt_gemm_*`), the reference libdg's GEMMs are
//! timed against. libcublasLt is loaded at first use; where it cannot be, every call is an
//! [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) with the reason.

use std::os::raw::c_void;
use std::ptr;

use dg_sys as sys;

use crate::error::{check, Result};
use crate::stream::Stream;
use crate::tensor::{opt_tensor, Tensor};

/// Options of the cuBLASLt GEMMs (`dg_cublaslt_options`, started from
/// `DG_CUBLASLT_OPTIONS_INIT`: alpha 1, beta 1, no workspace). Setters chain.
#[derive(Clone, Copy, Debug)]
pub struct CublasLtOptions {
    raw: sys::dg_cublaslt_options,
}

// SAFETY: the only pointer is the workspace, a device address that workspace()'s contract covers.
unsafe impl Send for CublasLtOptions {}
unsafe impl Sync for CublasLtOptions {}

impl Default for CublasLtOptions {
    fn default() -> Self {
        CublasLtOptions { raw: sys::DG_CUBLASLT_OPTIONS_INIT }
    }
}

impl CublasLtOptions {
    /// The defaults of `DG_CUBLASLT_OPTIONS_INIT`.
    pub fn new() -> Self {
        Self::default()
    }

    /// D = alpha * (A @ op(B)) + beta * C.
    pub fn alpha(mut self, value: f32) -> Self {
        self.raw.alpha = value;
        self
    }

    /// Read only when C is given.
    pub fn beta(mut self, value: f32) -> Self {
        self.raw.beta = value;
        self
    }

    /// Device scratch for split-K algorithms ([`cublaslt_workspace_size`] recommends a size).
    ///
    /// # Safety
    /// `workspace` must be NULL (with 0 bytes) or device memory of at least `bytes` bytes,
    /// 256-byte aligned, that nothing else uses until the work of the calls given these options
    /// has completed on their stream.
    pub unsafe fn workspace(mut self, workspace: *mut c_void, bytes: usize) -> Self {
        self.raw.workspace = workspace;
        self.raw.workspace_size = bytes;
        self
    }

    /// The C struct, for calls through `dg_sys`.
    pub fn as_raw(&self) -> &sys::dg_cublaslt_options {
        &self.raw
    }
}

/// The recommended cuBLASLt workspace in bytes (32 MiB, as DeepGEMM uses;
/// `dg_cublaslt_workspace_size`).
pub fn cublaslt_workspace_size() -> usize {
    // SAFETY: no arguments.
    unsafe { sys::dg_cublaslt_workspace_size() }
}

/// `Ok(())` when cuBLASLt can be loaded, else the [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)
/// error with the reason (`dg_cublaslt_available`).
pub fn cublaslt_available() -> Result<()> {
    // SAFETY: no arguments.
    check(unsafe { sys::dg_cublaslt_available() })
}

macro_rules! cublaslt_gemms {
    ($($(#[$doc:meta])* $name:ident => $sys:path;)*) => {
        $(
            $(#[$doc])*
            ///
            /// a and b both BFLOAT16, or both FLOAT8_E4M3 used raw (no scales; nt with K-major
            /// operands only); d [M, N] row-major BFLOAT16 or FLOAT32; c `None` or like d.
            pub fn $name(&self, a: &Tensor, b: &Tensor, d: &Tensor, c: Option<&Tensor>,
                         options: Option<&CublasLtOptions>) -> Result<()> {
                // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
                check(unsafe { $sys(self.as_raw(), a.as_raw(), b.as_raw(), d.as_raw(), opt_tensor(c),
                                    options.map_or(ptr::null(), |o| &o.raw as *const _)) })
            }
        )*
    };
}

impl Stream {
    cublaslt_gemms! {
        /// cuBLASLt GEMM, a [M, K], b [N, K] (`dg_cublaslt_gemm_nt`).
        cublaslt_gemm_nt => sys::dg_cublaslt_gemm_nt;
        /// cuBLASLt GEMM, a [M, K], b [K, N] (`dg_cublaslt_gemm_nn`).
        cublaslt_gemm_nn => sys::dg_cublaslt_gemm_nn;
        /// cuBLASLt GEMM, a [K, M], b [K, N] (`dg_cublaslt_gemm_tn`).
        cublaslt_gemm_tn => sys::dg_cublaslt_gemm_tn;
        /// cuBLASLt GEMM, a [K, M], b [N, K] (`dg_cublaslt_gemm_tt`).
        cublaslt_gemm_tt => sys::dg_cublaslt_gemm_tt;
    }
}
