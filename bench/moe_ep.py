"""DeepSeek-V3's routed-expert layer with expert parallelism across the GPUs of one host (NCCL).

Each rank holds G / world experts (w13 [2I, H] and w2 [H, I], hidden 7168, intermediate 2048),
quantized per 128 x 128 block by libdg and w13 interleaved for the fused SwiGLU. Per step, each rank:
  route     T tokens, random router (softmax of random logits), top-k experts, gates renormalised;
  plan      its per-expert counts exchanged with all_to_all_single and read by the host once (the split
            sizes); the padded contiguous layout (each expert's rows start at a multiple of 128, the
            destination row of every received row) computed on the GPU, checked against plan();
  dispatch  its token rows, sorted by expert, sent with all_to_all_single and placed expert-major;
  experts   libdg: quantize (per token, contiguous) -> M-grouped FP8 GEMM with fused SwiGLU + FP8
            -> M-grouped FP8 GEMM to BF16 (as bench/peer_moe_layer.py's libdg contender);
  combine   the rows returned with all_to_all_single and summed over each token's k slots, slot by
            slot, weighted by its gates (FP32, then BF16).
dispatch / experts / combine are timed with CUDA events (median of --steps); plan with the host clock
(it includes waiting for the counts' exchange, so a rank ahead of the others waits there).

Check: rank 0 gathers every rank's tokens, routes and the experts' weights, runs the whole layer on
one GPU with the same libdg calls, and compares. Expected: bit for bit equal. Each output row of an
expert depends only on its own input row (per-token quantization, per-row scales of the fused FP8
epilogue, a K accumulation in the same order whatever the tile, promotion schedule or row position:
docs/gemm.md, no split-K in the grouped calls), and the combine adds a token's k slots in the same
order on both paths; only a change of accumulation order (e.g. a future split-K) would break it.
A sample of tokens is also checked against an FP32 layer on the dequantized weights (calc_diff).

Usage: torchrun --nproc_per_node 2 bench/moe_ep.py [--experts 32] [--tokens 256] [--topk 8] [--steps 20]
       python3 bench/moe_ep.py --self-test   (the routing bookkeeping, simulated on the CPU; no torch)
Needs torch (CUDA, NCCL) and dg (PYTHONPATH=bindings/python DG_LIBRARY_PATH=build/libdg.so).
"""
import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_bench as pb  # noqa: E402  (calc_diff, dequant_b)
from peer_moe_layer import BLOCK, HIDDEN, INTER, align  # noqa: E402

EXACT_LIMIT = 1e-5   # calc_diff EP vs one GPU: expected 0 (bit for bit)
REF_LIMIT = 2e-3     # calc_diff against the FP32 layer (FP8 activations and weights: ~1e-3)
SAMPLE_TOKENS = 8    # tokens per rank checked against the FP32 layer
WARMUP = 3
torch = dist = dg = None  # imported by main (the self-test needs none of them)


# ------------------------------------------------------------------ bookkeeping (pure Python)
def send_splits(counts, world):
    """Rows sent to each rank: counts [G] per global expert, rank r holding experts [r L, (r+1) L)."""
    local = len(counts) // world
    return [sum(counts[r * local:(r + 1) * local]) for r in range(world)]


def plan(recv_counts, align_rows=BLOCK):
    """recv_counts[src][e]: rows rank src sends for local expert e, arriving by source, then expert.
    Returns (dst, m_indices): the padded row of each received row, expert-major with each expert's
    rows starting at a multiple of align_rows (sources in order within it), and the expert of each
    padded row (-1: padding), at least align_rows rows."""
    local = len(recv_counts[0])
    per_expert = [sum(c[e] for c in recv_counts) for e in range(local)]
    starts, row = [], 0
    for n in per_expert:
        starts.append(row)
        row += align(n, align_rows)
    m_indices = [-1] * max(row, align_rows)
    for e, n in enumerate(per_expert):
        m_indices[starts[e]:starts[e] + n] = [e] * n
    dst, fill = [], list(starts)
    for counts in recv_counts:
        for e, n in enumerate(counts):
            dst.extend(range(fill[e], fill[e] + n))
            fill[e] += n
    return dst, m_indices


