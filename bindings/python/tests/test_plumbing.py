"""What the kernel wrappers hand to libdg, checked without a GPU: the C entry point is replaced by
a recorder that reads the descriptors back through dg_tensor_get, and the stream by a NULL handle
(scale-layout queries then answer for SM90 through the recipe's arch_major)."""

import ctypes

import pytest

import dg
from dg import _lib, _tensor as T, _arguments
from fakes import FakeCAI


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        stream, rest, opts = args[0], args[1:-1], args[-1]
        descs = [T.read_descriptor(h) if h is not None else None for h in rest]
        self.calls.append((stream, descs, opts._obj if opts is not None else None))
        return 0


@pytest.fixture
def hooked(monkeypatch):
    rec = Recorder()
    lib = _lib.get()
    for name in list(lib.functions):
        if name.startswith(("dg_fp8_gemm_", "dg_bf16_gemm_", "dg_nvfp4_gemv", "dg_cublaslt_gemm_")):
            monkeypatch.setitem(lib.functions, name, rec)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    orig = _arguments._sf_recipe
    monkeypatch.setattr(_arguments, "_sf_recipe", lambda *a, **k: orig(*a, **dict(k, arch_major=9)))
    return rec


def sm90_sfa(m, sf_k, ptr):
    """Per-token scales already MN-major and TMA-aligned."""
    return FakeCAI((m, sf_k), "<f4", strides=(1, (m + 3) // 4 * 4), ptr=ptr)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
def test_fp8_operands_and_scales_travel_together(hooked, layout):
    m, n, k = 300, 256, 512
    sf_k = k // 128
    am = (m + 3) // 4 * 4
    a_nt = FakeCAI((m, k), "|u1", ptr=0x1000)  # shape/strides only matter here
    ta, tb = layout[0] == "t", layout[1] == "n"
    a = FakeCAI((k, m), "|u1", strides=(1, k), ptr=0x1000) if ta else a_nt
    sfa = FakeCAI((sf_k, m), "<f4", strides=(am, 1), ptr=0x2000) if ta else sm90_sfa(m, sf_k, 0x2000)
    b = FakeCAI((k, n), "|u1", strides=(1, k), ptr=0x3000) if tb else FakeCAI((n, k), "|u1", ptr=0x3000)
    sfb = FakeCAI((sf_k, n // 128), "<f4", strides=(1, sf_k), ptr=0x4000) if tb else FakeCAI((n // 128, sf_k), "<f4", ptr=0x4000)
    d = FakeCAI((m, n), "<f2", ptr=0x5000)
    getattr(dg, "fp8_gemm_" + layout)((a, sfa), (b, sfb), d, alpha=1.0, beta=0.0)
    (stream, descs, opts), = hooked.calls
    da, dsfa, db, dsfb, dd, dc = descs
    assert dc is None
    # Pointers and views go through untouched (the scales needed no copy).
    assert [x[0] for x in (da, dsfa, db, dsfb, dd)] == [0x1000, 0x2000, 0x3000, 0x4000, 0x5000]
    assert dsfa[1] == T.FLOAT32 and da[1] == T.UINT8
    assert dsfa[2] == ((sf_k, m) if ta else (m, sf_k))
    assert dsfb[2] == ((sf_k, n // 128) if tb else (n // 128, sf_k))
    assert (opts.alpha, opts.beta) == (1.0, 0.0)
    assert opts.struct_size == ctypes.sizeof(type(opts))
    assert (opts.workspace, opts.workspace_size) == (None, 0)  # views of K-major storage: no copies


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
def test_fp8_workspace_is_passed_through(hooked, layout):
    m, n, k = 256, 256, 512
    am = (m + 3) // 4 * 4
    ta, tb = layout[0] == "t", layout[1] == "n"
    # Contiguous [K, M] / [K, N] storage: MN-major, so libdg copies it K-major into the workspace.
    a = FakeCAI((k, m), "|u1", ptr=0x1000) if ta else FakeCAI((m, k), "|u1", ptr=0x1000)
    sfa = FakeCAI((k // 128, m), "<f4", strides=(am, 1), ptr=0x2000) if ta else sm90_sfa(m, k // 128, 0x2000)
    b = FakeCAI((k, n), "|u1", ptr=0x3000) if tb else FakeCAI((n, k), "|u1", ptr=0x3000)
    sfb = FakeCAI((k // 128, n // 128), "<f4", strides=(1, k // 128)) if tb else FakeCAI((n // 128, k // 128), "<f4")
    d = FakeCAI((m, n), "<f2", ptr=0x5000)
    fn = getattr(dg, "fp8_gemm_" + layout)
    fn((a, sfa), (b, sfb), d, workspace=FakeCAI((1 << 20,), "|u1", ptr=0x100000))
    opts = hooked.calls[-1][2]
    assert (opts.workspace, opts.workspace_size) == (0x100000, 1 << 20)
    fn((a, sfa), (b, sfb), d, workspace=False)
    assert (hooked.calls[-1][2].workspace, hooked.calls[-1][2].workspace_size) == (None, 0)
    # Default: none for operands that are not torch tensors (libdg then names the bytes it needs).
    fn((a, sfa), (b, sfb), d)
    assert (hooked.calls[-1][2].workspace, hooked.calls[-1][2].workspace_size) == (None, 0)


def test_fp8_copies_are_predicted_as_libdg_decides():
    def view(shape, strides):
        return T.TensorInfo(0, T.FLOAT8_E4M3, shape, strides, None)

    assert not _arguments._copied_k_major(view((64, 128), (128, 1)))  # K-major
    assert not _arguments._copied_k_major(view((64, 128), (144, 1)))  # K-major, padded rows
    assert _arguments._copied_k_major(view((64, 128), (1, 64)))  # MN-major
    assert _arguments._copied_k_major(view((64, 128), (136, 1)))  # rows not 16-byte multiples apart (refused)
    assert not _arguments._copied_k_major(view((1, 128), (1, 1)))  # one contiguous row
    assert _arguments._copied_k_major(view((1, 128), (1, 16)))  # one row, not contiguous along K
    assert _arguments._copied_k_major(view((64, 1), (1, 64)))  # K = 1 from [1, M] storage: rows 1 byte apart
    assert not _arguments._copied_k_major(view((64, 1), (16, 1)))  # K = 1, rows 16 bytes apart


def test_fp8_gemm_workspace_size_values_and_errors():
    assert dg.fp8_gemm_workspace_size("nt", 129, 336, 400) == 0
    assert dg.fp8_gemm_workspace_size("nn", 129, 336, 400) == 134400
    assert dg.fp8_gemm_workspace_size("tt", 129, 336, 400) == 51712
    assert dg.fp8_gemm_workspace_size("tn", 129, 336, 400) == 51712 + 134400
    assert dg.fp8_gemm_workspace_size("tn", 129, 0, 400) == 0
    with pytest.raises(dg.InvalidArgument, match="layout"):
        dg.fp8_gemm_workspace_size("xx", 1, 1, 1)
    with pytest.raises(dg.InvalidArgument, match=r"m, n, k: -1"):
        dg.fp8_gemm_workspace_size("nn", -1, 1, 1)


def test_fp8_non_torch_scales_needing_a_copy_are_refused(hooked):
    m, n, k = 256, 256, 512
    sfa_row_major = FakeCAI((m, k // 128), "<f4")
    with pytest.raises(dg.InvalidArgument, match="sfa: needs a layout transform.*pass out="):
        dg.fp8_gemm_nt((FakeCAI((m, k), "|u1"), sfa_row_major), (FakeCAI((n, k), "|u1"), FakeCAI((2, 4), "<f4")), FakeCAI((m, n), "<f2"))
    assert hooked.calls == []


def test_fp8_default_recipe_is_read_from_sfb():
    n = 512
    per_block = T.TensorInfo(0, T.FLOAT32, (4, 8), (8, 1), None)
    per_token = T.TensorInfo(0, T.FLOAT32, (n, 8), (1, n), None)
    packed = T.TensorInfo(0, T.UE8M0X4, (n, 2), (1, n), None)
    assert _arguments._default_recipe(per_block, n, False) == (1, 128, 128)
    assert _arguments._default_recipe(per_token, n, False) == (1, 1, 128)
    assert _arguments._default_recipe(per_token.transposed(), n, True) == (1, 1, 128)
    assert _arguments._default_recipe(packed, n, False) == (1, 1, 128)


@pytest.mark.parametrize("layout", ["nt", "nn", "tn", "tt"])
def test_bf16_and_cublaslt_pass_views_and_scalars(hooked, layout):
    a = FakeCAI((64, 32), "<f4", strides=(1, 64), ptr=0x100)
    b = FakeCAI((48, 32), "<f4", ptr=0x200)
    d = FakeCAI((64, 48), "<f4", ptr=0x300)
    c = FakeCAI((64, 48), "<f4", ptr=0x400)
    getattr(dg, "bf16_gemm_" + layout)(a, b, d, c=c, alpha=0.5, beta=2.0)
    getattr(dg, "cublaslt_gemm_" + layout)(a, b, d, alpha=3.0, beta=0.25, workspace=False)
    (_, d1, o1), (_, d2, o2) = hooked.calls
    assert d1[0] == (0x100, T.FLOAT32, (64, 32), (1, 64))
    assert d1[3][0] == 0x400 and d2[3] is None
    assert (o1.alpha, o1.beta) == (0.5, 2.0)
    assert (o2.alpha, o2.beta, o2.workspace, o2.workspace_size) == (3.0, 0.25, None, 0)


def test_read_only_output_is_refused(hooked):
    a = FakeCAI((64, 32), "<f4")
    with pytest.raises(dg.InvalidArgument, match="d: the tensor is read-only"):
        dg.bf16_gemm_nt(a, a, FakeCAI((64, 64), "<f4", readonly=True))
    assert hooked.calls == []


def test_nvfp4_roles_and_options(hooked):
    m, k, l = 128, 256, 2
    a = FakeCAI((m, k // 2, l), "|i1", strides=(k // 2, 1, m * k // 2))
    b = FakeCAI((128, k // 2, l), "|u1", strides=(k // 2, 1, 128 * k // 2))
    sfa = FakeCAI((m, k // 16, l), "|u1")  # CAI cannot name float8: a torch tensor would say e4m3
    c = FakeCAI((m, 1, l), "<f2", strides=(1, 1, m))
    dg.nvfp4_gemv(a, sfa, b, sfa, c, options={"vector_bytes": 8, "prefetch": 1})
    (_, descs, opts), = hooked.calls
    assert descs[0][1] == T.FLOAT4_E2M1X2 and descs[2][1] == T.FLOAT4_E2M1X2
    assert descs[0][3] == (k // 2, 1, m * k // 2)
    assert (opts.vector_bytes, opts.prefetch, opts.threads_per_row) == (8, 1, 0)
    dg.nvfp4_gemv(a, sfa, b, sfa, c)
    assert hooked.calls[-1][2] is None
    with pytest.raises(dg.InvalidArgument, match="unknown field"):
        dg.nvfp4_gemv(a, sfa, b, sfa, c, options={"speed": 3})


def test_mixed_devices_are_refused(hooked):
    from fakes import FakeDLPack

    a = FakeDLPack((64, 32), 4, 16, device_id=0)
    b = FakeDLPack((64, 32), 4, 16, device_id=1)
    with pytest.raises(dg.InvalidArgument, match="cuda:"):
        dg.bf16_gemm_nt(a, b, FakeDLPack((64, 64), 4, 16, device_id=0))


def test_gemm_options_struct_matches_the_header_defaults():
    o = _lib.GemmOptions()
    # DG_GEMM_OPTIONS_INIT {sizeof, DG_FP8_RECIPE_1D2D, 1.0f, 1.0f, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, NULL, 0, 0, NULL}
    # size_t + 14 int32/float fields + void* + size_t + int32 (padded to 8) + pointer
    assert ctypes.sizeof(o) == 8 + 14 * 4 + 8 + 8 + 8 + 8
    assert (o.recipe, o.alpha, o.beta, o.disable_ue8m0_cast, o.multicast_a, o.num_sms) == (0, 1.0, 1.0, 0, -1, 0)
    assert (o.fp8_promotion, o.fp8_promotion_slices, o.split_k) == (0, 0, 0)
    assert (o.workspace, o.workspace_size, o.kernel) == (None, 0, 0)
    assert not o.epilogue
    assert o.struct_size == ctypes.sizeof(o)
    # Offsets of dg.h's versions: 0.1 ends at num_sms, 0.3's struct at split_k; 0.4 appends the
    # workspace, 0.5 the kernel family, and then the fused epilogue.
    assert _lib.GemmOptions.fp8_promotion.offset == 52
    assert _lib.GemmOptions.workspace.offset == 64
    assert _lib.GemmOptions.workspace_size.offset == 72
    assert _lib.GemmOptions.kernel.offset == 80
    assert _lib.GemmOptions.epilogue.offset == 88


def test_fp8_recipe_codes_and_tuning_options(hooked):
    m, n, k = 256, 256, 512
    a = FakeCAI((m, k), "|u1")
    sfa = sm90_sfa(m, k // 128, 0x10)
    d = FakeCAI((m, n), "<f4")
    # Per-token SFB (MN-major aligned): default recipe is read as 1D1D.
    sfb_tok = FakeCAI((n, k // 128), "<f4", strides=(1, n))
    dg.fp8_gemm_nt((a, sfa), (FakeCAI((n, k), "|u1"), sfb_tok), d, c=d, options={"block_m": 128, "cluster": 2})
    opts = hooked.calls[-1][2]
    assert opts.recipe == _lib.FP8_RECIPE_1D1D
    assert (opts.block_m, opts.cluster, opts.multicast_a, opts.block_n) == (128, 2, -1, 0)
    # Per-block SFB: 1D2D; an explicit recipe wins.
    sfb_blk = FakeCAI((n // 128, k // 128), "<f4")
    dg.fp8_gemm_nt((a, sfa), (FakeCAI((n, k), "|u1"), sfb_blk), d)
    assert hooked.calls[-1][2].recipe == _lib.FP8_RECIPE_1D2D
    with pytest.raises(dg.Unsupported, match="recipe"):
        dg.fp8_gemm_nt((a, sfa), (FakeCAI((n, k), "|u1"), sfb_blk), d, recipe=(1, 32, 32))
    with pytest.raises(dg.InvalidArgument, match="unknown field"):
        dg.fp8_gemm_nt((a, sfa), (FakeCAI((n, k), "|u1"), sfb_blk), d, options={"warp_speed": 9})


def test_bf16_tuning_options(hooked):
    a = FakeCAI((64, 32), "<f4")
    dg.bf16_gemm_nt(a, a, FakeCAI((64, 64), "<f4"), options={"num_stages": 4, "num_math_warpgroups": 2, "num_sms": 66})
    o = hooked.calls[-1][2]
    assert (o.num_stages, o.num_math_warpgroups, o.num_sms, o.recipe) == (4, 2, 66, 0)


def test_gemm_prepare_arguments(monkeypatch):
    seen = []
    lib = _lib.get()
    monkeypatch.setitem(lib.functions, "dg_gemm_prepare", lambda *a: seen.append(a) or 0)
    monkeypatch.setattr(dg._stream, "resolve", lambda stream, device: (None, 0, 0))
    dg.gemm_prepare("bfloat16", "tn", 128, 256, 512, "float32", with_c=True, options={"block_m": 64})
    dg.gemm_prepare("float8_e4m3fn", "nt", 1, 2, 3, "bfloat16", recipe=(1, 1, 128))
    (s1, ab1, lay1, m1, n1, k1, d1, c1, o1), (_, ab2, lay2, *_rest, o2) = seen
    assert (ab1, lay1, m1, n1, k1, d1, c1) == (T.BFLOAT16, 2, 128, 256, 512, T.FLOAT32, 1)
    assert o1._obj.block_m == 64
    assert (ab2, lay2, o2._obj.recipe) == (T.FLOAT8_E4M3, 0, _lib.FP8_RECIPE_1D1D)
    with pytest.raises(dg.InvalidArgument, match="layout"):
        dg.gemm_prepare("bfloat16", "xx", 1, 1, 1, "float32")
    with pytest.raises(dg.InvalidArgument, match="ab_dtype"):
        dg.gemm_prepare("int4", "nt", 1, 1, 1, "float32")


def test_repeated_calls_reuse_descriptors_and_option_structs(hooked):
    a = FakeCAI((64, 32), "<f4", ptr=0x100)
    b = FakeCAI((48, 32), "<f4", ptr=0x200)
    d = FakeCAI((64, 48), "<f4", ptr=0x300)
    dg.bf16_gemm_nt(a, b, d, alpha=0.5)
    dg.bf16_gemm_nt(a, b, d, alpha=0.5)
    dg.bf16_gemm_nt(FakeCAI((64, 32), "<f4", ptr=0x900), b, d, alpha=0.5)  # a new A pointer
    dg.bf16_gemm_nt(a, b, d, alpha=0.25)
    first, second, moved, rescaled = hooked.calls
    # Same tensors: the same descriptors and the same options, read back unchanged.
    assert second[1] == first[1] and second[2] is first[2]
    assert moved[1][0][0] == 0x900 and moved[1][1:] == first[1][1:]
    assert (rescaled[2].alpha, first[2].alpha) == (0.25, 0.5)
    cache = T.thread_handle_cache().handles
    hits = [cache[(0x100, T.FLOAT32, (64, 32), (32, 1))], cache[(0x900, T.FLOAT32, (64, 32), (32, 1))]]
    assert hits[0].value != hits[1].value


def test_descriptor_cache_is_bounded_and_per_thread(monkeypatch):
    import threading

    monkeypatch.setattr(T._HandleCache, "CAPACITY", 4)
    cache = T.thread_handle_cache()
    cache.clear()
    infos = [T.describe(FakeCAI((8, 8), "<f4", ptr=0x1000 * (i + 1)), "x") for i in range(6)]
    with T.Descriptors() as ds:
        handles = [ds.add(i) for i in infos]
    assert len(cache.handles) == 4  # the two oldest were destroyed
    assert [T.read_descriptor(h)[0] for h in handles[2:]] == [0x3000, 0x4000, 0x5000, 0x6000]
    seen = {}

    def other():
        with T.Descriptors() as ds:
            seen["handle"] = ds.add(infos[5])
        seen["size"] = len(T.thread_handle_cache().handles)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["size"] == 1 and seen["handle"].value != handles[5].value
    cache.clear()


def test_scale_layout_queries_are_answered_once_per_key(hooked, monkeypatch):
    m, n, k = 256, 256, 512
    a = FakeCAI((m, k), "|u1", ptr=0x1000)
    b = FakeCAI((n, k), "|u1", ptr=0x3000)
    sfa, sfb = sm90_sfa(m, k // 128, 0x2000), FakeCAI((n // 128, k // 128), "<f4", ptr=0x4000)
    d = FakeCAI((m, n), "<f2", ptr=0x5000)
    _arguments._SF_LAYOUTS.clear()
    lib = _lib.get()
    real = lib.functions["dg_transform_sf_layout"]
    queries = []
    monkeypatch.setitem(lib.functions, "dg_transform_sf_layout", lambda *args: queries.append(1) or real(*args))
    for ptr in (0x5000, 0x6000):
        dg.fp8_gemm_nt((a, sfa), (b, sfb), FakeCAI((m, n), "<f2", ptr=ptr))
    assert len(queries) == 2 and len(hooked.calls) == 2  # sfa and sfb once, not once per call
    dg.fp8_gemm_nt((a, sm90_sfa(m, k // 128, 0x7000)), (b, sfb), d)  # another pointer, same layout
    assert len(queries) == 2
