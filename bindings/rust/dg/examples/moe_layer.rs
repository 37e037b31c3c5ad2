//! DeepSeek-V3's routed-expert layer (hidden 7168, intermediate 2048) through the safe API: the
//! Rust twin of `examples/moe_layer.c` (docs/gemm_epilogues.md#an-moe-expert-layer).
//!
//!     cargo run --release --example moe_layer -- [--mode prefill|decode] [--experts G] [--tokens T]
//!
//! Per expert, BF16 tokens in and BF16 out: quantize x to FP8 (1 x 128 scales), h = SwiGLU(x w13ᵀ)
//! written as FP8 by the gate/up GEMM's fused epilogue, y = h w2ᵀ. Prefill runs the contiguous
//! layout (each expert's tokens padded to 128 rows), decode the masked one (counts on the device)
//! replayed from a CUDA graph. The weights are quantized per 128 x 128 block on the device and
//! w13's gate / up rows interleaved with `Stream::swiglu_interleave`, as an engine loads them.
//! Sampled rows are checked against a double-precision layer on the BF16 values, and the layer is
//! timed (CUDA events, median) beside the same layer without the fused FP8 output.
//!
//! libdg never allocates device memory: memory, events and graphs come from the CUDA driver,
//! loaded with dlopen as in the `gemm` example, so the example also starts where there is none.

use std::error::Error;
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::process::ExitCode;

use dg::{Activation, DType, GemmEpilogue, GemmOptions, MGroupedLayout, Stream, Tensor};

type Res<T> = Result<T, Box<dyn Error>>;

const USAGE: &str = "\
Usage: moe_layer [--mode prefill|decode] [--experts G] [--tokens T] [--iters N] [--help]

Runs DeepSeek-V3's routed-expert layer (hidden 7168, intermediate 2048) with libdg through its Rust
binding: FP8 quantization, the gate/up GEMM with a fused SwiGLU + FP8 epilogue, the down GEMM.
Checks sampled rows against a double-precision reference and prints the layer's time beside the
same layer without the fused FP8 output. Without a GPU it says so and exits 0.

  --mode M      prefill (contiguous layout, default) or decode (masked layout, CUDA graph)
  --experts G   experts on this GPU (default 8 for prefill, 32 for decode; 1..256)
  --tokens T    tokens per expert (default 1024 for prefill, 32 for decode; decode: 1..256)
  --iters N     timed iterations of each variant (default 20)

Exit status: 0 on success or without a GPU, 1 on a failure, 2 on a usage error.
";

const HIDDEN: i64 = 7168;
const INTER: i64 = 2048;
const BLOCK: i64 = 128;
const MASKED_ROW_ALIGN: i64 = 64; // max_m of the masked layout: a multiple of 64
const MAX_CHECKED_ROWS: i64 = 32;
const DIFF_LIMIT: f64 = 1e-2; // FP8 weights and activations against the BF16 values

// ------------------------------------------------------------------ the driver
extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
const RTLD_NOW: c_int = 2;
type Cu = c_int;
type Ptr = *mut c_void;

/// The driver entry points the example needs: memory, events, graphs.
struct Driver {
    init: unsafe extern "C" fn(u32) -> Cu,
    primary_ctx_retain: unsafe extern "C" fn(*mut Ptr, c_int) -> Cu,
    ctx_set_current: unsafe extern "C" fn(Ptr) -> Cu,
    mem_alloc: unsafe extern "C" fn(*mut u64, usize) -> Cu,
    mem_free: unsafe extern "C" fn(u64) -> Cu,
    htod: unsafe extern "C" fn(u64, *const c_void, usize) -> Cu,
    dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> Cu,
    event_create: unsafe extern "C" fn(*mut Ptr, u32) -> Cu,
    event_destroy: unsafe extern "C" fn(Ptr) -> Cu,
    event_record: unsafe extern "C" fn(Ptr, Ptr) -> Cu,
    event_sync: unsafe extern "C" fn(Ptr) -> Cu,
    event_elapsed: unsafe extern "C" fn(*mut f32, Ptr, Ptr) -> Cu,
    begin_capture: unsafe extern "C" fn(Ptr, c_int) -> Cu,
    end_capture: unsafe extern "C" fn(Ptr, *mut Ptr) -> Cu,
    instantiate: unsafe extern "C" fn(*mut Ptr, Ptr, u64) -> Cu,
    graph_launch: unsafe extern "C" fn(Ptr, Ptr) -> Cu,
}

