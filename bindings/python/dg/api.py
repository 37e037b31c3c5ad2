"""The public functions of ``dg``, with DeepGEMM's names and argument conventions."""

from __future__ import annotations

import ctypes
import sys
import threading
from ctypes import byref, c_double, c_int32, c_int64, c_size_t, c_void_p
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _lib, _stream
from . import _tensor as _tensor_mod
from ._lib import CublasltOptions, GemmOptions, LogCallback, NvFp4GemvOptions, SfRecipe
from ._tensor import (
    DTYPE_NAMES,
    FLOAT32,
    INT32,
    ROLE_FP4,
    ROLE_SF,
    UE8M0X4,
    UINT8,
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

# ---------------------------------------------------------------------------------------------
# Version and logging
# ---------------------------------------------------------------------------------------------


def version() -> str:
    """The loaded libdg's version, ``"MAJOR.MINOR.PATCH"`` (``dg_version()``)."""
    return _lib.get().version()


def version_number() -> int:
    """The loaded libdg's version as ``MAJOR * 10000 + MINOR * 100 + PATCH``."""
    return int(_lib.get().fn("dg_version_number")())


def library_path() -> str:
    """The path (or soname) from which libdg was loaded."""
    return _lib.get().path


def status_string(status: int) -> str:
    """The static C name of a ``dg_status`` (``dg_status_string``)."""
    return _lib.get().fn("dg_status_string")(int(status)).decode()


LOG_LEVELS: Dict[str, int] = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "warning": 3, "error": 4, "off": 5}


def _log_level(level: Union[int, str]) -> int:
    if isinstance(level, str):
        key = level.strip().lower()
        if key not in LOG_LEVELS:
            raise InvalidArgument("log level %r: expected one of %s" % (level, ", ".join(sorted(set(LOG_LEVELS)))))
        return LOG_LEVELS[key]
    return int(level)


def set_log_level(level: Union[int, str]) -> None:
    """Sets the process-wide log level: a ``DG_LOG_*`` int (0 trace .. 5 off) or a name
    (``"trace"``, ``"debug"``, ``"info"``, ``"warn"``, ``"error"``, ``"off"``)."""
    _lib.get().call("dg_set_log_level", _log_level(level))


def get_log_level() -> int:
    """The process-wide log level (``DG_LOG_*`` int)."""
    return int(_lib.get().fn("dg_get_log_level")())


_log_callback_ref: Optional[Any] = None


def set_log_callback(callback: Optional[Callable[[int, str], None]]) -> None:
    """Routes libdg's log messages to ``callback(level, message)`` (called from any thread);
    ``None`` restores the default (stderr, prefixed ``[libdg]``). Exceptions raised by the
    callback are printed and swallowed (they cannot cross the C ABI)."""
    global _log_callback_ref
    lib = _lib.get()
    if callback is None:
        lib.call("dg_set_log_callback", ctypes.cast(None, LogCallback), None)
        _log_callback_ref = None
        return

    def trampoline(level: int, message: bytes, _user: Any) -> None:
        try:
            callback(int(level), message.decode("utf-8", errors="replace") if message else "")
        except Exception:  # never let an exception unwind into C
            import traceback

            traceback.print_exc()

    ref = LogCallback(trampoline)
    lib.call("dg_set_log_callback", ref, None)
    _log_callback_ref = ref  # keep alive while installed


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


def set_num_sms(n: int) -> None:
    """Caps the SMs kernels may use (process-wide); 0 resets to every SM of the device."""
    _lib.get().call("dg_set_num_sms", _int32(n, "num_sms"))


def get_num_sms() -> int:
    """The SM cap set with :func:`set_num_sms`, else the SM count of device 0 (0 with no device)."""
    return int(_lib.get().fn("dg_get_num_sms")())


def set_tc_util(ratio: float) -> None:
    """Sets the tensor-core utilisation target as a ratio in (0, 1]; 0 resets to 1. Only SM100
    BF16 kernels honour values below 1."""
    _lib.get().call("dg_set_tc_util", c_double(float(ratio)))


def get_tc_util() -> float:
    """The tensor-core utilisation target, a ratio in (0, 1]."""
    return float(_lib.get().fn("dg_get_tc_util")())


def _int32(v: Any, name: str) -> int:
    try:
        iv = int(v)
    except (TypeError, ValueError):
        raise InvalidArgument("%s: expected an int, got %r" % (name, v)) from None
    if iv != v and not isinstance(v, bool):
        raise InvalidArgument("%s: expected an int, got %r" % (name, v))
    if not -(2**31) <= iv < 2**31:
        raise InvalidArgument("%s = %d is outside the int32 range" % (name, iv))
    return iv


