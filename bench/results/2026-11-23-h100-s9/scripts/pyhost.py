"""Host time per call of the Python binding (torch tensors), queued without synchronising."""
import sys, time, json
import torch
import dg
print("dg from", dg.__file__)
m, n, k = 128, 7168, 2048
a = torch.randn(m, k, device="cuda"); b = torch.randn(n, k, device="cuda")
a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
sfa = dg.get_mn_major_tma_aligned_tensor(torch.rand(m, k // 128, device="cuda") + 0.5)
sfb = torch.rand((n + 127) // 128, k // 128, device="cuda") + 0.5
d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
a16, b16 = a.bfloat16(), b.bfloat16()
calls = {"fp8_gemm_nt": lambda: dg.fp8_gemm_nt((a8, sfa), (b8, sfb), d),
         "bf16_gemm_nt": lambda: dg.bf16_gemm_nt(a16, b16, d),
         "torch._scaled_mm": lambda: torch._scaled_mm(a8, b8.T, scale_a=torch.ones((), device="cuda"), scale_b=torch.ones((), device="cuda"), out_dtype=torch.bfloat16),
         "torch.matmul": lambda: torch.matmul(a16, b16.T)}
out = {}
for name, f in calls.items():
    f(); torch.cuda.synchronize()
    best = []
    for rep in range(7):
        N = 500
        t0 = time.perf_counter()
        for _ in range(N): f()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        best.append((t1 - t0) / N * 1e6)
    best.sort()
    out[name] = best[3]
    print("%-18s host %.1f us/call (median of 7; min %.1f)" % (name, best[3], best[0]), flush=True)
json.dump(out, open(sys.argv[1], "w"))