impl Driver {
    fn load() -> Res<Driver> {
        let name = CString::new("libcuda.so.1").unwrap();
        // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is cast to the signature the
        // CUDA driver API documents for it (every field is a pointer-sized fn pointer).
        unsafe {
            let lib = dlopen(name.as_ptr(), RTLD_NOW);
            if lib.is_null() {
                return Err("libcuda.so.1 cannot be loaded".into());
            }
            unsafe fn sym<F: Copy>(lib: *mut c_void, names: &[&str]) -> Res<F> {
                for name in names {
                    let p = dlsym(lib, CString::new(*name).unwrap().as_ptr());
                    if !p.is_null() {
                        assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<Ptr>());
                        return Ok(std::mem::transmute_copy::<Ptr, F>(&p));
                    }
                }
                Err(format!("{} missing from libcuda.so.1", names[0]).into())
            }
            Ok(Driver {
                init: sym(lib, &["cuInit"])?,
                primary_ctx_retain: sym(lib, &["cuDevicePrimaryCtxRetain"])?,
                ctx_set_current: sym(lib, &["cuCtxSetCurrent"])?,
                mem_alloc: sym(lib, &["cuMemAlloc_v2"])?,
                mem_free: sym(lib, &["cuMemFree_v2"])?,
                htod: sym(lib, &["cuMemcpyHtoD_v2"])?,
                dtoh: sym(lib, &["cuMemcpyDtoH_v2"])?,
                event_create: sym(lib, &["cuEventCreate"])?,
                event_destroy: sym(lib, &["cuEventDestroy_v2"])?,
                event_record: sym(lib, &["cuEventRecord"])?,
                event_sync: sym(lib, &["cuEventSynchronize"])?,
                event_elapsed: sym(lib, &["cuEventElapsedTime_v2", "cuEventElapsedTime"])?,
                begin_capture: sym(lib, &["cuStreamBeginCapture_v2", "cuStreamBeginCapture"])?,
                end_capture: sym(lib, &["cuStreamEndCapture"])?,
                instantiate: sym(lib, &["cuGraphInstantiateWithFlags"])?,
                graph_launch: sym(lib, &["cuGraphLaunch"])?,
            })
        }
    }
}

fn cu(what: &str, result: Cu) -> Res<()> {
    if result == 0 { Ok(()) } else { Err(format!("{} failed: CUresult {}", what, result).into()) }
}

/// Device allocations, freed together on drop (after the work using them was synchronised).
struct Arena<'d> {
    driver: &'d Driver,
    ptrs: Vec<u64>,
}

impl<'d> Arena<'d> {
    fn alloc(&mut self, bytes: i64) -> Res<Ptr> {
        let mut p = 0;
        // SAFETY: a valid out-pointer; the primary context is current.
        cu("cuMemAlloc", unsafe { (self.driver.mem_alloc)(&mut p, bytes.max(1) as usize) })?;
        self.ptrs.push(p);
        Ok(p as usize as Ptr)
    }

    fn upload<T>(&mut self, host: &[T]) -> Res<Ptr> {
        let bytes = std::mem::size_of_val(host);
        let p = self.alloc(bytes as i64)?;
        // SAFETY: `p` holds `bytes` bytes; `host` is that many readable bytes.
        cu("cuMemcpyHtoD", unsafe { (self.driver.htod)(p as u64, host.as_ptr() as *const c_void, bytes) })?;
        Ok(p)
    }

