"""Behaviour on a machine without a GPU (CI), and host-only layout queries (anywhere)."""

import pytest

import dg
from fakes import FakeCAI


def _has_device():
    try:
        return dg.device_count() > 0
    except dg.NoDevice:
        return False


no_device = pytest.mark.skipif(_has_device(), reason="a CUDA device is present")


@no_device
def test_device_count_without_a_device():
    try:
        n = dg.device_count()
    except dg.NoDevice as e:  # no driver: the reason comes with the exception
        assert e.status == 3 and e.status_name == "DG_ERROR_NO_DEVICE"
        assert e.message.startswith("dg_device_count: ") and len(e.message) > len("dg_device_count: ")
    else:  # a driver with no device
        assert n == 0


@no_device
def test_stream_creation_raises_no_device():
    with pytest.raises(dg.NoDevice):
        dg.Stream()


@no_device
@pytest.mark.parametrize("fn", ["bf16_gemm_nt", "bf16_gemm_nn", "cublaslt_gemm_nt"])
def test_kernels_raise_no_device(fn):
    a = FakeCAI((128, 64), "<f2")
    b = FakeCAI((128, 64), "<f2")
    d = FakeCAI((128, 128), "<f4")
    from dg import _lib

    exc = dg.NoDevice if _lib.get().has("dg_" + fn) else dg.Unsupported
    with pytest.raises(exc):
        getattr(dg, fn)(a, b, d)


@no_device
def test_layout_transform_raises_no_device():
    sf = FakeCAI((256, 4), "<f4")
    out = FakeCAI((256, 4), "<f4", strides=(1, 256))
    with pytest.raises(dg.NoDevice):
        dg.get_mn_major_tma_aligned_tensor(sf, out=out)


def test_mn_major_layout_query():
    lay = dg.get_mn_major_tma_aligned_tensor_layout([4097, 7])
    assert lay.sizes == (4097, 7)
    assert lay.strides == (1, 4100)
    assert lay.nbytes == 4100 * 7 * 4
    lay3 = dg.get_mn_major_tma_aligned_tensor_layout([2, 4097, 7])
    assert lay3.sizes == (2, 4097, 7)
    assert lay3.strides == (4100 * 7, 1, 4100)
    assert lay3.nbytes == 2 * 4100 * 7 * 4


def test_packed_ue8m0_layout_query():
    lay = dg.get_mn_major_tma_aligned_packed_ue8m0_tensor_layout([4097, 7])
    assert lay.sizes == (4097, 2)
    assert lay.strides == (1, 4100)
    assert lay.nbytes == 4100 * 2 * 4
    lay3 = dg.get_mn_major_tma_aligned_packed_ue8m0_tensor_layout([3, 128, 57])
    assert lay3.sizes == (3, 128, 15)
    assert lay3.strides == (128 * 15, 1, 128)


def test_layout_query_rejects_bad_rank():
    with pytest.raises(dg.InvalidArgument):
        dg.get_mn_major_tma_aligned_tensor_layout([1, 2, 3, 4, 5])


