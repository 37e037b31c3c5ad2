"""GPU tests: every exposed kernel against a torch reference (fresh random data, outputs poisoned
with NaN before each call, transposed views and the alias layouts). Skipped without PyTorch or a
CUDA device; functions whose C symbol this build of libdg lacks are skipped with the reason."""

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

LAYOUTS = ("nt", "nn", "tn", "tt")


def require(name: str) -> None:
    if not dg.available().get(name, False):
        pytest.skip("this build of libdg has no dg_%s" % name)


def calc_diff(x, y) -> float:
    """DeepGEMM's metric: 1 - 2 sum(xy) / sum(x^2 + y^2), in float64."""
    x, y = x.double(), y.double()
    denom = (x * x + y * y).sum()
    if denom == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / denom)


def poisoned(*shape, dtype):
    t = torch.empty(*shape, dtype=dtype, device="cuda")
    t.fill_(float("nan"))
    return t


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def align(a: int, b: int) -> int:
    return ceil_div(a, b) * b


def given(x_nt, layout_char_is_transposed: bool, contiguous: bool):
    """An NT-view operand as an alias function takes it: transposed ([K, MN]) when the layout says
    so, as a contiguous copy (memory MN-major) or as a view of the K-major storage."""
    if not layout_char_is_transposed:
        return x_nt
    return x_nt.T.contiguous() if contiguous else x_nt.T


def as_nt(x_given, layout_char_is_transposed: bool):
    return x_given.T if layout_char_is_transposed else x_given


# ---------------------------------------------------------------------------------------------
# BF16 GEMM and cuBLASLt
# ---------------------------------------------------------------------------------------------

BF16_SHAPES = [(1, 2112, 7168), (128, 576, 512), (257, 384, 192), (4096, 2048, 1024)]


def _run_gemm(kind: str, layout: str, m: int, n: int, k: int, out_dtype, via_nt: bool, threshold: float):
    torch.manual_seed(m * 7 + n * 3 + k)
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    ref = a.float() @ b.float().T
    ta, tb = layout[0] == "t", layout[1] == "n"
    ag = given(a, ta, contiguous=True)
    bg = given(b, tb, contiguous=True)
    d = poisoned(m, n, dtype=out_dtype)
    # libdg's kernels read through TMA, which needs every non-unit stride to be a multiple of 16
    # bytes: an operand stored transposed (MN-major) needs its M or N to be a multiple of 8, a
    # K-major one K % 8 == 0. libdg refuses the rest with a message rather than a wrong answer.
    legal = kind != "bf16" or all(dim % 8 == 0 or dim == 1 for dim in ((m if ta else k), (n if tb else k)))
    if not legal:
        entry = getattr(dg, "%s_gemm_nt" % kind) if via_nt else getattr(dg, "%s_gemm_%s" % (kind, layout))
        args = (as_nt(ag, ta), as_nt(bg, tb), d) if via_nt else (ag, bg, d)
        with pytest.raises(dg.InvalidArgument, match="16 bytes"):
            entry(*args)
        return
    if via_nt:  # the NT entry with strided (MN-major) views
        getattr(dg, "%s_gemm_nt" % kind)(as_nt(ag, ta), as_nt(bg, tb), d)
    else:  # the alias entry with contiguous transposed tensors
        getattr(dg, "%s_gemm_%s" % (kind, layout))(ag, bg, d)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any(), "output not fully written"
    diff = calc_diff(d, ref)
    assert diff < threshold, "%s_gemm_%s m=%d n=%d k=%d diff=%g" % (kind, layout, m, n, k, diff)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("m,n,k", BF16_SHAPES)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("via_nt", [False, True], ids=["alias", "nt_view"])
def test_bf16_gemm(layout, m, n, k, out_dtype, via_nt):
    require("bf16_gemm_%s" % layout)
    require("bf16_gemm_nt")
    _run_gemm("bf16", layout, m, n, k, out_dtype, via_nt, 1e-5)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_bf16_gemm_accumulate_alpha_beta(layout):
    require("bf16_gemm_%s" % layout)
    m, n, k = 256, 512, 384
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    c = torch.randn(m, n, dtype=torch.float32, device="cuda") * 32
    ta, tb = layout[0] == "t", layout[1] == "n"
    # Aliased C and D (DeepGEMM's accumulate test).
    d = c.clone()
    getattr(dg, "bf16_gemm_%s" % layout)(given(a, ta, True), given(b, tb, True), d, c=d)
    torch.cuda.synchronize()
    assert calc_diff(d, a.float() @ b.float().T + c) < 1e-5
    # Separate C, alpha and beta.
    d = poisoned(m, n, dtype=torch.float32)
    getattr(dg, "bf16_gemm_%s" % layout)(given(a, ta, True), given(b, tb, True), d, c=c, alpha=0.5, beta=2.0)
    torch.cuda.synchronize()
    assert calc_diff(d, 0.5 * (a.float() @ b.float().T) + 2.0 * c) < 1e-5