    fn download(&self, src: &Tensor, out: &mut [u16]) -> Res<()> {
        let p = src.info()?.data as u64;
        // SAFETY: `src` covers `out` (a BF16 tensor of out.len() elements); its writes completed.
        cu("cuMemcpyDtoH", unsafe { (self.driver.dtoh)(out.as_mut_ptr() as *mut c_void, p, 2 * out.len()) })
    }
}

impl Drop for Arena<'_> {
    fn drop(&mut self) {
        for &p in &self.ptrs {
            // SAFETY: allocated by cuMemAlloc, freed once.
            unsafe { (self.driver.mem_free)(p) };
        }
    }
}

/// A tensor over fresh device memory of its (contiguous, or strided in `span` elements) shape.
fn tensor(arena: &mut Arena, dtype: DType, sizes: &[i64], strides: Option<&[i64]>, span: Option<i64>) -> Res<Tensor> {
    let elems = span.unwrap_or_else(|| sizes.iter().product());
    let p = arena.alloc(elems * dtype.size() as i64)?;
    // SAFETY: `p` holds `elems` elements, every one the sizes and strides address; the arena
    // outlives every synchronised call using the tensor.
    Ok(unsafe { Tensor::new(p, dtype, sizes, strides)? })
}

fn describe(p: Ptr, dtype: DType, sizes: &[i64]) -> Res<Tensor> {
    // SAFETY: the callers pass arena memory holding `sizes` elements of `dtype`.
    Ok(unsafe { Tensor::new(p, dtype, sizes, None)? })
}

// ------------------------------------------------------------------ host values
struct Rng(u64);
impl Rng {
    fn uniform(&mut self) -> f32 {
        // xorshift64, [-1, 1)
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f64 * (2.0 / 16777216.0) - 1.0) as f32
    }
    fn bf16(&mut self, n: i64, scale: f32) -> Vec<u16> {
        (0..n).map(|_| to_bf16(self.uniform() * scale)).collect()
    }
}

fn to_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    (u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16 // round to nearest even
}

fn from_bf16(b: u16) -> f64 {
    f32::from_bits((b as u32) << 16) as f64
}

// ------------------------------------------------------------------ the layer
/// FP8 codes and 128 x 128 block scales (w13 interleaved) and the BF16 values they came from.
struct Weights {
    w13: Tensor,
    s13: Tensor,
    w2: Tensor,
    s2: Tensor,
    w13_host: Vec<u16>, // [G, 2I, H]: gate rows, then up rows
    w2_host: Vec<u16>,  // [G, H, I]
}

/// Quantizes BF16 weights [G, rows, cols] per 128 x 128 block on the device.
fn quantize_weights(s: &Stream, arena: &mut Arena, host: &[u16], sizes: [i64; 3]) -> Res<(Tensor, Tensor)> {
    let bf16 = describe(arena.upload(host)?, DType::BFLOAT16, &sizes)?;
    let q = tensor(arena, DType::FLOAT8_E4M3, &sizes, None, None)?;
    let sf = tensor(arena, DType::FLOAT32, &[sizes[0], sizes[1] / BLOCK, sizes[2] / BLOCK], None, None)?;
    s.quantize_fp8_per_block(&bf16, &q, &sf, None)?;
    Ok((q, sf))
}

fn make_weights(s: &Stream, arena: &mut Arena, g: i64, rng: &mut Rng) -> Res<Weights> {
    let w13_host = rng.bf16(g * 2 * INTER * HIDDEN, 0.04);
    let w2_host = rng.bf16(g * HIDDEN * INTER, 0.06);
    let (q13, s13) = quantize_weights(s, arena, &w13_host, [g, 2 * INTER, HIDDEN])?;
    let (w2, s2) = quantize_weights(s, arena, &w2_host, [g, HIDDEN, INTER])?;
    // Gate and up rows interleaved in blocks of 128, their block scales with them.
    let w13 = tensor(arena, DType::FLOAT8_E4M3, &[g, 2 * INTER, HIDDEN], None, None)?;
    let s13i = tensor(arena, DType::FLOAT32, &[g, 2 * INTER / BLOCK, HIDDEN / BLOCK], None, None)?;
    s.swiglu_interleave(&q13, &w13, BLOCK)?;
    s.swiglu_interleave(&s13, &s13i, 1)?;
    s.synchronize()?;
    Ok(Weights { w13, s13: s13i, w2, s2, w13_host, w2_host })
}

