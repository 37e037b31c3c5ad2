"""What the quantization wrappers hand to libdg, checked without a GPU: the C entry points are
replaced by a recorder that reads the descriptors back through dg_tensor_get."""

import pytest

import dg
from dg import _lib, _tensor as T
from fakes import FakeCAI, FakeDLPack

NAMES = ["dg_quantize_fp8_per_token", "dg_quantize_fp8_per_token_contiguous", "dg_quantize_fp8_per_token_masked",
         "dg_quantize_fp8_per_block", "dg_quantize_fp8_mn_major", "dg_quantize_fp8_k_grouped"]


class Recorder:
    """Records (descriptors, scalars, options) of a call with `n` tensors after the stream."""

    def __init__(self, n):
        self.n = n
        self.calls = []

    def __call__(self, *args):
        tensors = args[1:1 + self.n]
        self.calls.append(([T.read_descriptor(h) for h in tensors], tuple(args[1 + self.n:-1]), args[-1]._obj))
        return 0


class KGroupedRecorder:
    """Records (descriptors of x, out, sf, host counts or None, num_groups, ks_tensor descriptor or
    None, options) of dg_quantize_fp8_k_grouped."""

    def __init__(self):
        self.calls = []

    def __call__(self, stream, x, out, sf, ks, num_groups, ks_tensor, options):
        counts = None if ks is None else [ks[i] for i in range(num_groups)]
        kt = None if ks_tensor is None else T.read_descriptor(ks_tensor)
        self.calls.append(([T.read_descriptor(h) for h in (x, out, sf)], counts, num_groups, kt, options._obj))
        return 0


@pytest.fixture
def hooked(monkeypatch):
    recs = {}
    lib = _lib.get()
    for name in NAMES:
        recs[name] = KGroupedRecorder() if name.endswith("k_grouped") else Recorder(
            4 if name.endswith(("contiguous", "masked")) else 3)
        monkeypatch.setitem(lib.functions, name, recs[name])
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    return recs


def e4m3(shape, ptr):
    return FakeDLPack(shape, 10, 8, ptr=ptr)


def test_per_token_passes_tensors_and_options(hooked):
    x = FakeCAI((300, 7168), "<f4", ptr=0x1000)
    sf = FakeCAI((300, 56), "<f4", strides=(1, 300), ptr=0x3000)
    dg.quantize_fp8_per_token(x, e4m3((300, 7168), 0x2000), sf, pow2_scales=True, amax_floor=1e-10)
    (descs, scalars, opts), = hooked["dg_quantize_fp8_per_token"].calls
    assert [d[0] for d in descs] == [0x1000, 0x2000, 0x3000]
    assert descs[1][1] == T.FLOAT8_E4M3 and descs[2][3] == (1, 300)
    assert scalars == () and opts.pow2_scales == 1 and opts.amax_floor == pytest.approx(1e-10)
    assert opts.struct_size == _lib.ctypes.sizeof(_lib.QuantOptions)


def test_grouped_forms_pass_their_layouts(hooked):
    x = FakeCAI((512, 256), "<f4", ptr=0x1000)
    sf = FakeCAI((512, 2), "<f4", strides=(1, 512), ptr=0x3000)
    idx = FakeCAI((512,), "<i4", ptr=0x4000)
    dg.quantize_fp8_per_token_contiguous(x, idx, 8, False, e4m3((512, 256), 0x2000), sf)
    dg.quantize_fp8_per_token_contiguous(x, FakeCAI((8,), "<i4", ptr=0x5000), 8, True, e4m3((512, 256), 0x2000), sf)
    indices, psum = hooked["dg_quantize_fp8_per_token_contiguous"].calls
    assert indices[0][3][0] == 0x4000 and indices[1] == (_lib.M_GROUPED_LAYOUT_INDICES, 8)
    assert psum[0][3][0] == 0x5000 and psum[1] == (_lib.M_GROUPED_LAYOUT_PSUM, 8)
    assert indices[2].pow2_scales == 0 and indices[2].amax_floor == 0.0
    x3 = FakeCAI((4, 64, 256), "<f4", ptr=0x1000)
    sf3 = FakeCAI((4, 64, 2), "<f4", strides=(128, 1, 64), ptr=0x3000)
    dg.quantize_fp8_per_token_masked(x3, FakeCAI((4,), "<i4", ptr=0x6000), e4m3((4, 64, 256), 0x2000), sf3)
    (descs, _s, _o), = hooked["dg_quantize_fp8_per_token_masked"].calls
    assert [d[0] for d in descs] == [0x1000, 0x2000, 0x3000, 0x6000]


def test_non_torch_callers_must_pass_the_outputs(hooked):
    x = FakeCAI((128, 128), "<f4", ptr=0x1000)
    with pytest.raises(dg.InvalidArgument, match="out"):
        dg.quantize_fp8_per_block(x)
    with pytest.raises(dg.InvalidArgument, match="sf"):
        dg.quantize_fp8_mn_major(x, e4m3((128, 128), 0x2000))
    dg.quantize_fp8_per_block(x, e4m3((128, 128), 0x2000), FakeCAI((1, 1), "<f4", ptr=0x3000))
    assert len(hooked["dg_quantize_fp8_per_block"].calls) == 1


def test_k_grouped_passes_counts_forms_and_options(hooked):
    x = FakeCAI((433, 256), "<f4", ptr=0x1000)
    sf = FakeCAI((256, 5), "<f4", strides=(1, 256), ptr=0x3000)
    ks = [300, 0, 128, 5]
    assert dg.k_grouped_padded_ks(ks) == [384, 0, 128, 128]
    dg.quantize_fp8_k_grouped(x, ks, None, e4m3((640, 256), 0x2000), sf, pow2_scales=True)
    dg.quantize_fp8_k_grouped(x, ks, FakeCAI((4,), "<i4", ptr=0x4000), e4m3((640 * 256,), 0x2000), sf)
    dg.quantize_fp8_k_grouped(x, None, FakeCAI((4,), "<i4", ptr=0x4000), e4m3((640, 256), 0x2000), sf)
    host, host_kt, device = hooked["dg_quantize_fp8_k_grouped"].calls
    assert [d[0] for d in host[0]] == [0x1000, 0x2000, 0x3000]
    assert host[1] == ks and host[2] == 4 and host[3] is None and host[4].pow2_scales == 1
    assert host_kt[0][1][2] == (640 * 256,) and host_kt[1] == ks and host_kt[3][0] == 0x4000
    assert device[1] is None and device[2] == 4 and device[3][0] == 0x4000 and device[4].pow2_scales == 0


def test_k_grouped_needs_counts_and_outputs(hooked):
    x = FakeCAI((130, 64), "<f4", ptr=0x1000)
    with pytest.raises(dg.InvalidArgument, match="ks"):
        dg.quantize_fp8_k_grouped(x)
    with pytest.raises(dg.InvalidArgument, match="out"):
        dg.quantize_fp8_k_grouped(x, [100, 30])
    with pytest.raises(dg.InvalidArgument, match="sf"):
        dg.quantize_fp8_k_grouped(x, [100, 30], out=e4m3((256, 64), 0x2000))
    assert hooked["dg_quantize_fp8_k_grouped"].calls == []