def test_transform_sf_layout_query_sm90_without_a_device():
    m, k = 256, 512
    # Per-token SFA, row-major: needs the MN-major TMA-aligned copy.
    sfa = FakeCAI((m, k // 128), "<f4")
    lay = dg.get_transform_sf_layout(sfa, m, k, (1, 128, 128), is_sfa=True, arch_major=9)
    assert not lay.is_input
    assert lay.sizes == (m, 4) and lay.strides == (1, 256)
    # Already MN-major and aligned: used as is.
    sfa_mn = FakeCAI((m, k // 128), "<f4", strides=(1, 256))
    assert dg.get_transform_sf_layout(sfa_mn, m, k, (1, 128, 128), is_sfa=True, arch_major=9).is_input
    # Per-block SFB [ceil(N/128), ceil(K/128)], K-major: only checked.
    n = 384
    sfb = FakeCAI((3, 4), "<f4")
    assert dg.get_transform_sf_layout(sfb, n, k, (1, 128, 128), arch_major=9).is_input


def _deepgemm_strides(shape):
    """DeepGEMM's get_mn_major_tma_aligned_tensor output strides: (.., 1, align(MN, 4)), batch
    align(MN, 4) * SF_K, whatever the sizes (ones and zeros included)."""
    mn, sf_k = shape[-2], shape[-1]
    am = (mn + 3) // 4 * 4
    return ((am * sf_k,) if len(shape) == 3 else ()) + (1, am)


SHAPE_CLASSES = [(4096, 1), (4097, 1), (3, 1), (1, 1), (1, 56), (4097, 56), (0, 56), (4096, 0),
                 (2, 4096, 1), (2, 4097, 1), (1, 4096, 1), (1, 4097, 56), (3, 1, 56), (2, 1, 1), (0, 128, 2)]


@pytest.mark.parametrize("shape", SHAPE_CLASSES)
def test_mn_major_strides_are_deepgemms_for_every_shape(shape):
    assert dg.get_mn_major_tma_aligned_tensor_layout(list(shape)).strides == _deepgemm_strides(shape)
    # The transform plan gives the same strides, whether the input needs a copy (contiguous,
    # row-major) or already has the layout in memory (DeepGEMM's strides, or strides that differ
    # only along dimensions of size 1).
    mn, sf_k = shape[-2], shape[-1]
    groups = shape[0] if len(shape) == 3 else None
    if groups == 0:
        return  # a recipe's num_groups 0 means a 2-D input
    want = _deepgemm_strides(shape)
    for strides in (None, want, tuple(1 if size == 1 else st for size, st in zip(shape, want))):
        sf = FakeCAI(shape, "<f4", strides=strides)
        lay = dg.get_transform_sf_layout(sf, mn, sf_k * 128, (1, 128), num_groups=groups, arch_major=9)
        assert lay.strides == want, (strides, lay)
        assert lay.sizes == tuple(shape)
        if strides is not None:
            assert lay.is_input


def test_transform_sf_layout_query_rejects_wrong_shape():
    sfa = FakeCAI((100, 4), "<f4")
    with pytest.raises(dg.InvalidArgument) as info:
        dg.get_transform_sf_layout(sfa, 256, 512, (1, 128, 128), is_sfa=True, arch_major=9)
    assert info.value.message


def test_recipe_shape_errors():
    with pytest.raises(dg.InvalidArgument, match="recipe"):
        dg.get_transform_sf_layout(FakeCAI((4, 4), "<f4"), 4, 512, (1, 2, 3, 4), arch_major=9)


def test_non_torch_input_needing_a_copy_asks_for_out(monkeypatch):
    # Without a device the stream cannot be created, so check the message path on the query.
    from dg import _arguments

    info = dg.TensorInfo(0x1000, 1, (256, 4), (4, 1), None)
    monkeypatch.setattr(_arguments, "_query_sf", lambda *a, **k: dg.SfLayout(False, 1, (256, 4), (1, 256), 4096))
    with pytest.raises(dg.InvalidArgument, match="pass out="):
        _arguments._transform_info(None, info, 256, 512, _arguments._sf_recipe(1, 128, 0, False), None, "sfa")


def test_pair_arguments_are_checked(monkeypatch):
    from dg import _lib

    if not dg.available()["fp8_gemm_nt"]:
        monkeypatch.setitem(_lib.get().functions, "dg_fp8_gemm_nt", lambda *a: 0)
    with pytest.raises(dg.InvalidArgument, match="a: expected a \\(data, scaling_factors\\) pair"):
        dg.fp8_gemm_nt(FakeCAI((4, 4)), (FakeCAI((4, 4)), FakeCAI((1, 1))), FakeCAI((4, 4)))


@no_device
def test_get_num_sms_without_a_device_raises_no_device():
    dg.set_num_sms(0)
    with pytest.raises(dg.NoDevice) as info:
        dg.get_num_sms()
    assert info.value.status == 3


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: dg.bf16_gemm_nt(None, None, None), "a"),
        (lambda: dg.bf16_gemm_nn(FakeCAI((128, 64), "<f2"), None, None), "b"),
        (lambda: dg.cublaslt_gemm_nt(FakeCAI((128, 64), "<f2"), FakeCAI((128, 64), "<f2"), None), "d"),
        (lambda: dg.fp8_gemm_nt((None, None), (None, None), None), "a"),
        (lambda: dg.nvfp4_gemv(None, None, None, None, None), "a"),
        (lambda: dg.nvfp4_gemv(*[FakeCAI((128, 64), "|u1")] * 4, None), "c"),
        (lambda: dg.get_mn_major_tma_aligned_tensor(None), "sf"),
    ],
)
def test_missing_tensors_are_invalid_arguments_before_any_device_is_needed(call, name):
    # Checked before the stream is resolved: with or without a GPU, the first missing tensor is named.
    with pytest.raises(dg.InvalidArgument, match=r"^%s: expected a tensor, got None" % name):
        call()