def test_bf16_gemm_k_zero_and_errors():
    require("bf16_gemm_nt")
    a = torch.randn(64, 0, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(128, 0, dtype=torch.bfloat16, device="cuda")
    d = poisoned(64, 128, dtype=torch.bfloat16)
    dg.bf16_gemm_nt(a, b, d)
    torch.cuda.synchronize()
    assert torch.count_nonzero(d) == 0  # K = 0 without C: D = 0
    a = torch.randn(64, 128, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(128, 128, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(dg.InvalidArgument) as info:
        dg.bf16_gemm_nt(a, b, torch.empty(64, 128, dtype=torch.float16, device="cuda"))
    assert "d" in str(info.value)
    with pytest.raises(dg.InvalidArgument, match="cpu"):
        dg.bf16_gemm_nt(a.cpu(), b, torch.empty(64, 128, dtype=torch.bfloat16, device="cuda"))


def _require_cublaslt(layout):
    require("cublaslt_gemm_%s" % layout)
    if not dg.cublaslt_available():
        pytest.skip("cuBLASLt cannot be loaded")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("m,n,k", BF16_SHAPES[:3])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize("via_nt", [False, True], ids=["alias", "nt_view"])
def test_cublaslt_gemm(layout, m, n, k, out_dtype, via_nt):
    _require_cublaslt(layout)
    _require_cublaslt("nt")
    _run_gemm("cublaslt", layout, m, n, k, out_dtype, via_nt, 1e-5)


def test_cublaslt_accumulate_workspace_and_fp8():
    _require_cublaslt("nt")
    m, n, k = 256, 512, 1024
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    c = torch.randn(m, n, dtype=torch.float32, device="cuda")
    d = c.clone()
    ws = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")
    dg.cublaslt_gemm_nt(a, b, d, c=d, workspace=ws)
    torch.cuda.synchronize()
    assert calc_diff(d, a.float() @ b.float().T + c) < 1e-5
    d = poisoned(m, n, dtype=torch.float32)
    dg.cublaslt_gemm_nt(a, b, d, c=c, alpha=2.0, beta=0.5, workspace=False)
    torch.cuda.synchronize()
    assert calc_diff(d, 2.0 * (a.float() @ b.float().T) + 0.5 * c) < 1e-5
    # Raw FP8 (no scales), NT only.
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    d = poisoned(m, n, dtype=torch.bfloat16)
    dg.cublaslt_gemm_nt(a8, b8, d)
    torch.cuda.synchronize()
    assert calc_diff(d, a8.float() @ b8.float().T) < 1e-5


# ---------------------------------------------------------------------------------------------
# FP8 GEMM
# ---------------------------------------------------------------------------------------------


def per_token_cast_to_fp8(x):
    """DeepGEMM's per-token quantiser: one FP32 scale per (row, 128 K)."""
    m, k = x.shape
    pad = align(k, 128) - k
    xp = torch.nn.functional.pad(x, (0, pad)) if pad else x
    xv = xp.view(m, -1, 128).float()
    amax = xv.abs().amax(dim=2).clamp(1e-4)
    sf = amax / 448.0
    xq = (xv / sf.unsqueeze(2)).to(torch.float8_e4m3fn).view(m, -1)[:, :k].contiguous()
    return xq, sf


def per_block_cast_to_fp8(x):
    """DeepGEMM's per-block quantiser: one FP32 scale per 128 x 128 tile."""
    m, k = x.shape
    xp = torch.zeros(align(m, 128), align(k, 128), dtype=torch.float32, device=x.device)
    xp[:m, :k] = x.float()
    xv = xp.view(xp.size(0) // 128, 128, xp.size(1) // 128, 128)
    amax = xv.abs().amax(dim=(1, 3), keepdim=True).clamp(1e-4)
    sf = amax / 448.0
    xq = (xv / sf).to(torch.float8_e4m3fn).view_as(xp)[:m, :k].contiguous()
    return xq, sf.view(xv.size(0), xv.size(2))


FP8_SHAPES = [(1, 2112, 7168), (128, 576, 7168), (300, 4096, 1536), (4096, 2112, 512)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("m,n,k", FP8_SHAPES)
@pytest.mark.parametrize("pretransformed", [False, True], ids=["row_major_sfa", "mn_major_sfa"])
def test_fp8_gemm_1d2d(layout, m, n, k, pretransformed):
    """BF16 out, per-token A scales, per-block B scales; the alias layouts get transposed views of
    K-major storage (no copies), scales transposed with them."""
    require("fp8_gemm_%s" % layout)
    torch.manual_seed(m + n + k)
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    ref = a.float() @ b.float().T
    a8, sfa = per_token_cast_to_fp8(a)
    b8, sfb = per_block_cast_to_fp8(b)
    if pretransformed:
        sfa = dg.get_mn_major_tma_aligned_tensor(sfa)
    ta, tb = layout[0] == "t", layout[1] == "n"
    ag, sfag = (a8.T, sfa.T) if ta else (a8, sfa)
    bg, sfbg = (b8.T, sfb.T) if tb else (b8, sfb)
    sfa_before = sfa.clone()
    d = poisoned(m, n, dtype=torch.bfloat16)
    getattr(dg, "fp8_gemm_%s" % layout)((ag, sfag), (bg, sfbg), d)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    diff = calc_diff(d, ref)
    assert diff < 1e-3, "fp8_gemm_%s m=%d n=%d k=%d diff=%g" % (layout, m, n, k, diff)
    assert torch.equal(sfa, sfa_before)  # the caller's scales are never modified


@pytest.mark.parametrize("layout", ["nt", "tn"])
def test_warm_path_repeats_compute_afresh(layout):
    """Calls repeated on the same tensors take the binding's warm path (one C call with the first
    call's descriptors): each writes the product of the buffers' current contents."""
    m, n, k = 128, 2112, 7168
    d = poisoned(m, n, dtype=torch.bfloat16)
    ta, tb = layout[0] == "t", layout[1] == "n"
    a = torch.empty(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.empty(n, k, dtype=torch.bfloat16, device="cuda")
    a8 = torch.empty(m, k, dtype=torch.float8_e4m3fn, device="cuda")
    b8 = torch.empty(n, k, dtype=torch.float8_e4m3fn, device="cuda")
    sfa = torch.empty_strided((m, k // 128), (1, align(m, 4)), device="cuda")
    sfb = torch.empty(ceil_div(n, 128), k // 128, device="cuda")
    for trial in range(3):
        torch.manual_seed(trial)
        a.copy_(torch.randn(m, k, device="cuda"))
        b.copy_(torch.randn(n, k, device="cuda"))
        ref = a.float() @ b.float().T
        d.fill_(float("nan"))
        getattr(dg, "bf16_gemm_%s" % layout)(a.T if ta else a, b.T if tb else b, d)
        torch.cuda.synchronize()
        assert calc_diff(d, ref) < 1e-5, trial
        if layout == "nt":
            qa, qsa = per_token_cast_to_fp8(a)
            qb, qsb = per_block_cast_to_fp8(b)
            a8.copy_(qa), b8.copy_(qb), sfa.copy_(qsa), sfb.copy_(qsb)
            d.fill_(float("nan"))
            dg.fp8_gemm_nt((a8, sfa), (b8, sfb), d)
            torch.cuda.synchronize()
            assert calc_diff(d, ref) < 1e-3, trial


@pytest.mark.parametrize("m,n,k", [(256, 512, 1024), (4096, 2112, 7168)])
def test_fp8_gemm_1d1d_accumulate(m, n, k):
    """FP32 out with C (aliased), per-token scales on both sides (recipe (1, 1, 128))."""
    require("fp8_gemm_nt")
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    c = torch.randn(m, n, dtype=torch.float32, device="cuda") * 32
    a8, sfa = per_token_cast_to_fp8(a)
    b8, sfb = per_token_cast_to_fp8(b)
    d = c.clone()
    dg.fp8_gemm_nt((a8, sfa), (b8, sfb), d, c=d, recipe=(1, 1, 128))
    torch.cuda.synchronize()
    assert calc_diff(d, a.float() @ b.float().T + c) < 1e-3


@pytest.mark.parametrize("form", ["fp8_nt", "fp8_tn", "bf16_tn"])
@pytest.mark.parametrize("with_c", [False, True])
def test_k_grouped_gemm(form, with_c):
    """D[g] = A_g @ B_g.T (+ C[g]) over each group's slice of K; one empty group."""
    require("k_grouped_%s_gemm_%s_contiguous" % tuple(form.split("_")))
    torch.manual_seed(len(form) + with_c)
    m, n, ks = 320, 272, [384, 0, 128, 1024]
    xs = [torch.randn(m, k, dtype=torch.bfloat16, device="cuda") for k in ks]
    ys = [torch.randn(n, k, dtype=torch.bfloat16, device="cuda") for k in ks]
    c = torch.randn(len(ks), m, n, dtype=torch.float32, device="cuda") * 32 if with_c else None
    ref = torch.stack([x.float() @ y.float().T for x, y in zip(xs, ys)]) + (c if with_c else 0)
    d = poisoned(len(ks), m, n, dtype=torch.float32)
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device="cuda")
    if form == "bf16_tn":
        a, b = torch.cat([x.T for x in xs]), torch.cat([y.T for y in ys])
        dg.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor, c=c)
        bound = 1e-5
    else:
        qa = [per_token_cast_to_fp8(x) for x in xs]
        qb = [per_token_cast_to_fp8(y) for y in ys]
        sfa, sfb = torch.cat([s for _, s in qa], dim=1), torch.cat([s for _, s in qb], dim=1)
        if form == "fp8_nt":
            a, b = torch.cat([q.flatten() for q, _ in qa]), torch.cat([q.flatten() for q, _ in qb])
        else:
            a, b = torch.cat([q.T for q, _ in qa]), torch.cat([q.T for q, _ in qb])
        getattr(dg, "k_grouped_%s_contiguous" % form.replace("_", "_gemm_"))((a, sfa), (b, sfb), d, ks, ks_tensor, c=c)
        bound = 1e-3
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    assert torch.equal(d[1], c[1] if with_c else torch.zeros_like(d[1]))
    diff = calc_diff(d, ref)
    assert diff < bound, "k_grouped %s with_c=%s diff=%g" % (form, with_c, diff)


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
@pytest.mark.parametrize("m,n,k", [(1, 2112, 7168), (128, 576, 7168), (320, 336, 400), (4096, 2112, 512)])
@pytest.mark.parametrize("workspace", ["auto", "given"])
def test_fp8_gemm_mn_major_memory(layout, m, n, k, workspace):
    """Operands stored MN-major (contiguous [K, MN]): libdg transposes them K-major into the workspace
    (torch's by default, or the caller's, poisoned: 0xff is NaN in E4M3) before the GEMM."""
    require("fp8_gemm_%s" % layout)
    torch.manual_seed(m + 2 * n + 3 * k)
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    ref = a.float() @ b.float().T
    a8, sfa = per_token_cast_to_fp8(a)
    b8, sfb = per_block_cast_to_fp8(b)
    ta, tb = layout[0] == "t", layout[1] == "n"
    ag, sfag = (a8.T.contiguous(), sfa.T) if ta else (a8, sfa)
    bg, sfbg = (b8.T.contiguous(), sfb.T) if tb else (b8, sfb)
    kwargs = {}
    if workspace == "given":
        size = dg.fp8_gemm_workspace_size(layout, m, n, k)
        buf = torch.full((size + 512,), 0xFF, dtype=torch.uint8, device="cuda")
        kwargs["workspace"] = buf[256 : 256 + size]
    d = poisoned(m, n, dtype=torch.bfloat16)
    getattr(dg, "fp8_gemm_%s" % layout)((ag, sfag), (bg, sfbg), d, **kwargs)
    torch.cuda.synchronize()
    assert not torch.isnan(d).any()
    diff = calc_diff(d, ref)
    assert diff < 1e-3, "fp8_gemm_%s m=%d n=%d k=%d diff=%g" % (layout, m, n, k, diff)
    if workspace == "given":
        assert bool((buf[:256] == 0xFF).all()) and bool((buf[256 + size :] == 0xFF).all())


def test_fp8_gemm_1d1d_mn_major_accumulate():
    """The weight gradient as it comes: tn with both operands [K, MN] contiguous, per-token scales on
    both sides, FP32 D += (C aliased)."""
    require("fp8_gemm_tn")
    m, n, k = 512, 768, 2048
    a = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")
    c = torch.randn(m, n, dtype=torch.float32, device="cuda") * 32
    a8, sfa = per_token_cast_to_fp8(a)
    b8, sfb = per_token_cast_to_fp8(b)
    d = c.clone()
    dg.fp8_gemm_tn((a8.T.contiguous(), sfa.T), (b8.T.contiguous(), sfb.T), d, c=d, recipe=(1, 1, 128))
    torch.cuda.synchronize()
    assert calc_diff(d, a.float() @ b.float().T + c) < 1e-3


def test_fp8_gemm_mn_major_errors():
    require("fp8_gemm_nn")
    m, n, k = 128, 256, 512
    a8, sfa = per_token_cast_to_fp8(torch.randn(m, k, device="cuda"))
    b8, sfb = per_block_cast_to_fp8(torch.randn(n, k, device="cuda"))
    d = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(dg.Unsupported, match=r"b: .*MN-major.*%d bytes" % (n * k)):
        dg.fp8_gemm_nn((a8, sfa), (b8.T.contiguous(), sfb.T), d, workspace=False)
    with pytest.raises(dg.InvalidArgument, match="options.workspace_size"):
        dg.fp8_gemm_nn((a8, sfa), (b8.T.contiguous(), sfb.T), d, workspace=torch.empty(16, dtype=torch.uint8, device="cuda"))
    # K rows of an MN-major operand must be 16-byte multiples apart (N = 200 here).
    b8_odd, sfb_odd = per_block_cast_to_fp8(torch.randn(200, k, device="cuda"))
    with pytest.raises(dg.Unsupported, match="16 bytes"):
        dg.fp8_gemm_nn((a8, sfa), (b8_odd.T.contiguous(), sfb_odd.T), torch.empty(m, 200, dtype=torch.bfloat16, device="cuda"))


def test_fp8_gemm_errors():
    require("fp8_gemm_nt")
    a = torch.randn(128, 256, dtype=torch.bfloat16, device="cuda")
    b8, sfb = per_block_cast_to_fp8(torch.randn(256, 256, device="cuda"))
    a8, sfa = per_token_cast_to_fp8(a)
    d = torch.empty(128, 256, dtype=torch.bfloat16, device="cuda")
    with pytest.raises(dg.InvalidArgument) as info:
        dg.fp8_gemm_nt((a, sfa), (b8, sfb), d)  # A is BF16
    assert "a" in str(info.value)
    with pytest.raises(dg.InvalidArgument):
        dg.fp8_gemm_nt((a8, sfa[:, :1]), (b8, sfb), d)  # SFA of the wrong shape
    with pytest.raises(dg.InvalidArgument, match="pair"):
        dg.fp8_gemm_nt(a8, (b8, sfb), d)


# ---------------------------------------------------------------------------------------------
# NVFP4 GEMV
# ---------------------------------------------------------------------------------------------

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def decode_e2m1(x):
    """[R, K/2, L] bytes -> [R, K, L] float32 (even k in the low nibble)."""
    lut = torch.tensor(E2M1, dtype=torch.float32, device=x.device)
    xi = x.to(torch.int64)
    lo, hi = lut[xi & 0xF], lut[(xi >> 4) & 0xF]
    r, kh, l = x.shape
    return torch.stack([lo, hi], dim=2).reshape(r, 2 * kh, l)


def gemv_inputs(m: int, k: int, l: int, np_: int = 128, byte_dtype=torch.uint8):
    """Tensors laid out as in the seed: permuted from [L, rows, K/x] storage."""
    a = torch.randint(0, 256, (l, m, k // 2), dtype=torch.uint8, device="cuda").view(byte_dtype).permute(1, 2, 0)
    b = torch.randint(0, 256, (l, np_, k // 2), dtype=torch.uint8, device="cuda").view(byte_dtype).permute(1, 2, 0)
    sfa = (torch.rand(l, m, k // 16, device="cuda") * 1.75 + 0.25).to(torch.float8_e4m3fn).permute(1, 2, 0)
    sfb = (torch.rand(l, np_, k // 16, device="cuda") * 1.75 + 0.25).to(torch.float8_e4m3fn).permute(1, 2, 0)
    c = torch.empty(l, m, 1, dtype=torch.float16, device="cuda").permute(1, 2, 0)
    c.fill_(float("nan"))
    return a, sfa, b, sfb, c


def gemv_reference(a, sfa, b, sfb):
    av = decode_e2m1(a.view(torch.uint8)) * sfa.float().repeat_interleave(16, dim=1)
    bv = decode_e2m1(b[:1].view(torch.uint8)) * sfb[:1].float().repeat_interleave(16, dim=1)
    return (av * bv).sum(dim=1, keepdim=True)  # [M, 1, L]


@pytest.mark.parametrize(
    "m,k,l", [(128, 256, 1), (256, 512, 2), (2432, 4608, 2), (7168, 2048, 4), (4096, 7168, 8), (7168, 16384, 1)]
)
@pytest.mark.parametrize("byte_dtype", [torch.uint8, torch.int8], ids=["uint8", "int8"])
def test_nvfp4_gemv(m, k, l, byte_dtype):
    require("nvfp4_gemv")
    torch.manual_seed(m + k + l)
    a, sfa, b, sfb, c = gemv_inputs(m, k, l, byte_dtype=byte_dtype)
    dg.nvfp4_gemv(a, sfa, b, sfb, c)
    torch.cuda.synchronize()
    ref = gemv_reference(a, sfa, b, sfb)
    assert not torch.isnan(c).any()
    torch.testing.assert_close(c.float(), ref, rtol=1e-3, atol=1e-3)


def test_nvfp4_gemv_rank2_options_and_errors():
    require("nvfp4_gemv")
    m, k = 512, 1024
    a, sfa, b, sfb, c = gemv_inputs(m, k, 1)
    a2, sfa2, b2, sfb2, c2 = a[..., 0], sfa[..., 0], b[..., 0], sfb[..., 0], c[..., 0]
    dg.nvfp4_gemv(a2, sfa2, b2, sfb2, c2)
    torch.cuda.synchronize()
    torch.testing.assert_close(c2.float(), gemv_reference(a, sfa, b, sfb)[..., 0], rtol=1e-3, atol=1e-3)
    c.fill_(float("nan"))
    dg.nvfp4_gemv(a, sfa, b, sfb, c, options={"vector_bytes": 8})
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), gemv_reference(a, sfa, b, sfb), rtol=1e-3, atol=1e-3)
    with pytest.raises(dg.InvalidArgument, match="unknown field"):
        dg.nvfp4_gemv(a, sfa, b, sfb, c, options={"speed": 11})
    a_bad, sfa_bad, b_bad, sfb_bad, c_bad = gemv_inputs(128, 48, 1)  # K not a multiple of 32
    with pytest.raises(dg.InvalidArgument, match="32"):
        dg.nvfp4_gemv(a_bad, sfa_bad, b_bad, sfb_bad, c_bad)


# ---------------------------------------------------------------------------------------------
# Scaling-factor layouts
# ---------------------------------------------------------------------------------------------


def ref_pack_ue8m0(sf):
    """[.., MN, SF_K] FP32 powers of two -> int32 [.., MN, ceil(SF_K / 4)], little-endian bytes."""
    e = (sf.contiguous().view(torch.int32) >> 23) & 0xFF
    pad = (-sf.size(-1)) % 4
    e = torch.nn.functional.pad(e, (0, pad)).to(torch.int64)
    e = e.view(*e.shape[:-1], -1, 4)
    w = e[..., 0] | (e[..., 1] << 8) | (e[..., 2] << 16) | (e[..., 3] << 24)
    w = torch.where(w >= 2**31, w - 2**32, w)
    return w.to(torch.int32)


def deepgemm_strides(shape):
    """DeepGEMM's get_mn_major_tma_aligned_tensor strides: (.., 1, align(MN, 4)), batch stride
    align(MN, 4) * SF_K, for every shape (dimensions of size 1 included)."""
    am = align(shape[-2], 4)
    return ((am * shape[-1],) if len(shape) == 3 else ()) + (1, am)


@pytest.mark.parametrize("mn,k", [(4096, 128), (4097, 128), (1, 128), (3, 256), (1, 7168), (4097, 7168), (8192, 7296)])
@pytest.mark.parametrize("groups", [None, 1, 2])
def test_mn_major_tma_aligned_tensor(mn, k, groups):
    sf_k = ceil_div(k, 128)
    shape = (mn, sf_k) if groups is None else (groups, mn, sf_k)
    sf = torch.randn(*shape, device="cuda")
    out = dg.get_mn_major_tma_aligned_tensor(sf)
    torch.cuda.synchronize()
    assert torch.equal(out, sf)
    assert out.stride() == deepgemm_strides(shape)  # [MN, 1] included: (1, align(MN, 4))
    assert dg.get_mn_major_tma_aligned_tensor(out) is out  # already in layout: no copy
    # A transposed input (MN-major storage, unaligned) goes through the same function.
    src = sf.transpose(-1, -2).contiguous().transpose(-1, -2)
    got = dg.get_mn_major_tma_aligned_tensor(src)
    assert torch.equal(got, sf) and got.stride() == deepgemm_strides(shape)
    # transform_sf_into_required_layout answers the same for per-token SM90 scales.
    if dg.get_device_capability(torch.cuda.current_device())[0] == 9:
        t = dg.transform_sf_into_required_layout(sf, mn, k, (1, 128), num_groups=groups)
        assert torch.equal(t, sf) and t.stride() == deepgemm_strides(shape)


@pytest.mark.parametrize("mn,k", [(4096, 128), (4097, 7168), (8192, 7296)])
@pytest.mark.parametrize("groups", [None, 4])
def test_packed_ue8m0(mn, k, groups):
    sf_k = ceil_div(k, 128)
    shape = (mn, sf_k) if groups is None else (groups, mn, sf_k)
    sf = torch.pow(2.0, torch.randint(-30, 30, shape, device="cuda").float())
    out = dg.get_mn_major_tma_aligned_packed_ue8m0_tensor(sf)
    torch.cuda.synchronize()
    ref = ref_pack_ue8m0(sf)
    assert out.dtype == torch.int32
    assert out.shape == ref.shape
    assert torch.equal(out, ref)
    assert out.stride()[-2:] == (1, align(mn, 4))


@pytest.mark.parametrize("mn", [4096, 7168])
@pytest.mark.parametrize("groups,avg_k", [(16, 2048), (8, 4096), (72, 384), (128, 256)])
def test_k_grouped_packed_ue8m0(mn, groups, avg_k):
    require("get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor")
    gen = torch.Generator().manual_seed(mn + groups)
    ks = [align(int(float(torch.empty(1).uniform_(0.7, 1.3, generator=gen)) * avg_k), 128) for _ in range(groups)]
    ks[groups // 3] = 0
    blocks = [k // 128 for k in ks]
    sf = torch.pow(2.0, torch.randint(-30, 30, (sum(blocks), mn), device="cuda").float())
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device="cuda")
    packed = dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_tensor, ks)
    rows = [ceil_div(b, 4) for b in blocks]
    assert packed.dtype == torch.int32
    assert packed.shape == (sum(rows), mn) and packed.stride() == (mn, 1)
    # Per group: the group's [K blocks, MN] scales packed along K blocks, as DeepGEMM's test checks.
    ref = torch.cat([ref_pack_ue8m0(g.T).T for g in sf.split(blocks)])
    assert torch.equal(packed, ref)
    # Into a caller's poisoned buffer; HEAD's argument form (grouped_layout, ks_cpu, gran_k, k_alignment).
    out = torch.full_like(packed, -1)
    assert dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_tensor, ks, 128, 128, out=out) is out
    assert torch.equal(out, ref)


def test_k_grouped_packed_ue8m0_errors():
    require("get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor")
    sf = torch.ones(7, 256, device="cuda")
    ks = [256, 0, 640]
    ks_tensor = torch.tensor(ks, dtype=torch.int32, device="cuda")
    with pytest.raises(dg.InvalidArgument, match=r"sf: has 7 rows of K blocks but sum\(ks\) / 128 = 6"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_tensor, [256, 0, 512])
    with pytest.raises(dg.InvalidArgument, match=r"ks\[1\]: 64"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_tensor, [256, 64, 576])
    with pytest.raises(dg.InvalidArgument, match="ks_tensor: has 2 entries"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_tensor[:2], ks)
    with pytest.raises(dg.Unsupported, match="gran_k"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_tensor, ks, 32, 32)


def test_transform_sf_into_required_layout_sm90():
    if dg.get_device_capability(torch.cuda.current_device())[0] != 9:
        pytest.skip("SM90 layouts")
    m, n, k = 300, 512, 1024
    sfa = torch.rand(m, k // 128, device="cuda")
    out = dg.transform_sf_into_required_layout(sfa, m, k, (1, 128, 128), is_sfa=True)
    assert torch.equal(out, sfa) and out.stride() == (1, align(m, 4))
    sfb = torch.rand(n // 128, k // 128, device="cuda")
    assert dg.transform_sf_into_required_layout(sfb, n, k, (1, 128, 128), is_sfa=False) is sfb
    with pytest.raises(dg.InvalidArgument):
        dg.transform_sf_into_required_layout(sfa[:, :1], m, k, (1, 128, 128), is_sfa=True)


# ---------------------------------------------------------------------------------------------
# Tensor protocols and streams on a real device
# ---------------------------------------------------------------------------------------------


class DLPackOnly:
    """Exposes a torch tensor only through DLPack."""

    def __init__(self, t):
        self.t = t
        self.streams = []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.t.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


class CAIOnly:
    """Exposes a torch tensor only through __cuda_array_interface__."""

    def __init__(self, t):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


@pytest.mark.parametrize("wrap", [DLPackOnly, CAIOnly], ids=["dlpack", "cai"])
def test_non_torch_tensors(wrap):
    mn, sf_k = 1000, 7
    sf = torch.randn(mn, sf_k, device="cuda")
    lay = dg.get_mn_major_tma_aligned_tensor_layout(sf.shape)
    buf = torch.full((lay.nbytes // 4,), float("nan"), device="cuda")
    out = buf.as_strided(lay.sizes, lay.strides)
    res = dg.get_mn_major_tma_aligned_tensor(wrap(sf), out=wrap(out))
    torch.cuda.synchronize()
    assert isinstance(res, wrap)
    assert torch.equal(out, sf)
    with pytest.raises(dg.InvalidArgument, match="out="):
        dg.transform_sf_into_required_layout(wrap(sf), mn, 128 * sf_k, (1, 128, 128), is_sfa=True)


def test_dlpack_gets_the_consumer_stream():
    s = torch.cuda.Stream()
    sf = DLPackOnly(torch.randn(512, 4, device="cuda"))
    out = torch.empty_strided((512, 4), (1, 512), device="cuda")
    torch.cuda.synchronize()
    dg.get_mn_major_tma_aligned_tensor(sf, out=DLPackOnly(out), stream=s)
    s.synchronize()
    assert sf.streams == [s.cuda_stream]
    assert torch.equal(out, sf.t)


def test_streams():
    sf = torch.randn(2048, 8, device="cuda")
    s = torch.cuda.Stream()
    torch.cuda.synchronize()
    out = dg.get_mn_major_tma_aligned_tensor(sf, stream=s)  # a torch stream
    s.synchronize()
    assert torch.equal(out, sf)
    with torch.cuda.stream(s):  # torch's current stream by default
        out = dg.get_mn_major_tma_aligned_tensor(sf)
    s.synchronize()
    assert torch.equal(out, sf)
    out = dg.get_mn_major_tma_aligned_tensor(sf, stream=s.cuda_stream)  # a raw handle
    s.synchronize()
    assert torch.equal(out, sf)
    with dg.Stream(sf.device.index, s, config=dg.Config(num_sms=8)) as ds:
        assert ds.cu_stream == s.cuda_stream and ds.device == sf.device.index
        out = dg.get_mn_major_tma_aligned_tensor(sf, stream=ds)
        ds.synchronize()
    assert torch.equal(out, sf)
    with dg.Stream(sf.device.index, create=True) as owned:
        torch.cuda.synchronize()
        out = dg.get_mn_major_tma_aligned_tensor(sf, stream=owned)
        owned.synchronize()
    assert torch.equal(out, sf)


def test_device_queries():
    assert dg.device_count() == torch.cuda.device_count()
    cap = dg.get_device_capability(0)
    assert cap == torch.cuda.get_device_capability(0)
    dg.set_num_sms(0)
    assert dg.get_num_sms() == torch.cuda.get_device_properties(0).multi_processor_count
    stats = dg.jit_stats()
    assert set(stats) == {"compiled", "loaded_from_disk", "memory_hits"}


def _mqa_inputs(rows, h, d, s_kv):
    q = torch.randn(rows, h, d, device="cuda").to(torch.float8_e4m3fn)
    kv_f = torch.randn(s_kv, d, device="cuda")
    sf = kv_f.abs().amax(dim=1).clamp(min=1e-4) / 448.0
    kv = (kv_f / sf[:, None]).to(torch.float8_e4m3fn)
    w = torch.rand(rows, h, device="cuda")
    return q, kv, sf, w


def _mqa_reference(q, kv, sf, w):
    """[rows, S_kv] in float64: sum_h w * relu(q . kv) times the key's scale."""
    s = torch.einsum("rhd,kd->rhk", q.double(), kv.double()).clamp(min=0)
    return (s * w.double()[:, :, None]).sum(dim=1) * sf.double()[None, :]


@pytest.mark.parametrize("h,d", [(64, 128), (32, 64)])
@pytest.mark.parametrize("logits_dtype", [torch.float32, torch.bfloat16])
def test_fp8_mqa_logits(h, d, logits_dtype):
    require("fp8_mqa_logits")
    s_q, s_kv = 257, 1000
    q, kv, sf, w = _mqa_inputs(s_q, h, d, s_kv)
    ks = torch.randint(-20, s_kv // 2, (s_q,), dtype=torch.int32, device="cuda")
    ke = ks + torch.randint(0, s_kv // 2, (s_q,), dtype=torch.int32, device="cuda")
    logits = dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=True, logits_dtype=logits_dtype)
    assert logits.shape == (s_q, s_kv) and logits.dtype == logits_dtype
    assert logits.stride(0) * logits.element_size() % 1024 == 0
    j = torch.arange(s_kv, device="cuda")[None, :]
    inside = (j >= ks[:, None].long()) & (j < ke[:, None].long())
    assert bool((logits[~inside] == float("-inf")).all())
    ref = _mqa_reference(q, kv, sf, w)
    assert calc_diff(logits[inside].double(), ref[inside]) < (1e-6 if logits_dtype == torch.float32 else 3e-5)
    again = dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=True, logits_dtype=logits_dtype)  # warm
    assert again.data_ptr() != logits.data_ptr() and torch.equal(again, logits)


@pytest.mark.parametrize("logits_dtype", [torch.float32, torch.bfloat16])
def test_fp8_mqa_logits_compressed(logits_dtype):
    """max_seqlen_k > 0: row i holds keys [ks, min(ke, ks + max_seqlen_k)) from column 0; the
    longer ranges are clipped."""
    require("fp8_mqa_logits_compressed")
    s_q, s_kv, h, d, max_seqlen_k = 257, 1000, 64, 128, 300
    q, kv, sf, w = _mqa_inputs(s_q, h, d, s_kv)
    ks = torch.randint(-20, s_kv // 2, (s_q,), dtype=torch.int32, device="cuda")
    ke = ks + torch.randint(0, s_kv // 2, (s_q,), dtype=torch.int32, device="cuda")
    logits = dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=False, max_seqlen_k=max_seqlen_k,
                               logits_dtype=logits_dtype)
    assert logits.shape == (s_q, max_seqlen_k) and logits.dtype == logits_dtype
    assert logits.stride(0) * logits.element_size() % 1024 == 0
    lo = ks.long().clamp(0, s_kv)
    n = (ke.long().clamp(max=s_kv) - lo).clamp(0, max_seqlen_k)
    col = torch.arange(max_seqlen_k, device="cuda")[None, :]
    inside = col < n[:, None]
    ref = _mqa_reference(q, kv, sf, w).gather(1, (lo[:, None] + col).clamp(max=s_kv - 1))
    assert calc_diff(logits[inside].double(), ref[inside]) < (1e-6 if logits_dtype == torch.float32 else 3e-5)
    again = dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=False, max_seqlen_k=max_seqlen_k,
                              logits_dtype=logits_dtype)  # warm
    assert again.data_ptr() != logits.data_ptr() and torch.equal(again[inside], logits[inside])


def test_fp8_mqa_logits_errors():
    require("fp8_mqa_logits")
    q, kv, sf, w = _mqa_inputs(4, 16, 128, 64)
    ks = torch.zeros(4, dtype=torch.int32, device="cuda")
    with pytest.raises(dg.Unsupported, match="H = 16"):
        dg.fp8_mqa_logits(q, (kv, sf), w, ks, ks)
    q, kv, sf, w = _mqa_inputs(4, 64, 128, 64)
    with pytest.raises(dg.Unsupported, match="clean_logits: 1"):  # the compressed layout writes no -inf
        dg.fp8_mqa_logits(q, (kv, sf), w, ks, ks, max_seqlen_k=64)
    with pytest.raises(dg.InvalidArgument, match="cu_seq_len_k_end"):
        dg.fp8_mqa_logits(q, (kv, sf), w, ks, ks[:3])


@pytest.mark.parametrize("next_n,two_d", [(1, False), (2, False), (2, True)])
def test_fp8_paged_mqa_logits(next_n, two_d):
    require("fp8_paged_mqa_logits")
    b, h, d, max_ctx = 7, 64, 128, 700
    max_blocks = (max_ctx + 63) // 64
    num_blocks = b * max_blocks + 5
    q, kv, sf, w = _mqa_inputs(b * next_n, h, d, num_blocks * 64)
    q = q.view(b, next_n, h, d)
    cache = torch.empty(num_blocks, 64 * (d + 4), dtype=torch.uint8, device="cuda")
    cache[:, : 64 * d] = kv.view(torch.uint8).view(num_blocks, 64 * d)
    cache[:, 64 * d:] = sf.view(torch.uint8).view(num_blocks, 256)
    table = torch.randperm(num_blocks, device="cuda")[: b * max_blocks].view(b, max_blocks).int()
    lens = torch.tensor([0, 1, 63, 64, 65, 500, 700], dtype=torch.int32, device="cuda")
    ctx = torch.stack([(lens - (next_n - 1 - j)).clamp(min=0) for j in range(next_n)], dim=1) if two_d else lens
    schedule = dg.get_paged_mqa_logits_metadata(ctx, 64, dg.get_num_sms())
    assert schedule.shape == (dg.get_num_sms() + 1, 2) and schedule.dtype == torch.int32
    logits = dg.fp8_paged_mqa_logits(q, cache.view(num_blocks, 64, 1, d + 4), w, ctx, table, schedule, max_ctx,
                                     clean_logits=True)
    assert logits.shape == (b * next_n, max_ctx)
    # Reference: each row against its sequence's keys, gathered through the block table.
    keys = table.long()[:, :, None] * 64 + torch.arange(64, device="cuda")  # [B, max_blocks, 64]
    keys = keys.view(b, -1)[:, :max_ctx]
    r = torch.arange(b * next_n, device="cuda")
    seq, j = r // next_n, r % next_n
    end = ctx.long()[seq, j] if two_d else lens.long()[seq] - next_n + j + 1
    t = torch.arange(max_ctx, device="cuda")[None, :]
    inside = t < end[:, None]
    ref = torch.empty(b * next_n, max_ctx, dtype=torch.float64, device="cuda")
    for row in range(b * next_n):
        k = keys[seq[row]]
        ref[row] = _mqa_reference(q.view(-1, h, d)[row:row + 1], kv[k], sf[k], w[row:row + 1])[0]
    assert bool((logits[~inside] == float("-inf")).all())
    assert bool(torch.isfinite(logits[inside]).all())
    assert calc_diff(logits[inside].double(), ref[inside]) < 1e-6
    # Repeated calls take the warm path: new outputs, the same values (the kernels are deterministic).
    for _ in range(2):
        again = dg.get_paged_mqa_logits_metadata(ctx, 64, dg.get_num_sms())
        assert again.data_ptr() != schedule.data_ptr() and torch.equal(again, schedule)
        again = dg.fp8_paged_mqa_logits(q, cache.view(num_blocks, 64, 1, d + 4), w, ctx, table, schedule, max_ctx,
                                        clean_logits=True)
        assert again.data_ptr() != logits.data_ptr() and again.stride() == logits.stride()
        assert torch.equal(again, logits)


def _ref_quant(x, groups_along_last=True):
    """docs/quantization.md in torch: amax per 128 along the last dim, floor 1e-4, x * (1 / scale).
    The scale is amax / 448 correctly rounded: torch's CUDA division by a Python scalar multiplies by
    the scalar's reciprocal (1 ulp off at times), so the quotient is taken in float64 and rounded once
    to float32 (exact for a quotient of two floats)."""
    m, k = x.shape
    pad = (-k) % 128
    xf = torch.nn.functional.pad(x.float(), (0, pad)).view(m, -1, 128)
    scale = (xf.abs().amax(dim=2).clamp(min=1e-4).double() / 448.0).float()
    q = (xf * (1.0 / scale).unsqueeze(2)).clamp(-448, 448).to(torch.float8_e4m3fn).view(m, -1)[:, :k]
    return q, scale


@pytest.mark.parametrize("m,k", [(1, 128), (77, 7168), (300, 1000)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_quantize_fp8_per_token(m, k, dtype):
    require("quantize_fp8_per_token")
    x = torch.randn(m, k, device="cuda", dtype=getattr(torch, dtype)) * 3
    q, sf = dg.quantize_fp8_per_token(x)
    torch.cuda.synchronize()
    q_ref, s_ref = _ref_quant(x)
    assert sf.shape == (m, (k + 127) // 128) and sf.stride(0) == 1
    assert torch.equal(sf, s_ref)
    assert torch.equal(q.view(torch.uint8), q_ref.view(torch.uint8))


def test_quantize_fp8_then_gemm():
    require("quantize_fp8_per_token")
    m, n, k = 256, 512, 1024
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
    qa, sfa = dg.quantize_fp8_per_token(a)
    qb, sfb = dg.quantize_fp8_per_block(b)
    qw, sfw = dg.quantize_fp8_mn_major(a.t().contiguous())
    assert qw.shape == (k, m) and sfw.shape == (m, k // 128)
    d = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    dg.fp8_gemm_nt((qa, sfa), (qb, sfb), d)
    assert calc_diff(d, a.float() @ b.float().t()) < 2e-3
