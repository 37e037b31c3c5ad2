//! Runs D = A @ Bᵀ with libdg's BF16 GEMM on device 0 and checks it against a CPU reference in
//! double precision; without a GPU it says so and exits 0.
//!
//!     cargo run --release --example gemm
//!
//! libdg takes device pointers and never allocates them; this example gets its memory from the
//! CUDA driver (loaded with dlopen, so that it also starts where there is none). A program that
//! uses the CUDA runtime or a framework passes that allocator's pointers instead.

use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::process::ExitCode;
use std::time::Instant;

use dg::{DType, Stream, Tensor};

const M: usize = 256;
const N: usize = 1024;
const K: usize = 768;

extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;

type CuResult = c_int;
type DevicePtr = u64;

/// The few driver entry points the example needs for memory.
struct Driver {
    primary_ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(*mut c_void) -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(DevicePtr) -> CuResult,
    memcpy_htod: unsafe extern "C" fn(DevicePtr, *const c_void, usize) -> CuResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, DevicePtr, usize) -> CuResult,
    memset_d8: unsafe extern "C" fn(DevicePtr, u8, usize) -> CuResult,
}

impl Driver {
    fn load() -> Result<Driver, String> {
        let name = CString::new("libcuda.so.1").unwrap();
        // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is cast to the signature
        // the CUDA driver API documents for it.
        unsafe {
            let lib = dlopen(name.as_ptr(), RTLD_NOW);
            if lib.is_null() {
                return Err("libcuda.so.1 cannot be loaded".into());
            }
            // F is one of the fn-pointer types of Driver's fields (pointer-sized).
            unsafe fn sym<F: Copy>(lib: *mut c_void, name: &str) -> Result<F, String> {
                let c = CString::new(name).unwrap();
                let p = dlsym(lib, c.as_ptr());
                if p.is_null() {
                    return Err(format!("{} missing from libcuda.so.1", name));
                }
                assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
                Ok(std::mem::transmute_copy::<*mut c_void, F>(&p))
            }
            Ok(Driver {
                primary_ctx_retain: sym(lib, "cuDevicePrimaryCtxRetain")?,
                ctx_set_current: sym(lib, "cuCtxSetCurrent")?,
                mem_alloc: sym(lib, "cuMemAlloc_v2")?,
                mem_free: sym(lib, "cuMemFree_v2")?,
                memcpy_htod: sym(lib, "cuMemcpyHtoD_v2")?,
                memcpy_dtoh: sym(lib, "cuMemcpyDtoH_v2")?,
                memset_d8: sym(lib, "cuMemsetD8_v2")?,
            })
        }
    }
}

fn cu(what: &str, result: CuResult) -> Result<(), String> {
    if result == 0 { Ok(()) } else { Err(format!("{} failed: CUresult {}", what, result)) }
}

/// A device allocation freed on drop.
struct DeviceBuffer<'a> {
    driver: &'a Driver,
    ptr: DevicePtr,
}

impl<'a> DeviceBuffer<'a> {
    fn new(driver: &'a Driver, bytes: usize) -> Result<Self, String> {
        let mut ptr = 0;
        // SAFETY: a valid out-pointer; the primary context is current.
        cu("cuMemAlloc", unsafe { (driver.mem_alloc)(&mut ptr, bytes) })?;
        Ok(DeviceBuffer { driver, ptr })
    }

    fn as_ptr(&self) -> *mut c_void {
        self.ptr as usize as *mut c_void
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by cuMemAlloc, freed once, after the work using it was synchronised.
        unsafe { (self.driver.mem_free)(self.ptr) };
    }
}

fn to_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16 // round to nearest even
}

fn from_bf16(b: u16) -> f64 {
    f32::from_bits((b as u32) << 16) as f64
}