/// The activations of one layout: rows [M, .] (contiguous) or [G, max_m, .] (masked).
struct Acts {
    masked: bool,
    g: i64,
    rows: i64, // M (contiguous) or max_m (masked)
    x: Tensor,
    qx: Tensor,
    sx: Tensor,
    h8: Tensor,
    sh: Tensor,
    hb: Tensor,
    y: Tensor,
    groups: Tensor, // INT32 [M] row indices (contiguous) or [G] counts (masked)
}

impl Acts {
    fn cells(&self) -> i64 {
        if self.masked { self.g * self.rows } else { self.rows }
    }
}

/// Per-token scales of `cols` columns in the MN-major TMA-aligned layout the GEMMs read.
fn scales(arena: &mut Arena, masked: bool, g: i64, rows: i64, cols: i64) -> Res<Tensor> {
    let sizes = if masked { vec![g, rows, cols / BLOCK] } else { vec![rows, cols / BLOCK] };
    let layout = dg::mn_major_tma_aligned_tensor_layout(&sizes)?;
    let p = arena.alloc(layout.bytes as i64)?;
    // SAFETY: `p` holds the bytes the layout query asked for.
    Ok(unsafe { Tensor::new(p, DType::FLOAT32, &layout.sizes, Some(&layout.strides))? })
}

fn make_acts(arena: &mut Arena, masked: bool, g: i64, rows: i64, x: &[u16], groups: &[i32]) -> Res<Acts> {
    let sizes = |cols: i64| if masked { vec![g, rows, cols] } else { vec![rows, cols] };
    let x = describe(arena.upload(x)?, DType::BFLOAT16, &sizes(HIDDEN))?;
    let groups = describe(arena.upload(groups)?, DType::INT32, &[groups.len() as i64])?;
    Ok(Acts {
        masked,
        g,
        rows,
        x,
        qx: tensor(arena, DType::FLOAT8_E4M3, &sizes(HIDDEN), None, None)?,
        sx: scales(arena, masked, g, rows, HIDDEN)?,
        h8: tensor(arena, DType::FLOAT8_E4M3, &sizes(INTER), None, None)?,
        sh: scales(arena, masked, g, rows, INTER)?,
        hb: tensor(arena, DType::BFLOAT16, &sizes(INTER), None, None)?,
        y: tensor(arena, DType::BFLOAT16, &sizes(HIDDEN), None, None)?,
        groups,
    })
}