class Config:
    """A set of libdg settings (``dg_config``), initialised from the environment (``DG_*``).

    Use it with ``dg.Stream(device, cu_stream, config=cfg)`` to run kernels with settings other
    than the process-wide ones. Integer settings are checked against :meth:`bounds`.

    >>> cfg = dg.Config(num_sms=66, pdl=True)
    >>> cfg.num_sms
    66
    """

    NUM_SMS = 1
    TC_UTIL = 2
    PDL = 3
    CACHE_DIR = 4
    COMPILER = 5
    PRINT_CONFIGS = 6
    LOG_LEVEL = 7
    COMPILER_NVRTC = 0
    COMPILER_NVCC = 1

    _INT_KEYS = {"num_sms": 1, "tc_util": 2, "pdl": 3, "compiler": 5, "print_configs": 6, "log_level": 7}
    _STR_KEYS = {"cache_dir": 4}

    def __init__(self, **settings: Any) -> None:
        self._lib = _lib.get()
        self._handle = c_void_p()
        self._lib.call("dg_config_create", byref(self._handle))
        for k, v in settings.items():
            setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Config._INT_KEYS:
            if name == "compiler" and isinstance(value, str):
                value = {"nvrtc": 0, "nvcc": 1}.get(value.lower(), value)
            if name == "log_level":
                value = _log_level(value)
            self.set_int(Config._INT_KEYS[name], value)
        elif name in Config._STR_KEYS:
            self.set_string(Config._STR_KEYS[name], value)
        elif name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError("dg.Config has no setting %r" % name)

    def __getattr__(self, name: str) -> Any:
        if name in Config._INT_KEYS:
            v = self.get_int(Config._INT_KEYS[name])
            return bool(v) if name in ("pdl", "print_configs") else v
        if name in Config._STR_KEYS:
            return self.get_string(Config._STR_KEYS[name])
        raise AttributeError("dg.Config has no setting %r" % name)

    def set_int(self, key: int, value: Any) -> None:
        """``dg_config_set_int``: sets an integer setting by ``DG_CONFIG_*`` key."""
        try:
            iv = int(value)
        except (TypeError, ValueError):
            raise InvalidArgument("config key %d: expected an int, got %r" % (key, value)) from None
        if not -(2**63) <= iv < 2**63:
            raise InvalidArgument("config key %d: %d is outside the int64 range" % (key, iv))
        self._lib.call("dg_config_set_int", self._handle, int(key), iv)

    def get_int(self, key: int) -> int:
        """``dg_config_get_int``."""
        v = c_int64()
        self._lib.call("dg_config_get_int", self._handle, int(key), byref(v))
        return v.value

    def set_string(self, key: int, value: str) -> None:
        """``dg_config_set_string``."""
        self._lib.call("dg_config_set_string", self._handle, int(key), str(value).encode())

    def get_string(self, key: int) -> str:
        """``dg_config_get_string``."""
        need = c_size_t()
        self._lib.call("dg_config_get_string", self._handle, int(key), None, 0, byref(need))
        buf = ctypes.create_string_buffer(max(need.value, 1))
        self._lib.call("dg_config_get_string", self._handle, int(key), buf, len(buf), byref(need))
        return buf.value.decode()

    @staticmethod
    def bounds(key: Union[int, str]) -> Tuple[int, int]:
        """Inclusive ``(min, max)`` of an integer setting (a ``DG_CONFIG_*`` key or its name)."""
        if isinstance(key, str):
            if key not in Config._INT_KEYS:
                raise InvalidArgument("no integer setting %r" % key)
            key = Config._INT_KEYS[key]
        lo, hi = c_int64(), c_int64()
        _lib.get().call("dg_config_get_bounds", int(key), byref(lo), byref(hi))
        return lo.value, hi.value

    def clone(self) -> "Config":
        """An independent copy of these settings."""
        new = Config.__new__(Config)
        object.__setattr__(new, "_lib", self._lib)
        object.__setattr__(new, "_handle", c_void_p())
        self._lib.call("dg_config_clone", self._handle, byref(new._handle))
        return new

    def __del__(self) -> None:
        h = self.__dict__.get("_handle")
        if h:
            try:
                self._lib.fn("dg_config_destroy")(h)
            except Exception:
                pass
            object.__setattr__(self, "_handle", c_void_p())

    def __repr__(self) -> str:
        try:
            return "dg.Config(%s)" % ", ".join(
                "%s=%r" % (k, getattr(self, k)) for k in list(Config._INT_KEYS) + list(Config._STR_KEYS)
            )
        except Exception as exc:  # pragma: no cover
            return "dg.Config(<%s>)" % exc


# ---------------------------------------------------------------------------------------------
# Devices
# ---------------------------------------------------------------------------------------------


def device_count() -> int:
    """Number of CUDA devices; raises :class:`dg.NoDevice` when the driver cannot be loaded."""
    n = c_int32()
    _lib.get().call("dg_device_count", byref(n))
    return n.value


def get_device_capability(device: int = 0) -> Tuple[int, int]:
    """Compute capability ``(major, minor)`` of a device, e.g. ``(9, 0)`` for an H100."""
    major, minor = c_int32(), c_int32()
    _lib.get().call("dg_device_get_capability", _int32(device, "device"), byref(major), byref(minor))
    return major.value, minor.value


def jit_stats() -> Dict[str, int]:
    """Kernels compiled, loaded from the disk cache, and memory-cache hits so far."""
    c, d, m = c_int64(), c_int64(), c_int64()
    _lib.get().call("dg_jit_get_stats", byref(c), byref(d), byref(m))
    return {"compiled": c.value, "loaded_from_disk": d.value, "memory_hits": m.value}


# ---------------------------------------------------------------------------------------------
# Host utilities
# ---------------------------------------------------------------------------------------------


def get_tma_aligned_size(x: int, element_size: int) -> int:
    """``align(x, 16 / element_size)``: the size TMA needs for a dimension of ``x`` elements of
    ``element_size`` bytes (which must divide 16)."""
    out = c_int64()
    if int(element_size) < 0:
        raise InvalidArgument("element_size = %d must be positive" % int(element_size))
    _lib.get().call("dg_get_tma_aligned_size", int(x), int(element_size), byref(out))
    return out.value


