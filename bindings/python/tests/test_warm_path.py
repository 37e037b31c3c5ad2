"""The GEMM wrappers' warm path (dg/_fast.py) end to end against the fake CUDA driver
(tests/fake_driver, put on LD_LIBRARY_PATH by the python_fake_driver CTest), with a stand-in for
torch: a repeated call makes the same launch as the first without running the Python plumbing,
anything in the key that changes takes the full path again, calls that made scale copies are never
replayed, libdg's errors still raise, and a full table frees its descriptors. Skipped without the
fake driver (a real GPU runs the real thing in test_gpu.py)."""

import ctypes
import sys
import types

import pytest

import dg
from dg import _fast, _lib, _stream, api


def _fake_driver():
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    return cuda if hasattr(cuda, "fake_cuda_set_launch_hook") else None


_CUDA = _fake_driver()
pytestmark = pytest.mark.skipif(_CUDA is None, reason="needs tests/fake_driver's libcuda.so.1 (CTest python_fake_driver)")


class _Launch(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("smem_bytes", ctypes.c_uint), ("cluster", ctypes.c_uint * 3), ("pdl", ctypes.c_int)]


_HOOK = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Launch), ctypes.c_void_p, ctypes.c_void_p)


# --- a stand-in for torch: what the binding reads from tensors and from torch.cuda ----------------


class _DType:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


def _make_torch(stream_box):
    torch = types.ModuleType("torch")

    class Tensor:
        def __init__(self, ptr, dtype, shape, strides=None):
            if strides is None:
                strides, acc = [], 1
                for s in reversed(shape):
                    strides.insert(0, acc)
                    acc *= max(s, 1)
            self._ptr, self.dtype, self.shape, self._strides = ptr, dtype, tuple(shape), tuple(strides)
            self.device = types.SimpleNamespace(type="cuda", index=0)

        def data_ptr(self):
            return self._ptr

        def stride(self):
            return self._strides

        def get_device(self):
            return 0

        def as_strided(self, shape, strides):
            return Tensor(self._ptr, self.dtype, shape, strides)

    heap = [0x7A0000000000]

    def empty(numel, dtype, device):  # fake device memory: addresses only
        heap[0] += (numel * 4 + 4095) // 4096 * 4096
        return Tensor(heap[0], dtype, (numel,))

    torch.Tensor = Tensor
    torch.empty = empty
    for name in ("float32", "bfloat16", "float8_e4m3fn", "int32", "uint8"):
        setattr(torch, name, _DType(name))
    torch.cuda = types.SimpleNamespace(is_initialized=lambda: True, is_available=lambda: True, current_device=lambda: 0,
                                       current_stream=lambda dev=None: types.SimpleNamespace(cuda_stream=stream_box[0]))
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda dev: stream_box[0])
    return torch


