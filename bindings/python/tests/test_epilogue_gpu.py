"""GPU tests of the fused GEMM epilogues through the binding (``epilogue=dg.GemmEpilogue(...)``):
a bias on dense GEMMs against torch in FP64, SwiGLU against FP64 on the unquantized values, and the
FP8 D (FP32, power-of-two and packed UE8M0 scales) bit for bit against dg.quantize_fp8_per_token*
of the same call's BF16 D, on a dense, a masked and a contiguous FP8 grouped GEMM whose weights go
through dg.swiglu_interleave. Outputs are poisoned first; masked counts 0 / partial / full and
contiguous padding rows exercise the tails. Skipped without PyTorch or a CUDA device."""

import pytest

torch = pytest.importorskip("torch")

import dg  # noqa: E402



def _have_gpu() -> bool:
    if not torch.cuda.is_available():
        return False
    try:
        return dg.device_count() > 0
    except dg.Error:
        return False


pytestmark = pytest.mark.skipif(not _have_gpu(), reason="needs PyTorch with CUDA and a CUDA device")


def require(name: str) -> None:
    if not dg.available().get(name, False):
        pytest.skip("this build of libdg has no dg_%s" % name)


def calc_diff(x, y) -> float:
    """DeepGEMM's metric: 1 - 2 sum(xy) / sum(x^2 + y^2), in float64."""
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    return 0.0 if denom == 0 else float(1 - 2 * (x * y).sum() / denom)


SCALE_FORMS = [("fp32", False, False), ("pow2", False, True), ("ue8m0", True, True)]


def poisoned(*shape, dtype):
    t = torch.empty(*shape, dtype=dtype, device="cuda")
    if t.element_size() > 1:
        t.fill_(float("nan"))
    else:
        t.view(torch.uint8).fill_(0x7F)  # E4M3 NaN
    return t


def poisoned_scales(d, packed):
    sc = dg.fp8_scales_like(d, packed_ue8m0=packed)
    bits(sc).fill_(-1)
    return sc


def swiglu_ref(x, w, alpha=1.0):
    """silu(alpha * x @ gate.T) * (alpha * x @ up.T) in FP64; w [2I, K] holds [gate; up]."""
    inter = w.shape[0] // 2
    v = alpha * (x.double() @ w.double().T)
    return torch.nn.functional.silu(v[:, :inter]) * v[:, inter:]


def interleave_ref(src, block):
    """[(G,) 2I, C] [gate; up] -> blocks of `block` rows alternating gate, up."""
    squeeze = src.dim() == 2
    s = src.unsqueeze(0) if squeeze else src
    g, i2, c = s.shape
    gate = s[:, : i2 // 2].reshape(g, i2 // 2 // block, block, c)
    up = s[:, i2 // 2:].reshape(g, i2 // 2 // block, block, c)
    out = torch.stack([gate, up], dim=2).reshape(g, i2, c)
    return out[0] if squeeze else out


def swiglu_weights(groups, inter, k):
    """BF16 [G, 2I, K] [gate; up] weights, and their per-block FP8 codes and scales interleaved."""
    w = torch.randn(groups, 2 * inter, k, dtype=torch.bfloat16, device="cuda") * 0.05
    q, sf = dg.quantize_fp8_per_block(w)
    return w, dg.swiglu_interleave(q), dg.swiglu_interleave(sf, block=1)


def bits(t):
    """The tensor's bits as integers of its element size (FP8 tensors cannot be indexed or compared)."""
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()])


def same_bits(x, y):
    return torch.equal(bits(x), bits(y))


@pytest.mark.parametrize("dtype,block,shape", [(torch.bfloat16, 128, (3, 512, 384)), (torch.float32, 1, (3, 4, 7)),
                                               (torch.float8_e4m3fn, 128, (768, 256))])
def test_swiglu_interleave_matches_torch(dtype, block, shape):
    require("swiglu_interleave")
    src = torch.randn(*shape, device="cuda").to(dtype)
    out = dg.swiglu_interleave(src, block=block)
    assert out.shape == src.shape and out.dtype == dtype
    assert torch.equal(bits(out), interleave_ref(bits(src), block))
    dst = poisoned(*shape, dtype=dtype)
    assert dg.swiglu_interleave(src, dst, block) is dst and same_bits(dst, out)