def get_mk_alignment_for_contiguous_layout() -> int:
    """Row alignment of each group in M-grouped contiguous layouts (128 on SM90)."""
    return int(_lib.get().fn("dg_get_mk_alignment_for_contiguous_layout")())


# ---------------------------------------------------------------------------------------------
# Call plumbing
# ---------------------------------------------------------------------------------------------


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


def _prepare_call(
    args: Sequence[Tuple[Any, str, Optional[str]]], stream: StreamLike
) -> Tuple[c_void_p, int, int, List[Optional[TensorInfo]]]:
    """Describes the tensors of one call and resolves its stream.

    ``args`` are ``(object, name, role)``; ``None`` objects stay ``None``. DLPack objects are
    read after the stream is known, so ``__dlpack__(stream=...)`` can order the producer's work
    before ours."""
    infos: List[Optional[TensorInfo]] = [None] * len(args)
    pending: List[int] = []
    for i, (obj, name, role) in enumerate(args):
        if obj is None:
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


def _writable(info: Optional[TensorInfo], name: str) -> None:
    if info is not None and info.readonly:
        raise InvalidArgument("%s: the tensor is read-only (DLPack/CUDA array interface flag); libdg writes to it" % name)


def _pair(x: Any, name: str) -> Tuple[Any, Any]:
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise InvalidArgument("%s: expected a (data, scaling_factors) pair, got %s" % (name, type(x).__name__))
    return x[0], x[1]


# ---------------------------------------------------------------------------------------------
# Scaling-factor layouts
# ---------------------------------------------------------------------------------------------


class SfLayout(NamedTuple):
    """What a scaling-factor transform produces (``dg_transform_sf_layout`` and the ``*_layout``
    queries): ``is_input`` is True when the input already has the layout (no copy needed)."""

    is_input: bool
    dtype: int
    sizes: Tuple[int, ...]
    strides: Tuple[int, ...]
    nbytes: int


def _layout_query(fn_name: str, sizes: Sequence[int]) -> Tuple[Tuple[int, ...], Tuple[int, ...], int]:
    rank = len(sizes)
    if not 1 <= rank <= 4:
        raise InvalidArgument("sf: rank %d, expected 2 or 3" % rank)
    in_sizes = (c_int64 * 4)(*sizes)
    out_sizes = (c_int64 * 4)()
    out_strides = (c_int64 * 4)()
    nbytes = c_size_t()
    _lib.get().call(fn_name, rank, in_sizes, out_sizes, out_strides, byref(nbytes))
    return tuple(out_sizes[:rank]), tuple(out_strides[:rank]), nbytes.value


def get_mn_major_tma_aligned_tensor_layout(sizes: Sequence[int]) -> SfLayout:
    """Sizes, strides (elements) and bytes of :func:`get_mn_major_tma_aligned_tensor`'s output for
    an FP32 input of shape ``sizes`` (``[MN, SF_K]`` or ``[G, MN, SF_K]``)."""
    s, st, n = _layout_query("dg_get_mn_major_tma_aligned_tensor_layout", sizes)
    return SfLayout(False, FLOAT32, s, st, n)


def get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(sizes: Sequence[int]) -> SfLayout:
    """Sizes, strides (elements) and bytes of the packed-UE8M0 output for an FP32 input of shape
    ``sizes``."""
    s, st, n = _layout_query("dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout", sizes)
    return SfLayout(False, UE8M0X4, s, st, n)


def _same_layout(info: TensorInfo, sizes: Sequence[int], strides: Sequence[int]) -> bool:
    if tuple(info.shape) != tuple(sizes):
        return False
    return all(sz <= 1 or a == b for sz, a, b in zip(sizes, info.strides, strides))


def _layout_transform(fn_name: str, layout_fn: Callable, sf: Tensor, out: Optional[Tensor], stream: StreamLike) -> Tensor:
    handle, dev, cu, infos = _prepare_call([(sf, "sf", None), (out, "out", ROLE_SF)], stream)
    sf_info, out_info = infos
    assert sf_info is not None
    layout = layout_fn(sf_info.shape)
    result = out
    if out_info is None:
        if layout.dtype == FLOAT32 and sf_info.dtype == FLOAT32 and _same_layout(sf_info, layout.sizes, layout.strides):
            return sf  # already MN-major and TMA-aligned: DeepGEMM returns it as is
        result = allocate_torch(sf_info, layout.dtype, layout.sizes, layout.strides, layout.nbytes, cu)
        out_info = describe(result, "out", ROLE_SF)
    _writable(out_info, "out")
    lib = _lib.get()
    with Descriptors() as ds:
        status = lib.fn(fn_name)(handle, ds.add(sf_info), ds.add(out_info))
        lib.check(status, fn_name)
    return result


def get_mn_major_tma_aligned_tensor(sf: Tensor, out: Optional[Tensor] = None, stream: StreamLike = None) -> Tensor:
    """Returns FP32 scales ``sf`` (``[MN, SF_K]`` or ``[G, MN, SF_K]``, any strides) in the
    MN-major, TMA-aligned layout the SM90 kernels read: same shape, strides
    ``(.., 1, align(MN, 4))``. An input already in that layout is returned as is. The output is
    allocated with torch for torch inputs; other callers pass ``out`` (see
    :func:`get_mn_major_tma_aligned_tensor_layout`)."""
    return _layout_transform("dg_get_mn_major_tma_aligned_tensor", get_mn_major_tma_aligned_tensor_layout, sf, out, stream)