fn quantize(s: &Stream, a: &Acts, x: &Tensor, q: &Tensor, sf: &Tensor) -> Res<()> {
    if a.masked {
        s.quantize_fp8_per_token_masked(x, q, sf, &a.groups, None)?;
    } else {
        s.quantize_fp8_per_token_contiguous(x, q, sf, &a.groups, MGroupedLayout::INDICES, a.g, None)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn grouped_gemm(s: &Stream, a: &Acts, x: &Tensor, sx: &Tensor, w: &Tensor, sw: &Tensor, d: &Tensor, expected_m: i64,
                options: &GemmOptions) -> Res<()> {
    if a.masked {
        s.m_grouped_fp8_gemm_nt_masked(x, sx, w, sw, d, &a.groups, expected_m, Some(options))?;
    } else {
        s.m_grouped_fp8_gemm_nt_contiguous(x, sx, w, sw, d, &a.groups, MGroupedLayout::INDICES, 0, Some(options))?;
    }
    Ok(())
}

/// One layer: fused (SwiGLU + FP8 from the GEMM) or unfused (SwiGLU to BF16, then quantization).
fn layer(s: &Stream, a: &Acts, w: &Weights, expected_m: i64, fused: bool) -> Res<()> {
    quantize(s, a, &a.x, &a.qx, &a.sx)?;
    let swiglu = GemmEpilogue::new().activation(Activation::SWIGLU);
    if fused {
        let e = swiglu.d_scales(&a.sh);
        grouped_gemm(s, a, &a.qx, &a.sx, &w.w13, &w.s13, &a.h8, expected_m, &GemmOptions::new().epilogue(&e))?;
    } else {
        grouped_gemm(s, a, &a.qx, &a.sx, &w.w13, &w.s13, &a.hb, expected_m, &GemmOptions::new().epilogue(&swiglu))?;
        quantize(s, a, &a.hb, &a.h8, &a.sh)?;
    }
    grouped_gemm(s, a, &a.h8, &a.sh, &w.w2, &w.s2, &a.y, expected_m, &GemmOptions::new())
}

// ------------------------------------------------------------------ reference and timing
fn silu(v: f64) -> f64 {
    v / (1.0 + (-v).exp())
}

/// calc_diff (1 - 2 sum(x y) / sum(x^2 + y^2)) of y's rows `(row, expert)` against the
/// double-precision layer on the BF16 values.
fn check_rows(arena: &Arena, a: &Acts, w: &Weights, x: &[u16], rows: &[(i64, i64)]) -> Res<f64> {
    let mut y = vec![0u16; (a.cells() * HIDDEN) as usize];
    arena.download(&a.y, &mut y)?;
    let (h, i) = (HIDDEN as usize, INTER as usize);
    let (mut xy, mut xx_yy) = (0.0, 0.0);
    let mut act = vec![0.0f64; i];
    for &(row, expert) in rows {
        let (row, e) = (row as usize, expert as usize);
        let xr: Vec<f64> = x[row * h..(row + 1) * h].iter().map(|&b| from_bf16(b)).collect();
        let w13 = &w.w13_host[e * 2 * i * h..(e + 1) * 2 * i * h];
        let w2 = &w.w2_host[e * h * i..(e + 1) * h * i];
        let dot = |wr: &[u16]| -> f64 { xr.iter().zip(wr).map(|(&v, &b)| v * from_bf16(b)).sum() };
        for (j, out) in act.iter_mut().enumerate() {
            *out = silu(dot(&w13[j * h..(j + 1) * h])) * dot(&w13[(i + j) * h..(i + j + 1) * h]);
        }
        for c in 0..h {
            let reference: f64 = act.iter().zip(&w2[c * i..(c + 1) * i]).map(|(&v, &b)| v * from_bf16(b)).sum();
            let got = from_bf16(y[row * h + c]);
            xy += got * reference;
            xx_yy += got * got + reference * reference;
        }
    }
    Ok(1.0 - 2.0 * xy / xx_yy)
}

/// Two events on a stream, destroyed on drop.
struct Timer<'d> {
    driver: &'d Driver,
    start: Ptr,
    stop: Ptr,
}

impl<'d> Timer<'d> {
    fn new(driver: &'d Driver) -> Res<Self> {
        let (mut start, mut stop) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: valid out-pointers; flags 0 (timing enabled).
        unsafe {
            cu("cuEventCreate", (driver.event_create)(&mut start, 0))?;
            cu("cuEventCreate", (driver.event_create)(&mut stop, 0))?;
        }
        Ok(Timer { driver, start, stop })
    }

    /// Milliseconds of the work `run` enqueues on `stream`.
    fn time(&self, stream: Ptr, run: &mut dyn FnMut() -> Res<()>) -> Res<f32> {
        let mut ms = 0.0;
        // SAFETY: live events and a live stream of the current context.
        unsafe {
            cu("cuEventRecord", (self.driver.event_record)(self.start, stream))?;
            run()?;
            cu("cuEventRecord", (self.driver.event_record)(self.stop, stream))?;
            cu("cuEventSynchronize", (self.driver.event_sync)(self.stop))?;
            cu("cuEventElapsedTime", (self.driver.event_elapsed)(&mut ms, self.start, self.stop))?;
        }
        Ok(ms)
    }
}

impl Drop for Timer<'_> {
    fn drop(&mut self) {
        // SAFETY: created by cuEventCreate, destroyed once, after their last synchronisation.
        unsafe {
            (self.driver.event_destroy)(self.start);
            (self.driver.event_destroy)(self.stop);
        }
    }
}

