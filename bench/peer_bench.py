"""libdg beside DeepGEMM and cuBLAS in one process, on the same tensors, timed the same way.

Suites: `dense` (FP8 1D2D nt and BF16 nt on the DeepSeek-V3 (N, K) shapes at M in DENSE_M), `contiguous`
and `masked` (the M-grouped MoE GEMMs of DeepGEMM's tests, FP8 1D2D and BF16), `k-grouped` (the
K-grouped weight-gradient GEMMs: FP8 1D1D nt with flat K-major operands, BF16 tn), `mqa` and
`paged-mqa` (the DeepSeek-V3.2 indexer's MQA logits, H 64, D 128, at the sizes of the MQA and PAGED_MQA
lists below; for paged-mqa a device copy moving the bytes the call reads stands in the
cuBLAS column), `mqa-compressed` (non-paged with DeepGEMM's compressed logits, `max_seqlen_k`: each
row scores a window of keys ending at its causal end and stores it from column 0), `hc-prenorm`
(tf32_hc_prenorm_gemm at N 24 on the (M, K) of DeepGEMM's test and M 16384, num_splits none and 16;
G = the splits, 0 for none; a device copy moving the bytes the call reads and writes stands in the
cuBLAS column), `quant` (per-token 1 x 128 FP8 quantization of BF16 [M, K], M in QUANT_M x K in QUANT_K,
beside a Triton kernel written as inference engines write it, one program per 1 x 128 group
(`triton_group_quant`); a device copy moving the bytes the call reads and writes stands in the cuBLAS
column, and both kernels must produce the same codes and scales bit for bit before they are timed),
`einsum` (DeepGEMM's einsum forms at the shapes of its tests: bmk,bnk->mn with FP32 D
accumulated and BF16 D, G = the batch; bhr,hdr->bhd and bhd,hdr->bhr, G = h, m = b; the cuBLAS column
is DeepGEMM's use_cublaslt=True path for the per-head forms, torch.einsum for the batch sum; FP8
(kind bhr8, not with --bf16-only): fp8_einsum bhr,hdr->bhd on the same head shapes, the cuBLAS column
the BF16 torch.einsum).
`skip-head-mid` (fp8_gemm_nt_skip_head_mid on DeepGEMM's test shapes, heads 128 + 64 + 128; G = heads,
n = the GEMM's N; the cuBLAS column is cuBLASLt's FP8 GEMM into a temporary [M, N]).
The contenders' calls alternate one by one, each after an L2 flush that leaves L2 clean and timed by
CUDA events, and each keeps its median (t_interleaved), so that clock changes under the GPU's power
limit hit every contender alike. `--timing interleaved` flushes by zeroing 256 MB instead (the timed
call then writes back the dirty lines it evicts), `--timing blocks` times each contender with
triton.testing.do_bench (~100 ms of calls per contender, best of two rounds); each row records its
`timing` (rows without one were timed in blocks). paged-mqa times replays of a CUDA graph of libdg's
and DeepGEMM's calls, as decoding runs them: its calls take 25-120 us of GPU time, and a Python host path slower than the
GPU work between two of them (libdg's paged call once took 47-230 us per warm call) puts host time
into the kernel's. Contenders:
  libdg     the Python binding (`dg`), found through DG_LIBRARY_PATH or the source tree;
  deepgemm  `deep_gemm`, when importable (built from source: see bench/README.md);
  cublas    for dense, cuBLASLt (FP8 without block scales) or torch.matmul; else one dense GEMM per group (torch.matmul for BF16; DeepGEMM's cuBLASLt wrapper, FP8
            without block scales, for FP8; for k-grouped, cuBLASLt through libdg accumulating into
            D, FP8 without scales): what a caller without a grouped kernel runs;
  gather    paged-mqa only: a Triton read of the cache blocks the call reads, with no work on them.
A's per-token scales are passed already in the MN-major TMA-aligned layout, so no contender
transforms them per call. Each result row also records calc_diff against an FP32 reference.

Usage: python3 bench/peer_bench.py [dense] [contiguous] [masked] [k-grouped] [mqa] [paged-mqa]
                                   [mqa-compressed] [hc-prenorm] [quant] [einsum] [skip-head-mid]
                                   [--fp8-only|--bf16-only] [--m M,M,...] [--nk NxK,...] [--dense-nn]
                                   [--kg G:M:N:K,...]
                                   [--masked G:M,...] [--masked-counts F,...|--masked-draws N]
                                   [--grouped-nk NxK,...]
                                   [--einsum-b B,...] [--seconds S]
                                   [--out DIR] [--name NAME] [--alt NAME=field:value,...] [--tuned TABLE]
                                   [--contiguous G:M,...] [--timing interleaved-clean|interleaved|blocks]
       python3 bench/peer_bench.py --merge RUN.json [RUN.json ...] --out DIR   (no GPU needed)
--alt adds a contender "libdg_NAME": libdg with those dg_gemm_options fields forced (e.g.
--alt c2=cluster:2,multicast_a:0), to compare a kernel config with the heuristic's choice (the GEMM
suites, einsum's per-head forms and skip-head-mid); where the forced config cannot run a problem, the
row says so and leaves that contender out.
--tuned adds "libdg_tuned": libdg on a stream whose config reads the tuning table TABLE (written by
dg-tune or dg.tune, docs/tuning.md) for the GEMM suites; "libdg" then runs with no table (the
heuristic alone), whatever DG_TUNING_TABLE says.
--m replaces the dense suite's M values, --kg the k-grouped suite's sets (each row records the K of
every group it drew, `ks`), --contiguous and --masked the M-grouped suites' (G, expected M) sets, --masked-counts
fixed counts for the masked sets (a row per fraction of M, every group alike, instead of one draw), --masked-draws
N draws of the counts per masked set (a row each, the groups drawn independently), --grouped-nk the
contiguous and masked suites' (N, K) shapes, --einsum-b the b of einsum's per-head forms (their rows only),
--dense-nn the dense suite's BF16 rows with B [K, N] (MN-major: bf16_gemm_nn, kind bf16nn) instead of [N, K].
--seconds sets the timed work per row and contender set (default 2 s; less for a quick A/B through
bench/scripts/ab_peer.py). Writes NAME.json (rows) and NAME.txt (table + geometric means)
into DIR (default: ., NAME default: grouped); with
--merge, the rows of earlier runs (e.g. one per dtype) go into one table, and grouped.png plots
them (NAME.png) when matplotlib is installed.
"""
import argparse
import io
import json
import math
import os
import random
import statistics
import time

torch = triton = tl = dg = deep_gemm = None


def import_gpu_stack():
    global torch, triton, tl, dg, deep_gemm
    import torch as _torch
    import triton.testing as _tt  # noqa: F401
    import triton as _triton
    import triton.language as _tl
    import dg as _dg
    torch, triton, tl, dg = _torch, _triton, _tl, _dg
    try:
        import deep_gemm as _deep_gemm
        deep_gemm = _deep_gemm
    except ImportError:  # the peer is optional
        deep_gemm = None

ALIGN = 128
NK = [(4096, 7168), (7168, 2048), (6144, 7168)]
CONTIGUOUS = [(4, 8192), (8, 4096), (32, 256)]
MASKED = [(1, 1024), (2, 512), (4, 256), (32, 192), (6, 1024), (32, 20)]
MAX_M = 4096
# (G, M, N, expected K per group): the expert-parallel sets of DeepGEMM's K-grouped tests.
K_GROUPED = [(4, 4096, 7168, 8192), (4, 7168, 2048, 8192), (8, 4096, 7168, 4096), (8, 7168, 2048, 4096),
             (16, 4096, 7168, 2048), (16, 7168, 2048, 2048)]
# The dense suite: DeepSeek-V3's projection shapes (N, K), at these M.
DENSE_NK = [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]
DENSE_M = [128, 2048, 4096, 8192]
DENSE_B_MN = False  # --dense-nn: the dense BF16 rows take B as [K, N] (MN-major), the nn call
# MQA logits (H 64, D 128, FP32 logits, no clean pass): non-paged (S_q, S_kv) with causal ranges, and
# paged (B, next_n, average context length) with 2-D context lengths.
MQA = [(2048, 8192), (4096, 65536), (8192, 65536)]
PAGED_MQA = [(256, 1, 8192), (256, 2, 8192), (1024, 1, 16384)]
# Compressed MQA logits (S_q, S_kv, max_seqlen_k): row i scores keys [ke - max_seqlen_k, ke), ke causal.
MQA_COMPRESSED = [(4096, 65536, 8192), (8192, 65536, 16384)]
# The hyper-connection pre-norm GEMM: (M, K) at N 24, each with num_splits None and 16.
HC_PRENORM = [(m, k) for m in (13, 137, 4096, 8192, 16384) for k in (28672, 7680, 7168)]
# Per-token FP8 quantization of BF16 [M, K]: M x K.
QUANT_M = [128, 4096, 16384]
QUANT_K = [2048, 7168]
# The einsum forms at DeepGEMM's test shapes (tests/test_einsum.py): the batch sum (s, m, n, k) with FP32 D
# accumulated (c = d) and BF16 D, and the per-head forms (h, r, d) at each b.
EINSUM_SUM = [(s, m, n, k) for s in (129, 4096, 8192)
              for m, n, k in ((128, 384, 128), (256, 256, 256), (384, 128, 384))]
