"""GPU tests of dg.deep_gemm's calls the way DeepGEMM's own tests check them (their shapes and
tolerances): tf32_hc_prenorm_gemm, the einsum forms (fp8_einsum included), skip_head_mid and the FP8
casts. Skipped without PyTorch or a CUDA device."""

import pytest

torch = pytest.importorskip("torch")

import dg  # noqa: E402
import dg.deep_gemm as deep_gemm  # noqa: E402
from dg.deep_gemm.testing import calc_diff  # noqa: E402


def _have_gpu() -> bool:
    if not torch.cuda.is_available():
        return False
    try:
        return dg.device_count() > 0
    except dg.Error:
        return False


pytestmark = pytest.mark.skipif(not _have_gpu(), reason="needs PyTorch with CUDA and a CUDA device")


@pytest.mark.parametrize("m", [13, 137, 4096])
@pytest.mark.parametrize("n,k", [(24, 28672), (24, 7680), (24, 7168), (17, 1000)])
@pytest.mark.parametrize("num_splits", [None, 16])
def test_tf32_hc_prenorm_gemm(m, n, k, num_splits):
    a = torch.randn((m, k), dtype=torch.bfloat16, device="cuda")
    b = torch.randn((n, k), dtype=torch.float, device="cuda")
    shape_d = (m, n) if num_splits is None else (num_splits, m, n)
    shape_s = (m,) if num_splits is None else (num_splits, m)
    d = torch.full(shape_d, float("nan"), device="cuda")
    s = torch.full(shape_s, float("nan"), device="cuda")
    deep_gemm.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=num_splits)
    final_d = d if num_splits is None else d.sum(0)
    final_s = s if num_splits is None else s.sum(0)
    ref_d = a.double() @ b.double().T
    ref_s = a.double().square().sum(-1)
    # TF32 B against an FP64 reference (DeepGEMM bounds 1e-8 against a TF32 torch reference).
    assert calc_diff(final_d, ref_d) < 1e-6
    assert calc_diff(final_s, ref_s) < 1e-9


def test_einsum_bmk_bnk_mn_accumulates_in_fp32():
    for s_, m, n, k in [(129, 128, 384, 128), (64, 384, 128, 384)]:
        a = torch.randn((s_, m, k), dtype=torch.bfloat16, device="cuda")
        b = torch.randn((s_, n, k), dtype=torch.bfloat16, device="cuda")
        d = torch.randn((m, n), dtype=torch.float, device="cuda")
        ref = d.double() + torch.bmm(a.double(), b.double().mT).sum(0)
        deep_gemm.einsum("bmk,bnk->mn", a, b, d, c=d)
        assert calc_diff(d, ref) < 1e-5


@pytest.mark.parametrize("expr", ["bhr,hdr->bhd", "bhd,hdr->bhr"])
def test_einsum_per_head_forms(expr):
    h, r, dd, bsz = 8, 512, 128, 33
    x = torch.randn((bsz, h, r if expr.startswith("bhr") else dd), device="cuda", dtype=torch.bfloat16)
    y = torch.randn((h, dd, r + 128), device="cuda", dtype=torch.bfloat16)[:, :, :r]
    z = torch.full((bsz, h, dd if expr.endswith("bhd") else r), float("nan"), device="cuda", dtype=torch.bfloat16)
    deep_gemm.einsum(expr, x, y, z)
    assert calc_diff(z, torch.einsum(expr, x.double(), y.double())) < 1e-5


@pytest.mark.parametrize("s_", [129, 4096, 8192])
@pytest.mark.parametrize("m,n,k", [(128, 384, 128), (256, 256, 256), (384, 128, 384)])
@pytest.mark.parametrize("dtype", ["float", "bfloat16"])
def test_einsum_bmk_bnk_mn_deepgemm_shapes(s_, m, n, k, dtype):
    # DeepGEMM's test_bmk_bnk_mn: FP32 d accumulates (c = d), BF16 d takes no c.
    a = torch.randn((s_, m, k), dtype=torch.bfloat16, device="cuda")
    b = torch.randn((s_, n, k), dtype=torch.bfloat16, device="cuda")
    d = torch.randn((m, n), dtype=getattr(torch, dtype), device="cuda")
    c = d if dtype == "float" else None
    ref = (c.double() if c is not None else 0) + torch.bmm(a.float(), b.float().mT).sum(0).double()
    deep_gemm.einsum("bmk,bnk->mn", a, b, d, c=c)
    assert calc_diff(d, ref) < 1e-5