def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Tensor, out: Optional[Tensor] = None, stream: StreamLike = None) -> Tensor:
    """Packs FP32 power-of-two scales ``sf`` (``[.., MN, SF_K]``) into UE8M0, four per int32,
    MN-major and TMA-aligned: int32 ``[.., MN, ceil(SF_K / 4)]`` with strides
    ``(.., 1, align(MN, 4))`` (the SM100 scale format). Allocated with torch for torch inputs;
    others pass ``out``."""
    return _layout_transform(
        "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor", get_mn_major_tma_aligned_packed_ue8m0_tensor_layout, sf, out, stream
    )


def _gran(recipe: Sequence[int], is_sfa: bool) -> Tuple[int, int]:
    r = tuple(int(x) for x in recipe)
    if len(r) == 3:
        return (r[0] if is_sfa else r[1]), r[2]
    if len(r) == 2:
        return r[0], r[1]
    raise InvalidArgument("recipe: expected (gran_m, gran_n, gran_k) or (gran_mn, gran_k), got %r" % (recipe,))


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

    def ask() -> SfLayout:
        is_input = c_int32()
        dtype = c_int32()
        sizes = (c_int64 * 4)()
        strides = (c_int64 * 4)()
        nbytes = c_size_t()
        with Descriptors() as ds:
            status = lib.fn("dg_transform_sf_layout")(
                handle, ds.add(sf_info), int(mn), int(k), byref(recipe), byref(is_input), byref(dtype), sizes, strides, byref(nbytes)
            )
            lib.check(status, "dg_transform_sf_layout")
        r = sf_info.rank
        return SfLayout(bool(is_input.value), dtype.value, tuple(sizes[:r]), tuple(strides[:r]), nbytes.value)

    # The answer depends on the device's architecture: cached only where that is known.
    if recipe.arch_major == 0 and (handle is None or dev is None):
        return ask()
    key = (
        lib, dev if recipe.arch_major == 0 else None, sf_info.dtype, sf_info.shape, sf_info.strides, int(mn), int(k),
        recipe.gran_mn, recipe.gran_k, recipe.num_groups, recipe.arch_major, recipe.disable_ue8m0_cast,
    )
    return _memo(_SF_LAYOUTS, key, ask)


def _num_groups(info: TensorInfo, num_groups: Optional[int]) -> int:
    if num_groups is None:
        return info.shape[0] if info.rank == 3 else 0
    return int(num_groups)


def get_transform_sf_layout(
    sf: Tensor,
    mn: int,
    k: int,
    recipe: Sequence[int],
    num_groups: Optional[int] = None,
    is_sfa: bool = False,
    disable_ue8m0_cast: bool = False,
    arch_major: int = 0,
    stream: StreamLike = None,
) -> SfLayout:
    """What :func:`transform_sf_into_required_layout` would produce (``dg_transform_sf_layout``):
    whether ``sf`` can be used as is, else the dtype, sizes, strides and bytes of the output.
    ``arch_major`` 9 or 10 answers for that architecture without touching a device; 0 asks the
    device of the tensors / stream."""
    gran_mn, gran_k = _gran(recipe, is_sfa)
    if arch_major:
        info = describe(sf, "sf")
        handle = None
        dev = None
    else:
        handle, dev, _cu, (info,) = _prepare_call([(sf, "sf", ROLE_SF)], stream)
    assert info is not None
    rec = _sf_recipe(gran_mn, gran_k, _num_groups(info, num_groups), disable_ue8m0_cast, arch_major)
    return _query_sf(handle, info, mn, k, rec, dev)


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
            handle, ds.add(sf_info), int(mn), int(k), byref(rec), None if layout.is_input else ds.add(out_info)
        )
        lib.check(status, "dg_transform_sf_into_required_layout")
    if layout.is_input:
        return sf_info, sf_info.source
    return out_info, result


def transform_sf_into_required_layout(
    sf: Tensor,
    mn: int,
    k: int,
    recipe: Sequence[int],
    num_groups: Optional[int] = None,
    is_sfa: bool = False,
    disable_ue8m0_cast: bool = False,
    out: Optional[Tensor] = None,
    stream: StreamLike = None,
) -> Tensor:
    """Transforms scaling factors ``sf`` of an ``[MN, K]`` operand into the layout the GEMMs need,
    as DeepGEMM does: SM90 FP32 per-token scales become MN-major TMA-aligned; SM90 per-block
    scales are checked and returned as is; SM100 scales are packed to UE8M0 (unless
    ``disable_ue8m0_cast``).

    Args:
        sf: FP32 ``[ceil(MN / gran_mn), ceil(K / gran_k)]`` (or ``[G, ..]``), or packed int32.
        mn, k: the operand's MN and K.
        recipe: ``(gran_m, gran_n, gran_k)`` (pick A's or B's granularity with ``is_sfa``) or
            ``(gran_mn, gran_k)``.
        num_groups: G for a 3-D input (default: its first dimension).
        out: a caller-allocated output (required for non-torch inputs that need a copy).
    Returns:
        ``sf`` itself when no copy is needed, else the new tensor (``out`` when given).
    """
    gran_mn, gran_k = _gran(recipe, is_sfa)
    handle, dev, cu, infos = _prepare_call([(sf, "sf", ROLE_SF)], stream)
    info = infos[0]
    assert info is not None
    rec = _sf_recipe(gran_mn, gran_k, _num_groups(info, num_groups), disable_ue8m0_cast)
    _, result = _transform_info(handle, info, mn, k, rec, out, "sf", dev, cu)
    return sf if result is info.source else result


