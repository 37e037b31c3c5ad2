"""Argument handling that every call family shares (private: no public function lives here):
describing tensors and resolving the stream of a call, integer checks, memoised ctypes
structures, scaling-factor recipes and layout queries, and the GEMMs' layout names, recipes and
options.

The public functions live in one module per family and are exported by ``dg/__init__.py``:
``_core`` (version, logging, config, devices), ``_layout`` (host utilities and scale layouts),
``_gemm`` (dense GEMMs), ``_grouped`` (M-grouped), ``_k_grouped`` (K-grouped), ``_mqa`` (MQA
logits), ``_gemv`` (NVFP4 GEMV), ``_cublaslt`` (the cuBLASLt baseline) and ``_stream``
(``dg.Stream``). Beneath them: ``_tensor`` (tensor descriptors from torch, DLPack and the CUDA
array interface), ``_fast`` (the warm path of repeated calls), ``_lib`` (finding and loading
libdg), ``_declarations`` (ctypes declarations generated from dg.h) and ``errors``. A new kernel
family adds a module beside them that builds on these helpers."""

from __future__ import annotations

from ctypes import byref, c_int32, c_int64, c_size_t, c_void_p
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from . import _integers, _lib, _stream
from . import _tensor as _tensor_mod
from ._lib import GemmOptions, SfRecipe
from ._tensor import (
    DTYPE_NAMES,
    DTYPE_SIZES,
    FLOAT32,
    INT32,
    ROLE_SF,
    UE8M0X4,
    Descriptors,
    TensorInfo,
    allocate_torch,
    describe,
    is_torch_tensor,
)
from .errors import InvalidArgument, Unsupported


Tensor = Any  # a torch.Tensor, or any object with __dlpack__ / __cuda_array_interface__
StreamLike = Any  # None, int, ctypes.c_void_p, torch.cuda.Stream, dg.Stream, ...
Recipe = Optional[Tuple[int, ...]]


# Integer arguments: range-checked and integral (see _integers).
_int32 = _integers.int32
_int64 = _integers.int64
_size = _integers.size
_int64s = _integers.int64s


# Structures that libdg only reads (const pointers) are built once per distinct value: building a
# ctypes Structure costs microseconds, which the GEMM wrappers would otherwise pay on every call.
_CACHE_CAPACITY = 1024


def _memo(cache: Dict[Any, Any], key: Any, build: Callable[[], Any]) -> Any:
    try:
        hit = cache.get(key)
    except TypeError:  # an unhashable argument: build it every time
        return build()
    if hit is None:
        hit = build()
        if len(cache) >= _CACHE_CAPACITY:
            cache.clear()
        cache[key] = hit
    return hit


def _peek_device(obj: Any) -> Optional[int]:
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is not None:
        try:
            return int(dev()[1])
        except Exception:
            return None
    return None


def _prepare(args: Sequence[Tuple[Any, str, Optional[str]]], stream: StreamLike) -> Tuple[c_void_p, List[Optional[TensorInfo]]]:
    """``(dg_stream*, infos)`` of one call (see :func:`_prepare_call`)."""
    handle, _dev, _cu, infos = _prepare_call(args, stream)
    return handle, infos


# Tensor arguments that may be None (every call names its optional tensors so).
_OPTIONAL_TENSORS = frozenset({"c", "out", "ks_tensor"})


def _prepare_call(
    args: Sequence[Tuple[Any, str, Optional[str]]], stream: StreamLike
) -> Tuple[c_void_p, int, int, List[Optional[TensorInfo]]]:
    """Describes the tensors of one call and resolves its stream.

    ``args`` are ``(object, name, role)``; ``None`` objects stay ``None`` where the name is one of
    :data:`_OPTIONAL_TENSORS`, and are refused otherwise, before the stream is resolved. DLPack objects are
    read after the stream is known, so ``__dlpack__(stream=...)`` can order the producer's work
    before ours."""
    infos: List[Optional[TensorInfo]] = [None] * len(args)
    pending: List[int] = []
    for i, (obj, name, role) in enumerate(args):
        if obj is None:
            if name not in _OPTIONAL_TENSORS:  # before the stream: a missing tensor is not NoDevice
                raise InvalidArgument("%s: expected a tensor, got None" % name)
            continue
        if isinstance(obj, TensorInfo) or is_torch_tensor(obj) or not hasattr(obj, "__dlpack__"):
            infos[i] = describe(obj, name, role)
        else:
            pending.append(i)
    device = _stream.call_device(infos)
    for i in pending:
        d = _peek_device(args[i][0])
        if d is not None and device is not None and d != device:
            raise InvalidArgument("%s: on cuda:%d, other tensors on cuda:%d" % (args[i][1], d, device))
        if device is None:
            device = d
    handle, dev, cu = _stream.resolve(stream, device)
    for i in pending:
        obj, name, role = args[i]
        infos[i] = describe(obj, name, role, cu_stream=cu)
    _stream.call_device(infos)
    return handle, dev, cu, infos