def test_einsum_bmk_bnk_mn_separate_c_and_no_c():
    a = torch.randn((77, 200, 72), dtype=torch.bfloat16, device="cuda")
    b = torch.randn((77, 136, 72), dtype=torch.bfloat16, device="cuda")
    c = torch.randn((200, 136), dtype=torch.float, device="cuda")
    d = torch.full((200, 136), float("nan"), device="cuda")
    ref = torch.bmm(a.double(), b.double().mT).sum(0)
    dg.einsum("bmk,bnk->mn", a, b, d, c=c)
    assert calc_diff(d, c.double() + ref) < 1e-9
    d.fill_(float("nan"))
    dg.einsum("bmk,bnk->mn", a, b, d)
    assert calc_diff(d, ref) < 1e-9


@pytest.mark.parametrize("expr", ["bhr,hdr->bhd", "bhd,hdr->bhr"])
@pytest.mark.parametrize("h,r,dd", [(128, 512, 128), (8, 4096, 1024)])
@pytest.mark.parametrize("bsz", [4, 32, 128, 4096, 8192])
@pytest.mark.parametrize("use_cublaslt", [False, True])
def test_einsum_per_head_deepgemm_shapes(expr, h, r, dd, bsz, use_cublaslt):
    # DeepGEMM's test_bhr_hdr_bhd / test_bhd_hdr_bhr: y a view of a wider tensor.
    x = torch.randn((bsz, h, r if expr.startswith("bhr") else dd), device="cuda", dtype=torch.bfloat16)
    y = torch.randn((h, dd, r + 128), device="cuda", dtype=torch.bfloat16)[:, :, :r]
    z = torch.full((bsz, h, dd if expr.endswith("bhd") else r), float("nan"), device="cuda", dtype=torch.bfloat16)
    deep_gemm.einsum(expr, x, y, z, use_cublaslt=use_cublaslt)
    ref = torch.einsum(expr, x.float(), y.float())
    assert calc_diff(z, ref) < 1e-5
    # One BF16 rounding of an FP32 sum: the result is the reference rounded, up to a last-bit tie.
    assert ((z.float() - ref).abs() <= ref.abs() * 2.0 ** -8 + 1e-3).all()


@pytest.mark.parametrize("expr", ["bhr,hdr->bhd", "bhd,hdr->bhr"])
def test_einsum_per_head_odd_shapes_and_layouts(expr):
    for bsz, h, r, dd in [(77, 5, 200, 72), (1, 3, 136, 264), (300, 1, 64, 128)]:
        k = r if expr.startswith("bhr") else dd
        x = torch.randn((h, bsz, k), device="cuda", dtype=torch.bfloat16).transpose(0, 1)  # heads-first storage
        y = torch.randn((h, dd, r), device="cuda", dtype=torch.bfloat16)
        z = torch.full((bsz, h, dd if expr.endswith("bhd") else r), float("nan"), device="cuda", dtype=torch.bfloat16)
        dg.einsum(expr, x, y, z)
        assert calc_diff(z, torch.einsum(expr, x.double(), y.double())) < 1e-5


