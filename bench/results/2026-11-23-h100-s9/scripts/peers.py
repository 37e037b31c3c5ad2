"""Session 9: libdg beside PyTorch's cuBLASLt paths in one process, timed the way perf/anchors_h100.md
timed its peers (triton.testing.do_bench, median, L2 flushed), to place dg-bench's cuBLASLt peers.
Usage: DG_LIBRARY_PATH=... PYTHONPATH=bindings/python python3 peers.py OUT.json"""
import json
import sys

import torch
import triton.testing

import dg

SHAPES = [(m, n, k) for m in (128, 4096) for (n, k) in
          [(2112, 7168), (576, 7168), (24576, 1536), (32768, 512), (7168, 16384), (4096, 7168), (7168, 2048)]]


def calc_diff(x, y):
    x, y = x.double(), y.double()
    return (1 - 2 * (x * y).sum() / (x * x + y * y).sum()).item()


def bench(fn):
    fn()
    torch.cuda.synchronize()
    return triton.testing.do_bench(fn, warmup=25, rep=150, return_mode="median") * 1e3  # us


def main(out_path):
    torch.manual_seed(0)
    rows = []
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(n, k, device="cuda")
        # DeepGEMM's recipe: A per token per 128 K, B per 128x128 block.
        sfa = a.view(m, k // 128, 128).abs().amax(-1).clamp(min=1e-4) / 448.0
        a8 = (a.view(m, k // 128, 128) / sfa.unsqueeze(-1)).view(m, k).to(torch.float8_e4m3fn)
        nb = (n + 127) // 128
        bp = torch.zeros(nb * 128, k, device="cuda")
        bp[:n] = b
        sfb = bp.view(nb, 128, k // 128, 128).abs().amax(dim=(1, 3)).clamp(min=1e-4) / 448.0
        b8 = (bp.view(nb, 128, k // 128, 128) / sfb[:, None, :, None]).view(nb * 128, k)[:n].to(torch.float8_e4m3fn)
        deq_a = (a8.float().view(m, k // 128, 128) * sfa.unsqueeze(-1)).view(m, k)
        deq_b = (b8.float().view(n, k // 128, 128) * sfb.repeat_interleave(128, 0)[:n].unsqueeze(-1)).view(n, k)
        ref = deq_a @ deq_b.T
        d = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        sfa = dg.get_mn_major_tma_aligned_tensor(sfa)  # the kernel's layout, so no per-call transform
        dg.fp8_gemm_nt((a8, sfa), (b8, sfb), d)
        diff = calc_diff(d.float(), ref)
        one = torch.ones((), device="cuda")
        row_a, row_b = torch.ones(m, 1, device="cuda"), torch.ones(1, n, device="cuda")
        r = {"m": m, "n": n, "k": k, "fp8_diff": diff}
        r["libdg_fp8"] = bench(lambda: dg.fp8_gemm_nt((a8, sfa), (b8, sfb), d))
        r["torch_scaled_mm_tensor"] = bench(
            lambda: torch._scaled_mm(a8, b8.T, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=False))
        r["torch_scaled_mm_row"] = bench(
            lambda: torch._scaled_mm(a8, b8.T, scale_a=row_a, scale_b=row_b, out_dtype=torch.bfloat16, use_fast_accum=False))
        a16, b16 = a.bfloat16(), b.bfloat16()
        d16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        dg.bf16_gemm_nt(a16, b16, d16)
        r["bf16_diff"] = calc_diff(d16.float(), a16.float() @ b16.float().T)
        r["libdg_bf16"] = bench(lambda: dg.bf16_gemm_nt(a16, b16, d16))
        r["torch_matmul_bf16"] = bench(lambda: torch.matmul(a16, b16.T))
        rows.append(r)
        print(" ".join(f"{key}={val:.4g}" if isinstance(val, float) else f"{key}={val}" for key, val in r.items()), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows},
              open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
