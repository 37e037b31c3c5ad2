"""Building ``dg_tensor`` descriptors from Python tensors.

Accepted: PyTorch tensors (read directly: ``data_ptr()``, ``shape``, ``stride()``, ``dtype``, so
bfloat16 and float8 work), any object with ``__dlpack__`` (the capsule is read in place with
ctypes and kept alive, never consumed or renamed), and any object with
``__cuda_array_interface__`` (v2/v3; byte strides converted to elements). Sizes and strides pass
through unchanged: a transposed view stays a transposed view, and libdg reads major-ness from the
strides as DeepGEMM does.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections import OrderedDict
from ctypes import CFUNCTYPE, POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p
from typing import Any, List, Optional, Sequence, Tuple

from . import _integers, _lib
from .errors import InvalidArgument

# dg.h dtypes
FLOAT32 = 1
FLOAT16 = 2
BFLOAT16 = 3
FLOAT8_E4M3 = 4
FLOAT8_E5M2 = 5
INT32 = 6
FLOAT4_E2M1X2 = 7
UE8M0X4 = 8
UINT8 = 9

DTYPE_NAMES = {
    FLOAT32: "float32",
    FLOAT16: "float16",
    BFLOAT16: "bfloat16",
    FLOAT8_E4M3: "float8_e4m3",
    FLOAT8_E5M2: "float8_e5m2",
    INT32: "int32",
    FLOAT4_E2M1X2: "float4_e2m1x2",
    UE8M0X4: "ue8m0x4",
    UINT8: "uint8",
}
DTYPE_SIZES = {FLOAT32: 4, FLOAT16: 2, BFLOAT16: 2, FLOAT8_E4M3: 1, FLOAT8_E5M2: 1, INT32: 4, FLOAT4_E2M1X2: 1, UE8M0X4: 4, UINT8: 1}

# Roles adjust how ambiguous storage dtypes are read.
ROLE_FP4 = "fp4"  # uint8/int8 bytes are two E2M1 values each
ROLE_SF = "sf"  # int32 scales are four packed UE8M0 exponents

# Internal dtype keys (before the role is applied): "int8" has no dg dtype of its own.
_INT8 = "int8"

_TORCH_DTYPES = {
    "torch.float32": FLOAT32,
    "torch.float16": FLOAT16,
    "torch.bfloat16": BFLOAT16,
    "torch.float8_e4m3fn": FLOAT8_E4M3,
    "torch.float8_e5m2": FLOAT8_E5M2,
    "torch.int32": INT32,
    "torch.uint8": UINT8,
    "torch.int8": _INT8,
    "torch.float4_e2m1fn_x2": FLOAT4_E2M1X2,
}

# dg dtype -> torch dtype attribute name (for allocating outputs)
TORCH_NAMES = {
    FLOAT32: "float32",
    FLOAT16: "float16",
    BFLOAT16: "bfloat16",
    FLOAT8_E4M3: "float8_e4m3fn",
    FLOAT8_E5M2: "float8_e5m2",
    INT32: "int32",
    FLOAT4_E2M1X2: "uint8",
    UE8M0X4: "int32",
    UINT8: "uint8",
}

# __cuda_array_interface__ typestr (byte order stripped) -> dtype
_CAI_DTYPES = {
    "f4": FLOAT32,
    "f2": FLOAT16,
    "i4": INT32,
    "u1": UINT8,
    "i1": _INT8,
}

# DLPack (code, bits, lanes) -> dtype
kDLCUDA = 2
kDLCUDAManaged = 13
_DL_DTYPES = {
    (2, 32, 1): FLOAT32,  # kDLFloat
    (2, 16, 1): FLOAT16,
    (4, 16, 1): BFLOAT16,  # kDLBfloat
    (10, 8, 1): FLOAT8_E4M3,  # kDLFloat8_e4m3fn
    (12, 8, 1): FLOAT8_E5M2,  # kDLFloat8_e5m2
    (0, 32, 1): INT32,  # kDLInt
    (1, 8, 1): UINT8,  # kDLUInt
    (0, 8, 1): _INT8,
    (17, 4, 2): FLOAT4_E2M1X2,  # kDLFloat4_e2m1fn, two per byte
    (17, 8, 1): FLOAT4_E2M1X2,
}


class TensorInfo:
    """What a ``dg_tensor`` descriptor needs, plus what keeps the memory alive.

    ``source`` is the Python object the caller passed (a torch tensor when ``is_torch``);
    ``keepalive`` holds a DLPack capsule until the call that uses the descriptor returns.
    """

    __slots__ = ("ptr", "dtype", "shape", "strides", "device", "source", "keepalive", "readonly", "is_torch")

    def __init__(
        self,
        ptr: int,
        dtype: int,
        shape: Sequence[int],
        strides: Sequence[int],
        device: Optional[int],
        source: Any = None,
        keepalive: Any = None,
        readonly: bool = False,
        is_torch: bool = False,
    ) -> None:
        if is_torch:  # torch's own sizes and strides: int64 already
            self.ptr = int(ptr)
            self.shape = tuple(map(int, shape))
            self.strides = tuple(map(int, strides))
        else:
            self.ptr = _integers.integer(ptr, "TensorInfo: ptr", "pointer")
            self.shape = _integers.int64s(shape, "TensorInfo: shape")
            self.strides = _integers.int64s(strides, "TensorInfo: strides")
        self.dtype = dtype
        self.device = device
        self.source = source
        self.keepalive = keepalive
        self.readonly = readonly
        self.is_torch = is_torch

    @property
    def rank(self) -> int:
        return len(self.shape)

    def transposed(self) -> "TensorInfo":
        """The same memory with the last two dimensions swapped (a ``.T`` / ``.mT`` view)."""
        if self.rank < 2:
            return self
        shape = self.shape[:-2] + (self.shape[-1], self.shape[-2])
        strides = self.strides[:-2] + (self.strides[-1], self.strides[-2])
        return TensorInfo(self.ptr, self.dtype, shape, strides, self.device, self.source, self.keepalive, self.readonly, self.is_torch)

    def __repr__(self) -> str:
        return "TensorInfo(ptr=0x%x, dtype=%s, shape=%s, strides=%s, device=%s)" % (
            self.ptr,
            DTYPE_NAMES.get(self.dtype, self.dtype),
            list(self.shape),
            list(self.strides),
            self.device,
        )


def contiguous_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    """Row-major strides (elements) of ``shape``."""
    strides: List[int] = []
    acc = 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(strides))


def _apply_role(dtype: Any, role: Optional[str], name: str, what: Any) -> int:
    if role == ROLE_FP4 and dtype in (UINT8, _INT8):
        return FLOAT4_E2M1X2
    if role == ROLE_SF and dtype == INT32:
        return UE8M0X4
    if dtype == _INT8:
        raise InvalidArgument("%s: int8 is accepted only for packed FP4 operands (got %s)" % (name, what))
    return dtype


def torch_module():
    """The ``torch`` module if the process has already imported it, else ``None`` (never imports)."""
    return sys.modules.get("torch")


def is_torch_tensor(obj: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(obj, torch.Tensor)


_TORCH_DTYPE_OBJECTS: dict = {}  # torch.dtype -> libdg dtype, filled from _TORCH_DTYPES on first sight


def _from_torch(t: Any, name: str, role: Optional[str]) -> TensorInfo:
    dt = t.dtype
    base = _TORCH_DTYPE_OBJECTS.get(dt)
    if base is None:
        key = str(dt)
        if key not in _TORCH_DTYPES:
            raise InvalidArgument("%s: dtype %s has no libdg equivalent" % (name, key))
        base = _TORCH_DTYPE_OBJECTS[dt] = _TORCH_DTYPES[key]
    device = t.get_device()  # -1 for CPU tensors
    if device < 0:
        raise InvalidArgument("%s: tensor is on %s; libdg needs CUDA device memory" % (name, t.device))
    dtype = _apply_role(base, role, name, dt)
    return TensorInfo(t.data_ptr(), dtype, t.shape, t.stride(), device, source=t, is_torch=True)


def _from_cai(obj: Any, name: str, role: Optional[str]) -> TensorInfo:
    cai = obj.__cuda_array_interface__
    try:
        version = _integers.int64(cai.get("version", 0), "%s: __cuda_array_interface__ version" % name)
        typestr = cai["typestr"]
        raw_shape = cai["shape"]
        ptr, ro = cai["data"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument("%s: malformed __cuda_array_interface__ (%s)" % (name, exc)) from None
    shape = _integers.int64s(raw_shape, "%s: __cuda_array_interface__ shape" % name)
    ptr = _integers.integer(ptr or 0, "%s: __cuda_array_interface__ data pointer" % name, "pointer")
    if version < 2:
        raise InvalidArgument("%s: __cuda_array_interface__ version %d; versions 2 and 3 are supported" % (name, version))
    if cai.get("mask") is not None:
        raise InvalidArgument("%s: masked arrays (__cuda_array_interface__ 'mask') are not supported" % name)
    if typestr[:1] == ">":
        raise InvalidArgument("%s: big-endian typestr %r is not supported" % (name, typestr))
    code = typestr.lstrip("<>|=")
    if code not in _CAI_DTYPES:
        raise InvalidArgument(
            "%s: typestr %r has no libdg equivalent (bfloat16 and float8 cannot be named by "
            "__cuda_array_interface__: pass a torch tensor or a DLPack object)" % (name, typestr)
        )
    dtype = _apply_role(_CAI_DTYPES[code], role, name, typestr)
    itemsize = int(code[1:])
    byte_strides = cai.get("strides")
    if byte_strides is None:
        strides = contiguous_strides(shape)
    else:
        strides_list = []
        for i, bs in enumerate(byte_strides):
            bs = _integers.int64(bs, "%s: __cuda_array_interface__ strides[%d]" % (name, i))
            if bs % itemsize != 0:
                raise InvalidArgument(
                    "%s: stride %d of dimension %d is %d bytes, not a multiple of the %d-byte element" % (name, bs, i, bs, itemsize)
                )
            strides_list.append(bs // itemsize)
        strides = tuple(strides_list)
        if len(strides) != len(shape):
            raise InvalidArgument("%s: %d strides for %d dimensions" % (name, len(strides), len(shape)))
    return TensorInfo(ptr, dtype, shape, strides, None, source=obj, readonly=bool(ro))


# --- DLPack ----------------------------------------------------------------------------------


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


DLDeleter = CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DLDeleter)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", DLDeleter),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


DLPACK_FLAG_BITMASK_READ_ONLY = 1

_capsule_get_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_get_name.restype = ctypes.c_char_p
_capsule_get_name.argtypes = [ctypes.py_object]
_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


def read_dlpack_capsule(capsule: Any, name: str, role: Optional[str] = None) -> TensorInfo:
    """Reads a ``dltensor`` / ``dltensor_versioned`` capsule in place (without consuming it).

    The returned info keeps the capsule alive; when it is dropped, the capsule's own destructor
    calls the producer's deleter (the protocol for a capsule that was not consumed)."""
    if type(capsule).__name__ != "PyCapsule":
        raise InvalidArgument("%s: __dlpack__() returned %s, not a capsule" % (name, type(capsule).__name__))
    cname = _capsule_get_name(capsule)
    readonly = False
    if cname == b"dltensor":
        managed = DLManagedTensor.from_address(_capsule_get_pointer(capsule, cname))
        t = managed.dl_tensor
    elif cname == b"dltensor_versioned":
        managed_v = DLManagedTensorVersioned.from_address(_capsule_get_pointer(capsule, cname))
        if managed_v.version.major != 1:
            raise InvalidArgument("%s: DLPack version %d.%d is not supported" % (name, managed_v.version.major, managed_v.version.minor))
        t = managed_v.dl_tensor
        readonly = bool(managed_v.flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    elif cname in (b"used_dltensor", b"used_dltensor_versioned"):
        raise InvalidArgument("%s: the DLPack capsule was already consumed" % name)
    else:
        raise InvalidArgument("%s: capsule named %r is not a DLPack tensor" % (name, cname))
    dev = t.device.device_type
    if dev not in (kDLCUDA, kDLCUDAManaged):
        raise InvalidArgument("%s: DLPack device type %d is not CUDA (kDLCUDA = 2); libdg needs device memory" % (name, dev))
    key = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    if key not in _DL_DTYPES:
        raise InvalidArgument("%s: DLPack dtype (code %d, bits %d, lanes %d) has no libdg equivalent" % ((name,) + key))
    dtype = _apply_role(_DL_DTYPES[key], role, name, "DLPack int8")
    ndim = int(t.ndim)
    shape = tuple(t.shape[i] for i in range(ndim))
    if t.strides:
        strides = tuple(t.strides[i] for i in range(ndim))
    else:
        strides = contiguous_strides(shape)
    ptr = (t.data or 0) + int(t.byte_offset)
    return TensorInfo(ptr, dtype, shape, strides, int(t.device.device_id), keepalive=capsule, readonly=readonly)


def _dlpack_stream_arg(cu_stream: int) -> int:
    # DLPack's CUDA convention: 1 = legacy default stream, 2 = per-thread default, else a handle;
    # 0 is disallowed.
    return cu_stream if cu_stream else 1


def _from_dlpack(obj: Any, name: str, role: Optional[str], cu_stream: Optional[int]) -> TensorInfo:
    dev_fn = getattr(obj, "__dlpack_device__", None)
    if dev_fn is not None:
        dev_type, _dev_id = dev_fn()
        if int(dev_type) not in (kDLCUDA, kDLCUDAManaged):
            raise InvalidArgument(
                "%s: DLPack device type %d is not CUDA (kDLCUDA = 2); libdg needs device memory" % (name, int(dev_type))
            )
    if cu_stream is not None:
        try:
            capsule = obj.__dlpack__(stream=_dlpack_stream_arg(cu_stream))
        except TypeError:
            capsule = obj.__dlpack__()
    else:
        capsule = obj.__dlpack__()
    info = read_dlpack_capsule(capsule, name, role)
    info.source = obj
    return info


def describe(obj: Any, name: str, role: Optional[str] = None, cu_stream: Optional[int] = None) -> TensorInfo:
    """Reads ``obj`` (torch tensor, DLPack object, ``__cuda_array_interface__`` object, or a
    ``TensorInfo``) into a :class:`TensorInfo`; ``name`` is used in error messages."""
    if isinstance(obj, TensorInfo):
        return obj
    if is_torch_tensor(obj):
        return _from_torch(obj, name, role)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj, name, role, cu_stream)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj, name, role)
    raise InvalidArgument(
        "%s: expected a CUDA tensor (a torch.Tensor, or an object with __dlpack__ or "
        "__cuda_array_interface__), got %s" % (name, type(obj).__name__)
    )


