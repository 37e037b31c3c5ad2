"""DeepSeek-V3's routed-expert layer (hidden 7168, intermediate 2048) with libdg beside DeepGEMM plus
Triton, in one process on the same tensors and steps (docs/gemm_epilogues.md).

BF16 tokens in, BF16 out, per expert: quantize x (1 x 128) -> gate/up GEMM -> SwiGLU -> quantize ->
down GEMM. Contenders:
  libdg          libdg alone: dg.quantize_fp8_per_token_*, the gate/up GEMM with the fused SwiGLU +
                 FP8 epilogue (weights interleaved once with dg.swiglu_interleave), the down GEMM;
  libdg_unfused  libdg's plain GEMMs with the separate kernels of the peer: Triton quantization,
                 libdg gate/up GEMM to BF16 [M, 4096], Triton SiLU-mul-quantize, libdg down GEMM;
  deepgemm       the same pipeline on DeepGEMM's grouped GEMMs (the way engines run them today);
  libdg_tuned    with --tuned TABLE: the libdg layer with its GEMMs on a stream whose config reads
                 the tuning table TABLE (dg-tune, docs/tuning.md; tools/problems/deepseek-v3.txt holds
                 the layer's GEMMs, the fused gate/up one included); "libdg" then runs untuned.
The Triton kernels run one program per row and eight 128-column groups, and write the scales straight
into the MN-major TMA-aligned layout the FP8 GEMMs read (no transform).
Prefill uses the contiguous layout (each expert's tokens padded to 128 rows), decode the masked one
(counts on the device), timed as CUDA graph replays. Each row also times the gate/up GEMM alone,
plain (BF16 [M, 4096]) and fused (SwiGLU + FP8 [M, 2048]), and each step of the unfused pipelines
alone (the second table: where the layers' times go), and records calc_diff of each layer against an
FP32 reference on the dequantized weights for a sample of rows. All of them are timed together, their
calls alternated one by one (peer_bench.t_interleaved; --timing as peer_bench.py's).

Usage: python3 bench/peer_moe_layer.py [--prefill G:T,...|none] [--decode G:T,...|none] [--tuned TABLE] [--out DIR]
                                       [--timing interleaved-clean|interleaved|blocks]
       python3 bench/peer_moe_layer.py --merge RUN.json [RUN.json ...] --out DIR   (no GPU needed)
(T: tokens per expert; needs torch, triton, dg, and deep_gemm for the peer; see bench/README.md).
Writes moe_layer.json and moe_layer.txt into DIR.
"""
import argparse
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_bench as pb  # noqa: E402  (shared timing and numerics helpers)

HIDDEN, INTER, BLOCK = 7168, 2048, 128
PREFILL = [(8, 512), (8, 2048), (8, 8192), (32, 256), (32, 1024)]
DECODE = [(32, 8), (32, 16), (32, 32), (32, 64)]
KERNELS = {}
GROUPS_PER_PROGRAM = 8  # 128-column groups per Triton program (1024 columns)
ROUNDS = 5  # interleaved timing rounds; the median of each contender's per-round medians is kept


