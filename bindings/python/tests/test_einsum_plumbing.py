"""What dg.einsum, dg.fp8_einsum and their prepares hand to libdg, checked without a GPU: the C entry
points are replaced by recorders that read descriptors back through dg_tensor_get; and the drop-in's
form checks made before any call."""

import pytest

import dg
import dg.deep_gemm as deep_gemm
from dg import _einsum, _lib, _tensor as T
from fakes import FakeCAI


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, stream, expr, *args):
        *tensors, opts = args
        read = [T.read_descriptor(h) if h is not None else None for h in tensors]
        self.calls.append((expr, read, opts._obj))
        return 0


class PrepareRecorder:
    def __init__(self):
        self.calls = []

    def __call__(self, stream, expr, a_sizes, b_sizes, with_c, opts):
        self.calls.append((expr, list(a_sizes[:3]), list(b_sizes[:3]), with_c, opts._obj))
        return 0


@pytest.fixture
def hooked(monkeypatch):
    rec, prep = Recorder(), PrepareRecorder()
    monkeypatch.setitem(_lib.get().functions, "dg_bf16_einsum", rec)
    monkeypatch.setitem(_lib.get().functions, "dg_bf16_einsum_prepare", prep)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    return rec, prep


def test_per_head_form_passes_views_and_no_c(hooked):
    rec, _ = hooked
    b, h, r, d = 33, 8, 512, 128
    x = FakeCAI((b, h, r), "<f2", ptr=0x1000)  # the dtype is checked in C, hooked here
    y = FakeCAI((h, d, r), "<f2", strides=(d * (r + 128), r + 128, 1), ptr=0x2000)  # y[:, :, :r] of a wider one
    z = FakeCAI((b, h, d), "<f2", ptr=0x3000)
    dg.einsum("bhr,hdr->bhd", x, y, z, options={"block_m": 64})
    (expr, descs, opts), = rec.calls
    assert expr == b"bhr,hdr->bhd"
    assert [t[0] for t in descs[:3]] == [0x1000, 0x2000, 0x3000]
    assert descs[1][2:] == ((h, d, r), (d * (r + 128), r + 128, 1))
    assert descs[3] is None
    assert (opts.alpha, opts.beta, opts.block_m) == (1.0, 1.0, 64)


def test_batch_sum_passes_c(hooked):
    rec, _ = hooked
    a = FakeCAI((129, 128, 128), "<f2", ptr=0x1000)
    b = FakeCAI((129, 384, 128), "<f2", ptr=0x2000)
    d = FakeCAI((128, 384), "<f4", ptr=0x3000)
    dg.einsum("bmk,bnk->mn", a, b, d, c=d)
    (expr, descs, _), = rec.calls
    assert expr == b"bmk,bnk->mn"
    assert [t[0] for t in descs] == [0x1000, 0x2000, 0x3000, 0x3000]


def test_prepare_passes_the_shapes(hooked):
    _, prep = hooked
    dg.einsum_prepare("bhd,hdr->bhr", (4, 128, 128), (128, 128, 512))
    dg.einsum_prepare("bmk,bnk->mn", [129, 128, 128], [129, 384, 128], with_c=True)
    assert [(e, a, b, c) for e, a, b, c, _ in prep.calls] == [
        (b"bhd,hdr->bhr", [4, 128, 128], [128, 128, 512], 0), (b"bmk,bnk->mn", [129, 128, 128], [129, 384, 128], 1)]


@pytest.mark.parametrize("shape", [(4, 128), (4, 128, 128, 1)])
def test_prepare_wants_three_sizes(hooked, shape):
    with pytest.raises(dg.InvalidArgument, match="a_shape"):
        dg.einsum_prepare("bhr,hdr->bhd", shape, (128, 128, 512))
    assert hooked[1].calls == []


def test_expr_must_be_a_string(hooked):
    t = FakeCAI((4, 4, 4), "<f2")
    with pytest.raises(dg.InvalidArgument, match="expr"):
        dg.einsum(None, t, t, t)
    assert hooked[0].calls == []


def test_drop_in_checks_the_form_before_anything_else():
    with pytest.raises(dg.Unsupported, match="expr"):
        deep_gemm.einsum("bhr,hrd->bhd", None, None, None)
    with pytest.raises(dg.Unsupported, match="expr"):
        deep_gemm.einsum(3, None, None, None)


@pytest.fixture
def hooked_fp8(monkeypatch):
    rec, prep = Recorder(), PrepareRecorder()
    monkeypatch.setitem(_lib.get().functions, "dg_fp8_einsum", rec)
    monkeypatch.setitem(_lib.get().functions, "dg_fp8_einsum_prepare", prep)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    # The scale-layout query answers for SM90 without a stream.
    orig = _einsum._sf_recipe
    monkeypatch.setattr(_einsum, "_sf_recipe", lambda *a, **k: orig(*a, **dict(k, arch_major=9)))
    return rec, prep