def test_fp8_scales_like_is_the_quantization_layout():
    require("quantize_fp8_per_token")
    for shape in [(203, 384), (3, 130, 640)]:
        x = torch.randn(*shape, dtype=torch.bfloat16, device="cuda")
        for packed in (False, True):
            q, sf = dg.quantize_fp8_per_token(x, packed_ue8m0=packed)
            like = dg.fp8_scales_like(q, packed_ue8m0=packed)
            assert (like.shape, like.stride(), like.dtype) == (sf.shape, sf.stride(), sf.dtype)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
@pytest.mark.parametrize("bias_dtype", [torch.bfloat16, torch.float32])
def test_dense_bf16_bias(layout, bias_dtype):
    m, n, k, alpha = 200, 384, 640, 0.5
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda") * 0.05
    bias = torch.randn(n, device="cuda").to(bias_dtype)
    ag = a.T.contiguous() if layout[0] == "t" else a
    bg = b.T.contiguous() if layout[1] == "n" else b
    d = poisoned(m, n, dtype=torch.bfloat16)
    getattr(dg, "bf16_gemm_" + layout)(ag, bg, d, alpha=alpha, epilogue=dg.GemmEpilogue(bias=bias))
    ref = alpha * (a.double() @ b.double().T) + bias.double()
    assert calc_diff(d, ref) < 1e-5