def triton_kernels():
    """The peer's separate kernels (compiled once)."""
    if KERNELS:
        return KERNELS
    tl, triton = pb.tl, pb.triton

    # Each program takes GROUPS 128-column groups of one row (a [GROUPS, 128] tile): one program per
    # group, as engines launch it, gives each program too little work at these sizes.
    @triton.jit
    def quant_rows(x_ptr, q_ptr, s_ptr, counts_ptr, rows_per_group, sf_group_stride, sf_ld,
                   COLS: tl.constexpr, GROUPS: tl.constexpr, MASKED: tl.constexpr):
        row, chunk = tl.program_id(0), tl.program_id(1)
        g, r = row // rows_per_group, row % rows_per_group
        ok = r >= 0
        if MASKED:
            ok = r < tl.load(counts_ptr + g)
        kb = chunk * GROUPS + tl.arange(0, GROUPS)
        offs = kb[:, None] * 128 + tl.arange(0, 128)[None, :]
        m = ok & (kb[:, None] * 128 < COLS)
        x = tl.load(x_ptr + row.to(tl.int64) * COLS + offs, mask=m, other=0.0).to(tl.float32)
        s = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-4) / 448.0
        tl.store(q_ptr + row.to(tl.int64) * COLS + offs, (x / s[:, None]).to(tl.float8e4nv), mask=m)
        tl.store(s_ptr + g * sf_group_stride + kb * sf_ld + r, s, mask=ok & (kb * 128 < COLS))

    @triton.jit
    def silu_mul_quant(y_ptr, q_ptr, s_ptr, counts_ptr, rows_per_group, sf_group_stride, sf_ld,
                       I: tl.constexpr, GROUPS: tl.constexpr, MASKED: tl.constexpr):
        row, chunk = tl.program_id(0), tl.program_id(1)
        g, r = row // rows_per_group, row % rows_per_group
        ok = r >= 0
        if MASKED:
            ok = r < tl.load(counts_ptr + g)
        kb = chunk * GROUPS + tl.arange(0, GROUPS)
        offs = kb[:, None] * 128 + tl.arange(0, 128)[None, :]
        m = ok & (kb[:, None] * 128 < I)
        base = y_ptr + row.to(tl.int64) * (2 * I)
        gate = tl.load(base + offs, mask=m, other=0.0).to(tl.float32)
        up = tl.load(base + I + offs, mask=m, other=0.0).to(tl.float32)
        h = gate / (1.0 + tl.exp(-gate)) * up
        s = tl.maximum(tl.max(tl.abs(h), axis=1), 1e-4) / 448.0
        tl.store(q_ptr + row.to(tl.int64) * I + offs, (h / s[:, None]).to(tl.float8e4nv), mask=m)
        tl.store(s_ptr + g * sf_group_stride + kb * sf_ld + r, s, mask=ok & (kb * 128 < I))

    KERNELS.update(quant=quant_rows, silu=silu_mul_quant)
    return KERNELS


def align(x, a):
    return (x + a - 1) // a * a


