//! Safe Rust binding of libdg: DeepGEMM's FP8 and BF16 GEMMs, scaling-factor layout utilities,
//! the MQA logits of the DeepSeek-V3.2 indexer and a batched NVFP4 GEMV, JIT-compiled with NVRTC,
//! behind libdg's C ABI (`include/dg.h`).
//!
//! - [`Config`], [`Stream`] and [`Tensor`] own their libdg handles and destroy them on drop.
//! - Every fallible call returns [`Result`]; an [`Error`] carries libdg's status and the message
//!   `dg_last_error()` gave for it on the calling thread.
//! - Device memory enters through `unsafe` constructors ([`Tensor::new`],
//!   [`Stream::from_cu_stream`], [`GemmOptions::workspace`]) whose contracts say what must hold;
//!   the kernel methods of [`Stream`] are then safe to call.
//! - libdg never allocates device memory on a launch path: allocate with the CUDA runtime or
//!   driver (or a framework) and describe it with [`Tensor::new`].
//! - Integer arguments have the C types of libdg's parameters (`i32`, `i64`, `usize`), so a value
//!   outside them does not compile; the only integers converted at run time are slice lengths,
//!   and a rank that does not fit is refused.
//!
//! ```compile_fail
//! // 2^64 + 100 is no i64: refused by the compiler, never wrapped to 100.
//! let _ = dg::tma_aligned_size(18_446_744_073_709_551_716, 1);
//! ```
//!
//! ```no_run
//! use dg::{DType, Stream, Tensor};
//! # fn run(a_ptr: *mut std::ffi::c_void, b_ptr: *mut std::ffi::c_void, d_ptr: *mut std::ffi::c_void) -> dg::Result<()> {
//! let (m, n, k) = (4096, 2112, 7168);
//! let stream = Stream::new(0, None)?;
//! // SAFETY: the pointers are device allocations of these shapes that outlive the GEMM.
//! let (a, b, d) = unsafe {
//!     (Tensor::new(a_ptr, DType::BFLOAT16, &[m, k], None)?,
//!      Tensor::new(b_ptr, DType::BFLOAT16, &[n, k], None)?,
//!      Tensor::new(d_ptr, DType::BFLOAT16, &[m, n], None)?)
//! };
//! stream.bf16_gemm_nt(&a, &b, &d, None, None)?; // D = A @ Bᵀ
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! Linking: `dg-sys` finds libdg with `pkg-config dg` (or in `DG_LIB_DIR`); at run time the
//! loader must find `libdg.so.0` (`LD_LIBRARY_PATH`, an rpath or a system prefix).
#![deny(missing_docs)]

mod config;
mod cublaslt;
mod einsum;
mod epilogue;
mod error;
mod gemm;
mod gemv;
mod grouped;
mod hc_prenorm;
mod k_grouped;
mod layout;
mod log;
mod mqa;
mod quant;
mod stream;
mod tensor;
mod tune;

pub use dg_sys as sys;

pub use config::{num_sms, set_num_sms, set_tc_util, tc_util, Config, ConfigKey};
pub use cublaslt::{cublaslt_available, cublaslt_workspace_size, CublasLtOptions};
pub use epilogue::{Activation, GemmEpilogue};
pub use error::{status_string, Error, ErrorKind, Result};
pub use gemm::{
    fp8_gemm_workspace_size, jit_stats, Fp8Promotion, Fp8Recipe, GemmKernel, GemmLayout, GemmOptions, JitStats,
};
pub use gemv::Nvfp4GemvOptions;
pub use grouped::MGroupedLayout;
pub use layout::{
    k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout, mk_alignment_for_contiguous_layout,
    mn_major_tma_aligned_packed_ue8m0_tensor_layout,
    mn_major_tma_aligned_tensor_layout, tma_aligned_size, transform_sf_layout, ScaleLayout, SfLayout, SfRecipe,
};
pub use log::{log_level, set_log_callback, set_log_level, LogLevel};
pub use mqa::mqa_logits_layout;
pub use quant::{k_grouped_padded_ks, QuantOptions};
pub use stream::{device_capability, device_count, Stream};
pub use tensor::{DType, Tensor, TensorInfo};
pub use tune::TuneOptions;

/// The run-time version of libdg, `"MAJOR.MINOR.PATCH"` (`dg_version`).
pub fn version() -> &'static str {
    // SAFETY: dg_version returns a static string.
    unsafe { error::static_str(sys::dg_version()) }
}

/// libdg's report on itself and this machine (`dg_info_report`, what the `dg-info` command prints):
/// version and build, the NVRTC and CUDA driver in use and their files, each GPU and whether libdg
/// runs on it, the JIT cache, and the `DG_*` variables set. One `key: value` line per item. Needs no
/// GPU.
pub fn info_report() -> Result<String> {
    // The report can grow between the size query and the copy (a cache entry appears): retry.
    const TRIES: usize = 3;
    let mut last = Ok(());
    for _ in 0..TRIES {
        let mut size: usize = 0;
        // SAFETY: NULL buffer with capacity 0 only writes the size.
        error::check(unsafe { sys::dg_info_report(std::ptr::null_mut(), 0, &mut size) })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: buf holds buf.len() writable bytes.
        last = error::check(unsafe {
            sys::dg_info_report(buf.as_mut_ptr() as *mut std::os::raw::c_char, buf.len(), std::ptr::null_mut())
        });
        if last.is_ok() {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return Ok(String::from_utf8_lossy(&buf[..end]).into_owned());
        }
    }
    last.map(|_| String::new())
}

/// The run-time version as `MAJOR * 10000 + MINOR * 100 + PATCH` (`dg_version_number`); its
/// major part equals the `dg.h` this binding was generated from ([`sys::DG_VERSION_MAJOR`]).
pub fn version_number() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::dg_version_number() }
}
