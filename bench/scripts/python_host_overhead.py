"""Host time of one warm GEMM call from Python: libdg's binding beside DeepGEMM (when `deep_gemm` is
importable) and torch.matmul, in one process, on the same tensors.

Each contender is called 200 times back to back on torch's current stream (the GPU queues the
kernels; nothing waits for them), and the host time per call is the loop's wall time / 200; best of
--rounds rounds, the rounds interleaved across contenders. Rows:
  libdg_fp8, libdg_bf16          dg.fp8_gemm_nt((a, sfa), (b, sfb), d) / dg.bf16_gemm_nt(a, b, d): the
                                 warm path (a call whose arguments were all seen before)
  libdg_*_full                   the same calls through the full Python plumbing (options={} keeps a
                                 call off the warm path): what every call cost before it
  libdg_*_c                      the bare C call the warm path makes (ctypes, prebuilt descriptors):
                                 libdg's C side and the driver's launch, without the Python wrapper
  deepgemm_fp8, deepgemm_bf16    deep_gemm.fp8_fp4_gemm_nt (or fp8_gemm_nt) with the same FP32 scales,
                                 deep_gemm.bf16_gemm_nt
  torch_matmul                   torch.matmul(a, b.T) (BF16; allocates its output)
A's per-token scales are passed already in the MN-major TMA-aligned layout, so no contender
transforms them per call. Needs a CUDA GPU, torch, and libdg (DG_LIBRARY_PATH or the source tree).

Usage: python3 bench/scripts/python_host_overhead.py [--shape M,N,K] [--calls 200] [--rounds 7]
                                                      [--out DIR]
Writes python_host_overhead.json into DIR (default: $OUT, else .).
"""
import argparse
import json
import math
import os
import sys
import time

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "bindings", "python"))
import dg  # noqa: E402

try:
    import deep_gemm
except Exception as e:  # not built, or built for another torch
    deep_gemm = None
    print("deep_gemm not importable (%s): libdg and torch only" % repr(e)[:120], flush=True)


def calc_diff(x, y):
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return 0.0 if denom == 0 else float(1 - 2 * (x * y).sum() / denom)


def inputs(m, n, k):
    torch.manual_seed(0)
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, k), device="cuda", dtype=torch.bfloat16)
    ref = a.float() @ b.float().T
    # FP8 operands with unit scales: per-token SFA in the MN-major TMA-aligned layout, per-block SFB.
    sf_k = (k + 127) // 128
    am = (m + 3) // 4 * 4
    sfa = torch.empty_strided((m, sf_k), (1, am), device="cuda", dtype=torch.float32).fill_(1.0)
    sfb = torch.ones(((n + 127) // 128, sf_k), device="cuda", dtype=torch.float32)
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    ref8 = a8.float() @ b8.float().T
    d = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
    return a, b, ref, (a8, sfa), (b8, sfb), ref8, d


def c_call(name):
    """The bare C call of the warm path of entry point `name` (called once already): the plan the
    binding recorded for it, its descriptors and options, on torch's current stream."""
    from dg import _fast, _stream

    plans = [p for p in _fast._table.plans.values() if p.name == name]
    if len(plans) != 1:
        return None
    plan = plans[0]
    raw = torch._C._cuda_getCurrentRawStream(plan.device)
    handle = _stream._cached(plan.device, raw)
    args = (handle,) + plan.args + (plan.options,)
    f = plan.fn
    return lambda: f(*args)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="128,2112,7168")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    args = p.parse_args()
    m, n, k = (int(x) for x in args.shape.split(","))
    print("device:", torch.cuda.get_device_name(), "| torch", torch.__version__, "| libdg", dg.version(), "at",
          dg.library_path(), flush=True)
    a, b, ref, x8, y8, ref8, d = inputs(m, n, k)
    calls = {
        "libdg_fp8": lambda: dg.fp8_gemm_nt(x8, y8, d),
        "libdg_fp8_full": lambda: dg.fp8_gemm_nt(x8, y8, d, options={}),
        "libdg_bf16": lambda: dg.bf16_gemm_nt(a, b, d),
        "libdg_bf16_full": lambda: dg.bf16_gemm_nt(a, b, d, options={}),
    }
    diffs = {}
    calls["libdg_fp8"]()
    torch.cuda.synchronize()
    diffs["libdg_fp8"] = calc_diff(d, ref8)
    calls["libdg_bf16"]()
    torch.cuda.synchronize()
    diffs["libdg_bf16"] = calc_diff(d, ref)
    for name, entry in (("libdg_fp8_c", "dg_fp8_gemm_nt"), ("libdg_bf16_c", "dg_bf16_gemm_nt")):
        c = c_call(entry)
        if c is not None:
            calls[name] = c
    if deep_gemm is not None:
        fp8_fn = getattr(deep_gemm, "fp8_fp4_gemm_nt", None) or deep_gemm.fp8_gemm_nt
        calls["deepgemm_fp8"] = lambda: fp8_fn(x8, y8, d, disable_ue8m0_cast=True)
        calls["deepgemm_bf16"] = lambda: deep_gemm.bf16_gemm_nt(a, b, d)
        for name in ("deepgemm_fp8", "deepgemm_bf16"):
            calls[name]()
            torch.cuda.synchronize()
            diffs[name] = calc_diff(d, ref8 if "fp8" in name else ref)
    calls["torch_matmul"] = lambda: torch.matmul(a, b.T)
    best = {name: math.inf for name in calls}
    for _ in range(args.rounds):
        for name, fn in calls.items():
            fn()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                fn()
            t = (time.perf_counter() - t0) / args.calls
            torch.cuda.synchronize()
            best[name] = min(best[name], t)
    print("host time per warm call, %dx%dx%d, %d queued calls, best of %d rounds:" % (m, n, k, args.calls, args.rounds))
    for name, t in best.items():
        extra = " (calc_diff %.1e)" % diffs[name] if name in diffs else ""
        print("  %-16s %7.2f us%s" % (name, t * 1e6, extra), flush=True)
    for kind in ("fp8", "bf16"):
        if "deepgemm_" + kind in best:
            print("  %s: DeepGEMM / libdg = %.2f" % (kind, best["deepgemm_" + kind] / best["libdg_" + kind]))
    os.makedirs(args.out, exist_ok=True)
    row = dict(device=torch.cuda.get_device_name(), libdg=dg.version(), torch=torch.__version__, m=m, n=n, k=k,
               calls=args.calls, rounds=args.rounds, deepgemm=getattr(deep_gemm, "__version__", None) if deep_gemm else None,
               us={name: round(t * 1e6, 2) for name, t in best.items()}, calc_diff=diffs)
    with open(os.path.join(args.out, "python_host_overhead.json"), "w") as f:
        json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