# ---------------------------------------------------------------------------------------------
# GEMMs
# ---------------------------------------------------------------------------------------------

_LAYOUTS = ("nt", "nn", "tn", "tt")


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
            workspace_size=int(workspace_size),
            **fields,
        )

    extra = tuple(sorted(options.items())) if options else ()
    return _memo(
        _GEMM_OPTIONS, (alpha, beta, recipe_code, bool(disable_ue8m0_cast), extra, workspace, workspace_size), build
    )


def _recipe_tuple(recipe: Recipe) -> Optional[Tuple[int, int, int]]:
    if recipe is None:
        return None
    try:
        r = tuple(int(x) for x in recipe)
    except (TypeError, ValueError):
        raise InvalidArgument("recipe: expected (gran_m, gran_n, gran_k), got %r" % (recipe,)) from None
    if len(r) != 3:
        raise InvalidArgument("recipe: expected (gran_m, gran_n, gran_k), got %r" % (recipe,))
    return r  # type: ignore[return-value]


_RECIPE_CODES = {(1, 128, 128): _lib.FP8_RECIPE_1D2D, (1, 1, 128): _lib.FP8_RECIPE_1D1D}


def _recipe_code(recipe: Tuple[int, int, int]) -> int:
    """``DG_FP8_RECIPE_*`` of a DeepGEMM recipe tuple."""
    if recipe not in _RECIPE_CODES:
        raise Unsupported("recipe %r: libdg's SM90 FP8 GEMMs take %s" % (recipe, " or ".join(str(r) for r in _RECIPE_CODES)))
    return _RECIPE_CODES[recipe]


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


_SHAPES = {
    "nt": ("[M, K]", "[N, K]", "A @ B.T"),
    "nn": ("[M, K]", "[K, N]", "A @ B"),
    "tn": ("[K, M]", "[K, N]", "A.T @ B"),
    "tt": ("[K, M]", "[N, K]", "A.T @ B.T"),
}


def _bf16_gemm(
    layout: str, a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor], alpha: float, beta: float, stream: StreamLike, options: Optional[Dict[str, int]]
) -> None:
    lib = _lib.get()
    name = "dg_bf16_gemm_%s" % layout
    fn = lib.fn(name)  # dg.Unsupported when this build lacks it
    handle, (ia, ib, idd, ic) = _prepare([(a, "a", None), (b, "b", None), (d, "d", None), (c, "c", None)], stream)
    _writable(idd, "d")
    opts = _gemm_options(alpha, beta, options=options)
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ic), byref(opts))
        lib.check(status, name)


_GEMM_ARGS_DOC = (
    "    d: output ``[M, N]``, BF16 or FP32, row-major; written in place.\n"
    "    c: optional accumulator ``[M, N]`` with ``d``'s dtype (may alias ``d``).\n"
    "    alpha, beta: scalars of the formula.\n"
    "    stream: explicit stream; default: torch's current stream, else the legacy default.\n"
)
_OPTIONS_DOC = (
    "    options: kernel-config overrides, fields of ``dg_gemm_options`` (``block_m``, ``block_n``,\n"
    "       ``num_stages``, ``cluster``, ``multicast_a``, ``num_math_warpgroups``, ``num_sms``);\n"
    "       unset fields are chosen by libdg's heuristic.\n"
)


def _make_bf16(layout: str) -> Callable[..., None]:
    def gemm(
        a: Tensor,
        b: Tensor,
        d: Tensor,
        c: Optional[Tensor] = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        stream: StreamLike = None,
        options: Optional[Dict[str, int]] = None,
    ) -> None:
        _bf16_gemm(layout, a, b, d, c, alpha, beta, stream, options)

    sa, sb, op = _SHAPES[layout]
    gemm.__name__ = gemm.__qualname__ = "bf16_gemm_%s" % layout
    gemm.__doc__ = (
        "BF16 GEMM: ``D = alpha * (%s) + beta * C``.\n\n"
        "Args:\n"
        "    a: ``%s`` bfloat16 (major-ness is read from the strides, so views work).\n"
        "    b: ``%s`` bfloat16.\n" % (op, sa, sb)
    ) + _GEMM_ARGS_DOC + _OPTIONS_DOC + "Raises:\n    dg.InvalidArgument, dg.Unsupported, dg.NoDevice, dg.CompileError, dg.CudaError.\n"
    return gemm


bf16_gemm_nt = _make_bf16("nt")
bf16_gemm_nn = _make_bf16("nn")
bf16_gemm_tn = _make_bf16("tn")
bf16_gemm_tt = _make_bf16("tt")


_workspace_lock = threading.Lock()
_workspaces: Dict[Tuple[int, int], Any] = {}


def cublaslt_available() -> bool:
    """Whether libdg can load cuBLASLt (``dg_cublaslt_available``)."""
    lib = _lib.get()
    if not lib.has("dg_cublaslt_available"):
        return False
    return lib.fn("dg_cublaslt_available")() == 0


