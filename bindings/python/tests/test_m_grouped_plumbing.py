"""What the M-grouped wrappers hand to libdg, checked without a GPU: the C entry points are
replaced by a recorder that reads the descriptors back through dg_tensor_get."""

import pytest

import dg
from dg import _lib, _tensor as T, _arguments
from fakes import FakeCAI


class Recorder:
    """Records (descriptors, trailing scalars, options) of the M-grouped calls."""

    def __init__(self, n_tensors):
        self.n_tensors = n_tensors
        self.calls = []

    def __call__(self, *args):
        tensors = args[1:1 + self.n_tensors]
        scalars, opts = args[1 + self.n_tensors:-1], args[-1]
        self.calls.append(([T.read_descriptor(h) for h in tensors], tuple(scalars), opts._obj))
        return 0


TENSORS = {"dg_m_grouped_fp8_gemm_nt_contiguous": 6, "dg_m_grouped_fp8_gemm_nn_contiguous": 6,
           "dg_m_grouped_bf16_gemm_nt_contiguous": 4, "dg_m_grouped_bf16_gemm_nn_contiguous": 4,
           "dg_m_grouped_fp8_gemm_nt_masked": 6, "dg_m_grouped_bf16_gemm_nt_masked": 4}


@pytest.fixture
def hooked(monkeypatch):
    recs = {}
    lib = _lib.get()
    for name, n in TENSORS.items():
        recs[name] = Recorder(n)
        monkeypatch.setitem(lib.functions, name, recs[name])
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    orig = _arguments._sf_recipe
    patched = lambda *a, **k: orig(*a, **dict(k, arch_major=9))  # noqa: E731
    monkeypatch.setattr(_arguments, "_sf_recipe", patched)
    monkeypatch.setattr(dg._grouped, "_sf_recipe", patched)
    return recs


def test_bf16_contiguous_indices_and_psum(hooked):
    g, m, n, k = 4, 512, 256, 384
    a, b = FakeCAI((m, k), "<f2", ptr=0x1000), FakeCAI((g, n, k), "<f2", ptr=0x2000)
    d, idx = FakeCAI((m, n), "<f2", ptr=0x3000), FakeCAI((m,), "<i4", ptr=0x4000)
    dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d, idx)
    dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d, m_indices=idx)  # DeepGEMM's older keyword
    ends = FakeCAI((g,), "<i4", ptr=0x5000)
    dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d, ends, use_psum_layout=True, expected_m_for_psum_layout=96,
                                         options={"block_n": 128})
    first, older, psum = hooked["dg_m_grouped_bf16_gemm_nt_contiguous"].calls
    assert [x[0] for x in first[0]] == [0x1000, 0x2000, 0x3000, 0x4000]
    assert first[1] == (_lib.M_GROUPED_LAYOUT_INDICES, 0) and older[:2] == first[:2]
    assert psum[1] == (_lib.M_GROUPED_LAYOUT_PSUM, 96) and psum[2].block_n == 128
    bn = FakeCAI((g, k, n), "<f2", ptr=0x6000)
    dg.m_grouped_bf16_gemm_nn_contiguous(a, bn, d, idx)
    (descs, _s, _o), = hooked["dg_m_grouped_bf16_gemm_nn_contiguous"].calls
    assert descs[1][2] == (g, k, n)