def _ks_array(ks: Sequence[int]) -> Tuple[Any, int]:
    """The K-grouped calls' host ``ks`` as an ``int64_t`` array and its length."""
    values = _int64s(ks, "ks")
    return (c_int64 * max(len(values), 1))(*values), len(values)


def _writable(info: Optional[TensorInfo], name: str) -> None:
    if info is not None and info.readonly:
        raise InvalidArgument("%s: the tensor is read-only (DLPack/CUDA array interface flag); libdg writes to it" % name)


def _pair(x: Any, name: str) -> Tuple[Any, Any]:
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise InvalidArgument("%s: expected a (data, scaling_factors) pair, got %s" % (name, type(x).__name__))
    return x[0], x[1]


def _nbytes(info: TensorInfo) -> int:
    n = 1
    for s in info.shape:
        n *= s
    return n * DTYPE_SIZES.get(info.dtype, 1)


class SfLayout(NamedTuple):
    """What a scaling-factor transform produces (``dg_transform_sf_layout`` and the ``*_layout``
    queries): ``is_input`` is True when the input already has the layout (no copy needed)."""

    is_input: bool
    dtype: int
    sizes: Tuple[int, ...]
    strides: Tuple[int, ...]
    nbytes: int


_SF_RECIPES: Dict[Any, SfRecipe] = {}


def _sf_recipe(gran_mn: int, gran_k: int, num_groups: int, disable_ue8m0_cast: bool, arch_major: int = 0) -> SfRecipe:
    """A ``dg_sf_recipe`` (shared between calls: do not modify it)."""
    return _memo(
        _SF_RECIPES,
        (gran_mn, gran_k, num_groups, bool(disable_ue8m0_cast), arch_major),
        lambda: SfRecipe(
            gran_mn=_int32(gran_mn, "gran_mn"),
            gran_k=_int32(gran_k, "gran_k"),
            num_groups=_int32(num_groups, "num_groups"),
            arch_major=_int32(arch_major, "arch_major"),
            disable_ue8m0_cast=1 if disable_ue8m0_cast else 0,
        ),
    )


# dg_transform_sf_layout answers from the scales' dtype, sizes and strides, mn, k, the recipe and
# the device's architecture only: the GEMM calls ask once per distinct key instead of every call.
_SF_LAYOUTS: Dict[Tuple[Any, ...], SfLayout] = {}


def _query_sf(
    handle: Optional[c_void_p], sf_info: TensorInfo, mn: int, k: int, recipe: SfRecipe, dev: Optional[int] = None
) -> SfLayout:
    lib = _lib.get()
    mn, k = _int64(mn, "mn"), _int64(k, "k")

    def ask() -> SfLayout:
        is_input = c_int32()
        dtype = c_int32()
        sizes = (c_int64 * 4)()
        strides = (c_int64 * 4)()
        nbytes = c_size_t()
        with Descriptors() as ds:
            status = lib.fn("dg_transform_sf_layout")(
                handle, ds.add(sf_info), mn, k, byref(recipe), byref(is_input), byref(dtype), sizes, strides, byref(nbytes)
            )
            lib.check(status, "dg_transform_sf_layout")
        r = sf_info.rank
        return SfLayout(bool(is_input.value), dtype.value, tuple(sizes[:r]), tuple(strides[:r]), nbytes.value)

    # The answer depends on the device's architecture: cached only where that is known.
    if recipe.arch_major == 0 and (handle is None or dev is None):
        return ask()
    key = (
        lib, dev if recipe.arch_major == 0 else None, sf_info.dtype, sf_info.shape, sf_info.strides, mn, k,
        recipe.gran_mn, recipe.gran_k, recipe.num_groups, recipe.arch_major, recipe.disable_ue8m0_cast,
    )
    return _memo(_SF_LAYOUTS, key, ask)


