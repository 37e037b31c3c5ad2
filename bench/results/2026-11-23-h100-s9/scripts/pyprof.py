"""cProfile of warm Python-binding calls with torch tensors."""
import cProfile, pstats, sys
import torch
import dg
m, n, k = 128, 7168, 2048
a = torch.randn(m, k, device="cuda"); b = torch.randn(n, k, device="cuda")
a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
sfa = dg.get_mn_major_tma_aligned_tensor(torch.rand(m, k // 128, device="cuda") + 0.5)
sfb = torch.rand((n + 127) // 128, k // 128, device="cuda") + 0.5
d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
a16, b16 = a.bfloat16(), b.bfloat16()
for name, f in [("fp8", lambda: dg.fp8_gemm_nt((a8, sfa), (b8, sfb), d)), ("bf16", lambda: dg.bf16_gemm_nt(a16, b16, d))]:
    for _ in range(200): f()
    torch.cuda.synchronize()
    pr = cProfile.Profile(); pr.enable()
    for _ in range(2000): f()
    pr.disable(); torch.cuda.synchronize()
    print("=====", name)
    pstats.Stats(pr).sort_stats("tottime").print_stats(30)