/// Median milliseconds of `iters` runs of each of two variants, interleaved.
fn time_variants(timer: &Timer, stream: Ptr, iters: usize, run: &mut dyn FnMut(usize) -> Res<()>) -> Res<[f32; 2]> {
    let mut t = [Vec::with_capacity(iters), Vec::with_capacity(iters)];
    for _ in 0..iters {
        for (v, samples) in t.iter_mut().enumerate() {
            samples.push(timer.time(stream, &mut || run(v))?);
        }
    }
    let median = |v: &mut Vec<f32>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    Ok([median(&mut t[0]), median(&mut t[1])])
}

// ------------------------------------------------------------------ main
struct Args {
    decode: bool,
    experts: i64,
    tokens: i64,
    iters: i64,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args { decode: false, experts: 0, tokens: 0, iters: 20 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        if arg == "--help" || arg == "-h" {
            return Ok(None);
        }
        let value = it.next().ok_or_else(|| format!("{} needs a value", arg))?;
        let int = |lo: i64, hi: i64| -> Result<i64, String> {
            value.parse::<i64>().ok().filter(|v| (lo..=hi).contains(v)).ok_or_else(|| {
                format!("bad argument '{} {}' (expected {}..{})", arg, value, lo, hi)
            })
        };
        match arg.as_str() {
            "--mode" if value == "prefill" || value == "decode" => args.decode = value == "decode",
            "--experts" => args.experts = int(1, 256)?,
            "--tokens" => args.tokens = int(1, 1 << 16)?,
            "--iters" => args.iters = int(1, 10000)?,
            _ => return Err(format!("bad argument '{} {}'", arg, value)),
        }
    }
    if args.experts == 0 {
        args.experts = if args.decode { 32 } else { 8 };
    }
    if args.tokens == 0 {
        args.tokens = if args.decode { 32 } else { 1024 };
    }
    if args.decode && args.tokens > 256 {
        return Err("decode takes --tokens up to 256".into());
    }
    Ok(Some(args))
}

fn align_up(a: i64, b: i64) -> i64 {
    (a + b - 1) / b * b
}

/// Per expert: rows per group, token counts, and the INT32 group tensor's values. Contiguous: each
/// expert's T rows padded to 128, row indices (-1 padding); masked: max_m = T rounded up to 64 and
/// counts spread over [T/2, T].
fn token_layout(decode: bool, g: i64, tokens: i64) -> (i64, Vec<i64>, Vec<i32>) {
    let per_group = align_up(tokens, if decode { MASKED_ROW_ALIGN } else { BLOCK });
    let count: Vec<i64> = (0..g).map(|e| if decode { tokens - (e * 7919) % (tokens / 2 + 1) } else { tokens }).collect();
    let groups = if decode {
        count.iter().map(|&c| c as i32).collect()
    } else {
        (0..g * per_group)
            .map(|r| if r % per_group < count[(r / per_group) as usize] { (r / per_group) as i32 } else { -1 })
            .collect()
    };
    (per_group, count, groups)
}

/// The work `enqueue` launches on `stream`, run once (loading its kernels) and then captured in an
/// instantiated CUDA graph.
fn capture(driver: &Driver, stream: &Stream, enqueue: &mut dyn FnMut() -> Res<()>) -> Res<Ptr> {
    enqueue()?;
    let cu_stream = stream.cu_stream()?;
    let (mut graph, mut exec) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: the stream is live and belongs to the current context; valid out-pointers.
    unsafe {
        cu("cuStreamBeginCapture", (driver.begin_capture)(cu_stream, 0))?;
        let captured = enqueue();
        cu("cuStreamEndCapture", (driver.end_capture)(cu_stream, &mut graph))?;
        captured?;
        cu("cuGraphInstantiate", (driver.instantiate)(&mut exec, graph, 0))?;
    }
    Ok(exec)
}