def fp8_operands(b, h, r, d, sfa_strides):
    sf_k, sf_n = (r + 127) // 128, (d + 127) // 128
    x = FakeCAI((b, h, r), "|u1", ptr=0x1000)  # the dtype is checked in C
    sx = FakeCAI((b, h, sf_k), "<f4", strides=sfa_strides, ptr=0x2000)
    y = FakeCAI((h, d, r), "|u1", strides=(d * (r + 128), r + 128, 1), ptr=0x3000)  # y[:, :, :r] of a wider one
    sy = FakeCAI((h, sf_n, sf_k), "<f4", ptr=0x4000)
    z = FakeCAI((b, h, d), "<f2", ptr=0x5000)
    return (x, sx), (y, sy), z


def test_fp8_scales_in_the_per_head_layout_are_read_in_place(hooked_fp8):
    rec, _ = hooked_fp8
    b, h, r, d = 33, 8, 512, 200
    ld = 36  # align(33, 4)
    a, bb, z = fp8_operands(b, h, r, d, (1, 4 * ld, ld))
    dg.fp8_einsum("bhr,hdr->bhd", a, bb, z, options={"block_n": 128})
    (expr, descs, opts), = rec.calls
    assert expr == b"bhr,hdr->bhd"
    assert [t[0] for t in descs[:5]] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000]
    assert descs[1][2:] == ((b, h, 4), (1, 4 * ld, ld))
    assert descs[2][2:] == ((h, d, r), (d * (r + 128), r + 128, 1))
    assert descs[5] is None
    assert (opts.alpha, opts.beta, opts.recipe, opts.block_n) == (1.0, 1.0, 0, 128)


def test_fp8_row_major_scales_of_other_producers_need_out(hooked_fp8):
    # per_token_cast_to_fp8's [b, h, r / 128] row-major: a copy, which only torch tensors get.
    a, bb, z = fp8_operands(16, 4, 256, 128, None)
    with pytest.raises(dg.InvalidArgument, match="sfa: needs a layout transform"):
        dg.fp8_einsum("bhr,hdr->bhd", a, bb, z)
    assert hooked_fp8[0].calls == []


def test_fp8_c_goes_to_libdg_which_refuses_it(hooked_fp8):
    rec, _ = hooked_fp8
    a, bb, z = fp8_operands(4, 2, 128, 128, (1, 4, 4))
    dg.fp8_einsum("bhr,hdr->bhd", a, bb, z, c=z)
    (_, descs, _), = rec.calls
    assert descs[5][0] == 0x5000


@pytest.mark.parametrize("recipe", [(1, 1, 128), (128, 128, 128), [1, 128, 32]])
def test_fp8_other_recipes_are_unsupported(hooked_fp8, recipe):
    a, bb, z = fp8_operands(4, 2, 128, 128, (1, 4, 4))
    with pytest.raises(dg.Unsupported, match="recipe"):
        dg.fp8_einsum("bhr,hdr->bhd", a, bb, z, recipe=recipe)
    with pytest.raises(dg.Unsupported, match="recipe"):
        deep_gemm.fp8_einsum("bhr,hdr->bhd", a, bb, z, recipe=tuple(recipe))
    assert hooked_fp8[0].calls == []


def test_fp8_drop_in_reaches_libdg_with_the_form(hooked_fp8):
    rec, _ = hooked_fp8
    a, bb, z = fp8_operands(4, 2, 256, 128, (1, 8, 4))
    deep_gemm.fp8_einsum("bhr, hdr -> bhd", a, bb, z)
    deep_gemm.fp8_einsum("bhr,hdr->bhd", a, bb, z, None, (1, 128, 128))
    assert [c[0] for c in rec.calls] == [b"bhr,hdr->bhd", b"bhr,hdr->bhd"]


def test_fp8_prepare_passes_the_shapes(hooked_fp8):
    _, prep = hooked_fp8
    dg.fp8_einsum_prepare("bhr,hdr->bhd", (4, 8, 4096), [8, 1024, 4096], options={"block_m": 64})
    (expr, a, b, with_c, opts), = prep.calls
    assert (expr, a, b, with_c, opts.block_m) == (b"bhr,hdr->bhd", [4, 8, 4096], [8, 1024, 4096], 0, 64)
    with pytest.raises(dg.InvalidArgument, match="b_shape"):
        dg.fp8_einsum_prepare("bhr,hdr->bhd", (4, 8, 4096), (8, 1024))
