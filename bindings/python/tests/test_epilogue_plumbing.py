"""What the fused-epilogue arguments (``epilogue=dg.GemmEpilogue(...)``) and dg.swiglu_interleave
hand to libdg, checked without a GPU: the C entry points are replaced by a recorder that reads the
options' dg_gemm_epilogue and its descriptors back through dg_tensor_get."""

import ctypes

import pytest

import dg
from dg import _arguments, _lib, _tensor as T
from fakes import FakeCAI, FakeDLPack

GEMMS = {  # entry point -> tensors after the stream
    "dg_bf16_gemm_nt": 4, "dg_bf16_gemm_nn": 4, "dg_fp8_gemm_nt": 6, "dg_fp8_gemm_tn": 6,
    "dg_m_grouped_fp8_gemm_nt_contiguous": 6, "dg_m_grouped_fp8_gemm_nn_contiguous": 6,
    "dg_m_grouped_bf16_gemm_nt_contiguous": 4, "dg_m_grouped_bf16_gemm_nn_contiguous": 4,
    "dg_m_grouped_fp8_gemm_nt_masked": 6, "dg_m_grouped_bf16_gemm_nt_masked": 4,
}


def _descriptor(handle):
    return None if not handle else T.read_descriptor(ctypes.c_void_p(handle))


class Recorder:
    """Records, per call: the descriptors, and the epilogue as a tuple (activation, bias descriptor,
    d_scales descriptor, pow2_scales, amax_floor, struct_size), or None; read during the call, while
    the descriptors are alive."""

    def __init__(self, n):
        self.n = n
        self.calls = []

    def __call__(self, *args):
        opts = args[-1]._obj
        e = None
        if opts.epilogue:
            s = opts.epilogue.contents
            e = (s.activation, _descriptor(s.bias), _descriptor(s.d_scales), s.pow2_scales, s.amax_floor, s.struct_size)
        self.calls.append(([T.read_descriptor(h) if h is not None else None for h in args[1:1 + self.n]], e))
        return 0


@pytest.fixture
def hooked(monkeypatch):
    recs = {}
    lib = _lib.get()
    for name, n in GEMMS.items():
        recs[name] = Recorder(n)
        monkeypatch.setitem(lib.functions, name, recs[name])
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    orig = _arguments._sf_recipe
    patched = lambda *a, **k: orig(*a, **dict(k, arch_major=9))  # noqa: E731
    monkeypatch.setattr(_arguments, "_sf_recipe", patched)
    monkeypatch.setattr(dg._grouped, "_sf_recipe", patched)
    return recs


def e4m3(shape, ptr, strides=None):
    return FakeDLPack(shape, 10, 8, ptr=ptr, strides=strides)


def mn_major_sf(rows, cols, ptr, groups=None):
    """FP32 scales [(G,) rows, cols] in the MN-major TMA-aligned layout."""
    ra = (rows + 3) // 4 * 4
    if groups is None:
        return FakeCAI((rows, cols), "<f4", strides=(1, ra), ptr=ptr)
    return FakeCAI((groups, rows, cols), "<f4", strides=(ra * cols, 1, ra), ptr=ptr)


def test_epilogue_struct_size_and_defaults():
    e = _lib.GemmEpilogueStruct()
    # size_t, int32 (padded to 8), two pointers, int32, float
    assert ctypes.sizeof(e) == 8 + 8 + 8 + 8 + 4 + 4 == e.struct_size
    assert (e.activation, e.bias, e.d_scales, e.pow2_scales, e.amax_floor) == (0, None, None, 0, 0.0)
    assert _lib.GemmEpilogueStruct.amax_floor.offset == 36


def test_dense_bf16_bias_reaches_the_options(hooked):
    m, n, k = 200, 384, 640
    a, b = FakeCAI((m, k), "<f2", ptr=0x1000), FakeCAI((n, k), "<f2", ptr=0x2000)
    d, bias = FakeCAI((m, n), "<f2", ptr=0x3000), FakeCAI((n,), "<f4", ptr=0x4000)
    dg.bf16_gemm_nt(a, b, d, alpha=0.5, epilogue=dg.GemmEpilogue(bias=bias))
    dg.bf16_gemm_nt(a, b, d)  # no epilogue: the options point at none
    (descs, e), (_d2, none) = hooked["dg_bf16_gemm_nt"].calls
    assert [x[0] for x in descs[:3]] == [0x1000, 0x2000, 0x3000] and descs[3] is None
    assert e == (0, (0x4000, T.FLOAT32, (n,), (1,)), None, 0, 0.0, ctypes.sizeof(_lib.GemmEpilogueStruct))
    assert none is None
    # The shared options of the call without an epilogue were not changed by the call with one.
    assert not _arguments._gemm_options(0.5, 1.0).epilogue