def plan_device(recv, recv_table, align_rows=BLOCK):
    """plan() with torch ops on the GPU (no loop over rows, no further host synchronisation):
    recv [world, local] the counts on the device, recv_table the same on the host (sizes only).
    Returns (dst, m_indices) as int64 / int32 tensors, equal to plan(recv_table)'s lists."""
    world, local = recv.shape
    padded_rows = max(sum(align(sum(c[e] for c in recv_table), align_rows) for e in range(local)), align_rows)
    rows = sum(map(sum, recv_table))
    c = recv.long()
    padded = (c.sum(0) + align_rows - 1) // align_rows * align_rows
    first = (torch.cumsum(padded, 0) - padded)[None, :] + torch.cumsum(c, 0) - c  # dst of chunk (src, e)'s first row
    chunk = torch.repeat_interleave(torch.arange(world * local, device=c.device), c.flatten(), output_size=rows)
    chunk_start = torch.cumsum(c.flatten(), 0) - c.flatten()                       # its first row in recv
    dst = first.flatten()[chunk] + torch.arange(rows, device=c.device) - chunk_start[chunk]
    m_indices = torch.full((padded_rows,), -1, device=c.device, dtype=torch.int32)
    m_indices[dst] = (chunk % local).int()
    return dst, m_indices