def _fp8_einsum_operands(bsz, h, r, dd, use_ue8m0=True):
    """DeepGEMM's test_fp8_bhr_hdr_bhd operands: x per token, each head of y per 128 x 128 block,
    and the FP64 einsum of the dequantised values."""
    from dg.deep_gemm.utils import ceil_div, per_block_cast_to_fp8, per_token_cast_to_fp8

    x = torch.randn((bsz, h, r), device="cuda", dtype=torch.bfloat16)
    y = torch.randn((h, dd, r), device="cuda", dtype=torch.bfloat16)
    xq, xs = per_token_cast_to_fp8(x.view(-1, r), use_ue8m0=use_ue8m0)
    x_fp8 = xq.view(bsz, h, r), xs.view(bsz, h, ceil_div(r, 128))
    y_fp8 = (torch.empty_like(y, dtype=torch.float8_e4m3fn),
             torch.empty((h, ceil_div(dd, 128), ceil_div(r, 128)), device="cuda", dtype=torch.float))
    for i in range(h):
        y_fp8[0][i], y_fp8[1][i] = per_block_cast_to_fp8(y[i], use_ue8m0=use_ue8m0)
    return x_fp8, y_fp8, x, y, torch.einsum("bhr,hdr->bhd", *_dequantised(x_fp8, y_fp8, r, dd))


def _dequantised(x_fp8, y_fp8, r, dd):
    """FP64 [b, h, r] and [h, d, r]: the E4M3 codes times their scales."""
    sx = x_fp8[1].double().repeat_interleave(128, dim=2)[:, :, :r]
    sy = y_fp8[1].double().repeat_interleave(128, dim=1)[:, :dd].repeat_interleave(128, dim=2)[:, :, :r]
    return x_fp8[0].double() * sx, y_fp8[0].double() * sy


@pytest.mark.parametrize("bsz", [4, 32, 128, 4096, 8192])
def test_fp8_einsum_deepgemm_shapes(bsz):
    # DeepGEMM's test_fp8_bhr_hdr_bhd: h 8, r 4096, d 1024, UE8M0-rounded scales, calc_diff < 1e-3
    # against the BF16 einsum; here also against the dequantised operands' FP64 einsum.
    h, r, dd = 8, 4096, 1024
    x_fp8, y_fp8, x, y, ref_deq = _fp8_einsum_operands(bsz, h, r, dd)
    z = torch.full((bsz, h, dd), float("nan"), device="cuda", dtype=torch.bfloat16)
    deep_gemm.fp8_einsum("bhr,hdr->bhd", x_fp8, y_fp8, z)
    assert calc_diff(z, torch.einsum("bhr,hdr->bhd", x.double(), y.double())) < 1e-3
    assert calc_diff(z, ref_deq) < 1e-5


@pytest.mark.parametrize("bsz,h,r,dd", [(77, 5, 208, 72), (1, 3, 144, 264), (300, 1, 384, 200), (129, 4, 656, 336)])
@pytest.mark.parametrize("use_ue8m0", [True, False])
def test_fp8_einsum_odd_shapes(bsz, h, r, dd, use_ue8m0):
    x_fp8, y_fp8, _x, _y, ref_deq = _fp8_einsum_operands(bsz, h, r, dd, use_ue8m0)
    z = torch.full((bsz, h, dd), float("nan"), device="cuda", dtype=torch.bfloat16)
    dg.fp8_einsum("bhr,hdr->bhd", x_fp8, y_fp8, z)
    assert calc_diff(z, ref_deq) < 1e-5
    # Each element: one BF16 rounding over FP32 sums of the tensor cores' per-128 block sums.
    mag = torch.einsum("bhr,hdr->bhd", *(t.abs() for t in _dequantised(x_fp8, y_fp8, r, dd)))
    assert ((z.double() - ref_deq).abs() <= ref_deq.abs() * 2.0 ** -8 + mag * 2.0 ** -10 + 1e-6).all()


