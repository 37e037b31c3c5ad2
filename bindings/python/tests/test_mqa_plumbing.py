"""What the MQA logits wrappers hand to libdg, checked without a GPU: the C entry points are
replaced by a recorder that reads the descriptors back through dg_tensor_get."""

import pytest

import dg
from dg import _lib, _tensor as T
from fakes import FakeCAI


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append([T.read_descriptor(a) if isinstance(a, T.c_void_p) else a for a in args[1:]])
        return 0


@pytest.fixture
def hooked(monkeypatch):
    recs = {}
    lib = _lib.get()
    for name in ("dg_fp8_mqa_logits", "dg_fp8_mqa_logits_compressed", "dg_get_paged_mqa_logits_metadata",
                 "dg_fp8_paged_mqa_logits"):
        recs[name] = Recorder()
        monkeypatch.setitem(lib.functions, name, recs[name])
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    return recs


def test_layout_rows_padded_to_1024_bytes():
    assert dg.get_mqa_logits_layout(3, 1000) == ((3, 1000), (1024, 1), 3 * 1024 * 4)
    assert dg.get_mqa_logits_layout(2, 1, "bfloat16") == ((2, 1), (512, 1), 2 * 512 * 2)
    with pytest.raises(dg.InvalidArgument, match="logits_dtype"):
        dg.get_mqa_logits_layout(2, 2, "float16")


def test_fp8_mqa_logits_passes_operands_in_order(hooked):
    q, kv, sf = FakeCAI((5, 64, 128), "|u1", ptr=0x1000), FakeCAI((300, 128), "|u1", ptr=0x2000), FakeCAI((300,), "<f4", ptr=0x3000)
    w, ks, ke = FakeCAI((5, 64), "<f4", ptr=0x4000), FakeCAI((5,), "<i4", ptr=0x5000), FakeCAI((5,), "<i4", ptr=0x6000)
    out = FakeCAI((5, 300), "<f4", strides=(512, 1), ptr=0x7000)
    assert dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=False, out=out) is out
    (call,) = hooked["dg_fp8_mqa_logits"].calls
    assert [c[0] for c in call[:7]] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000]
    assert call[6][2:] == ((5, 300), (512, 1))
    assert call[7] == 0


def test_compressed_fp8_mqa_logits_passes_max_seqlen_k_before_the_logits(hooked):
    q, kv, sf = FakeCAI((5, 64, 128), "|u1", ptr=0x1000), FakeCAI((300, 128), "|u1", ptr=0x2000), FakeCAI((300,), "<f4", ptr=0x3000)
    w, ks, ke = FakeCAI((5, 64), "<f4", ptr=0x4000), FakeCAI((5,), "<i4", ptr=0x5000), FakeCAI((5,), "<i4", ptr=0x6000)
    out = FakeCAI((5, 128), "<f4", strides=(256, 1), ptr=0x7000)
    assert dg.fp8_mqa_logits(q, (kv, sf), w, ks, ke, clean_logits=False, max_seqlen_k=128, out=out) is out
    assert hooked["dg_fp8_mqa_logits"].calls == []
    (call,) = hooked["dg_fp8_mqa_logits_compressed"].calls
    assert [c[0] for c in call[:6]] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000]
    assert call[6] == 128
    assert call[7][0] == 0x7000 and call[7][2:] == ((5, 128), (256, 1))
    assert call[8] == 0


def test_fp8_mqa_logits_argument_errors(hooked):
    q, kv, sf = FakeCAI((5, 64, 128), "|u1"), FakeCAI((300, 128), "|u1"), FakeCAI((300,), "<f4")
    w, ks = FakeCAI((5, 64), "<f4"), FakeCAI((5,), "<i4")
    with pytest.raises(dg.InvalidArgument, match="max_seqlen_k: -1"):
        dg.fp8_mqa_logits(q, (kv, sf), w, ks, ks, clean_logits=False, max_seqlen_k=-1)
    with pytest.raises(dg.InvalidArgument, match="kv"):
        dg.fp8_mqa_logits(q, kv, w, ks, ks)
    with pytest.raises(dg.InvalidArgument, match="logits_dtype"):
        dg.fp8_mqa_logits(q, (kv, sf), w, ks, ks, logits_dtype="float16")
    with pytest.raises(dg.InvalidArgument, match="not a torch tensor"):
        dg.fp8_mqa_logits(q, (kv, sf), w, ks, ks)  # no out= and nothing to allocate with
    assert hooked["dg_fp8_mqa_logits"].calls == []
    assert hooked["dg_fp8_mqa_logits_compressed"].calls == []


def test_paged_metadata_and_logits_pass_their_arguments(hooked):
    ctx = FakeCAI((4, 2), "<i4", ptr=0x1000)
    sched = FakeCAI((133, 2), "<i4", ptr=0x2000)
    assert dg.get_paged_mqa_logits_metadata(ctx, 64, 132, out=sched) is sched
    (call,) = hooked["dg_get_paged_mqa_logits_metadata"].calls
    assert call[0][0] == 0x1000 and call[1:3] == [64, 132] and call[3][0] == 0x2000
    q = FakeCAI((4, 2, 64, 128), "|u1", ptr=0x3000)
    cache = FakeCAI((40, 64, 1, 132), "|u1", ptr=0x4000)
    w, table = FakeCAI((8, 64), "<f4", ptr=0x5000), FakeCAI((4, 10), "<i4", ptr=0x6000)
    out = FakeCAI((8, 600), "<f4", strides=(768, 1), ptr=0x7000)
    assert dg.fp8_paged_mqa_logits(q, cache, w, ctx, table, sched, 600, clean_logits=True, out=out) is out
    (call,) = hooked["dg_fp8_paged_mqa_logits"].calls
    assert [c[0] for c in call[:6]] == [0x3000, 0x4000, 0x5000, 0x1000, 0x6000, 0x2000]
    assert call[6] == 600 and call[7][0] == 0x7000 and call[8] == 1


def test_paged_argument_errors(hooked):
    ctx = FakeCAI((4,), "<i4")
    with pytest.raises(dg.InvalidArgument, match="num_sms"):
        dg.get_paged_mqa_logits_metadata(ctx, 64, 2**40)
    with pytest.raises(dg.InvalidArgument, match="not a torch tensor"):
        dg.get_paged_mqa_logits_metadata(ctx, 64, 132)
    assert hooked["dg_get_paged_mqa_logits_metadata"].calls == []