def _transform_info(
    handle: c_void_p,
    sf_info: TensorInfo,
    mn: int,
    k: int,
    rec: SfRecipe,
    out: Optional[Tensor],
    name: str,
    dev: int = 0,
    cu: int = 0,
) -> Tuple[TensorInfo, Any]:
    """Runs the transform if needed; returns (info of the scales to use, python object of them)."""
    layout = _query_sf(handle, sf_info, mn, k, rec, dev)
    if layout.is_input and out is None:
        return sf_info, sf_info.source
    if out is None:
        if not sf_info.is_torch:
            raise InvalidArgument(
                "%s: needs a layout transform into a new buffer (%s %s, strides %s, %d bytes), and it is not a "
                "torch tensor: pass it already transformed, or pass out= (dg.get_transform_sf_layout gives the layout)"
                % (name, DTYPE_NAMES.get(layout.dtype, layout.dtype), list(layout.sizes), list(layout.strides), layout.nbytes)
            )
        result = allocate_torch(sf_info, layout.dtype, layout.sizes, layout.strides, layout.nbytes, cu)
    else:
        result = out
    out_info = describe(result, "out", ROLE_SF)
    _writable(out_info, "out")
    lib = _lib.get()
    with Descriptors() as ds:
        status = lib.fn("dg_transform_sf_into_required_layout")(
            handle, ds.add(sf_info), _int64(mn, "mn"), _int64(k, "k"), byref(rec), None if layout.is_input else ds.add(out_info)
        )
        lib.check(status, "dg_transform_sf_into_required_layout")
    if layout.is_input:
        return sf_info, sf_info.source
    return out_info, result


_LAYOUTS = ("nt", "nn", "tn", "tt")
_SHAPES = {
    "nt": ("[M, K]", "[N, K]", "A @ B.T"),
    "nn": ("[M, K]", "[K, N]", "A @ B"),
    "tn": ("[K, M]", "[K, N]", "A.T @ B"),
    "tt": ("[K, M]", "[N, K]", "A.T @ B.T"),
}


def _nt_dims(a: TensorInfo, b: TensorInfo, layout: str) -> Tuple[int, int, int, bool, bool]:
    """M, N, K of the NT problem and whether A / B are given transposed relative to it."""
    ta = layout[0] == "t"  # a given as [K, M]
    tb = layout[1] == "n"  # b given as [K, N]
    a_nt = a.transposed() if ta else a
    b_nt = b.transposed() if tb else b
    if a_nt.rank < 2 or b_nt.rank < 2:
        raise InvalidArgument("a, b: expected 2-D operands, got ranks %d and %d" % (a.rank, b.rank))
    m, k = a_nt.shape[-2], a_nt.shape[-1]
    n = b_nt.shape[-2]
    return m, n, k, ta, tb


_GEMM_OPTIONS: Dict[Any, GemmOptions] = {}


def _gemm_options(
    alpha: float,
    beta: float,
    recipe_code: int = 0,
    disable_ue8m0_cast: bool = False,
    options: Optional[Dict[str, int]] = None,
    workspace: Optional[int] = None,
    workspace_size: int = 0,
) -> GemmOptions:
    """``dg_gemm_options`` with the formula's scalars, optional kernel-config overrides and the FP8
    workspace (shared between calls with the same values: do not modify it)."""

    def build() -> GemmOptions:
        fields: Dict[str, Any] = {}
        if options:
            unknown = set(options) - set(GemmOptions.TUNING)
            if unknown:
                raise InvalidArgument("options: unknown field(s) %s; known: %s" % (sorted(unknown), list(GemmOptions.TUNING)))
            fields = {k: _int32(v, k) for k, v in options.items()}
        return GemmOptions(
            alpha=float(alpha),
            beta=float(beta),
            recipe=int(recipe_code),
            disable_ue8m0_cast=1 if disable_ue8m0_cast else 0,
            workspace=workspace,
            workspace_size=_size(workspace_size, "workspace_size"),
            **fields,
        )

    extra = tuple(sorted(options.items())) if options else ()
    return _memo(
        _GEMM_OPTIONS, (alpha, beta, recipe_code, bool(disable_ue8m0_cast), extra, workspace, workspace_size), build
    )