class _HandleCache:
    """One thread's LRU of ``dg_tensor`` handles keyed by everything a handle holds (pointer, dtype,
    sizes, strides), so that repeated calls on the same tensors make no ``dg_tensor_create`` /
    ``dg_tensor_destroy`` round trips. libdg only reads descriptors (every call takes
    ``const dg_tensor*``), so one handle serves any call whose tensor has the same key. One cache
    per thread, so that eviction never destroys a handle another thread is passing to libdg; its
    handles belong to one library, and are destroyed with the cache when the thread ends."""

    CAPACITY = 256

    def __init__(self) -> None:
        self.lib: Any = None
        self.handles: "OrderedDict[Tuple[Any, ...], c_void_p]" = OrderedDict()

    def get(self, lib: Any, info: TensorInfo) -> c_void_p:
        if lib is not self.lib:
            self.clear()
            self.lib = lib
        key = (info.ptr, info.dtype, info.shape, info.strides)
        handle = self.handles.get(key)
        if handle is not None:
            self.handles.move_to_end(key)
            return handle
        rank = info.rank
        sizes = (c_int64 * max(rank, 1))(*info.shape)
        strides = (c_int64 * max(rank, 1))(*info.strides)
        handle = c_void_p()
        status = lib.fn("dg_tensor_create")(ctypes.byref(handle), c_void_p(info.ptr or None), info.dtype, rank, sizes, strides)
        lib.check(status, "dg_tensor_create")
        self.handles[key] = handle
        while len(self.handles) > self.CAPACITY:
            _, old = self.handles.popitem(last=False)
            lib.fn("dg_tensor_destroy")(old)
        return handle

    def clear(self) -> None:
        if self.lib is not None:
            destroy = self.lib.fn("dg_tensor_destroy")
            for handle in self.handles.values():
                destroy(handle)
        self.handles.clear()

    def __del__(self) -> None:
        try:
            self.clear()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.cache = _HandleCache()