def test_dense_fp8_bias_and_errors():
    require("quantize_fp8_per_token")
    m, n, k = 200, 384, 640
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda") * 0.05
    bias = torch.randn(n, dtype=torch.float32, device="cuda")
    qa, sfa = dg.quantize_fp8_per_token(a)
    qb, sfb = dg.quantize_fp8_per_block(b)
    d = poisoned(m, n, dtype=torch.bfloat16)
    dg.fp8_gemm_nt((qa, sfa), (qb, sfb), d, epilogue=dg.GemmEpilogue(bias=bias))
    assert calc_diff(d, a.double() @ b.double().T + bias.double()) < 2e-3
    # What the epilogue cannot run is refused, D untouched.
    d.fill_(float("nan"))
    with pytest.raises(dg.Unsupported, match="epilogue"):
        dg.fp8_gemm_nt((qa, sfa), (qb, sfb), d, c=d, epilogue=dg.GemmEpilogue(bias=bias))
    with pytest.raises(dg.Unsupported):  # N = 384: not a multiple of 256 for SwiGLU
        dg.fp8_gemm_nt((qa, sfa), (qb, sfb), d[:, : n // 2], epilogue=dg.GemmEpilogue("swiglu"))
    with pytest.raises(dg.InvalidArgument, match="bias"):
        dg.fp8_gemm_nt((qa, sfa), (qb, sfb), d, epilogue=dg.GemmEpilogue(bias=bias[:-8]))
    assert torch.isnan(d).all()


def test_dense_fp8_swiglu_fp8_d_is_quantize_of_bf16_d():
    require("swiglu_interleave")
    m, inter, k, alpha = 203, 384, 896, 1.25
    w, qw, sfw = swiglu_weights(1, inter, k)
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    qa, sfa = dg.quantize_fp8_per_token(x)
    d = poisoned(m, inter, dtype=torch.bfloat16)
    dg.fp8_gemm_nt((qa, sfa), (qw[0], sfw[0]), d, alpha=alpha, epilogue=dg.GemmEpilogue("swiglu"))
    assert calc_diff(d, swiglu_ref(x, w[0], alpha)) < 3e-3
    for _name, packed, pow2 in SCALE_FORMS:
        d8 = poisoned(m, inter, dtype=torch.float8_e4m3fn)
        sc = poisoned_scales(d8, packed)
        dg.fp8_gemm_nt((qa, sfa), (qw[0], sfw[0]), d8, alpha=alpha,
                       epilogue=dg.GemmEpilogue("swiglu", d_scales=sc, pow2_scales=pow2))
        rq, rsf = dg.quantize_fp8_per_token(d, pow2_scales=pow2, packed_ue8m0=packed)
        assert same_bits(d8, rq), _name
        assert same_bits(sc, rsf), _name


def test_masked_fp8_swiglu_fp8_d_is_quantize_of_bf16_d():
    require("swiglu_interleave")
    g, max_m, inter, k = 3, 128, 256, 512
    counts = [37, 0, 128]
    w, qw, sfw = swiglu_weights(g, inter, k)
    masked_m = torch.tensor(counts, dtype=torch.int32, device="cuda")
    x = torch.randn(g, max_m, k, dtype=torch.bfloat16, device="cuda")
    qa, sfa = dg.quantize_fp8_per_token(x)
    d = poisoned(g, max_m, inter, dtype=torch.bfloat16)
    dg.m_grouped_fp8_gemm_nt_masked((qa, sfa), (qw, sfw), d, masked_m, 64, epilogue=dg.GemmEpilogue("swiglu"))
    got = torch.cat([d[i, :c] for i, c in enumerate(counts)])
    ref = torch.cat([swiglu_ref(x[i, :c], w[i]) for i, c in enumerate(counts)])
    assert calc_diff(got, ref) < 3e-3
    for name, packed, pow2 in SCALE_FORMS:
        d8 = poisoned(g, max_m, inter, dtype=torch.float8_e4m3fn)
        sc = poisoned_scales(d8, packed)
        dg.m_grouped_fp8_gemm_nt_masked((qa, sfa), (qw, sfw), d8, masked_m, 64,
                                        epilogue=dg.GemmEpilogue("swiglu", d_scales=sc, pow2_scales=pow2))
        rq, rsf = dg.quantize_fp8_per_token_masked(d, masked_m, pow2_scales=pow2, packed_ue8m0=packed)
        for i, c in enumerate(counts):
            assert same_bits(d8[i, :c], rq[i, :c]), (name, i)
            assert same_bits(sc[i, :c], rsf[i, :c]), (name, i)
            # Rows past the count: codes and scales 0 where a computed tile covers them, untouched
            # (still poisoned) where none does; never anything else.
            for r in range(c, max_m):
                codes, words = bits(d8[i, r]), bits(sc[i, r])
                zero = not codes.any() and not words.any()
                untouched = bool((codes == 0x7F).all()) and bool((words == -1).all())
                assert zero or untouched, (name, i, r)


def test_contiguous_fp8_swiglu_fp8_d_is_quantize_of_bf16_d():
    require("swiglu_interleave")
    g, m, inter, k = 3, 512, 256, 512
    sizes = [100, 0, 250]
    w, qw, sfw = swiglu_weights(g, inter, k)
    idx = torch.full((m,), -1, dtype=torch.int32)
    spans, row = [], 0
    for i, s in enumerate(sizes):
        idx[row:row + s] = i
        spans.append((row, s))
        row = (row + s + 127) // 128 * 128
    idx = idx.cuda()
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    qa, sfa = dg.quantize_fp8_per_token(x)
    d = poisoned(m, inter, dtype=torch.bfloat16)
    dg.m_grouped_fp8_gemm_nt_contiguous((qa, sfa), (qw, sfw), d, idx, epilogue=dg.GemmEpilogue("swiglu"))
    got = torch.cat([d[r:r + s] for r, s in spans])
    ref = torch.cat([swiglu_ref(x[r:r + s], w[i]) for i, (r, s) in enumerate(spans)])
    assert calc_diff(got, ref) < 3e-3
    valid = idx >= 0
    # Padding rows in a 128-row block that holds some group's rows are computed: codes and scales 0.
    block_has_rows = valid.view(-1, 128).any(dim=1).repeat_interleave(128)
    padding = block_has_rows & ~valid
    for name, packed, pow2 in SCALE_FORMS:
        d8 = poisoned(m, inter, dtype=torch.float8_e4m3fn)
        sc = poisoned_scales(d8, packed)
        dg.m_grouped_fp8_gemm_nt_contiguous((qa, sfa), (qw, sfw), d8, idx,
                                            epilogue=dg.GemmEpilogue("swiglu", d_scales=sc, pow2_scales=pow2))
        rq, rsf = dg.quantize_fp8_per_token_contiguous(d, idx, g, pow2_scales=pow2, packed_ue8m0=packed)
        assert torch.equal(bits(d8)[valid], bits(rq)[valid]), name
        assert torch.equal(bits(sc)[valid], bits(rsf)[valid]), name
        assert not bits(d8)[padding].any() and not bits(sc)[padding].any(), name