@pytest.fixture
def env(monkeypatch):
    """(torch stand-in, launches seen, stream box, counter of full-path calls)."""
    stream_box = [0]
    torch = _make_torch(stream_box)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(_fast, "_types", None)
    monkeypatch.setattr(_fast, "_raw_stream", None)
    launches = []

    def record(launch, _args, _user):
        l = launch.contents
        launches.append((l.kernel.decode(), tuple(l.grid), tuple(l.block), l.smem_bytes))

    hook = _HOOK(record)
    _CUDA.fake_cuda_set_launch_hook(hook, None)
    full = [0]
    real = api._prepare_call

    def counting(*a, **k):
        full[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(dg._gemm, "_prepare_call", counting)
    _fast.clear()
    yield torch, launches, stream_box, full
    _fast.clear()
    _CUDA.fake_cuda_set_launch_hook(None, None)


def _bf16(torch, m=128, n=256, k=512, base=0x7F0000000000):
    a = torch.Tensor(base, torch.bfloat16, (m, k))
    b = torch.Tensor(base + (1 << 32), torch.bfloat16, (n, k))
    d = torch.Tensor(base + (2 << 32), torch.bfloat16, (m, n))
    return a, b, d


def _fp8(torch, m=128, n=256, k=512, sfa_mn_major=True):
    base = 0x7E0000000000
    a = torch.Tensor(base, torch.float8_e4m3fn, (m, k))
    b = torch.Tensor(base + (1 << 32), torch.float8_e4m3fn, (n, k))
    sfa = (torch.Tensor(base + (2 << 32), torch.float32, (m, k // 128), (1, m)) if sfa_mn_major
           else torch.Tensor(base + (2 << 32), torch.float32, (m, k // 128)))
    sfb = torch.Tensor(base + (3 << 32), torch.float32, (n // 128, k // 128))
    d = torch.Tensor(base + (4 << 32), torch.bfloat16, (m, n))
    return (a, sfa), (b, sfb), d


def test_repeated_bf16_call_replays_the_first_launch(env):
    torch, launches, _stream_box, full = env
    a, b, d = _bf16(torch)
    dg.bf16_gemm_nt(a, b, d)
    assert full[0] == 1 and len(launches) == 1
    for _ in range(3):
        dg.bf16_gemm_nt(a, b, d)
    assert full[0] == 1, "the warm path ran the Python plumbing"
    assert launches == launches[:1] * 4
    # Same values, new objects (a fresh view of the same memory): still warm.
    a2, b2, d2 = _bf16(torch)
    dg.bf16_gemm_nt(a2, b2, d2)
    assert full[0] == 1 and len(launches) == 5


def test_anything_in_the_key_changes_takes_the_full_path(env):
    torch, launches, _stream_box, full = env
    a, b, d = _bf16(torch)
    dg.bf16_gemm_nt(a, b, d)
    variants = [
        lambda: dg.bf16_gemm_nt(a, b, d, alpha=2.0),
        lambda: dg.bf16_gemm_nt(a, b, d, beta=0.5),
        lambda: dg.bf16_gemm_nt(*_bf16(torch, base=0x7D0000000000)),  # other pointers
        lambda: dg.bf16_gemm_nt(*_bf16(torch, m=64)),  # other sizes
        lambda: dg.bf16_gemm_nt(a, torch.Tensor(b.data_ptr(), torch.bfloat16, (256, 512), (1, 256)), d),  # strides
        lambda: dg.bf16_gemm_nn(a, torch.Tensor(b.data_ptr(), torch.bfloat16, (512, 256)), d),  # entry point
        lambda: dg.bf16_gemm_nt(a, b, torch.Tensor(d.data_ptr(), torch.float32, (128, 256))),  # dtype
    ]
    for i, call in enumerate(variants):
        call()
        assert full[0] == 2 + i, i
        call()  # now warm itself
        assert full[0] == 2 + i, i
    # Explicit streams and options always take the full path.
    dg.bf16_gemm_nt(a, b, d, stream=0)
    dg.bf16_gemm_nt(a, b, d, options={"block_n": 128})
    assert full[0] == 1 + len(variants) + 2


def test_fp8_warm_only_without_scale_copies(env):
    torch, launches, _stream_box, full = env
    x, y, d = _fp8(torch)
    dg.fp8_gemm_nt(x, y, d)
    dg.fp8_gemm_nt(x, y, d)
    assert full[0] == 1 and len(launches) == 2 and launches[0] == launches[1]
    dg.fp8_gemm_nt(x, y, d, recipe=(1, 128, 128))  # a key of its own
    dg.fp8_gemm_nt(x, y, d, recipe=(1, 128, 128))
    assert full[0] == 2
    # Row-major per-token scales need the MN-major copy on every call (a new tensor each time): never
    # replayed.
    x2, y2, d2 = _fp8(torch, sfa_mn_major=False)
    before = len(launches)
    for _ in range(2):
        dg.fp8_gemm_nt(x2, y2, d2)
    assert full[0] == 4
    assert [l[0].startswith("dg_transpose") for l in launches[before:]] == [True, False, True, False]


def test_the_current_stream_is_read_on_every_call(env, monkeypatch):
    torch, _launches, stream_box, _full = env
    a, b, d = _bf16(torch)
    dg.bf16_gemm_nt(a, b, d)
    seen = []
    real = _stream._cached
    monkeypatch.setattr(_stream, "_cached", lambda dev, cu: seen.append((dev, cu)) or real(dev, cu))
    stream = dg.Stream(0, create=True)
    stream_box[0] = stream.cu_stream  # torch's current stream moves to another CUstream
    dg.bf16_gemm_nt(a, b, d)
    assert seen == [(0, stream.cu_stream)]


def test_libdg_errors_raise_on_the_warm_path(env):
    torch, _launches, _stream_box, full = env
    a, b, d = _bf16(torch)
    dg.bf16_gemm_nt(a, b, d)
    (plan,) = _fast._table.plans.values()
    lib = _lib.get()
    good = plan.fn
    # A C call that fails (and sets this thread's message) in place of the GEMM's.
    plan.fn = lambda *args: lib.fn("dg_get_tma_aligned_size")(5, 3, None)
    with pytest.raises(dg.InvalidArgument, match="dg_bf16_gemm_nt: aligned: out-pointer is NULL"):
        dg.bf16_gemm_nt(a, b, d)
    plan.fn = good
    dg.bf16_gemm_nt(a, b, d)
    assert full[0] == 1


def test_a_full_table_frees_its_descriptors(env, monkeypatch):
    torch, _launches, _stream_box, _full = env
    monkeypatch.setattr(_fast, "CAPACITY", 4)
    destroyed = []
    lib = _lib.get()
    real = lib.functions["dg_tensor_destroy"]
    monkeypatch.setitem(lib.functions, "dg_tensor_destroy", lambda h: destroyed.append(h.value) or real(h))
    for i in range(5):
        dg.bf16_gemm_nt(*_bf16(torch, base=0x7C0000000000 + (i << 40)))
    assert len(destroyed) == 4 * 3  # the first four plans' a, b and d
    assert len(_fast._table.plans) == 1