_per_thread = _PerThread()


def thread_handle_cache() -> _HandleCache:
    """The calling thread's descriptor cache."""
    return _per_thread.cache


class Descriptors:
    """The ``dg_tensor`` handles of one call (from the per-thread cache, so leaving the block frees
    nothing; the context manager marks the extent over which the handles are used).

    >>> with Descriptors() as ds:
    ...     ha = ds.add(info_a)   # c_void_p, or None for a None info
    """

    __slots__ = ("_lib",)

    def __init__(self) -> None:
        self._lib = _lib.get()

    def add(self, info: Optional[TensorInfo]) -> Optional[c_void_p]:
        if info is None:
            return None
        return _per_thread.cache.get(self._lib, info)

    def __enter__(self) -> "Descriptors":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def read_descriptor(handle: c_void_p) -> Tuple[int, int, Tuple[int, ...], Tuple[int, ...]]:
    """``dg_tensor_get``: (data, dtype, sizes, strides) of a descriptor, as libdg stored them."""
    lib = _lib.get()
    data = c_void_p()
    dtype = c_int32()
    rank = c_int32()
    sizes = (c_int64 * 4)()
    strides = (c_int64 * 4)()
    lib.call("dg_tensor_get", handle, ctypes.byref(data), ctypes.byref(dtype), ctypes.byref(rank), sizes, strides)
    r = rank.value
    return (data.value or 0, dtype.value, tuple(sizes[:r]), tuple(strides[:r]))


