//! Raw FFI declarations of libdg, DeepGEMM's kernels behind a C ABI.
//!
//! Everything here is generated from `include/dg.h` by `bindings/generate.py` (`generated.rs`),
//! and a test fails when the two disagree; `dg.h` documents each function, and the generated items
//! carry its comments. Use the safe `dg` crate unless you need the raw calls.
//!
//! The build script links `libdg.so` found through `pkg-config dg`, or in `DG_LIB_DIR`. At run
//! time the dynamic loader must find it too (`LD_LIBRARY_PATH`, an rpath, or a system prefix).
#![allow(non_camel_case_types)]

mod generated;
pub use generated::*;
