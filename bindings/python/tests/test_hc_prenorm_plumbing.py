"""dg.tf32_hc_prenorm_gemm without a GPU: what reaches dg_tf32_hc_prenorm_gemm (descriptors read
back, num_splits: 0 for None), and the argument checks made before the call."""

import pytest

import dg
from dg import _lib, _tensor as T
from fakes import FakeCAI


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, stream, *args):
        *tensors, splits = args
        self.calls.append(([T.read_descriptor(h) for h in tensors], splits))
        return 0


@pytest.fixture
def hooked(monkeypatch):
    rec = Recorder()
    monkeypatch.setitem(_lib.get().functions, "dg_tf32_hc_prenorm_gemm", rec)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    return rec


def test_tensors_and_num_splits_reach_the_c_call(hooked):
    m, n, k = 137, 24, 7680
    a = FakeCAI((m, k), "<f2", ptr=0x1000)  # the dtype is checked in C, hooked here
    b = FakeCAI((n, k), "<f4", ptr=0x2000)
    d = FakeCAI((16, m, n), "<f4", ptr=0x3000)
    s = FakeCAI((16, m), "<f4", ptr=0x4000)
    dg.tf32_hc_prenorm_gemm(a, b, d, s, num_splits=16)
    dg.tf32_hc_prenorm_gemm(a, b, FakeCAI((m, n), "<f4", ptr=0x3000), FakeCAI((m,), "<f4", ptr=0x4000))
    (descs, splits), (descs2, splits2) = hooked.calls
    assert splits == 16 and splits2 == 0
    assert [x[0] for x in descs] == [0x1000, 0x2000, 0x3000, 0x4000]
    assert [x[0] for x in descs2] == [0x1000, 0x2000, 0x3000, 0x4000]


@pytest.mark.parametrize("bad", [0, -3])
def test_num_splits_below_one_is_refused_before_the_call(hooked, bad):
    t = FakeCAI((4, 4), "<f4")
    with pytest.raises(dg.InvalidArgument, match="num_splits"):
        dg.tf32_hc_prenorm_gemm(t, t, t, t, num_splits=bad)
    assert hooked.calls == []
