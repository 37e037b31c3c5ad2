"""The GEMM (skip_head_mid included) and MQA-logits wrappers' warm path (dg/_fast.py) end to end against the fake CUDA
driver (tests/fake_driver, put on LD_LIBRARY_PATH by the python_fake_driver CTest), with a stand-in
for torch: a repeated call makes the same launch as the first without running the Python plumbing
(into a new output where the call allocates one), anything in the key that changes takes the full
path again, calls that made scale copies are never replayed, libdg's errors still raise, and a
full table frees its descriptors. Skipped without the fake driver (a real GPU runs the real thing
in test_gpu.py)."""

import ctypes
import sys
import types

import pytest

import dg
from dg import _fast, _lib, _stream, _arguments
from dg import _tensor as T


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

    def empty(shape, dtype, device):  # fake device memory: addresses only
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        numel = 1
        for s in shape:
            numel *= s
        heap[0] += (numel * 4 + 4095) // 4096 * 4096
        return Tensor(heap[0], dtype, shape)

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
    real = _arguments._prepare_call

    def counting(*a, **k):
        full[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(dg._gemm, "_prepare_call", counting)
    monkeypatch.setattr(dg._mqa, "_prepare_call", counting)
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


def test_repeated_skip_head_mid_call_replays_the_first_launch(env):
    torch, launches, _stream_box, full = env
    x, y, _ = _fp8(torch)
    d = torch.Tensor(0x7E0000000000 + (5 << 32), torch.bfloat16, (128, 2 * 160))  # 2 heads of 64 + 32 + 64
    for _ in range(3):
        dg.fp8_gemm_nt_skip_head_mid(x, y, d, (64, 32, 64))
    assert full[0] == 1 and len(launches) == 3 and launches[0] == launches[1] == launches[2]
    assert "_heads64_32_64" in launches[0][0]
    # Another split is a key of its own (and a kernel of its own).
    d2 = torch.Tensor(d.data_ptr(), torch.bfloat16, (128, 2 * 144))
    dg.fp8_gemm_nt_skip_head_mid(x, y, d2, (64, 16, 64))
    dg.fp8_gemm_nt_skip_head_mid(x, y, d2, (64, 16, 64))
    assert full[0] == 2 and "_heads64_16_64" in launches[-1][0]


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


def test_calls_with_an_epilogue_take_the_full_path(env):
    """An epilogue call is never replayed (its descriptors live in the options' dg_gemm_epilogue),
    and libdg accepts the struct the binding builds and reads its fields; calls without one stay
    warm beside it."""
    torch, launches, _stream_box, full = env
    a, b, d = _bf16(torch)
    bias = torch.Tensor(0x7F0000000000 + (3 << 32), torch.float32, (256,))
    for _ in range(2):
        dg.bf16_gemm_nt(a, b, d, epilogue=dg.GemmEpilogue(bias=bias))
    assert full[0] == 2 and len(launches) == 2 and not _fast._table.plans
    dg.bf16_gemm_nt(a, b, d)
    dg.bf16_gemm_nt(a, b, d)
    assert full[0] == 3 and len(launches) == 4 and len(_fast._table.plans) == 1
    # SwiGLU into an FP8 D with its scales, allocated as the binding lays them out.
    d8 = torch.Tensor(0x7F0000000000 + (5 << 32), torch.float8_e4m3fn, (128, 128))
    scales = dg.fp8_scales_like(d8)
    assert (scales.dtype.name, scales.shape, scales.stride()) == ("float32", (128, 1), (1, 128))
    dg.bf16_gemm_nt(a, b, d8, epilogue=dg.GemmEpilogue("swiglu", d_scales=scales))
    assert full[0] == 4 and len(launches) == 5
    # libdg reads the fields: each refusal names the field.
    with pytest.raises(dg.InvalidArgument, match="options.epilogue.amax_floor"):
        dg.bf16_gemm_nt(a, b, d, epilogue=dg.GemmEpilogue(amax_floor=1e31))
    with pytest.raises(dg.InvalidArgument, match="options.epilogue.d_scales: NULL, but d is FLOAT8_E4M3"):
        dg.bf16_gemm_nt(a, b, d8, epilogue=dg.GemmEpilogue("swiglu"))
    with pytest.raises(dg.Unsupported, match="options.epilogue"):
        dg.bf16_gemm_nt(a, b, d, c=d, epilogue=dg.GemmEpilogue(bias=bias))
    assert len(launches) == 5


# --- MQA logits -----------------------------------------------------------------------------------


class _Paged:
    """The arguments of a paged MQA-logits call (B 4, next_n 1, H 64, D 128)."""

    def __init__(self, torch, b=4, max_ctx=600, base=0x7B0000000000):
        self.ctx = torch.Tensor(base, torch.int32, (b,))
        self.q = torch.Tensor(base + (1 << 32), torch.float8_e4m3fn, (b, 1, 64, 128))
        self.cache = torch.Tensor(base + (2 << 32), torch.uint8, (40, 64, 1, 132))
        self.w = torch.Tensor(base + (3 << 32), torch.float32, (b, 64))
        self.table = torch.Tensor(base + (4 << 32), torch.int32, (b, 10))
        self.sched = torch.Tensor(base + (5 << 32), torch.int32, (133, 2))
        self.max_ctx = max_ctx

    def logits(self, **kw):
        return dg.fp8_paged_mqa_logits(self.q, self.cache, self.w, self.ctx, self.table, self.sched, self.max_ctx, **kw)


def _prefill(torch, s_q=5, s_kv=300):
    base = 0x7C0000000000
    q = torch.Tensor(base, torch.float8_e4m3fn, (s_q, 64, 128))
    kv = torch.Tensor(base + (1 << 32), torch.float8_e4m3fn, (s_kv, 128))
    sf = torch.Tensor(base + (2 << 32), torch.float32, (s_kv,))
    w = torch.Tensor(base + (3 << 32), torch.float32, (s_q, 64))
    ks = torch.Tensor(base + (4 << 32), torch.int32, (s_q,))
    ke = torch.Tensor(base + (5 << 32), torch.int32, (s_q,))
    return q, (kv, sf), w, ks, ke


def _out_descriptor(key_prefix):
    (plan,) = [p for k, p in _fast._table.plans.items() if k[0] == key_prefix]
    return plan, T.read_descriptor(plan.out)


@pytest.mark.parametrize("which", ["metadata", "paged", "prefill", "compressed"])
def test_repeated_mqa_call_allocates_and_replays_the_first_launch(env, which):
    torch, launches, _stream_box, full = env
    p = _Paged(torch)
    call, name = {
        "metadata": (lambda: dg.get_paged_mqa_logits_metadata(p.ctx, 64, 132), "dg_get_paged_mqa_logits_metadata"),
        "paged": (lambda: p.logits(), "dg_fp8_paged_mqa_logits"),
        "prefill": (lambda: dg.fp8_mqa_logits(*_prefill(torch)), "dg_fp8_mqa_logits"),
        "compressed": (lambda: dg.fp8_mqa_logits(*_prefill(torch), clean_logits=False, max_seqlen_k=200),
                       "dg_fp8_mqa_logits_compressed"),
    }[which]
    first = call()
    assert full[0] == 1 and len(launches) == 1
    results = [call() for _ in range(3)]
    assert full[0] == 1, "the warm path ran the Python plumbing"
    assert launches == launches[:1] * 4
    _plan, (data, _dtype, sizes, strides) = _out_descriptor(name)
    last = results[-1]
    # Each call returns a tensor of its own, laid out as the first, and libdg wrote that one.
    assert len({r.data_ptr() for r in [first] + results}) == 4
    assert all(r.shape == first.shape and r.stride() == first.stride() and r.dtype is first.dtype for r in results)
    assert data == last.data_ptr() and sizes == tuple(last.shape) and strides == tuple(last.stride())


def test_mqa_layouts_of_new_outputs(env):
    torch, _launches, _stream_box, _full = env
    p = _Paged(torch)
    for _ in range(2):
        sched = dg.get_paged_mqa_logits_metadata(p.ctx, 64, 132)
        assert sched.shape == (133, 2) and sched.stride() == (2, 1) and sched.dtype is torch.int32
        logits = p.logits()  # rows padded to 1024 bytes
        assert logits.shape == (4, 600) and logits.stride() == (768, 1) and logits.dtype is torch.float32
        logits = p.logits(logits_dtype=torch.bfloat16)
        assert logits.shape == (4, 600) and logits.stride() == (1024, 1) and logits.dtype is torch.bfloat16
        # Compressed prefill logits: max_seqlen_k columns, rows padded alike.
        logits = dg.fp8_mqa_logits(*_prefill(torch), clean_logits=False, max_seqlen_k=200)
        assert logits.shape == (5, 200) and logits.stride() == (256, 1) and logits.dtype is torch.float32
        logits = dg.fp8_mqa_logits(*_prefill(torch), clean_logits=False, max_seqlen_k=300, logits_dtype=torch.bfloat16)
        assert logits.shape == (5, 300) and logits.stride() == (512, 1) and logits.dtype is torch.bfloat16


def test_mqa_call_with_out_replays_into_it(env):
    torch, launches, _stream_box, full = env
    p = _Paged(torch)
    out = torch.Tensor(0x7D0000000000, torch.float32, (4, 600), (768, 1))
    sched = torch.Tensor(0x7D0100000000, torch.int32, (133, 2))
    for _ in range(3):
        assert p.logits(out=out) is out
        assert dg.get_paged_mqa_logits_metadata(p.ctx, 64, 132, out=sched) is sched
    assert full[0] == 2 and len(launches) == 6 and launches[0::2] == launches[:1] * 3


def test_anything_in_an_mqa_key_changes_takes_the_full_path(env):
    torch, _launches, _stream_box, full = env
    p = _Paged(torch)
    p.logits()
    other = _Paged(torch, base=0x7E0000000000)
    variants = [
        lambda: p.logits(clean_logits=True),
        lambda: p.logits(logits_dtype=torch.bfloat16),
        lambda: p.logits(logits_dtype="bfloat16"),
        lambda: p.logits(out=torch.Tensor(0x7D0000000000, torch.float32, (4, 600), (768, 1))),
        lambda: dg.fp8_paged_mqa_logits(p.q, p.cache, p.w, p.ctx, p.table, p.sched, 512),  # max_context_len
        lambda: dg.fp8_paged_mqa_logits(p.q, p.cache, p.w, p.ctx, p.table, other.sched, 600),  # a pointer
        lambda: dg.fp8_paged_mqa_logits(p.q, p.cache, p.w, p.ctx, torch.Tensor(p.table.data_ptr(), torch.int32, (4, 12)),
                                        p.sched, 600),  # sizes
        lambda: dg.fp8_paged_mqa_logits(p.q, torch.Tensor(p.cache.data_ptr(), torch.uint8, (40, 64, 1, 132),
                                                          (64 * 144, 132, 132, 1)), p.w, p.ctx, p.table, p.sched, 600),  # strides
        lambda: dg.get_paged_mqa_logits_metadata(p.ctx, 64, 132),
        lambda: dg.get_paged_mqa_logits_metadata(p.ctx, 64, 66),  # num_sms
        lambda: dg.fp8_mqa_logits(*_prefill(torch)),
        lambda: dg.fp8_mqa_logits(*_prefill(torch), clean_logits=False),
        lambda: dg.fp8_mqa_logits(*_prefill(torch, s_kv=256)),
        lambda: dg.fp8_mqa_logits(*_prefill(torch), clean_logits=False, max_seqlen_k=200),
        lambda: dg.fp8_mqa_logits(*_prefill(torch), clean_logits=False, max_seqlen_k=100),  # max_seqlen_k
    ]
    for i, call in enumerate(variants):
        call()
        assert full[0] == 2 + i, i
        call()  # now warm itself
        assert full[0] == 2 + i, i
    # Explicit streams, and scalars that are not plain ints, always take the full path.
    p.logits(stream=0)
    dg.fp8_paged_mqa_logits(p.q, p.cache, p.w, p.ctx, p.table, p.sched, 600.0)
    dg.get_paged_mqa_logits_metadata(p.ctx, 64, 132, stream=0)
    dg.get_paged_mqa_logits_metadata(p.ctx, 64.0, 132)
    q, kv, w, ks, ke = _prefill(torch)
    dg.fp8_mqa_logits(q, list(kv), w, ks, ke)
    assert full[0] == 1 + len(variants) + 5


def test_mqa_errors_raise_and_are_never_replayed(env):
    torch, launches, _stream_box, full = env
    p = _Paged(torch)
    p.q = torch.Tensor(p.q.data_ptr(), torch.float8_e4m3fn, (4, 1, 48, 128))
    for i in range(2):
        with pytest.raises(dg.Unsupported, match="H = 48"):
            p.logits()
        with pytest.raises(dg.Unsupported, match="block_kv: 32"):
            dg.get_paged_mqa_logits_metadata(p.ctx, 32, 132)
        with pytest.raises(dg.Unsupported, match="clean_logits: 1"):  # clean_logits defaults to True
            dg.fp8_mqa_logits(*_prefill(torch), max_seqlen_k=128)
        with pytest.raises(dg.InvalidArgument, match="num_sms"):
            dg.get_paged_mqa_logits_metadata(p.ctx, 64, 0)
        assert full[0] == 4 * (i + 1)
    assert launches == [] and not _fast._table.plans


def test_libdg_errors_raise_on_the_mqa_warm_path(env):
    torch, launches, _stream_box, full = env
    p = _Paged(torch)
    first = p.logits()
    plan, _ = _out_descriptor("dg_fp8_paged_mqa_logits")
    lib = _lib.get()
    good = plan.fn
    plan.fn = lambda *args: lib.fn("dg_get_tma_aligned_size")(5, 3, None)
    with pytest.raises(dg.InvalidArgument, match="dg_fp8_paged_mqa_logits: aligned: out-pointer is NULL"):
        p.logits()
    plan.fn = good
    assert p.logits().shape == first.shape
    assert full[0] == 1 and len(launches) == 2