class TorchAllocation:
    """How :func:`allocate_torch` makes a tensor of one layout, kept so that a warm call makes the
    next one with the same torch calls: ``torch.empty(shape, dtype=, device=)`` (``shape`` the
    sizes themselves where they are contiguous and fill the buffer, else the element count), then
    ``as_strided(*view)`` unless ``view`` is None."""

    __slots__ = ("empty", "shape", "dtype", "device", "view")

    def __init__(self, like: TensorInfo, dtype: int, sizes: Sequence[int], strides: Sequence[int], nbytes: int) -> None:
        torch = torch_module()
        if torch is None or not like.is_torch:
            raise InvalidArgument("cannot allocate an output: the input is not a torch tensor; pass out=")
        sizes, strides = tuple(int(s) for s in sizes), tuple(int(s) for s in strides)
        elem = DTYPE_SIZES[dtype]
        numel = -(-int(nbytes) // elem)
        needed = 1 + sum((s - 1) * st for s, st in zip(sizes, strides)) if all(s > 0 for s in sizes) else 0
        numel = max(numel, needed)
        exact = numel == needed and strides == contiguous_strides(sizes)
        self.empty = torch.empty
        self.shape = sizes if exact else numel
        self.dtype = getattr(torch, TORCH_NAMES[dtype])
        self.device = like.source.device
        self.view = None if exact else (sizes, strides)

    def new(self, cu_stream: Optional[int] = None) -> Any:
        """A new tensor, allocated on ``cu_stream`` when it is not torch's current stream."""
        device = self.device
        if cu_stream is not None:
            torch = torch_module()
            if torch.cuda.current_stream(device).cuda_stream != cu_stream:
                with torch.cuda.stream(torch.cuda.ExternalStream(cu_stream, device=device)):
                    return self._new()
        return self._new()

    def _new(self) -> Any:
        buf = self.empty(self.shape, dtype=self.dtype, device=self.device)
        return buf if self.view is None else buf.as_strided(*self.view)


def allocate_torch(like: TensorInfo, dtype: int, sizes: Sequence[int], strides: Sequence[int], nbytes: int,
                   cu_stream: Optional[int] = None) -> Any:
    """A torch tensor on ``like``'s device with the given sizes/strides (elements) over a buffer of
    ``nbytes`` bytes (so padding that libdg may write is inside the allocation).

    The memory is allocated on ``cu_stream`` (the stream libdg writes it on), as torch allocates
    an op's output on the op's stream: the caching allocator then never reuses it before that
    stream's work is done, and nothing is recorded on that stream when the tensor is freed, so it
    stays safe after a libdg-owned stream is destroyed. Using the result on another stream needs
    the usual synchronisation."""
    return TorchAllocation(like, dtype, sizes, strides, nbytes).new(cu_stream)
