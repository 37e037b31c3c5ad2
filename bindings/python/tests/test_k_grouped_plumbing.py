"""What the K-grouped wrappers hand to libdg, checked without a GPU: the C entry points are
replaced by a recorder that reads descriptors back through dg_tensor_get and copies ks."""

import pytest

import dg
from dg import _lib, _tensor as T, _arguments
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
    orig = _arguments._sf_recipe
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



def test_packed_ue8m0_layout_query():
    layout = dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(1001, [512, 0, 640])
    assert (layout.sizes, layout.strides, layout.nbytes) == ((3, 1001), (1004, 1), 3 * 1004 * 4)
    assert layout.dtype == T.UE8M0X4
    with pytest.raises(dg.InvalidArgument, match=r"ks\[1\]: 100"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(1001, [512, 100])
    with pytest.raises(dg.InvalidArgument, match="num_groups"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(1001, [])


def test_packed_ue8m0_passes_sf_ks_and_out(monkeypatch):
    seen = []

    def record(handle, sf, ks_ptr, groups, ks_tensor, out):
        seen.append([T.read_descriptor(h) if h is not None else None for h in (sf, ks_tensor, out)] + [list(ks_ptr[:groups])])
        return 0

    name = "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor"
    monkeypatch.setitem(_lib.get().functions, name, record)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    ks = [512, 0, 640]
    sf = FakeCAI((9, 256), "<f4", ptr=0x1000)
    ks_t = FakeCAI((3,), "<i4", ptr=0x2000)
    out = FakeCAI((3, 256), "<i4", ptr=0x3000)
    assert dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_t, ks, out=out) is out
    dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, None, ks, 128, 256, out=out)  # HEAD's argument form
    (s, kt, o, got_ks), (_s, kt2, _o, _ks) = seen
    assert (s[0], s[2:], kt[0], o[0], o[2:], got_ks) == (0x1000, ((9, 256), (256, 1)), 0x2000, 0x3000, ((3, 256), (256, 1)), ks)
    assert kt2 is None
    # Non-torch input without out: nothing to allocate with.
    with pytest.raises(dg.InvalidArgument, match="out="):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_t, ks)
    with pytest.raises(dg.Unsupported, match="gran_k"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_t, ks, 32, 32, out=out)
    with pytest.raises(dg.Unsupported, match="psum"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_t, ks, use_psum_layout=True, out=out)
    with pytest.raises(dg.InvalidArgument, match="k_alignment"):
        dg.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf, ks_t, ks, 128, 100, out=out)
    assert len(seen) == 2