def _cublaslt_workspace(like: Optional[TensorInfo], device: int, cu_stream: int) -> Tuple[Optional[int], int]:
    """A per-(device, stream) torch workspace of dg_cublaslt_workspace_size() bytes, as DeepGEMM
    keeps one; none when the operands are not torch tensors."""
    if like is None or not like.is_torch:
        return None, 0
    key = (device, cu_stream)
    ws = _workspaces.get(key)
    if ws is None:
        with _workspace_lock:
            ws = _workspaces.get(key)
            if ws is None:
                size = int(_lib.get().fn("dg_cublaslt_workspace_size")())
                torch = sys.modules["torch"]
                ws = torch.empty(max(size, 256), dtype=torch.uint8, device=like.source.device)
                _workspaces[key] = ws
    return ws.data_ptr(), ws.numel()


def _cublaslt_gemm(
    layout: str, a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor], alpha: float, beta: float, workspace: Any, stream: StreamLike
) -> None:
    lib = _lib.get()
    name = "dg_cublaslt_gemm_%s" % layout
    fn = lib.fn(name)
    handle, dev, cu, (ia, ib, idd, ic) = _prepare_call([(a, "a", None), (b, "b", None), (d, "d", None), (c, "c", None)], stream)
    _writable(idd, "d")
    if workspace is None:
        ws_ptr, ws_size = _cublaslt_workspace(ia, dev, cu)
    elif workspace is False:
        ws_ptr, ws_size = None, 0
    else:
        iw = describe(workspace, "workspace")
        ws_ptr = iw.ptr
        ws_size = _nbytes(iw)
    opts = CublasltOptions(alpha=float(alpha), beta=float(beta), workspace=ws_ptr, workspace_size=ws_size)
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ic), byref(opts))
        lib.check(status, name)


def _nbytes(info: TensorInfo) -> int:
    from ._tensor import DTYPE_SIZES

    n = 1
    for s in info.shape:
        n *= s
    return n * DTYPE_SIZES.get(info.dtype, 1)


def _make_cublaslt(layout: str) -> Callable[..., None]:
    def gemm(
        a: Tensor,
        b: Tensor,
        d: Tensor,
        c: Optional[Tensor] = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        workspace: Any = None,
        stream: StreamLike = None,
    ) -> None:
        _cublaslt_gemm(layout, a, b, d, c, alpha, beta, workspace, stream)

    sa, sb, op = _SHAPES[layout]
    gemm.__name__ = gemm.__qualname__ = "cublaslt_gemm_%s" % layout
    gemm.__doc__ = (
        "cuBLASLt GEMM (the baseline libdg is timed against): ``D = alpha * (%s) + beta * C``.\n\n"
        "Args:\n"
        "    a: ``%s``, bfloat16, or float8_e4m3fn used raw (no scales; FP8 needs the nt layout, K-major).\n"
        "    b: ``%s``, same dtype as ``a``.\n" % (op, sa, sb)
    ) + _GEMM_ARGS_DOC + (
        "    workspace: device scratch for split-K algorithms (a contiguous tensor). Default: for torch\n"
        "       operands a cached per-stream buffer of ``dg_cublaslt_workspace_size()`` bytes (32 MiB, as\n"
        "       DeepGEMM); ``False`` for none.\n"
        "Raises:\n    dg.Unsupported when cuBLASLt cannot be loaded (the message says why).\n"
    )
    return gemm


cublaslt_gemm_nt = _make_cublaslt("nt")
cublaslt_gemm_nn = _make_cublaslt("nn")
cublaslt_gemm_tn = _make_cublaslt("tn")
cublaslt_gemm_tt = _make_cublaslt("tt")


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


def fp8_gemm_workspace_size(layout: str, m: int, n: int, k: int) -> int:
    """Bytes of workspace the FP8 GEMMs need when ``a`` and ``b`` are stored as ``layout`` names them
    (``dg_fp8_gemm_workspace_size``): a K-major copy of each operand stored ``[K, M]`` / ``[K, N]``
    (rows ``align(K, 16)`` bytes apart, each copy 256-byte aligned); 0 for ``"nt"``."""
    if layout not in _lib.GEMM_LAYOUTS:
        raise InvalidArgument("layout: expected one of nt, nn, tn, tt, got %r" % (layout,))
    out = c_size_t()
    _lib.get().call("dg_fp8_gemm_workspace_size", _lib.GEMM_LAYOUTS[layout], int(m), int(n), int(k), byref(out))
    return out.value


def _copied_k_major(view: TensorInfo) -> bool:
    """Whether libdg reads an FP8 operand's ``[MN, K]`` view through a K-major copy: the view is not
    K-major as TMA reads it (stride 1 along K, rows a multiple of 16 bytes apart)."""
    rows, cols = view.shape[-2], view.shape[-1]
    row_stride, col_stride = view.strides[-2], view.strides[-1]
    k_major = col_stride == 1 or cols == 1
    return not (k_major and (rows == 1 or (row_stride % 16 == 0 and row_stride >= cols)))


def _fp8_workspace(
    workspace: Any, a_nt: TensorInfo, b_nt: TensorInfo, m: int, n: int, k: int, cu: int
) -> Tuple[Optional[int], int, Any]:
    """(pointer, bytes, object to keep alive) of the workspace an FP8 call gets: the caller's, none
    (``False``), or for torch operands that need copies a buffer from torch's caching allocator on the
    call's stream, so that it is reused only after the call's work there."""
    if workspace is False:
        return None, 0, None
    if workspace is not None:
        info = describe(workspace, "workspace")
        return info.ptr, _nbytes(info), workspace
    copy_a, copy_b = k > 0 and _copied_k_major(a_nt), k > 0 and _copied_k_major(b_nt)
    like = a_nt if a_nt.is_torch else b_nt if b_nt.is_torch else None
    if not (copy_a or copy_b) or like is None:
        return None, 0, None  # libdg says what it needs where this guess falls short
    layout = "tn" if copy_a and copy_b else "tt" if copy_a else "nn"
    size = fp8_gemm_workspace_size(layout, m, n, k)
    if size == 0:
        return None, 0, None
    buf = allocate_torch(like, UINT8, [size], [1], size, cu)
    return buf.data_ptr(), size, buf