fn run(args: &Args) -> Res<()> {
    let driver = Driver::load()?;
    let mut ctx = std::ptr::null_mut();
    // SAFETY: valid out-pointers; the primary context is the one libdg works in.
    unsafe {
        cu("cuInit", (driver.init)(0))?;
        cu("cuDevicePrimaryCtxRetain", (driver.primary_ctx_retain)(&mut ctx, 0))?;
        cu("cuCtxSetCurrent", (driver.ctx_set_current)(ctx))?;
    }
    let mut arena = Arena { driver: &driver, ptrs: Vec::new() };
    let stream = Stream::new(0, None)?;
    let cu_stream = stream.cu_stream()?;
    let (decode, g, tokens) = (args.decode, args.experts, args.tokens);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let w = make_weights(&stream, &mut arena, g, &mut rng)?;

    let (per_group, count, groups) = token_layout(decode, g, tokens);
    let rows = if decode { per_group } else { g * per_group };
    let x = rng.bf16(g * per_group * HIDDEN, 1.0);
    let a = make_acts(&mut arena, decode, g, rows, &x, &groups)?;

    // Correctness: the first and last token of up to 16 experts, of the fused layer.
    layer(&stream, &a, &w, tokens, true)?;
    stream.synchronize()?;
    let checked = (2 * g).min(MAX_CHECKED_ROWS);
    let sample: Vec<(i64, i64)> = (0..checked)
        .map(|i| {
            let e = i / 2 * (g / (checked / 2));
            (e * per_group + if i % 2 == 1 { count[e as usize] - 1 } else { 0 }, e)
        })
        .collect();
    let diff = check_rows(&arena, &a, &w, &x, &sample)?;

    let timer = Timer::new(&driver)?;
    let ms = if decode {
        let graphs = [capture(&driver, &stream, &mut || layer(&stream, &a, &w, tokens, true))?,
                      capture(&driver, &stream, &mut || layer(&stream, &a, &w, tokens, false))?];
        // SAFETY: instantiated graphs of this context, launched on its stream.
        time_variants(&timer, cu_stream, args.iters as usize, &mut |v| {
            cu("cuGraphLaunch", unsafe { (driver.graph_launch)(graphs[v], cu_stream) })
        })?
    } else {
        layer(&stream, &a, &w, tokens, false)?;
        time_variants(&timer, cu_stream, args.iters as usize, &mut |v| layer(&stream, &a, &w, tokens, v == 0))?
    };
    stream.synchronize()?;

    let total: i64 = count.iter().sum();
    let flops = 2.0 * total as f64 * 3.0 * (HIDDEN * INTER) as f64;
    let tflops = |ms: f32| flops / (ms as f64 * 1e-3) / 1e12;
    println!(
        "MoE expert layer (hidden {}, intermediate {}), {}: {} experts, {} tokens",
        HIDDEN, INTER, if decode { "decode (masked, CUDA graph)" } else { "prefill (contiguous)" }, g, total
    );
    println!("  fused   (SwiGLU + FP8 in the GEMM epilogue): {:8.1} us  {:6.1} TFLOPS", ms[0] * 1e3, tflops(ms[0]));
    println!("  unfused (SwiGLU to BF16, then quantization):  {:8.1} us  {:6.1} TFLOPS", ms[1] * 1e3, tflops(ms[1]));
    println!("  fused / unfused speed: {:.3}x; check: calc_diff {:.2e} over {} rows", ms[1] / ms[0], diff, checked);
    if diff.is_nan() || diff >= DIFF_LIMIT {
        return Err(format!("the layer differs from the reference (calc_diff {:.2e})", diff).into());
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{}", USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprint!("moe_layer: {}\n\n{}", e, USAGE);
            return ExitCode::from(2);
        }
    };
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
    match run(&args) {
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