def test_dense_fp8_swiglu_with_fp8_d_and_packed_scales(hooked):
    m, n, k = 203, 768, 896
    kb = k // 128
    a, sfa = FakeCAI((m, k), "|u1", ptr=0x1000), mn_major_sf(m, kb, 0x2000)
    b, sfb = FakeCAI((n, k), "|u1", ptr=0x3000), FakeCAI((n // 128, kb), "<f4", ptr=0x4000)
    d = e4m3((m, n // 2), 0x5000)
    words = (n // 2 // 128 + 3) // 4
    packed = FakeCAI((m, words), "<i4", strides=(1, (m + 3) // 4 * 4), ptr=0x6000)
    epi = dg.GemmEpilogue(activation="swiglu", d_scales=packed, amax_floor=1e-6)
    dg.fp8_gemm_nt((a, sfa), (b, sfb), d, epilogue=epi)
    (descs, e), = hooked["dg_fp8_gemm_nt"].calls
    assert descs[4][:3] == (0x5000, T.FLOAT8_E4M3, (m, n // 2))
    activation, bias, scales, pow2, floor, _size = e
    assert (activation, bias, pow2) == (_lib._declarations.DG_ACTIVATION_SWIGLU, None, 0)
    # int32 scales are packed UE8M0 words, as the quantization calls take them.
    assert scales == (0x6000, T.UE8M0X4, (m, words), (1, (m + 3) // 4 * 4))
    assert floor == pytest.approx(1e-6)
    # A transposed layout: the epilogue goes with it unchanged.
    at, sfat = FakeCAI((k, m), "|u1", strides=(1, k), ptr=0x1000), FakeCAI((kb, m), "<f4", strides=((m + 3) // 4 * 4, 1),
                                                                            ptr=0x2000)
    dg.fp8_gemm_tn((at, sfat), (FakeCAI((k, n), "|u1", strides=(1, k), ptr=0x3000),
                               FakeCAI((kb, n // 128), "<f4", strides=(1, kb), ptr=0x4000)), d,
                   epilogue=dg.GemmEpilogue("SwiGLU", d_scales=mn_major_sf(m, 3, 0x7000), pow2_scales=True))
    (_descs, e2), = hooked["dg_fp8_gemm_tn"].calls
    assert e2[0] == _lib._declarations.DG_ACTIVATION_SWIGLU and e2[2][:2] == (0x7000, T.FLOAT32) and e2[3] == 1


def test_grouped_contiguous_and_masked_pass_the_epilogue(hooked):
    g, m, n, k = 3, 512, 512, 512
    kb = k // 128
    a, sfa = FakeCAI((m, k), "|u1", ptr=0x1000), mn_major_sf(m, kb, 0x2000)
    b, sfb = FakeCAI((g, n, k), "|u1", ptr=0x3000), FakeCAI((g, n // 128, kb), "<f4", ptr=0x4000)
    idx = FakeCAI((m,), "<i4", ptr=0x6000)
    d8, sfd = e4m3((m, n // 2), 0x5000), mn_major_sf(m, n // 2 // 128, 0x7000)
    epi = dg.GemmEpilogue(activation="swiglu", d_scales=sfd)
    dg.m_grouped_fp8_gemm_nt_contiguous((a, sfa), (b, sfb), d8, idx, epilogue=epi)
    (descs, e), = hooked["dg_m_grouped_fp8_gemm_nt_contiguous"].calls
    assert [x[0] for x in descs] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000]
    assert e[0] == 1 and e[1] is None and e[2] == (0x7000, T.FLOAT32, (m, 2), (1, m))
    bn, sfbn = FakeCAI((g, k, n), "|u1", strides=(n * k, 1, k), ptr=0x3000), FakeCAI((g, kb, n // 128), "<f4",
                                                                                   strides=(kb * 4, 1, kb), ptr=0x4000)
    dg.m_grouped_fp8_gemm_nn_contiguous((a, sfa), (bn, sfbn), d8, idx, epilogue=epi)
    assert hooked["dg_m_grouped_fp8_gemm_nn_contiguous"].calls[0][1] == e
    ab, bb = FakeCAI((m, k), "<f2", ptr=0x1000), FakeCAI((g, n, k), "<f2", ptr=0x3000)
    dg.m_grouped_bf16_gemm_nt_contiguous(ab, bb, FakeCAI((m, n // 2), "<f2", ptr=0x5000), idx,
                                         epilogue=dg.GemmEpilogue("swiglu"))
    assert hooked["dg_m_grouped_bf16_gemm_nt_contiguous"].calls[0][1][:3] == (1, None, None)
    dg.m_grouped_bf16_gemm_nn_contiguous(ab, FakeCAI((g, k, n), "<f2", ptr=0x3000), FakeCAI((m, n), "<f2"), idx,
                                         epilogue=dg.GemmEpilogue())
    assert hooked["dg_m_grouped_bf16_gemm_nn_contiguous"].calls[0][1][:3] == (0, None, None)

    max_m = 128
    counts = FakeCAI((g,), "<i4", ptr=0x8000)
    am, sfam = FakeCAI((g, max_m, k), "|u1", ptr=0x1000), mn_major_sf(max_m, kb, 0x2000, groups=g)
    dm, sfdm = e4m3((g, max_m, n // 2), 0x5000), mn_major_sf(max_m, 2, 0x9000, groups=g)
    dg.m_grouped_fp8_gemm_nt_masked((am, sfam), (b, sfb), dm, counts, 64,
                                    epilogue=dg.GemmEpilogue("swiglu", d_scales=sfdm, pow2_scales=True))
    (descs, e), = hooked["dg_m_grouped_fp8_gemm_nt_masked"].calls
    assert descs[5][0] == 0x8000 and e[:4] == (1, None, (0x9000, T.FLOAT32, (g, max_m, 2), (max_m * 2, 1, max_m)), 1)
    dg.m_grouped_bf16_gemm_nt_masked(FakeCAI((g, max_m, k), "<f2"), bb, FakeCAI((g, max_m, n // 2), "<f2"), counts, 64,
                                     epilogue=dg.GemmEpilogue("swiglu"))
    assert hooked["dg_m_grouped_bf16_gemm_nt_masked"].calls[0][1][0] == 1


def test_epilogue_argument_errors(hooked):
    with pytest.raises(dg.InvalidArgument, match="activation: 'gelu'"):
        dg.GemmEpilogue(activation="gelu")
    with pytest.raises(dg.InvalidArgument, match="activation"):
        dg.GemmEpilogue(activation=1)
    with pytest.raises(dg.InvalidArgument, match="amax_floor"):
        dg.GemmEpilogue(amax_floor="1e-4")
    with pytest.raises(dg.InvalidArgument, match="pow2_scales"):
        dg.GemmEpilogue(pow2_scales="yes")
    a, b, d = FakeCAI((64, 128), "<f2"), FakeCAI((256, 128), "<f2"), FakeCAI((64, 256), "<f2")
    with pytest.raises(dg.InvalidArgument, match="epilogue: expected dg.GemmEpilogue"):
        dg.bf16_gemm_nt(a, b, d, epilogue={"activation": "swiglu"})
    # Fields reassigned after construction are checked at the call.
    epi = dg.GemmEpilogue()
    epi.activation = "relu"
    with pytest.raises(dg.InvalidArgument, match="activation: 'relu'"):
        dg.bf16_gemm_nt(a, b, d, epilogue=epi)
    with pytest.raises(dg.InvalidArgument, match="epilogue.d_scales: the tensor is read-only"):
        dg.bf16_gemm_nt(a, b, d, epilogue=dg.GemmEpilogue(d_scales=FakeCAI((64, 2), "<f4", readonly=True)))
    # An epilogue tensor on another device than the operands.
    with pytest.raises(dg.InvalidArgument, match="epilogue.bias: on cuda:1"):
        dg.bf16_gemm_nt(FakeDLPack((64, 128), 4, 16), FakeDLPack((256, 128), 4, 16), FakeDLPack((64, 256), 4, 16),
                        epilogue=dg.GemmEpilogue(bias=FakeDLPack((256,), 2, 32, device_id=1)))
    assert not any(r.calls for r in hooked.values())
    assert "activation='swiglu'" in repr(dg.GemmEpilogue("swiglu"))


class _Interleave:
    def __init__(self):
        self.calls = []

    def __call__(self, stream, src, dst, block):
        self.calls.append((T.read_descriptor(src), T.read_descriptor(dst), block))
        return 0


def test_swiglu_interleave_arguments(monkeypatch):
    rec = _Interleave()
    monkeypatch.setitem(_lib.get().functions, "dg_swiglu_interleave", rec)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    src, dst = e4m3((4, 512, 256), 0x1000), e4m3((4, 512, 256), 0x2000)
    assert dg.swiglu_interleave(src, dst) is dst
    sf, sf_dst = FakeCAI((4, 4, 2), "<f4", ptr=0x3000), FakeCAI((4, 4, 2), "<f4", ptr=0x4000)
    assert dg.swiglu_interleave(sf, sf_dst, block=1) is sf_dst
    (s1, d1, b1), (s2, d2, b2) = rec.calls
    assert (s1[:3], d1[0], b1) == ((0x1000, T.FLOAT8_E4M3, (4, 512, 256)), 0x2000, 128)
    assert (s2[:3], d2[0], b2) == ((0x3000, T.FLOAT32, (4, 4, 2)), 0x4000, 1)
    with pytest.raises(dg.InvalidArgument, match="dst: required for a non-torch src"):
        dg.swiglu_interleave(sf)
    with pytest.raises(dg.InvalidArgument, match="block"):
        dg.swiglu_interleave(sf, sf_dst, block=1.5)
    with pytest.raises(dg.InvalidArgument, match="dst: the tensor is read-only"):
        dg.swiglu_interleave(sf, FakeCAI((4, 4, 2), "<f4", readonly=True))
    assert len(rec.calls) == 2


def test_fp8_scales_like_needs_torch():
    with pytest.raises(dg.InvalidArgument, match="fp8_scales_like allocates with torch"):
        dg.fp8_scales_like(e4m3((128, 256), 0x1000))


def test_prepare_calls_pass_the_epilogue(monkeypatch):
    """dg.gemm_prepare / dg.m_grouped_gemm_prepare hand ``epilogue`` to libdg as the calls do; its
    tensors may be bare descriptors (a prepare reads shapes and dtypes, not memory)."""
    lib = _lib.get()
    recs = {name: Recorder(0) for name in ("dg_gemm_prepare", "dg_m_grouped_gemm_prepare")}
    for name, rec in recs.items():
        monkeypatch.setitem(lib.functions, name, rec)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    g, max_m, n, k = 4, 128, 512, 256
    sfd = dg.TensorInfo(0, T.FLOAT32, [g, max_m, 2], [max_m * 2, 1, max_m], 0)
    dg.m_grouped_gemm_prepare("float8_e4m3fn", "masked", g, max_m, n, k, expected_m=32,
                              epilogue=dg.GemmEpilogue("swiglu", d_scales=sfd, pow2_scales=True))
    dg.m_grouped_gemm_prepare("float8_e4m3fn", "masked", g, max_m, n, k, expected_m=32)
    (_, e), (_, plain) = recs["dg_m_grouped_gemm_prepare"].calls
    assert e[:4] == (1, None, (0, T.FLOAT32, (g, max_m, 2), (max_m * 2, 1, max_m)), 1) and plain is None
    bias = dg.TensorInfo(0, T.FLOAT32, [n], [1], 0)
    dg.gemm_prepare("float8_e4m3fn", "nt", 300, n, k, "bfloat16", epilogue=dg.GemmEpilogue(bias=bias))
    (_, e), = recs["dg_gemm_prepare"].calls
    assert e[0] == 0 and e[1] == (0, T.FLOAT32, (n,), (1,)) and e[2] is None
    with pytest.raises(dg.InvalidArgument, match="epilogue: expected dg.GemmEpilogue"):
        dg.gemm_prepare("float8_e4m3fn", "nt", 300, n, k, "bfloat16", epilogue="swiglu")