def _fp8_gemm(
    layout: str,
    a: Tuple[Tensor, Tensor],
    b: Tuple[Tensor, Tensor],
    d: Tensor,
    c: Optional[Tensor],
    alpha: float,
    beta: float,
    disable_ue8m0_cast: bool,
    recipe: Recipe,
    stream: StreamLike,
    options: Optional[Dict[str, int]] = None,
    workspace: Any = None,
) -> None:
    lib = _lib.get()
    name = "dg_fp8_gemm_%s" % layout
    fn = lib.fn(name)
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    handle, dev, cu, (ia, isfa, ib, isfb, idd, ic) = _prepare_call(
        [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None), (c, "c", None)],
        stream,
    )
    assert ia is not None and ib is not None and isfa is not None and isfb is not None
    _writable(idd, "d")
    m, n, k, ta, tb = _nt_dims(ia, ib, layout)
    rt = _recipe_tuple(recipe)
    eff = rt if rt is not None else _default_recipe(isfb, n, tb)
    _recipe_code(eff)  # refuse an unknown recipe before any transform runs
    keep = []  # transformed scales and the workspace must outlive the call
    # Scales travel with their data: transform the NT view, hand back the same view the caller used.
    sfa_nt = isfa.transposed() if ta else isfa
    sfb_nt = isfb.transposed() if tb else isfb
    new_a, obj_a = _transform_info(handle, sfa_nt, m, k, _sf_recipe(eff[0], eff[2], 0, disable_ue8m0_cast), None, "sfa", dev, cu)
    new_b, obj_b = _transform_info(handle, sfb_nt, n, k, _sf_recipe(eff[1], eff[2], 0, disable_ue8m0_cast), None, "sfb", dev, cu)
    keep += [obj_a, obj_b]
    isfa2 = new_a.transposed() if ta else new_a
    isfb2 = new_b.transposed() if tb else new_b
    a_nt, b_nt = (ia.transposed() if ta else ia), (ib.transposed() if tb else ib)
    ws_ptr, ws_size, ws = _fp8_workspace(workspace, a_nt, b_nt, m, n, k, cu)
    keep.append(ws)
    opts = _gemm_options(alpha, beta, _recipe_code(eff), disable_ue8m0_cast, options, ws_ptr, ws_size)
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(isfa2), ds.add(ib), ds.add(isfb2), ds.add(idd), ds.add(ic), byref(opts))
        lib.check(status, name)
    del keep


def _fp8_doc(layout: str) -> str:
    shapes = _SHAPES[layout]
    return (
        "FP8 GEMM with fine-grained scaling: ``D = alpha * (%s) + beta * C``.\n\n"
        "Args:\n"
        "    a: ``(data %s float8_e4m3fn, scales)``; per-token FP32 scales ``[M, ceil(K/128)]`` in any\n"
        "       layout DeepGEMM accepts (transformed to MN-major TMA-aligned when needed; scales are\n"
        "       transposed together with the data for the alias layouts).\n"
        "    b: ``(data %s float8_e4m3fn, scales)``; per-block ``[ceil(N/128), ceil(K/128)]`` (recipe\n"
        "       (1, 128, 128)) or per-token ``[N, ceil(K/128)]`` (recipe (1, 1, 128)); packed int32\n"
        "       UE8M0 on SM100.\n"
        "    d: output ``[M, N]``: BF16 (1D2D, no C) or FP32 with C (1D1D) on SM90.\n"
        "    c: optional accumulator (may alias ``d``).\n"
        "    alpha, beta: scalars of the formula.\n"
        "    disable_ue8m0_cast: SM100: keep FP32 scales.\n"
        "    recipe: ``(1, 128, 128)`` (1D2D) or ``(1, 1, 128)`` (1D1D); default: read from ``b``'s\n"
        "       scales (per-token rows -> 1D1D, else 1D2D).\n"
        "    stream: explicit stream; default: torch's current stream, else the legacy default.\n"
    ) % (shapes[2], shapes[0], shapes[1]) + _OPTIONS_DOC + (
        "    workspace: device memory (a tensor, 256-byte aligned) for K-major copies of operands that are\n"
        "       MN-major in memory, which SM90 FP8 tensor cores cannot read (``fp8_gemm_workspace_size``\n"
        "       gives the bytes). Default: for torch operands that need copies, a buffer from torch's\n"
        "       caching allocator on the call's stream; ``False`` for none (such operands then raise\n"
        "       dg.Unsupported). Unused when both operands are K-major.\n"
    )


def _make_fp8(layout: str) -> Callable[..., None]:
    def gemm(
        a: Tuple[Tensor, Tensor],
        b: Tuple[Tensor, Tensor],
        d: Tensor,
        c: Optional[Tensor] = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        disable_ue8m0_cast: bool = False,
        recipe: Recipe = None,
        stream: StreamLike = None,
        options: Optional[Dict[str, int]] = None,
        workspace: Any = None,
    ) -> None:
        _fp8_gemm(layout, a, b, d, c, alpha, beta, disable_ue8m0_cast, recipe, stream, options, workspace)

    gemm.__name__ = gemm.__qualname__ = "fp8_gemm_%s" % layout
    gemm.__doc__ = _fp8_doc(layout)
    return gemm