EINSUM_HEADS = [(h, r, d, b) for h, r, d in ((128, 512, 128), (8, 4096, 1024)) for b in (4, 32, 128, 4096, 8192)]
# fp8_gemm_nt_skip_head_mid: DeepGEMM's test shapes (M, N, K), N the GEMM's columns, heads (left, mid, right).
SKIP_HEAD_MID = [(m, n, 512) for m in (128, 4096) for n in (32768, 8192)]
HEAD_SPLITS = (128, 64, 128)
SUITES = ("dense", "contiguous", "masked", "k-grouped", "mqa", "paged-mqa", "mqa-compressed", "hc-prenorm",
          "quant", "einsum", "skip-head-mid")
NAME = "grouped"


# --tuned: libdg streams whose config reads the tuning table (the "libdg_tuned" contender), one for
# torch's default stream and one for CAPTURE, the stream graphed() captures on; keyed by CUstream.
TUNED_ALT = "tuned"
TUNED_STREAMS = {}
CAPTURE = None


def use_tuning_table(path):
    global CAPTURE
    CAPTURE = torch.cuda.Stream()
    config = dg.Config(tuning_table=os.path.abspath(path))
    for s in (torch.cuda.current_stream(), CAPTURE):
        TUNED_STREAMS[s.cuda_stream] = dg.Stream(torch.cuda.current_device(), s, config=config)


def tuned_stream():
    """The stream reading the tuning table for torch's current stream (a graph captures only what is
    launched on its capture stream)."""
    return TUNED_STREAMS[torch.cuda.current_stream().cuda_stream]


def alt_kwargs(name):
    """The keyword arguments of alternative `name`'s libdg call, at the time of the call: its forced
    dg_gemm_options fields, or for --tuned the stream that reads the tuning table."""
    return {"stream": tuned_stream()} if name == TUNED_ALT and TUNED_STREAMS else {"options": ALT[name]}


def t_median(fn):
    return triton.testing.do_bench(fn, warmup=20, rep=100, return_mode="median") / 1e3


FLUSH_BYTES = 256 << 20  # more than any L2 (H100/H200: 50 MB); read (or zeroed) before each timed call
ROTATION_SECONDS = 2.0   # t_interleaved's timed work per contender set, at least MIN_REPS rotations
MIN_REPS, MAX_REPS = 30, 1000