def self_test(world=3, local=4, tokens=50, topk=3, seed=1):
    """The EP layer on scalars, per rank in plain Python, against the direct computation."""
    rng, g = random.Random(seed), world * local
    ids = [[rng.sample(range(g), topk) for _ in range(tokens)] for _ in range(world)]
    gates = [[[rng.random() for _ in range(topk)] for _ in range(tokens)] for _ in range(world)]
    xs = [[rng.random() for _ in range(tokens)] for _ in range(world)]
    f = lambda e, v: v * (e + 1) + e  # noqa: E731  (expert e)
    orders, counts = [], []
    for r in range(world):
        flat = [e for row in ids[r] for e in row]
        orders.append(sorted(range(len(flat)), key=flat.__getitem__))  # stable, as torch's
        counts.append([flat.count(e) for e in range(g)])
    sent = [[xs[r][i // topk] for i in orders[r]] for r in range(world)]
    chunks = [_split(sent[r], send_splits(counts[r], world)) for r in range(world)]  # [src][dst]
    returned = [[None] * world for _ in range(world)]  # [src][dst]: rows back from rank dst
    for r in range(world):
        recv_counts = [counts[s][r * local:(r + 1) * local] for s in range(world)]
        recv = [v for s in range(world) for v in chunks[s][r]]
        dst, m_idx = plan(recv_counts)
        assert len(dst) == len(recv) == len(set(dst)) and all(m_idx[d] >= 0 for d in dst)
        starts = [m_idx.index(e) for e in range(local) if e in m_idx]
        assert all(s % BLOCK == 0 for s in starts) and len(m_idx) % BLOCK == 0
        pad = [None] * len(m_idx)
        for v, d in zip(recv, dst):
            pad[d] = v
        y = [f(r * local + e, v) if e >= 0 else None for e, v in zip(m_idx, pad)]
        back = _split([y[d] for d in dst], [sum(c) for c in recv_counts])
        for s in range(world):
            returned[s][r] = back[s]
    for r in range(world):
        ret = [v for d in range(world) for v in returned[r][d]]
        slots = [None] * len(ret)
        for i, v in zip(orders[r], ret):
            slots[i] = v
        for t in range(tokens):
            got = sum(gates[r][t][j] * slots[t * topk + j] for j in range(topk))
            want = sum(gates[r][t][j] * f(ids[r][t][j], xs[r][t]) for j in range(topk))
            assert abs(got - want) <= 1e-9 * abs(want), (r, t, got, want)
    print("self-test OK: world %d, %d experts, %d tokens x top-%d per rank" % (world, g, tokens, topk))


def _split(rows, sizes):
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [rows[s:s + n] for s, n in zip(starts, sizes)]


# ------------------------------------------------------------------ the layer on the GPU
def make_weights(local, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    w13 = torch.randn((local, 2 * INTER, HIDDEN), device="cuda", dtype=torch.bfloat16, generator=gen) * 0.04
    w2 = torch.randn((local, HIDDEN, INTER), device="cuda", dtype=torch.bfloat16, generator=gen) * 0.06
    q13, s13 = dg.quantize_fp8_per_block(w13)
    q2, s2 = dg.quantize_fp8_per_block(w2)
    return dict(q13i=dg.swiglu_interleave(q13), s13i=dg.swiglu_interleave(s13, block=1), q2=q2, s2=s2)


def experts(xpad, m_idx, w):
    """libdg's expert math on the contiguous layout: [M, H] BF16 -> [M, H] BF16."""
    local = w["q2"].shape[0]
    qx, sx = dg.quantize_fp8_per_token_contiguous(xpad, m_idx, local)
    h8 = torch.empty((xpad.shape[0], INTER), device="cuda", dtype=torch.float8_e4m3fn)
    sh = dg.fp8_scales_like(h8)
    dg.m_grouped_fp8_gemm_nt_contiguous((qx, sx), (w["q13i"], w["s13i"]), h8, m_idx,
                                        epilogue=dg.GemmEpilogue("swiglu", d_scales=sh))
    y = torch.empty((xpad.shape[0], HIDDEN), device="cuda", dtype=torch.bfloat16)
    dg.m_grouped_fp8_gemm_nt_contiguous((h8, sh), (w["q2"], w["s2"]), y, m_idx)
    return y


def combine_slots(slots, gates):
    """out[t] = sum_j gates[t, j] * slots[t, j], j in order (FP32): the same order on every path."""
    acc = slots[:, 0].float() * gates[:, :1]
    for j in range(1, slots.shape[1]):
        acc = acc + slots[:, j].float() * gates[:, j:j + 1]
    return acc.to(torch.bfloat16)


def route(tokens, experts_total, topk, gen):
    probs = torch.softmax(torch.randn((tokens, experts_total), device="cuda", generator=gen), dim=-1)
    gates, ids = torch.topk(probs, topk, dim=-1)
    return ids, gates / gates.sum(-1, keepdim=True)


def layer(x, ids, gates, w, world, events=None):
    """The layer for this rank's tokens (world 1 with every expert: the one-GPU reference)."""
    tokens, topk = ids.shape
    mark = (lambda i: events[i].record()) if events else (lambda i: None)  # noqa: E731
    t0 = time.perf_counter()
    flat = ids.flatten()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=w["q2"].shape[0] * world).int()
    recv_counts = torch.empty_like(counts)
    if world > 1:
        dist.all_to_all_single(recv_counts, counts)
    else:
        recv_counts.copy_(counts)
    both = torch.cat([counts, recv_counts]).tolist()  # the one host synchronisation
    counts_h, recv_h = both[:len(counts)], both[len(counts):]
    local = len(counts_h) // world
    in_splits = send_splits(counts_h, world)
    recv_table = [recv_h[s * local:(s + 1) * local] for s in range(world)]
    out_splits = [sum(c) for c in recv_table]
    dst, m_idx = plan_device(recv_counts.view(world, local), recv_table)
    plan_s = time.perf_counter() - t0

    mark(0)  # dispatch
    send = x[order // topk]
    recv = send.new_empty((sum(out_splits), HIDDEN))
    if world > 1:
        dist.all_to_all_single(recv, send, out_splits, in_splits)
    else:
        recv.copy_(send)
    xpad = x.new_empty((m_idx.shape[0], HIDDEN))  # padding rows: their values are not used by the quantization
    xpad[dst] = recv
    mark(1)  # experts
    y = experts(xpad, m_idx, w)
    mark(2)  # combine
    back = y[dst]
    ret = torch.empty_like(send)
    if world > 1:
        dist.all_to_all_single(ret, back, in_splits, out_splits)
    else:
        ret.copy_(back)
    slots = torch.empty_like(ret)
    slots[order] = ret
    out = combine_slots(slots.view(tokens, topk, HIDDEN), gates)
    mark(3)
    return out, plan_s, (recv_table, dst, m_idx)


def reference_tokens(x, ids, gates, w):
    """FP32 layer on the dequantized weights (w13 interleaved: blocks of 128 gate, 128 up rows)."""
    out, deq = [], {}
    for t in range(x.shape[0]):
        acc = torch.zeros(HIDDEN, device="cuda")
        for e, gate in zip(ids[t].tolist(), gates[t].tolist()):
            if e not in deq:
                deq[e] = [pb.dequant_b(w[q][e:e + 1], w[s][e:e + 1])[0] for q, s in (("q13i", "s13i"), ("q2", "s2"))]
            w13, w2 = deq[e]
            v = (x[t].float() @ w13.t()).view(-1, 2, BLOCK)
            h = torch.nn.functional.silu(v[:, 0].flatten()) * v[:, 1].flatten()
            acc += gate * (h @ w2.t())
        out.append(acc)
    return torch.stack(out)


def gather(t, world):
    """Every rank's t, concatenated along dim 0 (FP8 travels as bytes)."""
    src = t.view(torch.uint8) if t.dtype == torch.float8_e4m3fn else t
    out = src.new_empty((world * src.shape[0],) + tuple(src.shape[1:]))
    dist.all_gather_into_tensor(out, src.contiguous())
    return out.view(t.dtype)


def check(x, ids, gates, w, out, rank, world):
    """Rank 0: the whole layer on one GPU against the EP result, and a sample against FP32."""
    all_w = {k: gather(v, world) for k, v in w.items()}
    all_x, all_ids, all_gates, all_out = (gather(v, world) for v in (x, ids, gates, out))
    if rank != 0:
        return True
    one = layer(all_x, all_ids, all_gates, all_w, 1)[0]
    differ = int((one.view(torch.int16) != all_out.view(torch.int16)).sum())
    exact = pb.calc_diff(all_out, one)
    tokens = x.shape[0]
    rows = [r * tokens + t for r in range(world) for t in range(min(SAMPLE_TOKENS, tokens))]
    ref = pb.calc_diff(all_out[rows], reference_tokens(all_x[rows], all_ids[rows], all_gates[rows], all_w))
    print("check: EP vs one GPU calc_diff %.1e, %d of %d values differ (expected 0: bit for bit); "
          "vs FP32 on %d tokens calc_diff %.1e" % (exact, differ, all_out.numel(), len(rows), ref), flush=True)
    return exact < EXACT_LIMIT and ref < REF_LIMIT


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--experts", type=int, default=32, help="G, all ranks together (default 32)")
    ap.add_argument("--tokens", type=int, default=256, help="tokens per rank (default 256)")
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20, help="timed steps (median)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--self-test", action="store_true", help="the bookkeeping on the CPU, no torch")
    args = ap.parse_args()
    if args.self_test:
        for world, local, tokens, topk in ((1, 4, 40, 2), (2, 16, 256, 8), (3, 4, 200, 3)):
            self_test(world, local, tokens, topk)
        return 0
    global torch, dist, dg
    import torch
    import torch.distributed as dist
    import dg
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.experts % world or args.topk > args.experts:
        sys.exit("--experts must be a multiple of the world size (%d) and >= --topk" % world)
    w = make_weights(args.experts // world, args.seed * 1000 + rank)
    gen = torch.Generator(device="cuda").manual_seed(args.seed * 1000 + 500 + rank)
    x = torch.randn((args.tokens, HIDDEN), device="cuda", dtype=torch.bfloat16, generator=gen)
    ids, gates = route(args.tokens, args.experts, args.topk, gen)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
    times = []
    for step in range(WARMUP + args.steps):
        dist.barrier()
        torch.cuda.synchronize()
        out, plan_s, planned = layer(x, ids, gates, w, world, events)
        torch.cuda.synchronize()
        if step >= WARMUP:
            times.append([plan_s * 1e3] + [events[i].elapsed_time(events[i + 1]) for i in range(3)])
    med = [sorted(col)[len(col) // 2] * 1e3 for col in zip(*times)]
    recv_table, dst, m_idx = planned
    plan_ok = (dst.tolist(), m_idx.tolist()) == plan(recv_table)  # the device plan against the Python one
    ok = check(x, ids, gates, w, out, rank, world)
    rows = torch.tensor(med + [float(plan_ok)], device="cuda")
    all_rows = [torch.empty_like(rows) for _ in range(world)]
    dist.all_gather(all_rows, rows)
    if rank == 0:
        print("moe-ep: world %d, %d experts (%d per rank), %d tokens x top-%d per rank, hidden %d, intermediate %d; "
              "libdg %s; median of %d steps, us" % (world, args.experts, args.experts // world, args.tokens,
                                                    args.topk, HIDDEN, INTER, dg.version(), args.steps))
        for r, v in enumerate(all_rows):
            print("  rank %d: plan %8.1f  dispatch %8.1f  experts %8.1f  combine %8.1f" % ((r,) + tuple(v.tolist()[:4])))
        plans_ok = all(v[4] == 1 for v in all_rows)
        print("plan: the device layout equals plan()'s on every rank" if plans_ok else "plan: MISMATCH with plan()")
        ok = ok and plans_ok
        print("OK" if ok else "FAILED", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