fp8_gemm_nt = _make_fp8("nt")
fp8_gemm_nn = _make_fp8("nn")
fp8_gemm_tn = _make_fp8("tn")
fp8_gemm_tt = _make_fp8("tt")


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


def gemm_prepare(
    ab_dtype: Any,
    layout: str,
    m: int,
    n: int,
    k: int,
    d_dtype: Any,
    with_c: bool = False,
    recipe: Recipe = None,
    device: Optional[int] = None,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
) -> None:
    """Compiles and loads (no launch, no device memory touched) every kernel the matching GEMM call
    would use, for contiguous operands: call it before capturing a CUDA graph.

    Args:
        ab_dtype: ``torch.bfloat16`` / ``torch.float8_e4m3fn`` (or ``"bfloat16"``, ``"float8_e4m3fn"``).
        layout: ``"nt"``, ``"nn"``, ``"tn"`` or ``"tt"``.
        m, n, k: the problem.
        d_dtype: ``torch.bfloat16`` or ``torch.float32``.
        with_c: whether a C term will be given.
        recipe: FP8 only, as for :func:`fp8_gemm_nt` (default (1, 128, 128)).
        device, stream: where the kernels will run (default: torch's current device/stream).
        options: kernel-config overrides, as for the GEMM functions.
    """
    if layout not in _lib.GEMM_LAYOUTS:
        raise InvalidArgument("layout: expected one of nt, nn, tn, tt, got %r" % (layout,))
    ab = _dtype_arg(ab_dtype, "ab_dtype")
    dd = _dtype_arg(d_dtype, "d_dtype")
    rt = _recipe_tuple(recipe) or (1, 128, 128)
    opts = _gemm_options(1.0, 1.0, _recipe_code(rt), False, options)
    lib = _lib.get()
    fn = lib.fn("dg_gemm_prepare")
    handle, _dev, _cu = _stream.resolve(stream, device)
    status = fn(handle, ab, _lib.GEMM_LAYOUTS[layout], int(m), int(n), int(k), dd, 1 if with_c else 0, byref(opts))
    lib.check(status, "dg_gemm_prepare")


# ---------------------------------------------------------------------------------------------
# NVFP4 GEMV
# ---------------------------------------------------------------------------------------------


def nvfp4_gemv(
    a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, c: Tensor, stream: StreamLike = None, options: Optional[Dict[str, int]] = None
) -> None:
    """Batched NVFP4 GEMV: ``c[m, 0, l] = sum_k A[m, k, l] * b[0, k, l]`` (FP32 accumulate,
    FP16 out), every value an E2M1 nibble times an FP8 E4M3 scale per 16 K elements.

    Args:
        a: ``[M, K/2, L]`` bytes, two E2M1 values each (torch.uint8/int8, or float4_e2m1fn_x2).
        sfa: ``[M, K/16, L]`` float8_e4m3fn.
        b: ``[Np, K/2, L]`` like ``a``; only row 0 is the vector.
        sfb: ``[Np, K/16, L]`` float8_e4m3fn.
        c: output ``[M, 1, L]`` float16, written in place.
        stream: explicit stream; default: torch's current stream, else the legacy default.
        options: tuning overrides, fields of ``dg_nvfp4_gemv_options`` (``threads_per_row``,
            ``row_groups``, ``chunks_per_thread``, ``rows_per_round``, ``vector_bytes``,
            ``grid_blocks``, ``cache_hint``, ``prefetch``); unset fields are chosen by libdg.

    Rank-2 tensors (``[M, K/2]`` ... ``[M, 1]``) mean L = 1. K must be a multiple of 32.
    """
    lib = _lib.get()
    fn = lib.fn("dg_nvfp4_gemv")
    handle, (ia, isfa, ib, isfb, ic) = _prepare(
        [(a, "a", ROLE_FP4), (sfa, "sfa", None), (b, "b", ROLE_FP4), (sfb, "sfb", None), (c, "c", None)], stream
    )
    _writable(ic, "c")
    opts = None
    if options:
        known = {f[0] for f in NvFp4GemvOptions._fields_} - {"struct_size"}
        unknown = set(options) - known
        if unknown:
            raise InvalidArgument("options: unknown field(s) %s; known: %s" % (sorted(unknown), sorted(known)))
        opts = byref(NvFp4GemvOptions(**{k: _int32(v, k) for k, v in options.items()}))
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(isfa), ds.add(ib), ds.add(isfb), ds.add(ic), opts)
        lib.check(status, "dg_nvfp4_gemv")


def available() -> Dict[str, bool]:
    """Which kernel families this build of libdg exports (functions whose C symbol is missing
    raise :class:`dg.Unsupported`)."""
    names = ["dg_%s_gemm_%s" % (k, l) for k in ("bf16", "fp8", "cublaslt") for l in _LAYOUTS] + ["dg_nvfp4_gemv"]
    lib = _lib.get()
    out = {n[3:]: lib.has(n) for n in names}
    if not cublaslt_available():  # symbols present, cuBLASLt itself not loadable
        out.update({"cublaslt_gemm_%s" % l: False for l in _LAYOUTS})
    return out