def l2_flush(clean):
    """A callable that evicts L2. clean: it reads FLUSH_BYTES written once, so L2 is left holding clean
    lines that no timed call touches, and the dirty lines of the call before are written back during
    the flush. Else it zeroes them (as do_bench does), which leaves up to one L2 of dirty lines whose
    write-back the timed call pays: 1.2-3.3 us per call on an H200 (a quantization of 4096 x 7168:
    29.1 us after the zeroing flush, 25.8 us after the clean one)."""
    if clean:
        src = torch.ones(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        return lambda: torch.sum(src)
    return torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda").zero_


def t_interleaved(fns, clean=True):
    """Median seconds of one call of each of fns (name -> callable), the calls interleaved one by one.

    Each repetition calls every contender once, in an order rotated by one per repetition, each call
    preceded by an L2 flush (l2_flush(clean)) and timed by its own pair of CUDA events. A GPU at its
    power limit moves its clocks by up to 10-15% over a second of heavy GEMMs; blocks of ~100 ms per
    contender (as do_bench times them) let a contender's place in the order decide a few percent of its
    time, calls alternated one by one see the same clocks."""
    names = list(fns)
    flush = l2_flush(clean)
    t0 = time.perf_counter()
    for _ in range(3):
        for name in names:
            fns[name]()
    torch.cuda.synchronize()
    reps = int(min(MAX_REPS, max(MIN_REPS, ROTATION_SECONDS / max(1e-6, (time.perf_counter() - t0) / 3))))
    events = {name: [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(reps)] for name in names}
    for r in range(reps):
        for name in names[r % len(names):] + names[:r % len(names)]:
            flush()
            start, end = events[name][r]
            start.record()
            fns[name]()
            end.record()
    torch.cuda.synchronize()
    return {name: statistics.median(s.elapsed_time(e) for s, e in events[name]) / 1e3 for name in names}


def calc_diff(x, y):
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return 0.0 if denom == 0 else float(1 - 2 * (x * y).sum() / denom)


def per_token_fp8(x):
    """[.., M, K] -> (e4m3 [.., M, K], FP32 scales [.., M, K/128]) with amax / 448 per 128 K."""
    shape = x.shape
    v = x.float().view(*shape[:-1], shape[-1] // 128, 128)
    sf = v.abs().amax(dim=-1).clamp(min=1e-4) / 448.0
    q = (v / sf.unsqueeze(-1)).to(torch.float8_e4m3fn).view(shape)
    return q, sf


def per_block_fp8(x):
    """[G, N, K] -> (e4m3, FP32 scales [G, ceil(N/128), K/128]) with amax / 448 per 128x128 block."""
    g, n, k = x.shape
    np_ = (n + 127) // 128 * 128
    v = torch.nn.functional.pad(x.float(), (0, 0, 0, np_ - n)).view(g, np_ // 128, 128, k // 128, 128)
    sf = v.abs().amax(dim=(2, 4)).clamp(min=1e-4) / 448.0
    q = (v / sf[:, :, None, :, None]).to(torch.float8_e4m3fn).view(g, np_, k)[:, :n].contiguous()
    return q, sf


def dequant_a(q, sf):
    shape = q.shape
    return (q.float().view(*shape[:-1], shape[-1] // 128, 128) * sf.unsqueeze(-1)).view(shape)


def dequant_b(q, sf):
    g, n, k = q.shape
    return (q.float() * sf.repeat_interleave(128, dim=1)[:, :n].repeat_interleave(128, dim=2))


rows = []
ALT = {}  # name -> dg_gemm_options overrides (--alt)
# --timing: "interleaved-clean" (t_interleaved, L2 left clean), "interleaved" (t_interleaved with
# the zeroing flush, which older rows were timed with) or "blocks" (do_bench per contender).
TIMINGS = ("interleaved-clean", "interleaved", "blocks")
TIMING = TIMINGS[0]


def timed(fns):
    """Seconds per call of each of fns by the --timing method."""
    if TIMING == "blocks":
        best = {name: math.inf for name in fns}
        for _ in range(2):
            for name, fn in fns.items():
                best[name] = min(best[name], t_median(fn))
        return best
    return t_interleaved(fns, clean=TIMING == "interleaved-clean")


def graphed(fn):
    """fn captured once in a CUDA graph (after a warm call; on CAPTURE where --tuned made one): the
    replay, with no Python in it."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=CAPTURE):
        fn()
    return graph.replay


def race(row, contenders):
    best = {name: math.inf for name in contenders}
    runnable = {}
    for name, fn in contenders.items():
        try:
            fn()
            runnable[name] = fn
        except Exception as e:  # a contender that cannot run this problem
            print("%s %s failed: %s" % (row["suite"], name, repr(e)[:200]), flush=True)
    torch.cuda.synchronize()
    row["timing"] = TIMING
    best.update(timed(runnable))
    for name, t in best.items():
        row["us_" + name] = round(t * 1e6, 2) if math.isfinite(t) else None
    rows.append(row)
    tf = {n: row["flops"] / t / 1e12 for n, t in best.items() if math.isfinite(t)}
    print("%-10s %-4s G=%-3d m=%-5d n=%-5d k=%-5d " % (row["suite"], row["kind"], row["groups"], row["expected_m"],
                                                          row["n"], row["k"])
          + " ".join("%s=%.1fus(%.0fTF)" % (n, best[n] * 1e6, tf[n]) for n in tf)
          + " diff(libdg)=%s diff(deepgemm)=%s" % (row.get("diff_libdg"), row.get("diff_deepgemm")), flush=True)


def check_alts(row, contenders, reset, diff):
    """Runs each --alt contender once after reset() (poisons or restores its output) and records its
    error against the reference (diff()); an alt that cannot run this problem is reported, and timed as
    failed by race()."""
    for name in ALT:
        reset()
        try:
            contenders["libdg_" + name]()
            row["diff_libdg_" + name] = "%.1e" % diff()
        except Exception as e:
            print("%s libdg_%s cannot run: %s" % (row["suite"], name, repr(e)[:200]), flush=True)


def dense(kind, m, n, k):
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, k), device="cuda", dtype=torch.bfloat16)
    d1 = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
    d2 = torch.empty_like(d1)
    nn = kind == "bf16" and DENSE_B_MN
    row = dict(suite="dense", kind="bf16nn" if nn else kind, groups=1, expected_m=m, n=n, k=k, flops=2.0 * m * n * k)
    contenders = {}
    if kind == "fp8":
        aq, asf = per_token_fp8(a)
        bq, bsf = per_block_fp8(b.unsqueeze(0))
        bq, bsf = bq[0], bsf[0]
        asf = dg.get_mn_major_tma_aligned_tensor(asf)
        ref = dequant_a(aq, asf) @ dequant_b(bq.unsqueeze(0), bsf.unsqueeze(0))[0].t()
        contenders["libdg"] = lambda: dg.fp8_gemm_nt((aq, asf), (bq, bsf), d1)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.fp8_gemm_nt((aq, asf), (bq, bsf), d1, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.fp8_fp4_gemm_nt((aq, asf), (bq, bsf), d2,
                                                                       disable_ue8m0_cast=True)
            contenders["cublas"] = lambda: deep_gemm.cublaslt_gemm_nt(aq, bq, d2)
    elif nn:
        b = b.t().contiguous()  # [K, N]
        ref = a.float() @ b.float()
        contenders["libdg"] = lambda: dg.bf16_gemm_nn(a, b, d1)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.bf16_gemm_nn(a, b, d1, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.bf16_gemm_nn(a, b, d2)
        contenders["cublas"] = lambda: torch.matmul(a, b)
    else:
        ref = a.float() @ b.float().t()
        contenders["libdg"] = lambda: dg.bf16_gemm_nt(a, b, d1)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.bf16_gemm_nt(a, b, d1, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.bf16_gemm_nt(a, b, d2)
        contenders["cublas"] = lambda: torch.matmul(a, b.t())
    check_alts(row, contenders, lambda: d1.fill_(float("nan")), lambda: calc_diff(d1, ref))
    d1.fill_(float("nan"))
    contenders["libdg"]()
    row["diff_libdg"] = "%.1e" % calc_diff(d1, ref)
    if "deepgemm" in contenders:
        contenders["deepgemm"]()
        row["diff_deepgemm"] = "%.1e" % calc_diff(d2, ref)
    torch.cuda.synchronize()
    del ref
    race(row, contenders)


def contiguous(kind, groups, expected, n, k):
    ms = [int(expected * random.uniform(0.7, 1.3)) for _ in range(groups)]
    ms[random.randrange(groups)] = 0 if groups > 1 else ms[0]
    starts, m_total = [], 0
    for m in ms:
        starts.append(m_total)
        m_total += (m + ALIGN - 1) // ALIGN * ALIGN
    idx = torch.full((m_total,), -1, dtype=torch.int32, device="cuda")
    for g, (s, m) in enumerate(zip(starts, ms)):
        idx[s:s + m] = g
    a = torch.randn((m_total, k), device="cuda", dtype=torch.bfloat16)
    a[idx < 0] = 0
    b = torch.randn((groups, n, k), device="cuda", dtype=torch.bfloat16)
    d1 = torch.empty((m_total, n), device="cuda", dtype=torch.bfloat16)
    d2 = torch.empty_like(d1)
    row = dict(suite="contiguous", kind=kind, groups=groups, expected_m=expected, n=n, k=k, m_total=m_total,
               flops=2.0 * sum(ms) * n * k)
    contenders = {}
    if kind == "fp8":
        aq, asf = per_token_fp8(a)
        bq, bsf = per_block_fp8(b)
        asf = dg.get_mn_major_tma_aligned_tensor(asf)
        ref_a, ref_b = dequant_a(aq, asf), dequant_b(bq, bsf)
        contenders["libdg"] = lambda: dg.m_grouped_fp8_gemm_nt_contiguous((aq, asf), (bq, bsf), d1, idx)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.m_grouped_fp8_gemm_nt_contiguous(
                (aq, asf), (bq, bsf), d1, idx, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.m_grouped_fp8_gemm_nt_contiguous(
                (aq, asf), (bq, bsf), d2, idx, disable_ue8m0_cast=True)
            views = [(aq[s:s + m], bq[g], d2[s:s + m]) for g, (s, m) in enumerate(zip(starts, ms)) if m > 0]
            contenders["cublas"] = lambda: [deep_gemm.cublaslt_gemm_nt(x, y, z) for x, y, z in views]
    else:
        ref_a, ref_b = a.float(), b.float()
        contenders["libdg"] = lambda: dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d1, idx)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.m_grouped_bf16_gemm_nt_contiguous(
                a, b, d1, idx, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.m_grouped_bf16_gemm_nt_contiguous(a, b, d2, idx)
        views = [(a[s:s + m], b[g]) for g, (s, m) in enumerate(zip(starts, ms)) if m > 0]
        contenders["cublas"] = lambda: [torch.matmul(x, y.t()) for x, y in views]
    # Correctness of both libraries on the valid rows (one call each, before timing).
    ref = torch.zeros((m_total, n), device="cuda")
    for g, (s, m) in enumerate(zip(starts, ms)):
        if m:
            ref[s:s + m] = ref_a[s:s + m] @ ref_b[g].t()
    valid = idx >= 0
    check_alts(row, contenders, lambda: d1.fill_(float("nan")), lambda: calc_diff(d1[valid], ref[valid]))
    contenders["libdg"]()
    row["diff_libdg"] = "%.1e" % calc_diff(d1[valid], ref[valid])
    if "deepgemm" in contenders:
        contenders["deepgemm"]()
        row["diff_deepgemm"] = "%.1e" % calc_diff(d2[valid], ref[valid])
    torch.cuda.synchronize()
    race(row, contenders)


def masked(kind, groups, expected, n, k, fraction=None):
    """fraction: every group holds int(fraction * expected) rows (--masked-counts), else a draw from
    [0.7, 1.3] x expected per group."""
    ms = ([int(expected * fraction)] * groups if fraction is not None else
          [int(expected * random.uniform(0.7, 1.3)) for _ in range(groups)])
    masked_m = torch.tensor(ms, dtype=torch.int32, device="cuda")
    hint = int(expected * 1.2)
    a = torch.randn((groups, MAX_M, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((groups, n, k), device="cuda", dtype=torch.bfloat16)
    d1 = torch.empty((groups, MAX_M, n), device="cuda", dtype=torch.bfloat16)
    d2 = torch.empty_like(d1)
    row = dict(suite="masked", kind=kind, groups=groups, expected_m=expected, n=n, k=k, flops=2.0 * sum(ms) * n * k,
               hint=hint, max_m=MAX_M, ms=ms)
    contenders = {}
    if kind == "fp8":
        aq, asf = per_token_fp8(a)
        bq, bsf = per_block_fp8(b)
        asf = dg.get_mn_major_tma_aligned_tensor(asf)
        ref_a, ref_b = dequant_a(aq, asf), dequant_b(bq, bsf)
        contenders["libdg"] = lambda: dg.m_grouped_fp8_gemm_nt_masked((aq, asf), (bq, bsf), d1, masked_m, hint)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.m_grouped_fp8_gemm_nt_masked(
                (aq, asf), (bq, bsf), d1, masked_m, hint, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.m_grouped_fp8_gemm_nt_masked(
                (aq, asf), (bq, bsf), d2, masked_m, hint, disable_ue8m0_cast=True)
            views = [(aq[g, :m], bq[g], d2[g, :m]) for g, m in enumerate(ms) if m > 0]
            contenders["cublas"] = lambda: [deep_gemm.cublaslt_gemm_nt(x, y, z) for x, y, z in views]
    else:
        ref_a, ref_b = a.float(), b.float()
        contenders["libdg"] = lambda: dg.m_grouped_bf16_gemm_nt_masked(a, b, d1, masked_m, hint)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.m_grouped_bf16_gemm_nt_masked(
                a, b, d1, masked_m, hint, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.m_grouped_bf16_gemm_nt_masked(a, b, d2, masked_m, hint)
        views = [(a[g, :m], b[g]) for g, m in enumerate(ms) if m > 0]
        contenders["cublas"] = lambda: [torch.matmul(x, y.t()) for x, y in views]
    rr = [ref_a[g, :m] @ ref_b[g].t() for g, m in enumerate(ms)]
    ref = torch.cat(rr)
    check_alts(row, contenders, lambda: d1.fill_(float("nan")), lambda: calc_diff(torch.cat([d1[g, :m] for g, m in enumerate(ms)]), ref))
    contenders["libdg"]()
    if "deepgemm" in contenders:
        contenders["deepgemm"]()
    torch.cuda.synchronize()
    r1, r2 = [], []
    for g, m in enumerate(ms):
        r1.append(d1[g, :m])
        r2.append(d2[g, :m])
    row["diff_libdg"] = "%.1e" % calc_diff(torch.cat(r1), ref)
    if "deepgemm" in contenders:
        row["diff_deepgemm"] = "%.1e" % calc_diff(torch.cat(r2), ref)
    race(row, contenders)


def k_grouped(kind, groups, m, n, expected_k):
    """D[g] = C[g] + A_g^T B_g over each group's K slice, C aliased with D (as DeepGEMM's test)."""
    ks = [max(ALIGN, int(expected_k * random.uniform(0.7, 1.3)) // ALIGN * ALIGN) for _ in range(groups)]
    ks[random.randrange(groups)] = 0
    k = sum(ks)
    starts = [sum(ks[:g]) for g in range(groups)]
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device="cuda")
    a = torch.randn((k, m), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((k, n), device="cuda", dtype=torch.bfloat16)
    c = torch.randn((groups, m, n), device="cuda", dtype=torch.float) * 32
    d1, d2 = c.clone(), c.clone()
    row = dict(suite="k-grouped", kind=kind, groups=groups, expected_m=m, n=n, k=expected_k,
               flops=2.0 * m * n * k, ks=ks)
    contenders = {}
    if kind == "fp8":
        # Per-token (per column of the [K, MN] operands) scales per 128 K, each group cast on its own.
        qa, qb = per_token_fp8(a.T.contiguous()), per_token_fp8(b.T.contiguous())
        sfa, sfb = dg.get_mn_major_tma_aligned_tensor(qa[1]), dg.get_mn_major_tma_aligned_tensor(qb[1])
        ref_a, ref_b = dequant_a(*qa).T, dequant_a(*qb).T
        # Flat K-major operands: group g's [MN, k_g] row-major block after the previous groups'.
        fa = torch.cat([qa[0][:, s:s + kg].flatten() for s, kg in zip(starts, ks)])
        fb = torch.cat([qb[0][:, s:s + kg].flatten() for s, kg in zip(starts, ks)])
        contenders["libdg"] = lambda: dg.k_grouped_fp8_gemm_nt_contiguous((fa, sfa), (fb, sfb), d1, ks, ks_tensor, c=d1)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.k_grouped_fp8_gemm_nt_contiguous(
                (fa, sfa), (fb, sfb), d1, ks, ks_tensor, c=d1, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.k_grouped_fp8_gemm_nt_contiguous(
                (fa, sfa), (fb, sfb), d2, ks, ks_tensor, d2, recipe=(1, 1, 128))
        views = [(fa[m * s:m * (s + kg)].view(m, kg), fb[n * s:n * (s + kg)].view(n, kg), d2[g])
                 for g, (s, kg) in enumerate(zip(starts, ks)) if kg]
        contenders["cublas"] = lambda: [dg.cublaslt_gemm_nt(x, y, z, c=z) for x, y, z in views]
    else:
        ref_a, ref_b = a.float(), b.float()
        contenders["libdg"] = lambda: dg.k_grouped_bf16_gemm_tn_contiguous(a, b, d1, ks, ks_tensor, c=d1)
        for name in ALT:
            contenders["libdg_" + name] = lambda name=name: dg.k_grouped_bf16_gemm_tn_contiguous(
                a, b, d1, ks, ks_tensor, c=d1, **alt_kwargs(name))
        if deep_gemm is not None:
            contenders["deepgemm"] = lambda: deep_gemm.k_grouped_bf16_gemm_tn_contiguous(a, b, d2, ks, ks_tensor, d2)
        views = [(a[s:s + kg], b[s:s + kg], d2[g]) for g, (s, kg) in enumerate(zip(starts, ks)) if kg]
        contenders["cublas"] = lambda: [dg.cublaslt_gemm_tn(x, y, z, c=z) for x, y, z in views]
    ref = c.clone()
    for g, (s, kg) in enumerate(zip(starts, ks)):
        ref[g] += ref_a[s:s + kg].T @ ref_b[s:s + kg]
    check_alts(row, contenders, lambda: d1.copy_(c), lambda: calc_diff(d1, ref))
    d1.copy_(c)
    contenders["libdg"]()
    row["diff_libdg"] = "%.1e" % calc_diff(d1, ref)
    if "deepgemm" in contenders:
        d2.copy_(c)
        contenders["deepgemm"]()
        row["diff_deepgemm"] = "%.1e" % calc_diff(d2, ref)
    torch.cuda.synchronize()
    del ref, ref_a, ref_b
    race(row, contenders)


def mqa_inputs(rows, heads, dim, keys):
    q = torch.randn(rows, heads, dim, device="cuda").to(torch.float8_e4m3fn)
    kv_f = torch.randn(keys, dim, device="cuda")
    sf = kv_f.abs().amax(dim=1).clamp(min=1e-4) / 448.0
    return q, (kv_f / sf[:, None]).to(torch.float8_e4m3fn), sf, torch.rand(rows, heads, device="cuda")


def mqa(s_q, s_kv, window=0):
    """Non-paged MQA logits; row fields: G = H, m = S_q, n = S_kv (the window with compressed logits), k = D.
    window > 0: DeepGEMM's compressed layout (max_seqlen_k = window), row i holds keys [ks, ke) from column 0."""
    heads, dim = 64, 128
    q, kv, sf, w = mqa_inputs(s_q, heads, dim, s_kv)
    ke = torch.arange(s_q, dtype=torch.int32, device="cuda") + (s_kv - s_q)
    ks = (ke - window).clamp(min=0) if window else torch.zeros(s_q, dtype=torch.int32, device="cuda")
    pairs = int((ke - ks).clamp(min=0).sum())
    row = dict(suite="mqa-compressed" if window else "mqa", kind="fp8", groups=heads, expected_m=s_q,
               n=window or s_kv, k=dim, flops=2.0 * pairs * heads * dim)
    extra = dict(max_seqlen_k=window) if window else {}
    contenders = {"libdg": lambda: dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=False, **extra)}
    if deep_gemm is not None:
        contenders["deepgemm"] = lambda: deep_gemm.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=False, **extra)
    # Values on sampled rows against float64 (the whole reference would not fit at S_kv 65536).
    sample = torch.randint(0, s_q, (16,), device="cuda")
    j = torch.arange(s_kv, device="cuda")[None, :]
    inside = (j >= ks[sample, None]) & (j < ke[sample, None])
    ref = torch.einsum("rhd,kd->rhk", q[sample].double(), kv.double()).clamp(min=0)
    ref = (ref * w[sample].double()[:, :, None]).sum(dim=1) * sf.double()[None, :]
    for name in ("libdg", "deepgemm"):
        if name in contenders:
            out = contenders[name]()
            if window:  # back to key columns: row r's column c is key ks[r] + c
                full = torch.zeros(len(sample), s_kv, dtype=out.dtype, device="cuda")
                for i, r in enumerate(sample.tolist()):
                    n = int(ke[r] - ks[r])
                    full[i, int(ks[r]):int(ke[r])] = out[r, :n]
                got = full
            else:
                got = out[sample]
            row["diff_" + name] = "%.1e" % calc_diff(got[inside], ref[inside])
    del ref
    torch.cuda.synchronize()
    race(row, contenders)


_GATHER = []


def gather_read(cache, ids):
    """Reads the cache blocks `ids` (the blocks a paged call reads, in its order) and nothing else:
    one Triton program per block sums its words into one int32. The read rate of the same scattered
    blocks with no work on them, beside the copy's streaming rate."""
    if not _GATHER:
        @triton.jit
        def gather_sum(src, blocks, out, WORDS: tl.constexpr, CHUNK: tl.constexpr):
            pid = tl.program_id(0)
            base = src + tl.load(blocks + pid).to(tl.int64) * WORDS
            acc = tl.zeros([CHUNK], dtype=tl.int32)
            for off in range(0, WORDS, CHUNK):
                idx = off + tl.arange(0, CHUNK)
                acc += tl.load(base + idx, mask=idx < WORDS, other=0)
            tl.store(out + pid, tl.sum(acc, axis=0))
        _GATHER.append(gather_sum)
    words = cache[0].numel() // 4
    src = cache.view(torch.int32).view(-1)
    out = torch.empty(ids.numel(), dtype=torch.int32, device=ids.device)
    return lambda: _GATHER[0][(ids.numel(),)](src, ids, out, WORDS=words, CHUNK=1024, num_warps=4)


def paged_mqa(batch, next_n, avg):
    """Paged MQA logits; row fields: G = H, m = B, n = the average context, k = next_n. The cuBLAS
    column is a device copy that moves as many bytes as the call reads (half read, half written):
    the bandwidth bound. `us_gather`: gather_read of the blocks the call reads (the table lists
    t_gather / t_libdg per row)."""
    heads, dim = 64, 128
    lens = [int(avg * random.uniform(0.7, 1.3)) for _ in range(batch)]
    max_ctx = max(lens)
    max_blocks = (max_ctx + 63) // 64
    num_blocks = batch * max_blocks
    q, _, _, w = mqa_inputs(batch * next_n, heads, dim, 1)
    q = q.view(batch, next_n, heads, dim)
    # The cache's values straight in FP8 (in chunks: an FP32 copy of 16 K-token contexts would not fit).
    kv = torch.empty(num_blocks * 64, dim, dtype=torch.float8_e4m3fn, device="cuda")
    for r0 in range(0, kv.shape[0], 1 << 20):
        kv[r0:r0 + (1 << 20)] = torch.randn(min(1 << 20, kv.shape[0] - r0), dim, device="cuda",
                                            dtype=torch.bfloat16).to(torch.float8_e4m3fn)
    sf = torch.rand(num_blocks * 64, device="cuda") * 0.01 + 0.001
    cache = torch.empty(num_blocks, 64 * (dim + 4), dtype=torch.uint8, device="cuda")
    cache[:, :64 * dim] = kv.view(torch.uint8).view(num_blocks, 64 * dim)
    cache[:, 64 * dim:] = sf.view(torch.uint8).view(num_blocks, 256)
    cache = cache.view(num_blocks, 64, 1, dim + 4)
    table = torch.randperm(num_blocks, device="cuda").view(batch, max_blocks).int()
    ctx = torch.tensor(lens, dtype=torch.int32, device="cuda")
    ctx = torch.stack([(ctx - (next_n - 1 - j)).clamp(min=0) for j in range(next_n)], dim=1).contiguous()
    read = sum((n + 63) // 64 for n in lens) * 64 * (dim + 4)
    src = torch.empty(read // 2, dtype=torch.uint8, device="cuda")  # the copy moves as many bytes
    dst = torch.empty_like(src)
    row = dict(suite="paged-mqa", kind="fp8", groups=heads, expected_m=batch, n=avg, k=next_n,
               flops=2.0 * sum(lens) * next_n * heads * dim, bytes=read)
    sched = dg.get_paged_mqa_logits_metadata(ctx, 64, dg.get_num_sms())
    blocks = torch.cat([table[b, :(n + 63) // 64] for b, n in enumerate(lens)]).contiguous()
    contenders = {"libdg": lambda: dg.fp8_paged_mqa_logits(q, cache, w, ctx, table, sched, max_ctx),
                  "cublas": lambda: dst.copy_(src), "gather": gather_read(cache, blocks)}
    if deep_gemm is not None:
        sched2 = deep_gemm.get_paged_mqa_logits_metadata(ctx, 64, deep_gemm.get_num_sms())
        contenders["deepgemm"] = lambda: deep_gemm.fp8_paged_mqa_logits(q, cache, w, ctx, table, sched2, max_ctx)
    # Values of a few sequences against float64, through the block table.
    for name in ("libdg", "deepgemm"):
        if name not in contenders:
            continue
        logits = contenders[name]()
        got, ref = [], []
        for b in range(0, batch, max(1, batch // 4)):
            keys = (table[b].long()[:, None] * 64 + torch.arange(64, device="cuda")).view(-1)[:max_ctx]
            for j in range(next_n):
                end = int(ctx[b, j])
                r = b * next_n + j
                s = torch.einsum("hd,kd->hk", q[b, j].double(), kv[keys[:end]].double()).clamp(min=0)
                ref.append((s * w[r].double()[:, None]).sum(dim=0) * sf[keys[:end]].double())
                got.append(logits[r, :end].double())
        row["diff_" + name] = "%.1e" % calc_diff(torch.cat(got), torch.cat(ref))
    torch.cuda.synchronize()
    # The copy stays a direct call: captured, it becomes a memcpy node, 20% slower than its kernel.
    race(row, {name: fn if name in ("cublas", "gather") else graphed(fn) for name, fn in contenders.items()})


def hc_prenorm(m, k, splits, n=24):
    """tf32_hc_prenorm_gemm; row fields: G = num_splits (0: None), m = M, n = N, k = K. The cuBLAS column is a
    device copy moving as many bytes as the call reads and writes (half read, half written): t_cublas / t_libdg
    is libdg's fraction of the device copy rate. The diff is of the split-summed D against FP64."""
    a = torch.randn((m, k), dtype=torch.bfloat16, device="cuda")
    b = torch.randn((n, k), dtype=torch.float, device="cuda")
    shape_d, shape_s = ((splits, m, n), (splits, m)) if splits else ((m, n), (m,))
    outs = {name: (torch.empty(shape_d, device="cuda"), torch.empty(shape_s, device="cuda"))
            for name in ("libdg", "deepgemm")}
    moved = a.numel() * 2 + b.numel() * 4 + (outs["libdg"][0].numel() + outs["libdg"][1].numel()) * 4
    src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    row = dict(suite="hc-prenorm", kind="tf32", groups=splits, expected_m=m, n=n, k=k, flops=2.0 * m * n * k,
               bytes=moved)
    ns = splits or None
    contenders = {"libdg": lambda: dg.tf32_hc_prenorm_gemm(a, b, *outs["libdg"], num_splits=ns)}
    if deep_gemm is not None and hasattr(deep_gemm, "tf32_hc_prenorm_gemm"):
        contenders["deepgemm"] = lambda: deep_gemm.tf32_hc_prenorm_gemm(a, b, *outs["deepgemm"], num_splits=ns)
    ref_d = a.double() @ b.double().T
    ref_s = a.double().square().sum(-1)
    for name, fn in contenders.items():
        fn()
        d, s = outs[name]
        got_d, got_s = (d.sum(0), s.sum(0)) if splits else (d, s)
        row["diff_" + name] = "%.1e" % max(calc_diff(got_d, ref_d), calc_diff(got_s, ref_s))
    del ref_d, ref_s
    torch.cuda.synchronize()
    contenders["cublas"] = lambda: dst.copy_(src)
    race(row, contenders)


_GROUP_QUANT = []


def triton_group_quant(x, q, sf, amax_floor=1e-4):
    """Per-token 1 x 128 FP8 quantization the way inference engines run it today: one Triton program
    per group of 128 consecutive elements of a row (x [M, K] contiguous, K % 128 == 0), reading the
    group, reducing its amax and writing its codes and its scale; the scales go to sf's strides (here
    the MN-major TMA-aligned layout the GEMMs read, which engines write with a column-major option).
    The numerics follow docs/quantization.md: scale = max(amax, floor) / 448 and codes E4M3(x * (1 /
    scale)) with IEEE divisions, so that the codes and scales equal libdg's bit for bit."""
    if not _GROUP_QUANT:
        @triton.jit
        def group_quant(x_ptr, q_ptr, sf_ptr, groups_per_row, sf_ld, floor, GROUP: tl.constexpr):
            g = tl.program_id(0).to(tl.int64)
            row = g // groups_per_row
            kb = g - row * groups_per_row
            offs = g * GROUP + tl.arange(0, GROUP)
            v = tl.load(x_ptr + offs).to(tl.float32)
            amax = tl.maximum(tl.max(tl.abs(v), axis=0), floor)
            scale = tl.math.div_rn(amax, 448.0)  # 448: the largest E4M3 value
            inv = tl.math.div_rn(1.0, scale)
            y = tl.clamp(v * inv, -448.0, 448.0)
            tl.store(q_ptr + offs, y.to(q_ptr.dtype.element_ty))
            tl.store(sf_ptr + kb * sf_ld + row, scale)
        _GROUP_QUANT.append(group_quant)
    m, k = x.shape
    groups = m * (k // 128)
    return lambda: _GROUP_QUANT[0][(groups,)](x, q, sf, k // 128, sf.stride(1), amax_floor, GROUP=128, num_warps=1,
                                               num_stages=1)


def quant(m, k):
    """dg.quantize_fp8_per_token of BF16 [M, K] (scales MN-major TMA-aligned) beside triton_group_quant on
    the same tensors; row fields: m = M, k = K, n = 0, flops = M x K (elements). Both must give the same
    codes and scales bit for bit (checked before timing, recorded as `mismatch_codes` / `mismatch_scales`).
    The cuBLAS column is a device copy moving as many bytes as the quantization reads and writes (half
    read, half written): t_cublas / t_libdg is libdg's fraction of the device copy rate. All three run
    as replays of a CUDA graph, so that host time of the Python launch paths stays out and each pays
    the same launch (a graph's replay costs 0.3-0.4 us more on the GPU than a plain launch on an
    H200)."""
    x = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    x[:, :128] *= 1e-3  # groups of another magnitude
    x[1, 128:256] = 0   # an all-zero group
    q1, sf1 = dg.quantize_fp8_per_token(x)
    q2 = torch.empty_like(q1)
    sf2 = torch.empty_strided(sf1.size(), sf1.stride(), dtype=sf1.dtype, device="cuda")
    moved = x.numel() * 3 + sf1.stride(1) * sf1.size(1) * 4
    src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    row = dict(suite="quant", kind="bf16", groups=1, expected_m=m, n=0, k=k, flops=float(m * k), bytes=moved)
    contenders = {"libdg": lambda: dg.quantize_fp8_per_token(x, q1, sf1),
                  "triton": triton_group_quant(x, q2, sf2)}
    for t in (q1, q2):
        t.view(torch.uint8).fill_(0xff)
    for t in (sf1, sf2):
        t.fill_(float("nan"))
    for fn in contenders.values():
        fn()
    torch.cuda.synchronize()
    row["mismatch_codes"] = int((q1.view(torch.uint8) != q2.view(torch.uint8)).sum())
    row["mismatch_scales"] = int((sf1.view(torch.int32) != sf2.view(torch.int32)).sum())
    if row["mismatch_codes"] or row["mismatch_scales"]:
        print("quant m=%d k=%d: libdg and Triton differ in %d codes and %d scales" % (
            m, k, row["mismatch_codes"], row["mismatch_scales"]), flush=True)
    deq = (q1.float().view(m, k // 128, 128) * sf1.unsqueeze(-1)).view(m, k)
    row["diff_libdg"] = "%.1e" % calc_diff(deq, x.float())
    del deq
    timed = {name: graphed(fn) for name, fn in contenders.items()}
    timed["cublas"] = graphed(lambda: dst.copy_(src))
    race(row, timed)


def check_outputs(row, contenders, outs, ref, reset):
    """Runs each contender once on its output (outs[name], first reset: poisoned or zeroed) and records
    its calc_diff against the reference `ref` in the row. An --alt contender that cannot run the problem
    is reported and dropped from `contenders`."""
    for name, fn in list(contenders.items()):
        reset(outs[name])
        try:
            fn()
        except Exception as e:
            if not name.startswith("libdg_"):
                raise
            print("%s %s cannot run: %s" % (row["suite"], name, repr(e)[:200]), flush=True)
            del contenders[name]
            continue
        row["diff_" + name] = "%.1e" % calc_diff(outs[name], ref)
    torch.cuda.synchronize()


def einsum_sum(s_, m, n, k, fp32):
    """einsum("bmk,bnk->mn"); row fields: G = s (the batch summed over), m, n, k; kind bmk32 (FP32 D, c = d,
    accumulating on every replay) or bmk16 (BF16 D, no c). The cuBLAS column is torch.einsum (one GEMM over
    the permuted operands, their copies included). The diff is of one call on D = 0 (FP32) against FP64."""
    a = torch.randn((s_, m, k), dtype=torch.bfloat16, device="cuda")
    b = torch.randn((s_, n, k), dtype=torch.bfloat16, device="cuda")
    dtype = torch.float if fp32 else torch.bfloat16
    outs = {name: torch.zeros((m, n), dtype=dtype, device="cuda") for name in ("libdg", "deepgemm")}
    row = dict(suite="einsum", kind="bmk32" if fp32 else "bmk16", groups=s_, expected_m=m, n=n, k=k,
               flops=2.0 * s_ * m * n * k)
    contenders = {"libdg": lambda: dg.einsum("bmk,bnk->mn", a, b, outs["libdg"], c=outs["libdg"] if fp32 else None)}
    if not fp32:  # libdg sums into FP32 D: the drop-in's BF16 path, a temporary and a cast
        tmp = torch.empty((m, n), dtype=torch.float, device="cuda")
        contenders["libdg"] = lambda: (dg.einsum("bmk,bnk->mn", a, b, tmp), outs["libdg"].copy_(tmp))
    if deep_gemm is not None and hasattr(deep_gemm, "einsum"):
        dd = outs["deepgemm"]
        contenders["deepgemm"] = lambda: deep_gemm.einsum("bmk,bnk->mn", a, b, dd, c=dd if fp32 else None)
    ref = torch.bmm(a.double(), b.double().mT).sum(0)
    check_outputs(row, contenders, outs, ref, lambda t: t.zero_())
    del ref
    timed = {name: graphed(fn) for name, fn in contenders.items()}
    timed["cublas"] = lambda: torch.einsum("bmk,bnk->mn", a, b)
    race(row, timed)


def einsum_heads(expr, h, r, d, b):
    """einsum("bhr,hdr->bhd") or ("bhd,hdr->bhr") with y a view of [h, d, r + 128] (as DeepGEMM's test); row
    fields: G = h, m = b, n = d or r (the columns per head), k = r or d (the contraction); kind bhr or bhd.
    The cuBLAS column is DeepGEMM's use_cublaslt=True path where DeepGEMM is present, else torch.einsum."""
    absorb = expr.startswith("bhr")
    x = torch.randn((b, h, r if absorb else d), dtype=torch.bfloat16, device="cuda")
    y = torch.randn((h, d, r + 128), dtype=torch.bfloat16, device="cuda")[:, :, :r]
    shape = (b, h, d if absorb else r)
    outs = {name: torch.empty(shape, dtype=torch.bfloat16, device="cuda")
            for name in ["libdg", "deepgemm", "cublas"] + ["libdg_" + a for a in ALT]}
    row = dict(suite="einsum", kind="bhr" if absorb else "bhd", groups=h, expected_m=b, n=d if absorb else r,
               k=r if absorb else d, flops=2.0 * b * h * r * d)
    contenders = {"libdg": lambda: dg.einsum(expr, x, y, outs["libdg"])}
    for name in ALT:
        contenders["libdg_" + name] = lambda o=outs["libdg_" + name], name=name: dg.einsum(
            expr, x, y, o, **alt_kwargs(name))
    if deep_gemm is not None and hasattr(deep_gemm, "einsum"):
        contenders["deepgemm"] = lambda: deep_gemm.einsum(expr, x, y, outs["deepgemm"])
        contenders["cublas"] = lambda: deep_gemm.einsum(expr, x, y, outs["cublas"], use_cublaslt=True)
    else:
        contenders["cublas"] = lambda: outs["cublas"].copy_(torch.einsum(expr, x, y))
    ref = torch.einsum(expr, x.double(), y.double())
    check_outputs(row, contenders, outs, ref, lambda t: t.fill_(float("nan")))
    del ref
    race(row, {name: graphed(fn) for name, fn in contenders.items()})


def einsum_fp8(h, r, d, b):
    """fp8_einsum("bhr,hdr->bhd") on the operands of DeepGEMM's test: x per token (scales [b, h, r/128],
    row-major as per_token_cast_to_fp8 gives them: both libraries bring them into their layout per call),
    each head of y per 128 x 128 block. Row fields as einsum_heads, kind bhr8. The cuBLAS column is the
    BF16 torch.einsum of the unquantized operands; the diff is against the FP64 einsum of the dequantized ones."""
    expr = "bhr,hdr->bhd"
    x = torch.randn((b, h, r), dtype=torch.bfloat16, device="cuda")
    y = torch.randn((h, d, r), dtype=torch.bfloat16, device="cuda")
    xq = per_token_fp8(x)
    yq = per_block_fp8(y)
    outs = {name: torch.empty((b, h, d), dtype=torch.bfloat16, device="cuda")
            for name in ["libdg", "deepgemm", "cublas"] + ["libdg_" + a for a in ALT]}
    row = dict(suite="einsum", kind="bhr8", groups=h, expected_m=b, n=d, k=r, flops=2.0 * b * h * r * d)
    contenders = {"libdg": lambda: dg.fp8_einsum(expr, xq, yq, outs["libdg"])}
    for name in ALT:
        contenders["libdg_" + name] = lambda o=outs["libdg_" + name], name=name: dg.fp8_einsum(
            expr, xq, yq, o, **alt_kwargs(name))
    if deep_gemm is not None and hasattr(deep_gemm, "fp8_einsum"):
        contenders["deepgemm"] = lambda: deep_gemm.fp8_einsum(expr, xq, yq, outs["deepgemm"])
    contenders["cublas"] = lambda: outs["cublas"].copy_(torch.einsum(expr, x, y))
    ref = torch.einsum(expr, dequant_a(*xq).double(), dequant_b(*yq).double())
    check_outputs(row, contenders, outs, ref, lambda t: t.fill_(float("nan")))
    del ref
    race(row, {name: graphed(fn) for name, fn in contenders.items()})


def skip_head_mid(m, n, k, splits=HEAD_SPLITS):
    """fp8_gemm_nt_skip_head_mid; row fields: G = heads, n = N (the GEMM's columns), k = K. The cuBLAS column is
    cuBLASLt's FP8 GEMM (no block scales) into a temporary [M, N]: the GEMM alone, before any copy into the heads.
    The diff is over the head columns against an FP32 reference; mid_kept says the mid columns kept their NaN."""
    left, mid, right = splits
    heads = n // (left + right)
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, k), device="cuda", dtype=torch.bfloat16)
    aq, asf = per_token_fp8(a)
    bq, bsf = per_block_fp8(b.unsqueeze(0))
    bq, bsf = bq[0], bsf[0]
    asf = dg.get_mn_major_tma_aligned_tensor(asf)
    outs = {name: torch.empty((m, heads * (left + mid + right)), device="cuda", dtype=torch.bfloat16)
            for name in ("libdg", "deepgemm")}
    full = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
    row = dict(suite="skip-head-mid", kind="fp8", groups=heads, expected_m=m, n=n, k=k, flops=2.0 * m * n * k)
    contenders = {"libdg": lambda: dg.fp8_gemm_nt_skip_head_mid((aq, asf), (bq, bsf), outs["libdg"], splits)}
    for name in ALT:
        contenders["libdg_" + name] = lambda name=name: dg.fp8_gemm_nt_skip_head_mid(
            (aq, asf), (bq, bsf), outs["libdg"], splits, **alt_kwargs(name))
    if deep_gemm is not None and hasattr(deep_gemm, "fp8_gemm_nt_skip_head_mid"):
        contenders["deepgemm"] = lambda: deep_gemm.fp8_gemm_nt_skip_head_mid(
            (aq, asf), (bq, bsf), outs["deepgemm"], splits, disable_ue8m0_cast=True)
        contenders["cublas"] = lambda: deep_gemm.cublaslt_gemm_nt(aq, bq, full)
    ref = (dequant_a(aq, asf) @ dequant_b(bq.unsqueeze(0), bsf.unsqueeze(0))[0].t()).view(m, heads, left + right)

    def heads_diff(out):
        got = out.view(m, heads, left + mid + right)
        return calc_diff(torch.cat([got[:, :, :left], got[:, :, left + mid:]], dim=2), ref)

    for name in ("libdg", "deepgemm"):
        if name not in contenders:
            continue
        outs[name].fill_(float("nan"))
        contenders[name]()
        row["diff_" + name] = "%.1e" % heads_diff(outs[name])
        row["mid_kept_" + name] = bool(torch.isnan(outs[name].view(m, heads, -1)[:, :, left:left + mid]).all())
    check_alts(row, contenders, lambda: outs["libdg"].fill_(float("nan")), lambda: heads_diff(outs["libdg"]))
    del ref
    torch.cuda.synchronize()
    race(row, contenders)


def geomean(sel, peer):
    vals = [r["us_" + peer] / r["us_libdg"] for r in sel if r.get("us_" + peer) and r.get("us_libdg")]
    return (math.exp(sum(math.log(v) for v in vals) / len(vals)), len(vals), min(vals)) if vals else None


def report(out_dir, meta=None):
    lines = ["m: M (dense, K-grouped) or expected rows per group (M-grouped); k: K (dense, M-grouped) or expected K"
             " per group (K-grouped). mqa: G = H, m = S_q, n = S_kv, k = D. paged-mqa: G = H, m = B, n = the"
             " average context, k = next_n, and the cuBLAS column is a device copy moving as many bytes as the"
             " call reads. mqa-compressed: as mqa with n = max_seqlen_k, the window of keys each row scores."
             " hc-prenorm: G = num_splits (0: none), m = M, n = N, k = K, and the cuBLAS column is a device copy"
             " moving as many bytes as the call reads and writes.", "",
             "| suite | kind | G | m | n | k | libdg us | DeepGEMM us | cuBLAS us | libdg TFLOPS |"
             " t_DeepGEMM/t_libdg | t_cuBLAS/t_libdg | diff libdg |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lib, peer, cub = r.get("us_libdg"), r.get("us_deepgemm"), r.get("us_cublas")
        lines.append("| %s | %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["suite"], r["kind"], r["groups"], r["expected_m"], r["n"], r["k"], lib, peer, cub,
            "%.0f" % (r["flops"] / lib / 1e6) if lib else "-",
            "%.3f" % (peer / lib) if lib and peer else "-", "%.3f" % (cub / lib) if lib and cub else "-",
            r.get("diff_libdg", "-")))
    gathered = [r for r in rows if r.get("us_gather") and r.get("us_libdg")]
    if gathered:
        lines += ["", "paged-mqa, a read of the same cache blocks with no work (gather_read) against libdg's call, "
                  "t_gather / t_libdg: " + ", ".join("%.3f" % (r["us_gather"] / r["us_libdg"]) for r in gathered)]
    quantized = [r for r in rows if r["suite"] == "quant" and r.get("us_libdg")]
    if quantized:
        gm = geomean(quantized, "triton")
        lines += ["", "quant rows: m = M and k = K of the BF16 input, TFLOPS counts elements, the cuBLAS column is a device"
                  " copy moving the bytes the quantization reads and writes. Per M x K: t_triton / t_libdg, t_copy /"
                  " t_libdg, codes / scales that differ between them: " + ", ".join(
            "%dx%d: %s, %s, %s / %s" % (r["expected_m"], r["k"],
                                       "%.3f" % (r["us_triton"] / r["us_libdg"]) if r.get("us_triton") else "-",
                                       "%.3f" % (r["us_cublas"] / r["us_libdg"]) if r.get("us_cublas") else "-",
                                       r.get("mismatch_codes"), r.get("mismatch_scales")) for r in quantized)
                  + ("; vs Triton (geomean, n, min): %.3f, %d, %.3f" % gm if gm else "")]
    for name in ALT:
        lines += ["", "libdg_%s (%s) against the heuristic's choice, t_libdg / t_libdg_%s: " % (name, ALT[name], name)
                  + ", ".join("%.3f" % (r["us_libdg"] / r["us_libdg_" + name]) for r in rows
                              if r.get("us_libdg") and r.get("us_libdg_" + name))]
    lines += ["", "| suite | kind | vs DeepGEMM (geomean, n, min) | vs cuBLAS (geomean, n, min) |", "|---|---|---|---|"]
    for suite in SUITES:
        measured = list(dict.fromkeys(r["kind"] for r in rows if r["suite"] == suite))
        kinds = [k for k in ("fp8", "bf16", "tf32") if k in measured] + [k for k in measured if k not in
                                                                          ("fp8", "bf16", "tf32")]
        for kind in kinds:
            sel = [r for r in rows if r["suite"] == suite and r["kind"] == kind]
            cells = []
            for peer in ("deepgemm", "cublas"):
                gm = geomean(sel, peer)
                cells.append("%.3f, %d, %.3f" % gm if gm else "-")
            lines.append("| %s | %s | %s | %s |" % (suite, kind, cells[0], cells[1]))
            for name in ALT:
                vals = [r["us_deepgemm"] / r["us_libdg_" + name] for r in sel
                        if r.get("us_deepgemm") and r.get("us_libdg_" + name)]
                if vals:
                    lines.append("| %s | %s with libdg_%s | %.3f, %d, %.3f | |" % (
                        suite, kind, name, math.exp(sum(map(math.log, vals)) / len(vals)), len(vals), min(vals)))
    timings = sorted({r.get("timing", "blocks") for r in rows})
    lines += ["", "Timing: " + "; ".join({
        "interleaved-clean": "calls alternated one by one between the contenders, each after an L2 flush that leaves"
                             " L2 clean, the median per contender (rows with timing interleaved-clean)",
        "interleaved": "calls alternated one by one between the contenders, each after an L2 flush that zeroes 256 MB"
                       " (the call pays the write-back of up to one L2 of dirty lines), the median per contender"
                       " (rows with timing interleaved)",
        "blocks": "triton do_bench per contender, ~100 ms of calls each, best of two rounds (rows without a timing"
                  " field or with timing blocks)"}[t] for t in timings) + "."]
    said = set()  # merged runs of the same suites and versions (one per dtype) are named once
    for run in (meta or {}).get("runs", []):
        line = "Rows of %s: libdg %s, DeepGEMM %s, %s." % (", ".join(run["suites"]), run["libdg"], run["deepgemm"],
                                                          run["device"])
        if line not in said:
            said.add(line)
            lines += ["", line]
    text = "\n".join(lines)
    print(text, flush=True)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, NAME + ".txt"), "w") as f:
        f.write(text + "\n")
    if meta is None:
        meta = dict(device=torch.cuda.get_device_name(), libdg=dg.version(),
                    deepgemm=getattr(deep_gemm, "__version__", None) if deep_gemm else None, torch=torch.__version__,
                    alt=ALT)
    with open(os.path.join(out_dir, NAME + ".json"), "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)


def plot(out_dir, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", flush=True)
        return
    suites = [s for s in SUITES if any(r["suite"] == s for r in rows)]
    fig, axes = plt.subplots(len(suites), 1, figsize=(15, 4.5 * len(suites)), sharey=True, squeeze=False)
    for ax, suite in zip(axes[:, 0], suites):
        sel = [r for r in rows if r["suite"] == suite and r.get("us_libdg")]
        labels = ["%s G%d m%d\n%dx%d" % (r["kind"], r["groups"], r["expected_m"], r["n"], r["k"]) for r in sel]
        x = range(len(sel))
        # paged-mqa's and hc-prenorm's cuBLAS column is the device copy of the bytes the call moves.
        second = "copy" if suite in ("paged-mqa", "hc-prenorm", "quant") else "cublas"
        first = "triton" if suite == "quant" else "deepgemm"
        for off, peer, name, color in ((-0.2, first, first, "tab:blue"), (0.2, "cublas", second, "tab:gray")):
            ax.bar([i + off for i in x], [r["us_" + peer] / r["us_libdg"] if r.get("us_" + peer) else 0 for r in sel],
                   width=0.4, color=color, label="t_%s / t_libdg" % name)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=8, rotation=90)
        ax.set_title("%s (> 1: libdg faster)" % ("M-grouped " + suite if suite in ("contiguous", "masked") else suite))
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    # Rendered at a low resolution and reduced to a 64-colour palette (flat bars and text), so that the
    # committed plots stay small. Pillow is a dependency of matplotlib.
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    from PIL import Image
    Image.open(buf).convert("RGB").quantize(colors=64).save(os.path.join(out_dir, NAME + ".png"), optimize=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suites", nargs="*", default=list(SUITES), help="any of %s (default: all)" % ", ".join(SUITES))
    ap.add_argument("--fp8-only", action="store_true")
    ap.add_argument("--bf16-only", action="store_true")
    ap.add_argument("--out", default=".")
    ap.add_argument("--name", default=NAME)
    ap.add_argument("--m", help="the dense suite's M values, comma-separated (default: %s)" % DENSE_M)
    ap.add_argument("--nk", help="the dense suite's (N, K) shapes, NxK comma-separated (default: DeepSeek-V3's %s)"
                    % ",".join("%dx%d" % nk for nk in DENSE_NK))
    ap.add_argument("--dense-nn", action="store_true",
                    help="the dense suite's BF16 rows with B [K, N] (MN-major, the nn call; kind bf16nn); needs "
                    "--bf16-only (FP8 reads K-major operands)")
    ap.add_argument("--kg", help="the k-grouped suite's sets, G:M:N:K (K the expected K per group) comma-separated "
                    "(default: %s)" % ",".join("%d:%d:%d:%d" % s for s in K_GROUPED))
    ap.add_argument("--contiguous", help="the contiguous suite's sets, G:M (M the expected rows per group) "
                    "comma-separated (default: %s)" % ",".join("%d:%d" % s for s in CONTIGUOUS))
    ap.add_argument("--masked", help="the masked suite's sets, G:M (M the expected rows per group) comma-separated "
                    "(default: %s)" % ",".join("%d:%d" % s for s in MASKED))
    ap.add_argument("--masked-counts", help="fractions F of the expected rows, comma-separated: each masked set runs "
                    "once per F with every group holding int(F x M) rows, instead of one draw from [0.7, 1.3] x M "
                    "(the rounds of tiles a hint-planned config takes depend on the count: e.g. "
                    "0.72,0.82,0.92,1.02,1.12,1.22,1.30)")
    ap.add_argument("--masked-draws", type=int, default=1,
                    help="each masked set runs on this many independent draws of its groups' counts, a row each "
                    "(default 1; with few groups one draw decides the rounds of tiles: a mean over draws tells "
                    "a config's expected time)")
    ap.add_argument("--grouped-nk", help="the contiguous and masked suites' (N, K) shapes, NxK comma-separated "
                    "(default: %s)" % ",".join("%dx%d" % nk for nk in NK))
    ap.add_argument("--einsum-b", help="the einsum suite's per-head forms at these b only, comma-separated "
                    "(default: %s; the batch-sum rows run only without this option)"
                    % sorted({b for _, _, _, b in EINSUM_HEADS}))
    ap.add_argument("--seconds", type=float, default=ROTATION_SECONDS,
                    help="seconds of timed calls per row and contender set with interleaved timing (default "
                    "%%(default)s; at least %d rotations)" % MIN_REPS)
    ap.add_argument("--alt", action="append", default=[])
    ap.add_argument("--tuned", metavar="TABLE", help="a tuning table: adds the contender libdg_tuned")
    ap.add_argument("--timing", choices=TIMINGS, default=TIMING,
                    help="interleaved-clean: the contenders' calls alternate one by one, L2 left clean before each "
                    "(t_interleaved); interleaved: the same with a zeroing flush; blocks: triton do_bench per "
                    "contender, best of two rounds")
    ap.add_argument("--merge", nargs="+")
    args = ap.parse_args()
    globals()["TIMING"] = args.timing
    if args.seconds <= 0:
        ap.error("--seconds: %r (expected a positive number of seconds)" % args.seconds)
    globals()["ROTATION_SECONDS"] = args.seconds
    for suite in args.suites:
        if suite not in SUITES:
            ap.error("unknown suite %r (expected any of %s)" % (suite, ", ".join(SUITES)))
    globals()["NAME"] = args.name
    if args.dense_nn and not args.bf16_only:
        ap.error("--dense-nn: needs --bf16-only (FP8 GEMMs read K-major operands, an MN-major B is transposed first)")
    globals()["DENSE_B_MN"] = args.dense_nn
    dense_m = [int(x) for x in args.m.split(",")] if args.m else DENSE_M
    try:
        dense_nk = [tuple(int(v) for v in x.split("x")) for x in args.nk.split(",")] if args.nk else DENSE_NK
    except ValueError:
        ap.error("--nk: %r (expected NxK[,NxK...], e.g. 6144x4096,4096x14336)" % args.nk)
    def int_tuples(text, default, sep, arity, flag, example):
        try:
            sets = [tuple(int(v) for v in x.split(sep)) for x in text.split(",")] if text else default
            if any(len(t) != arity or min(t) < 1 for t in sets):
                raise ValueError
            return sets
        except ValueError:
            ap.error("%s: %r (expected positive integers as %s)" % (flag, text, example))
    contiguous_sets = int_tuples(args.contiguous, CONTIGUOUS, ":", 2, "--contiguous", "G:M[,G:M...], e.g. 8:4096")
    masked_sets = int_tuples(args.masked, MASKED, ":", 2, "--masked", "G:M[,G:M...], e.g. 32:8,32:64")
    grouped_nk = int_tuples(args.grouped_nk, NK, "x", 2, "--grouped-nk", "NxK[,NxK...], e.g. 4096x7168")
    try:
        count_fractions = [float(x) for x in args.masked_counts.split(",")] if args.masked_counts else [None]
        if any(f is not None and f <= 0 for f in count_fractions):
            raise ValueError
    except ValueError:
        ap.error("--masked-counts: %r (expected positive fractions F[,F...], e.g. 0.8,1.0,1.2)" % args.masked_counts)
    if args.masked_draws < 1 or (args.masked_draws > 1 and args.masked_counts):
        ap.error("--masked-draws: %d (expected >= 1, and not with --masked-counts, whose counts are fixed)"
                 % args.masked_draws)
    for g, e in masked_sets:
        for f in count_fractions:
            if f is not None and int(f * e) > MAX_M:
                ap.error("--masked-counts: %g x %d rows exceed the masked calls' max_m %d" % (f, e, MAX_M))
    k_sets = int_tuples(args.kg, K_GROUPED, ":", 4, "--kg", "G:M:N:K[,G:M:N:K...], e.g. 32:4096:7168:1024")
    einsum_b = [b for (b,) in int_tuples(args.einsum_b, [], ":", 1, "--einsum-b", "B[,B...], e.g. 4,32")]
    einsum_heads_set = [(h, r, d, b) for h, r, d in dict.fromkeys(t[:3] for t in EINSUM_HEADS)
                        for b in einsum_b] if einsum_b else EINSUM_HEADS
    for spec in args.alt:
        name, _, fields = spec.partition("=")
        ALT[name] = {f.split(":")[0]: int(f.split(":")[1]) for f in fields.split(",") if f}
    if args.tuned:
        if TUNED_ALT in ALT:
            ap.error("--alt %s: the name is --tuned's" % TUNED_ALT)
        if not os.path.isfile(args.tuned):
            ap.error("--tuned: %r is not a file (write one with dg-tune -o %s PROBLEMS)" % (args.tuned, args.tuned))
        ALT[TUNED_ALT] = "the tuning table %s" % os.path.basename(args.tuned)
    if args.merge:
        meta = {}
        for path in args.merge:
            with open(path) as f:
                run = json.load(f)
            run_rows = run.pop("rows")
            rows.extend(run_rows)
            # Each row keeps the versions it was measured with (an earlier merge lists its own runs).
            meta.setdefault("runs", []).extend(run.pop("runs", None) or [dict(
                suites=sorted({r["suite"] for r in run_rows}), libdg=run.get("libdg"), deepgemm=run.get("deepgemm"),
                device=run.get("device"))])
            for key, value in run.items():
                meta.setdefault(key, value)
            ALT.update(run.get("alt", {}))
        meta["alt"] = ALT
        for r in rows:
            for key in [k for k in r if k.startswith("us_libdg_")]:
                ALT.setdefault(key[len("us_libdg_"):], "see the run's --alt")
        report(args.out, meta)
        versions = sorted({run["libdg"] for run in meta["runs"] if run.get("libdg")})
        plot(args.out, "libdg %s beside DeepGEMM and cuBLAS (per group; the copy for paged-mqa), %s"
             % (" / ".join(versions), meta.get("device")))
        return
    if args.tuned:
        os.environ["DG_TUNING_TABLE"] = "off"  # "libdg": the heuristic alone
    import_gpu_stack()
    if args.tuned:
        use_tuning_table(args.tuned)
    random.seed(0)
    torch.manual_seed(0)
    kinds = ["fp8"] if args.fp8_only else ["bf16"] if args.bf16_only else ["fp8", "bf16"]
    print("device:", torch.cuda.get_device_name(), "libdg", dg.version(),
          "deep_gemm", getattr(deep_gemm, "__version__", "absent") if deep_gemm else "absent", flush=True)
    for kind in kinds:
        if "dense" in args.suites:
            for m in dense_m:
                for n, k in dense_nk:
                    dense(kind, m, n, k)
    for kind in kinds:
        for n, k in grouped_nk:
            if "contiguous" in args.suites:
                for g, e in contiguous_sets:
                    contiguous(kind, g, e, n, k)
            if "masked" in args.suites:
                for g, e in masked_sets:
                    for f in count_fractions:
                        for _ in range(args.masked_draws):
                            masked(kind, g, e, n, k, f)
    for kind in kinds:
        if "k-grouped" in args.suites:
            for g, m, n, k in k_sets:
                k_grouped(kind, g, m, n, k)
    if "mqa" in args.suites and not args.bf16_only:
        for s_q, s_kv in MQA:
            mqa(s_q, s_kv)
    if "paged-mqa" in args.suites and not args.bf16_only:
        for b, next_n, avg in PAGED_MQA:
            paged_mqa(b, next_n, avg)
    if "mqa-compressed" in args.suites and not args.bf16_only:
        for s_q, s_kv, window in MQA_COMPRESSED:
            mqa(s_q, s_kv, window)
    if "hc-prenorm" in args.suites and not (args.fp8_only or args.bf16_only):
        for m, k in HC_PRENORM:
            for splits in (0, 16):
                hc_prenorm(m, k, splits)
    if "quant" in args.suites and not args.fp8_only:
        for m in QUANT_M:
            for k in QUANT_K:
                quant(m, k)
    if "einsum" in args.suites and not args.fp8_only:
        for s_, m, n, k in EINSUM_SUM if not einsum_b else []:
            for fp32 in (True, False):
                einsum_sum(s_, m, n, k, fp32)
        for expr in ("bhr,hdr->bhd", "bhd,hdr->bhr"):
            for h, r, d, b in einsum_heads_set:
                einsum_heads(expr, h, r, d, b)
    if "einsum" in args.suites and not args.bf16_only:
        for h, r, d, b in einsum_heads_set:
            einsum_fp8(h, r, d, b)
    if "skip-head-mid" in args.suites and not args.bf16_only:
        for m, n, k in SKIP_HEAD_MID:
            skip_head_mid(m, n, k)
    report(args.out)


if __name__ == "__main__":
    main()
