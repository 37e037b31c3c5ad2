"""What the K-grouped wrappers hand to libdg, checked without a GPU: the C entry points are
replaced by a recorder that reads descriptors back through dg_tensor_get and copies ks."""

import pytest

import dg
from dg import _lib, _tensor as T, api
from fakes import FakeCAI


class Recorder:
    """Records (descriptors, ks, num_groups, options) of the K-grouped calls."""

    def __init__(self, fp8):
        self.fp8 = fp8
        self.calls = []

    def __call__(self, *args):
        n_tensors = 6 if self.fp8 else 4  # a, [sfa,] b, [sfb,] d, c
        tensors = args[1:1 + n_tensors]
        ks_ptr, groups, ks_tensor, opts = args[1 + n_tensors:]
        read = [T.read_descriptor(h) if h is not None else None for h in tensors + (ks_tensor,)]
        self.calls.append((read, list(ks_ptr[:groups]), groups, opts._obj))
        return 0


@pytest.fixture
def hooked(monkeypatch):
    recs = {}
    lib = _lib.get()
    for name in ("dg_k_grouped_fp8_gemm_nt_contiguous", "dg_k_grouped_fp8_gemm_tn_contiguous",
                 "dg_k_grouped_bf16_gemm_tn_contiguous"):
        recs[name] = Recorder("fp8" in name)
        monkeypatch.setitem(lib.functions, name, recs[name])
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    orig = api._sf_recipe
    monkeypatch.setattr(dg._k_grouped, "_sf_recipe", lambda *a, **k: orig(*a, **dict(k, arch_major=9)))
    return recs


def mn_major(mn, kb, ptr):
    return FakeCAI((mn, kb), "<f4", strides=(1, (mn + 3) // 4 * 4), ptr=ptr)


def test_fp8_nt_passes_ks_operands_and_accumulator(hooked):
    m, n, ks = 256, 384, [256, 0, 512]
    k = sum(ks)
    a, b = FakeCAI((m * k,), "|u1", ptr=0x1000), FakeCAI((n * k,), "|u1", ptr=0x2000)
    sfa, sfb = mn_major(m, k // 128, 0x3000), mn_major(n, k // 128, 0x4000)
    d = FakeCAI((3, m, n), "<f4", ptr=0x5000)
    ks_t = FakeCAI((3,), "<i4", ptr=0x6000)
    dg.k_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d, ks, ks_t, c=d, alpha=0.5)
    (descs, got_ks, groups, opts), = hooked["dg_k_grouped_fp8_gemm_nt_contiguous"].calls
    assert (got_ks, groups) == (ks, 3)
    assert [x[0] for x in descs] == [0x1000, 0x3000, 0x2000, 0x4000, 0x5000, 0x5000, 0x6000]
    assert descs[1][2:] == ((m, k // 128), (1, m))  # already MN-major: no copy
    assert (opts.alpha, opts.beta, opts.workspace) == (0.5, 1.0, None)


def test_fp8_without_c_and_ks_tensor_passes_null(hooked):
    m, n, ks = 128, 128, [128]
    a, b = FakeCAI((m * 128,), "|u1", ptr=0x1000), FakeCAI((n * 128,), "|u1", ptr=0x2000)
    d = FakeCAI((1, m, n), "<f4", ptr=0x5000)
    dg.k_grouped_fp8_gemm_nt_contiguous((a, mn_major(m, 1, 0x3000)), (b, mn_major(n, 1, 0x4000)), d, ks)
    (descs, _ks, _g, _o), = hooked["dg_k_grouped_fp8_gemm_nt_contiguous"].calls
    assert descs[5] is None and descs[6] is None


def test_fp8_tn_passes_the_callers_workspace(hooked):
    m, n, ks = 256, 256, [128, 256]
    k = sum(ks)
    a, b = FakeCAI((k, m), "|u1", ptr=0x1000), FakeCAI((k, n), "|u1", ptr=0x2000)
    ws = FakeCAI((1 << 20,), "|u1", ptr=0x7000)
    d = FakeCAI((2, m, n), "<f4", ptr=0x5000)
    dg.k_grouped_fp8_gemm_tn_contiguous((a, mn_major(m, k // 128, 0x3000)), (b, mn_major(n, k // 128, 0x4000)), d, ks,
                                        workspace=ws)
    (descs, got_ks, _g, opts), = hooked["dg_k_grouped_fp8_gemm_tn_contiguous"].calls
    assert descs[0][2:] == ((k, m), (m, 1)) and got_ks == ks
    assert (opts.workspace, opts.workspace_size) == (0x7000, 1 << 20)


def test_bf16_tn_arguments(hooked):
    m, n, ks = 64, 96, [128, 128, 0, 384]
    k = sum(ks)
    a, b = FakeCAI((k, m), "<f2", ptr=0x1000), FakeCAI((k, n), "<f2", ptr=0x2000)
    d, c = FakeCAI((4, m, n), "<f4", ptr=0x5000), FakeCAI((4, m, n), "<f4", ptr=0x8000)
    dg.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, c=c, options={"block_n": 64})
    (descs, got_ks, groups, opts), = hooked["dg_k_grouped_bf16_gemm_tn_contiguous"].calls
    assert [x[0] if x else None for x in descs] == [0x1000, 0x2000, 0x5000, 0x8000, None]
    assert (got_ks, groups, opts.block_n, opts.beta) == (ks, 4, 64, 1.0)


def test_argument_errors_name_the_argument(hooked):
    a = FakeCAI((128 * 128,), "|u1", ptr=0x1000)
    sf = mn_major(128, 1, 0x3000)
    d = FakeCAI((1, 128, 128), "<f4", ptr=0x5000)
    with pytest.raises(dg.Unsupported, match="recipe"):
        dg.k_grouped_fp8_gemm_nt_contiguous((a, sf), (a, sf), d, [128], recipe=(1, 128, 128))
    with pytest.raises(dg.InvalidArgument, match="ks"):
        dg.k_grouped_fp8_gemm_nt_contiguous((a, sf), (a, sf), d, 128)
    with pytest.raises(dg.InvalidArgument, match="d: expected"):
        dg.k_grouped_fp8_gemm_nt_contiguous((a, sf), (a, sf), FakeCAI((128, 128), "<f4"), [128])
    with pytest.raises(dg.InvalidArgument, match="layout"):
        dg.k_grouped_gemm_prepare("bfloat16", "nn", 128, 128, [128])


def test_prepare_arguments(monkeypatch):
    seen = []
    lib = _lib.get()
    monkeypatch.setitem(lib.functions, "dg_k_grouped_gemm_prepare",
                        lambda *a: seen.append(a[:4] + (list(a[5][:a[6]]),) + a[6:8]) or 0)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    dg.k_grouped_gemm_prepare("float8_e4m3fn", "tn", 4096, 7168, [1024, 0, 2048], with_c=True)
    (got,) = seen
    assert got == (None, T.FLOAT8_E4M3, _lib.GEMM_LAYOUTS["tn"], 4096, [1024, 0, 2048], 3, 1)