def test_fp8_einsum_reads_transformed_scales_and_views_in_place():
    # sfa already in the per-head MN-major layout (transformed once, as an engine would) and y a view
    # of a wider tensor: same result as the row-major scales DeepGEMM's tests pass.
    bsz, h, r, dd = 130, 6, 512, 256
    x_fp8, y_fp8, _x, _y, ref_deq = _fp8_einsum_operands(bsz, h, r, dd)
    sfa = dg.get_mn_major_tma_aligned_tensor(x_fp8[1].transpose(0, 1)).transpose(0, 1)
    wide = torch.zeros((h, dd, r + 64), device="cuda", dtype=torch.uint8)
    wide[:, :, :r] = y_fp8[0].view(torch.uint8)
    wide = wide.view(torch.float8_e4m3fn)
    z0 = torch.full((bsz, h, dd), float("nan"), device="cuda", dtype=torch.bfloat16)
    z1 = z0.clone()
    deep_gemm.fp8_einsum("bhr,hdr->bhd", x_fp8, y_fp8, z0)
    deep_gemm.fp8_einsum("bhr,hdr->bhd", (x_fp8[0], sfa), (wide[:, :, :r], y_fp8[1]), z1)
    assert torch.equal(z0, z1)
    assert calc_diff(z1, ref_deq) < 1e-5


def test_fp8_einsum_refuses_c_and_the_sm100_forms():
    x_fp8, y_fp8, _x, _y, _ref = _fp8_einsum_operands(8, 2, 256, 128)
    z = torch.zeros((8, 2, 128), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(dg.Unsupported, match="c:"):
        deep_gemm.fp8_einsum("bhr,hdr->bhd", x_fp8, y_fp8, z, c=z)
    with pytest.raises(dg.Unsupported, match="SM100"):
        deep_gemm.fp8_einsum("bhd,hdr->bhr", x_fp8, y_fp8, z)
    with pytest.raises(dg.Unsupported, match="d:"):
        deep_gemm.fp8_einsum("bhr,hdr->bhd", x_fp8, y_fp8, z.float())


def test_einsum_strides_the_tma_cannot_read_fall_back_to_torch_in_the_drop_in():
    # r = 100: rows of 200 bytes, not a multiple of 16.
    x = torch.randn((9, 4, 100), device="cuda", dtype=torch.bfloat16)
    y = torch.randn((4, 64, 100), device="cuda", dtype=torch.bfloat16)
    z = torch.empty((9, 4, 64), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(dg.Unsupported, match="stride"):
        dg.einsum("bhr,hdr->bhd", x, y, z)
    deep_gemm.einsum("bhr,hdr->bhd", x, y, z)
    assert calc_diff(z, torch.einsum("bhr,hdr->bhd", x.double(), y.double())) < 1e-5


def test_fp8_gemm_nt_skip_head_mid_leaves_the_middle_untouched():
    from dg.deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

    m, k, heads, (left, mid, right) = 200, 512, 4, (128, 64, 128)
    n = heads * (left + right)
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, k), device="cuda", dtype=torch.bfloat16)
    d = torch.full((m, n + heads * mid), float("nan"), device="cuda", dtype=torch.bfloat16)
    deep_gemm.fp8_gemm_nt_skip_head_mid(per_token_cast_to_fp8(a, use_ue8m0=False),
                                        per_block_cast_to_fp8(b, use_ue8m0=False), d, (left, mid, right))
    full = (a.double() @ b.double().T).view(m, heads, left + right)
    out = d.view(m, heads, left + mid + right)
    assert calc_diff(out[:, :, :left], full[:, :, :left]) < 1e-3
    assert calc_diff(out[:, :, left + mid:], full[:, :, left:]) < 1e-3
    assert torch.isnan(out[:, :, left:left + mid]).all()


def test_per_token_cast_to_fp8_round_trips():
    from dg.deep_gemm.utils import per_token_cast_to_fp8

    x = torch.randn((77, 300), device="cuda", dtype=torch.bfloat16)
    for ue8m0 in (False, True):
        q, sf = per_token_cast_to_fp8(x, use_ue8m0=ue8m0)
        assert q.shape == x.shape and sf.shape == (77, 3)
        back = (q.float().view(77, -1) * sf.repeat_interleave(128, dim=1)[:, :300])
        assert calc_diff(back, x.float()) < 1e-3
        if ue8m0:
            assert bool((torch.log2(sf) == torch.round(torch.log2(sf))).all())