/// Standard normal samples rounded to BF16 (xorshift64 + Box-Muller).
fn random_bf16(n: usize, state: &mut u64) -> Vec<u16> {
    let mut uniform = || {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        ((*state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (u1, u2) = (uniform(), uniform());
            to_bf16(((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32)
        })
        .collect()
}

fn run_gemm() -> Result<(), String> {
    let driver = Driver::load()?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: valid out-pointer; the context is the device's primary one, as libdg uses.
    cu("cuDevicePrimaryCtxRetain", unsafe { (driver.primary_ctx_retain)(&mut ctx, 0) })?;
    cu("cuCtxSetCurrent", unsafe { (driver.ctx_set_current)(ctx) })?;

    let mut seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let a = random_bf16(M * K, &mut seed);
    let b = random_bf16(N * K, &mut seed);
    let (da, db, dd) =
        (DeviceBuffer::new(&driver, 2 * M * K)?, DeviceBuffer::new(&driver, 2 * N * K)?, DeviceBuffer::new(&driver, 2 * M * N)?);
    // SAFETY: the host vectors hold the bytes copied; the buffers are at least that large.
    unsafe {
        cu("cuMemcpyHtoD", (driver.memcpy_htod)(da.ptr, a.as_ptr() as *const c_void, 2 * M * K))?;
        cu("cuMemcpyHtoD", (driver.memcpy_htod)(db.ptr, b.as_ptr() as *const c_void, 2 * N * K))?;
        cu("cuMemsetD8", (driver.memset_d8)(dd.ptr, 0xff, 2 * M * N))?; // NaN until written
    }

    let stream = Stream::new(0, None).map_err(|e| e.to_string())?;
    let (m, n, k) = (M as i64, N as i64, K as i64);
    // SAFETY: each buffer holds its tensor's elements and outlives the synchronised GEMM below.
    let (ta, tb, td) = unsafe {
        (
            Tensor::new(da.as_ptr(), DType::BFLOAT16, &[m, k], None),
            Tensor::new(db.as_ptr(), DType::BFLOAT16, &[n, k], None),
            Tensor::new(dd.as_ptr(), DType::BFLOAT16, &[m, n], None),
        )
    };
    let (ta, tb, td) = (ta.map_err(|e| e.to_string())?, tb.map_err(|e| e.to_string())?, td.map_err(|e| e.to_string())?);
    let t0 = Instant::now();
    stream.bf16_gemm_nt(&ta, &tb, &td, None, None).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| e.to_string())?;
    let cold = t0.elapsed();

    let mut d = vec![0u16; M * N];
    // SAFETY: `d` holds the bytes copied; the GEMM has completed.
    cu("cuMemcpyDtoH", unsafe { (driver.memcpy_dtoh)(d.as_mut_ptr() as *mut c_void, dd.ptr, 2 * M * N) })?;

    // DeepGEMM's calc_diff: 1 - 2 sum(x y) / sum(x^2 + y^2), against a double-precision reference.
    let (mut xy, mut xx_yy, mut non_finite) = (0.0, 0.0, 0);
    for i in 0..M {
        for j in 0..N {
            let reference: f64 = (0..K).map(|p| from_bf16(a[i * K + p]) * from_bf16(b[j * K + p])).sum();
            let got = from_bf16(d[i * N + j]);
            non_finite += usize::from(!got.is_finite());
            xy += got * reference;
            xx_yy += got * got + reference * reference;
        }
    }
    let diff = 1.0 - 2.0 * xy / xx_yy;
    println!(
        "BF16 GEMM {}x{}x{}: first call (JIT + run) {:.3} s, calc_diff {:.2e}, {} non-finite",
        M, N, K, cold.as_secs_f64(), diff, non_finite
    );
    if non_finite > 0 || diff.is_nan() || diff >= 1e-5 {
        return Err("the result differs from the reference".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    println!("libdg {}", dg::version());
    match dg::device_count() {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            println!("skipped: no CUDA device here");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            println!("skipped: no GPU here ({})", e.message());
            return ExitCode::SUCCESS;
        }
    }
    let (major, minor) = dg::device_capability(0).unwrap_or((0, 0));
    println!("device 0: compute capability {}.{}, {} SMs", major, minor, dg::num_sms());
    match run_gemm() {
        Ok(()) => {
            println!("OK");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("FAILED: {}", e);
            ExitCode::FAILURE
        }
    }
}