def _recipe_tuple(recipe: Recipe) -> Optional[Tuple[int, int, int]]:
    if recipe is None:
        return None
    r = _int64s(recipe, "recipe")
    if len(r) != 3:
        raise InvalidArgument("recipe: expected (gran_m, gran_n, gran_k), got %r" % (recipe,))
    return r  # type: ignore[return-value]


_RECIPE_CODES = {(1, 128, 128): _lib.FP8_RECIPE_1D2D, (1, 1, 128): _lib.FP8_RECIPE_1D1D}


def _recipe_code(recipe: Tuple[int, int, int]) -> int:
    """``DG_FP8_RECIPE_*`` of a DeepGEMM recipe tuple."""
    if recipe not in _RECIPE_CODES:
        raise Unsupported("recipe %r: libdg's SM90 FP8 GEMMs take %s" % (recipe, " or ".join(str(r) for r in _RECIPE_CODES)))
    return _RECIPE_CODES[recipe]


def _default_recipe(sfb: TensorInfo, n: int, tb: bool) -> Tuple[int, int, int]:
    """DeepGEMM's default recipe, read from SFB: packed int32 or per-row scales -> (1, 1, 128),
    else per-block (1, 128, 128)."""
    if sfb.dtype in (INT32, UE8M0X4):
        return (1, 1, 128)
    sfb_nt = sfb.transposed() if tb else sfb
    rows = sfb_nt.shape[-2] if sfb_nt.rank >= 2 else sfb_nt.shape[0]
    if rows == n and n != -(-n // 128):
        return (1, 1, 128)
    return (1, 128, 128)


def _copied_k_major(view: TensorInfo) -> bool:
    """Whether libdg reads an FP8 operand's ``[MN, K]`` view through a K-major copy: the view is not
    K-major as TMA reads it (stride 1 along K, rows a multiple of 16 bytes apart)."""
    rows, cols = view.shape[-2], view.shape[-1]
    row_stride, col_stride = view.strides[-2], view.strides[-1]
    k_major = col_stride == 1 or cols == 1
    return not (k_major and (rows == 1 or (row_stride % 16 == 0 and row_stride >= cols)))


_DTYPE_ALIASES = {
    "bfloat16": _tensor_mod.BFLOAT16,
    "bf16": _tensor_mod.BFLOAT16,
    "float8_e4m3fn": _tensor_mod.FLOAT8_E4M3,
    "float8_e4m3": _tensor_mod.FLOAT8_E4M3,
    "fp8": _tensor_mod.FLOAT8_E4M3,
    "float32": FLOAT32,
    "fp32": FLOAT32,
}


def _dtype_arg(x: Any, name: str) -> int:
    key = str(x).replace("torch.", "").lower()
    if key not in _DTYPE_ALIASES:
        raise InvalidArgument("%s: expected bfloat16, float8_e4m3fn or float32 (a torch dtype or a name), got %r" % (name, x))
    return _DTYPE_ALIASES[key]


def _dense_fp8_scales(
    handle: c_void_p,
    sfa: TensorInfo,
    sfb: TensorInfo,
    m: int,
    n: int,
    k: int,
    ta: bool,
    tb: bool,
    recipe: Tuple[int, int, int],
    disable_ue8m0_cast: bool,
    dev: int,
    cu: int,
) -> Tuple[TensorInfo, TensorInfo, List[Any]]:
    """The scales a dense FP8 call hands libdg, as the caller's views: each is transformed as its
    NT view (``[M, ..]`` / ``[N, ..]``) and given back transposed again where the data is (``ta``,
    ``tb``). The list holds the new tensors, which must outlive the call."""
    sfa_nt = sfa.transposed() if ta else sfa
    sfb_nt = sfb.transposed() if tb else sfb
    new_a, obj_a = _transform_info(handle, sfa_nt, m, k, _sf_recipe(recipe[0], recipe[2], 0, disable_ue8m0_cast), None, "sfa", dev, cu)
    new_b, obj_b = _transform_info(handle, sfb_nt, n, k, _sf_recipe(recipe[1], recipe[2], 0, disable_ue8m0_cast), None, "sfb", dev, cu)
    return (new_a.transposed() if ta else new_a), (new_b.transposed() if tb else new_b), [obj_a, obj_b]