def _skip_head_mid_case(m, k, heads, splits, dtype=torch.bfloat16, row_pad=0):
    """DeepGEMM's check (calc_diff < 1e-3 on the head columns) with the mid columns and the row
    padding poisoned (NaN) and checked to keep it."""
    from dg.deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

    left, mid, right = splits
    n = heads * (left + right)
    cols = heads * (left + mid + right)
    a = torch.randn((m, k), device="cuda", dtype=torch.bfloat16)
    b = torch.randn((n, k), device="cuda", dtype=torch.bfloat16)
    qa, qb = per_token_cast_to_fp8(a, use_ue8m0=False), per_block_cast_to_fp8(b, use_ue8m0=False)
    per16 = 16 // torch.empty((), dtype=dtype).element_size()
    ld = -(-(cols + row_pad) // per16) * per16
    storage = torch.full((m, ld), float("nan"), device="cuda", dtype=dtype)
    d = storage[:, :cols]
    deep_gemm.fp8_gemm_nt_skip_head_mid(qa, qb, d, splits)
    # The reference on the dequantised operands.
    a_deq = qa[0].double() * qa[1].double().repeat_interleave(128, dim=1)[:, :k]
    b_deq = qb[0].double() * qb[1].double().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:n, :k]
    full = (a_deq @ b_deq.T).view(m, heads, left + right)
    out = d.view(m, heads, left + mid + right)
    if left:
        assert calc_diff(out[:, :, :left], full[:, :, :left]) < 1e-3
    if right:
        assert calc_diff(out[:, :, left + mid:], full[:, :, left:]) < 1e-3
    assert torch.isnan(out[:, :, left:left + mid]).all()
    assert torch.isnan(storage[:, cols:]).all()


@pytest.mark.parametrize("m", [128, 4096])
@pytest.mark.parametrize("n,k", [(32768, 512), (8192, 512)])
def test_fp8_gemm_nt_skip_head_mid_deep_gemm_shapes(m, n, k):
    _skip_head_mid_case(m, k, n // 256, (128, 64, 128))


@pytest.mark.parametrize("m,k,heads,splits,dtype,row_pad", [
    (200, 640, 5, (16, 8, 48), torch.bfloat16, 0),
    (77, 528, 7, (8, 4, 24), torch.float32, 12),
    (300, 1040, 5, (0, 40, 96), torch.float32, 0),
    (129, 384, 4, (32, 0, 64), torch.bfloat16, 8),
    # Parts no 32-byte TMA box divides, or a mid that starts the right parts off 16 bytes: the
    # per-element store.
    (200, 640, 5, (16, 7, 48), torch.bfloat16, 0),
    (77, 528, 7, (8, 3, 24), torch.float32, 12),
    (150, 384, 9, (8, 5, 8), torch.bfloat16, 0),
    (77, 528, 7, (5, 3, 11), torch.bfloat16, 3),
    (100, 256, 6, (4, 2, 12), torch.float32, 0),
])
def test_fp8_gemm_nt_skip_head_mid_odd_splits(m, k, heads, splits, dtype, row_pad):
    _skip_head_mid_case(m, k, heads, splits, dtype, row_pad)


def test_fp8_gemm_nt_skip_head_mid_refuses_heads_that_do_not_divide_n_and_writes_nothing():
    from dg.deep_gemm.utils import per_block_cast_to_fp8, per_token_cast_to_fp8

    a = per_token_cast_to_fp8(torch.randn((64, 256), device="cuda", dtype=torch.bfloat16), use_ue8m0=False)
    b = per_block_cast_to_fp8(torch.randn((256, 256), device="cuda", dtype=torch.bfloat16), use_ue8m0=False)
    d = torch.full((64, 2 * (96 + 32 + 96)), float("nan"), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(dg.InvalidArgument, match="left"):
        deep_gemm.fp8_gemm_nt_skip_head_mid(a, b, d, (96, 32, 96))
    assert torch.isnan(d).all()