class Layout:
    """Rows of one layout: contiguous [M, .] (idx per row) or masked [G, max_m, .] (counts)."""

    def __init__(self, masked, groups, rows, groups_tensor):
        self.masked, self.groups, self.rows, self.t = masked, groups, rows, groups_tensor
        self.cells = groups * rows if masked else rows

    def empty(self, cols, dtype):
        torch = pb.torch
        shape = (self.groups, self.rows, cols) if self.masked else (self.rows, cols)
        return torch.empty(shape, device="cuda", dtype=dtype)

    def scales(self, cols):
        """FP32 scales [(G,) rows, cols / 128] in the MN-major TMA-aligned layout."""
        torch = pb.torch
        ar, kb = align(self.rows, 4), cols // BLOCK
        g = self.groups if self.masked else 1
        buf = torch.empty(g * kb * ar, device="cuda", dtype=torch.float32)
        if self.masked:
            return buf.as_strided((g, self.rows, kb), (kb * ar, 1, ar))
        return buf.as_strided((self.rows, kb), (1, ar))

    def sf_strides(self, sf):
        return (sf.stride(0) if self.masked else 0), sf.stride(-1)

    def triton_quant(self, x, q, sf):
        k = triton_kernels()["quant"]
        gs, ld = self.sf_strides(sf)
        grid = (self.cells, -(-x.shape[-1] // (BLOCK * GROUPS_PER_PROGRAM)))
        k[grid](x, q, sf, self.t, self.rows, gs, ld, COLS=x.shape[-1], GROUPS=GROUPS_PER_PROGRAM, MASKED=self.masked)

    def triton_silu(self, y, q, sf):
        k = triton_kernels()["silu"]
        gs, ld = self.sf_strides(sf)
        grid = (self.cells, -(-INTER // (BLOCK * GROUPS_PER_PROGRAM)))
        k[grid](y, q, sf, self.t, self.rows, gs, ld, I=INTER, GROUPS=GROUPS_PER_PROGRAM, MASKED=self.masked)


def weights(groups):
    torch, dg = pb.torch, pb.dg
    w13 = torch.randn((groups, 2 * INTER, HIDDEN), device="cuda", dtype=torch.bfloat16) * 0.04
    w2 = torch.randn((groups, HIDDEN, INTER), device="cuda", dtype=torch.bfloat16) * 0.06
    q13, s13 = dg.quantize_fp8_per_block(w13)
    q2, s2 = dg.quantize_fp8_per_block(w2)
    return dict(w13=w13, w2=w2, q13=q13, s13=s13, q2=q2, s2=s2,
                q13i=dg.swiglu_interleave(q13), s13i=dg.swiglu_interleave(s13, block=1))


def reference(x_rows, experts, w):
    """FP32 layer on the dequantized weights for the sampled token rows."""
    torch = pb.torch
    out = []
    for x, g in zip(x_rows, experts):
        w13 = pb.dequant_b(w["q13"][g:g + 1], w["s13"][g:g + 1])[0]
        w2 = pb.dequant_b(w["q2"][g:g + 1], w["s2"][g:g + 1])[0]
        y = x.float() @ w13.t()
        h = torch.nn.functional.silu(y[:INTER]) * y[INTER:]
        out.append(h @ w2.t())
    return torch.stack(out)


def pipelines(lay, x, w, expected):
    """Each contender's layer, plus the gate/up GEMM alone (plain and fused) for libdg."""
    torch, dg, deep_gemm = pb.torch, pb.dg, pb.deep_gemm
    qx, sx = lay.empty(HIDDEN, torch.float8_e4m3fn), lay.scales(HIDDEN)
    h8, sh = lay.empty(INTER, torch.float8_e4m3fn), lay.scales(INTER)
    y = lay.empty(2 * INTER, torch.bfloat16)
    out = {name: lay.empty(HIDDEN, torch.bfloat16) for name in ("libdg", "libdg_unfused", "deepgemm", "libdg_tuned")}
    epi = dg.GemmEpilogue("swiglu", d_scales=sh)

    def gemm(lib, a, b, d, epilogue=None, stream=None):
        if lib == "dg":
            extra = dict(epilogue=epilogue) if epilogue is not None else {}
            if stream is not None:
                extra["stream"] = stream
            if lay.masked:
                return dg.m_grouped_fp8_gemm_nt_masked(a, b, d, lay.t, expected, **extra)
            return dg.m_grouped_fp8_gemm_nt_contiguous(a, b, d, lay.t, **extra)
        if lay.masked:
            return deep_gemm.m_grouped_fp8_gemm_nt_masked(a, b, d, lay.t, expected, disable_ue8m0_cast=True)
        return deep_gemm.m_grouped_fp8_gemm_nt_contiguous(a, b, d, lay.t, disable_ue8m0_cast=True)

    def dg_quant():
        if lay.masked:
            dg.quantize_fp8_per_token_masked(x, lay.t, qx, sx)
        else:
            dg.quantize_fp8_per_token_contiguous(x, lay.t, lay.groups, out=qx, sf=sx)

    def fused(name, tuned=False):
        def run():
            stream = pb.tuned_stream() if tuned else None
            dg_quant()
            gemm("dg", (qx, sx), (w["q13i"], w["s13i"]), h8, epi, stream)
            gemm("dg", (h8, sh), (w["q2"], w["s2"]), out[name], stream=stream)
        return run

    def unfused(lib, name):
        def run():
            lay.triton_quant(x, qx, sx)
            gemm(lib, (qx, sx), (w["q13"], w["s13"]), y)
            lay.triton_silu(y, h8, sh)
            gemm(lib, (h8, sh), (w["q2"], w["s2"]), out[name])
        return run

    runs = {"libdg": fused("libdg"), "libdg_unfused": unfused("dg", "libdg_unfused")}
    if deep_gemm is not None:
        runs["deepgemm"] = unfused("deepgemm", "deepgemm")
    if pb.TUNED_STREAMS:
        runs["libdg_tuned"] = fused("libdg_tuned", tuned=True)
    steps = {"gemm1_plain": lambda: gemm("dg", (qx, sx), (w["q13"], w["s13"]), y),
             "gemm1_fused": lambda: gemm("dg", (qx, sx), (w["q13i"], w["s13i"]), h8, epi),
             "quant_libdg": dg_quant,
             "quant_triton": lambda: lay.triton_quant(x, qx, sx),
             "silu_triton": lambda: lay.triton_silu(y, h8, sh),
             "gemm2_libdg": lambda: gemm("dg", (h8, sh), (w["q2"], w["s2"]), out["libdg_unfused"])}
    if deep_gemm is not None:
        steps["gemm1_deepgemm"] = lambda: gemm("deepgemm", (qx, sx), (w["q13"], w["s13"]), y)
        steps["gemm2_deepgemm"] = lambda: gemm("deepgemm", (h8, sh), (w["q2"], w["s2"]), out["deepgemm"])
    return runs, steps, out


def layer(mode, groups, tokens, w):
    torch = pb.torch
    masked = mode == "decode"
    if masked:
        counts = [max(1, int(tokens * random.uniform(0.7, 1.0))) for _ in range(groups)]
        rows = align(max(counts), 64)
        lay = Layout(True, groups, rows, torch.tensor(counts, dtype=torch.int32, device="cuda"))
        starts = [g * rows for g in range(groups)]
    else:
        counts = [tokens] * groups
        per = align(tokens, BLOCK)
        idx = torch.full((groups * per,), -1, dtype=torch.int32, device="cuda")
        for g in range(groups):
            idx[g * per:g * per + tokens] = g
        lay = Layout(False, groups, groups * per, idx)
        starts = [g * per for g in range(groups)]
    x = lay.empty(HIDDEN, torch.bfloat16).normal_()
    runs, steps, out = pipelines(lay, x, w, max(counts))
    # Correctness: the first and last token of up to 16 experts.
    sample = [(g, starts[g] + r) for g in range(0, groups, max(1, groups // 16)) for r in (0, counts[g] - 1)]
    xf = x.view(-1, HIDDEN)
    ref = reference([xf[i] for _, i in sample], [g for g, _ in sample], w)
    row = dict(suite="moe-layer", mode=mode, groups=groups, tokens=tokens, total=sum(counts),
               flops=2.0 * sum(counts) * 3 * HIDDEN * INTER)
    for name, fn in runs.items():
        out[name].fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        got = torch.stack([out[name].view(-1, HIDDEN)[i] for _, i in sample])
        row["diff_" + name] = "%.1e" % pb.calc_diff(got, ref)
    contenders = dict(runs, **steps)
    if masked:
        contenders = {name: pb.graphed(fn) for name, fn in contenders.items()}
    # The clocks of a GPU at its power limit move by 10-15% over a minute of FP8 GEMMs: calls alternate
    # one by one (--timing blocks: rounds of ~100 ms per contender, the median of five rounds).
    if pb.TIMING != "blocks":
        best = pb.timed(contenders)
    else:
        samples = {name: [] for name in contenders}
        for _ in range(ROUNDS):
            for name, fn in contenders.items():
                samples[name].append(pb.t_median(fn))
        best = {name: sorted(v)[len(v) // 2] for name, v in samples.items()}
    row["timing"] = pb.TIMING
    for name, t in best.items():
        row["us_" + name] = round(t * 1e6, 2)
    print("moe-layer %-7s G=%-3d T=%-5d " % (mode, groups, tokens)
          + " ".join("%s=%.1fus" % (n, t * 1e6) for n, t in best.items())
          + " diff " + " ".join("%s=%s" % (n, row["diff_" + n]) for n in runs), flush=True)
    return row


def table(rows, meta):
    lines = ["# MoE expert layer: libdg beside DeepGEMM + Triton", "",
             "%s; libdg %s, DeepGEMM %s. DeepSeek-V3 routed experts (hidden 7168, intermediate 2048), BF16 in and out."
             " T: tokens per expert (decode: the largest count; counts drawn in [0.7 T, T]); times are %s;"
             " decode times CUDA graph replays."
             % (meta["device"], meta["libdg"], meta["deepgemm"], timing_text(rows)), "",
             "| mode | G | T | tokens | libdg us | libdg unfused us | DeepGEMM+Triton us | t_peer / t_libdg |"
             " t_unfused / t_libdg | gate/up GEMM: plain us | fused us | fused / plain time | diff libdg | diff peer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lib, unf, peer = r["us_libdg"], r["us_libdg_unfused"], r.get("us_deepgemm")
        lines.append("| %s | %d | %d | %d | %.1f | %.1f | %s | %s | %.3f | %.1f | %.1f | %.3f | %s | %s |" % (
            r["mode"], r["groups"], r["tokens"], r["total"], lib, unf, "%.1f" % peer if peer else "-",
            "%.3f" % (peer / lib) if peer else "-", unf / lib, r["us_gemm1_plain"], r["us_gemm1_fused"],
            r["us_gemm1_fused"] / r["us_gemm1_plain"], r["diff_libdg"], r.get("diff_deepgemm", "-")))
    lines += steps_table(rows)
    for mode in ("prefill", "decode"):
        sel = [r for r in rows if r["mode"] == mode and r.get("us_deepgemm")]
        if sel:
            gm = math.exp(sum(math.log(r["us_deepgemm"] / r["us_libdg"]) for r in sel) / len(sel))
            gu = math.exp(sum(math.log(r["us_libdg_unfused"] / r["us_libdg"]) for r in sel) / len(sel))
            lines.append("")
            lines.append("%s: t_peer / t_libdg geomean %.3f (min %.3f); t_unfused / t_libdg geomean %.3f (n %d)" % (
                mode, gm, min(r["us_deepgemm"] / r["us_libdg"] for r in sel), gu, len(sel)))
        tuned = [r for r in sel if r.get("us_libdg_tuned")]
        if tuned:
            gt = math.exp(sum(math.log(r["us_deepgemm"] / r["us_libdg_tuned"]) for r in tuned) / len(tuned))
            gs = math.exp(sum(math.log(r["us_libdg"] / r["us_libdg_tuned"]) for r in tuned) / len(tuned))
            lines.append("%s, tuned: t_peer / t_libdg_tuned geomean %.3f (min %.3f); t_libdg / t_libdg_tuned %.3f" % (
                mode, gt, min(r["us_deepgemm"] / r["us_libdg_tuned"] for r in tuned), gs))
    return "\n".join(lines)


def timing_text(rows):
    timing = {r.get("timing") for r in rows}
    if timing == {"interleaved-clean"}:
        return ("medians of calls alternated one by one between all contenders and steps, each after an L2 flush"
                " that leaves L2 clean (peer_bench.t_interleaved)")
    if timing == {"interleaved"}:
        return ("medians of calls alternated one by one between all contenders and steps, each after an L2 flush"
                " that zeroes 256 MB (peer_bench.t_interleaved; the call pays the write-back of up to one L2)")
    return "medians of triton do_bench (L2 flushed), the median of five interleaved rounds"


STEPS = (("quantize x", "quant_libdg", "quant_triton"), ("gate/up GEMM", "gemm1_plain", "gemm1_deepgemm"),
         ("SiLU-mul-quantize", None, "silu_triton"), ("down GEMM", "gemm2_libdg", "gemm2_deepgemm"))


def steps_table(rows):
    """Each step of the unfused pipelines timed alone: libdg's kernel beside the peer's (DeepGEMM's GEMMs,
    the Triton kernels); rows of runs that predate the step timings are left out."""
    rows = [r for r in rows if r.get("us_gemm2_deepgemm")]
    if not rows:
        return []
    cols = ["%s: libdg us | peer us | t_peer / t_libdg" % n if lib else "%s: peer us" % n for n, lib, _ in STEPS]
    head = "| mode | G | T | " + " | ".join(cols) + " | fused layer: libdg us |"
    lines = ["", "Steps alone (same run): libdg's quantization and plain GEMMs beside the Triton kernels and DeepGEMM's"
             " GEMMs; the fused layer replaces the BF16 gate/up output and the SiLU-mul-quantize kernel.", "",
             head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        cells = []
        for _, lib, peer in STEPS:
            t_peer = r["us_" + peer]
            if lib:
                cells += ["%.1f" % r["us_" + lib], "%.1f" % t_peer, "%.3f" % (t_peer / r["us_" + lib])]
            else:
                cells.append("%.1f" % t_peer)
        lines.append("| %s | %d | %d | %s | %.1f |" % (r["mode"], r["groups"], r["tokens"], " | ".join(cells),
                                                      r["us_libdg"]))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prefill", help="G:T pairs, or none (default %s)" % ",".join("%d:%d" % p for p in PREFILL))
    ap.add_argument("--decode", help="G:T pairs, or none (default %s)" % ",".join("%d:%d" % p for p in DECODE))
    ap.add_argument("--out", default=".")
    ap.add_argument("--tuned", metavar="TABLE", help="a tuning table: adds the contender libdg_tuned")
    ap.add_argument("--timing", choices=pb.TIMINGS, default=pb.TIMING,
                    help="interleaved-clean / interleaved: calls alternate one by one, L2 left clean / zeroed before "
                    "each (peer_bench.t_interleaved); blocks: do_bench rounds of ~100 ms per contender, the median "
                    "of %d rounds" % ROUNDS)
    ap.add_argument("--merge", nargs="+", help="rows of earlier runs (moe_layer.json) into one table; no GPU")
    args = ap.parse_args()
    pb.TIMING = args.timing
    if args.merge:
        runs = [json.load(open(path)) for path in args.merge]
        meta = {k: v for k, v in runs[0].items() if k != "rows"}
        if any({k: v for k, v in r.items() if k != "rows"} != meta for r in runs):
            ap.error("--merge: the runs differ in device or versions")
        order = {(m, g, t): i for i, (m, g, t) in enumerate([("prefill",) + p for p in PREFILL] + [("decode",) + p for p in DECODE])}
        rows = sorted((r for run in runs for r in run["rows"]), key=lambda r: order.get((r["mode"], r["groups"], r["tokens"]), 99))
        return write(args.out, rows, meta)
    parse = lambda s, d: [] if s == "none" else [tuple(int(v) for v in p.split(":")) for p in s.split(",")] if s else d  # noqa: E731
    cases = [("prefill", g, t) for g, t in parse(args.prefill, PREFILL)] + [("decode", g, t) for g, t in parse(args.decode, DECODE)]
    if args.tuned:
        os.environ["DG_TUNING_TABLE"] = "off"  # "libdg": the heuristic alone
    pb.import_gpu_stack()
    if args.tuned:
        pb.use_tuning_table(args.tuned)
    random.seed(0)
    pb.torch.manual_seed(0)
    meta = dict(device=pb.torch.cuda.get_device_name(), libdg=pb.dg.version(),
                deepgemm=getattr(pb.deep_gemm, "__version__", None) if pb.deep_gemm else None)
    rows, cache = [], {}
    for mode, g, t in cases:
        if g not in cache:
            cache.clear()
            cache[g] = weights(g)
        rows.append(layer(mode, g, t, cache[g]))
    write(args.out, rows, meta)


def write(out, rows, meta):
    text = table(rows, meta)
    print(text, flush=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "moe_layer.txt"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "moe_layer.json"), "w") as f:
        json.dump(dict(meta, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