def test_fp8_contiguous_scales_travel_with_the_data(hooked):
    g, m, n, k = 2, 256, 256, 512
    am = m  # already a multiple of 4: the MN-major layout needs no padding
    a, sfa = FakeCAI((m, k), "|u1", ptr=0x1000), FakeCAI((m, k // 128), "<f4", strides=(1, am), ptr=0x2000)
    b, sfb = FakeCAI((g, n, k), "|u1", ptr=0x3000), FakeCAI((g, n // 128, k // 128), "<f4", ptr=0x4000)
    d, idx = FakeCAI((m, n), "<f2", ptr=0x5000), FakeCAI((m,), "<i4", ptr=0x6000)
    dg.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, idx, alpha=2.0)
    (descs, scalars, opts), = hooked["dg_m_grouped_fp8_gemm_nt_contiguous"].calls
    assert [x[0] for x in descs] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000]
    assert descs[1][2:] == ((m, k // 128), (1, am))
    assert scalars == (_lib.M_GROUPED_LAYOUT_INDICES, 0) and opts.alpha == 2.0


def test_masked_calls_pass_counts_and_hint(hooked):
    g, max_m, n, k = 3, 256, 128, 256
    a, b = FakeCAI((g, max_m, k), "<f2", ptr=0x1000), FakeCAI((g, n, k), "<f2", ptr=0x2000)
    d, counts = FakeCAI((g, max_m, n), "<f2", ptr=0x3000), FakeCAI((g,), "<i4", ptr=0x4000)
    dg.m_grouped_bf16_gemm_nt_masked(a, b, d, counts, 77)
    (descs, scalars, _o), = hooked["dg_m_grouped_bf16_gemm_nt_masked"].calls
    assert [x[0] for x in descs] == [0x1000, 0x2000, 0x3000, 0x4000] and scalars == (77,)
    a8 = FakeCAI((g, max_m, k), "|u1", ptr=0x5000)
    sfa = FakeCAI((g, max_m, k // 128), "<f4", strides=(max_m * (k // 128), 1, max_m), ptr=0x6000)
    b8, sfb = FakeCAI((g, n, k), "|u1", ptr=0x7000), FakeCAI((g, 1, k // 128), "<f4", ptr=0x8000)
    dg.fp8_m_grouped_gemm_nt_masked((a8, sfa), (b8, sfb), d, counts, 64)  # DeepGEMM's older name
    (descs, scalars, _o), = hooked["dg_m_grouped_fp8_gemm_nt_masked"].calls
    assert descs[0][0] == 0x5000 and descs[1][0] == 0x6000 and scalars == (64,)


def test_argument_errors(hooked):
    a = FakeCAI((256, 256), "<f2")
    b = FakeCAI((2, 128, 256), "<f2")
    d = FakeCAI((256, 128), "<f2")
    idx = FakeCAI((256,), "<i4")
    with pytest.raises(dg.InvalidArgument, match="grouped_layout"):
        dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d)
    with pytest.raises(dg.InvalidArgument, match="grouped_layout"):
        dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d, idx, m_indices=idx)
    with pytest.raises(dg.InvalidArgument, match="recipe"):
        dg.m_grouped_bf16_gemm_nt_contiguous(a, b, d, idx, recipe=(1, 128, 128))
    with pytest.raises(dg.Unsupported, match="recipe"):
        dg.m_grouped_fp8_gemm_nt_contiguous((a, a), (b, b), d, idx, recipe=(1, 1, 128))
    with pytest.raises(dg.InvalidArgument, match="expected a \\(data, scaling_factors\\) pair"):
        dg.m_grouped_fp8_gemm_nt_contiguous(a, (b, b), d, idx)
    assert not any(r.calls for r in hooked.values())


def test_prepare_arguments(monkeypatch):
    seen = []
    lib = _lib.get()
    monkeypatch.setitem(lib.functions, "dg_m_grouped_gemm_prepare", lambda *a: seen.append(a) or 0)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    dg.m_grouped_gemm_prepare("float8_e4m3fn", "masked", 32, 4096, 7168, 2048, expected_m=192)
    (_s, ab, layout, grouping, groups, m, n, k, exp, _o), = seen
    assert (ab, layout, grouping, groups, m, n, k, exp) == (T.FLOAT8_E4M3, 0, _lib.M_GROUPED_LAYOUT_MASKED, 32, 4096,
                                                             7168, 2048, 192)
    with pytest.raises(dg.InvalidArgument, match="grouping"):
        dg.m_grouped_gemm_prepare("bfloat16", "ragged", 1, 1, 1, 1)
    with pytest.raises(dg.InvalidArgument, match="layout"):
        dg.m_grouped_gemm_prepare("bfloat16", "masked", 1, 1, 1, 1, layout="xx")
