"""Streams: resolving the ``stream=`` argument to a cached ``dg_stream`` handle."""

from __future__ import annotations

import ctypes
import threading
from ctypes import c_int32, c_void_p
from typing import Any, Dict, Iterable, Optional, Tuple

from . import _integers, _lib
from ._tensor import TensorInfo, torch_module
from .errors import InvalidArgument

STREAM_BORROW = 0
STREAM_CREATE = 1


class Stream:
    """A libdg stream: a device, a CUstream and optionally a :class:`dg.Config`.

    Pass it as ``stream=`` to any kernel function to run there with that config. ``Stream()``
    borrows the legacy default stream of device 0; ``Stream(device, cu_stream)`` borrows an
    existing CUstream (an int handle, a ``torch.cuda.Stream``, or anything with ``cuda_stream``,
    ``ptr`` or ``__cuda_stream__``); ``Stream(device, create=True)`` creates and owns a
    non-blocking stream. Close it with :meth:`close` or a ``with`` block.
    """

    def __init__(self, device: int = 0, cu_stream: Any = None, config: Any = None, create: bool = False) -> None:
        lib = _lib.get()
        self._lib = lib
        self._handle = c_void_p()
        handle = None if create else cu_stream_handle(cu_stream)
        if create and cu_stream is not None:
            raise InvalidArgument("Stream: create=True makes a new CUstream; cu_stream must be None")
        cfg = config._handle if config is not None else None
        lib.call(
            "dg_stream_create",
            ctypes.byref(self._handle),
            _integers.int32(device, "device"),
            c_void_p(handle or None),
            STREAM_CREATE if create else STREAM_BORROW,
            cfg,
        )
        self._keep = cu_stream  # a borrowed torch stream must outlive us

    @classmethod
    def offline(cls, arch: Tuple[int, int] = (9, 0), num_sms: int = 132, config: Any = None,
                gpu_name: Optional[str] = None) -> "Stream":
        """A stream that describes a device instead of using one (``dg_stream_create_offline``).

        Preparation calls on it (:func:`dg.gemm_prepare`) compile kernels into the disk cache for
        that architecture and SM count without a GPU; calls that would launch raise
        :class:`dg.NoDevice`. ``gpu_name``: the target's name as the driver reports it (e.g.
        ``"NVIDIA H200"``, ``dg_stream_create_offline_named``), so that the kernels compiled are the
        ones calls on that GPU choose (its cost-model calibration and its tuning table).
        """
        self = cls.__new__(cls)
        self._lib = _lib.get()
        self._handle = c_void_p()
        self._keep = None
        cfg = config._handle if config is not None else None
        dims = (_integers.int32(arch[0], "arch[0]"), _integers.int32(arch[1], "arch[1]"),
                _integers.int32(num_sms, "num_sms"))
        if gpu_name is None:
            self._lib.call("dg_stream_create_offline", ctypes.byref(self._handle), *dims, cfg)
        else:
            if not isinstance(gpu_name, str):
                raise TypeError("gpu_name: expected a str, got %s" % type(gpu_name).__name__)
            if "\0" in gpu_name:
                raise ValueError("gpu_name: %r holds a NUL character" % gpu_name)
            # libdg checks the characters (printable ASCII) and names the argument.
            self._lib.call("dg_stream_create_offline_named", ctypes.byref(self._handle), *dims,
                           gpu_name.encode("utf-8"), cfg)
        return self

    @property
    def handle(self) -> c_void_p:
        """The ``dg_stream*``."""
        if not self._handle:
            raise InvalidArgument("Stream: used after close()")
        return self._handle

    @property
    def device(self) -> int:
        """The device ordinal."""
        d = c_int32()
        self._lib.call("dg_stream_get_device", self.handle, ctypes.byref(d))
        return d.value

    @property
    def cu_stream(self) -> int:
        """The CUstream handle as an int (0 = the legacy default stream)."""
        s = c_void_p()
        self._lib.call("dg_stream_get_cu_stream", self.handle, ctypes.byref(s))
        return s.value or 0

    def synchronize(self) -> None:
        """Waits for all work queued on this stream."""
        self._lib.call("dg_stream_synchronize", self.handle)

    def close(self) -> None:
        """Destroys the handle (and an owned CUstream, after its pending work completes)."""
        if self._handle:
            self._lib.fn("dg_stream_destroy")(self._handle)
            self._handle = c_void_p()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def cu_stream_handle(stream: Any) -> int:
    """The CUstream (int) of ``stream``: None/0 (legacy default), an int, a ctypes pointer, a
    ``torch.cuda.Stream`` (``.cuda_stream``), a CuPy stream (``.ptr``), or an object with
    ``__cuda_stream__`` (returns ``(version, handle)``)."""
    handle = _stream_value(stream)
    if type(handle) is int and 0 <= handle < 2**64:
        return handle
    return _integers.integer(handle, "stream", "pointer")


def _stream_value(stream: Any) -> Any:
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise InvalidArgument("stream: expected a CUDA stream, got a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise InvalidArgument("stream: handle %d is negative" % stream)
        return stream
    if isinstance(stream, c_void_p):
        return stream.value or 0
    if hasattr(stream, "__cuda_stream__"):
        proto = stream.__cuda_stream__()
        return proto[1]
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    if not hasattr(stream, "__index__") and not hasattr(stream, "__int__"):
        raise InvalidArgument("stream: cannot read a CUstream from %s" % type(stream).__name__)
    return stream


_cache_lock = threading.Lock()
_cache: Dict[Tuple[int, int], c_void_p] = {}


def _cached(device: int, handle: int) -> c_void_p:
    key = (device, handle)
    s = _cache.get(key)
    if s is not None:
        return s
    with _cache_lock:
        s = _cache.get(key)
        if s is None:
            lib = _lib.get()
            s = c_void_p()
            lib.call("dg_stream_create", ctypes.byref(s), device, c_void_p(handle or None), STREAM_BORROW, None)
            _cache[key] = s
    return s


def clear_cache() -> None:
    """Destroys the cached borrowed-stream handles (they are recreated on demand)."""
    with _cache_lock:
        destroy = _lib.get().fn("dg_stream_destroy")
        for s in _cache.values():
            destroy(s)
        _cache.clear()


def call_device(infos: Iterable[Optional[TensorInfo]]) -> Optional[int]:
    """The device all ``infos`` live on (``None`` when none says: ``__cuda_array_interface__``
    carries no device); ``InvalidArgument`` when they disagree."""
    device: Optional[int] = None
    for info in infos:
        if info is None or info.device is None:
            continue
        if device is None:
            device = info.device
        elif info.device != device:
            raise InvalidArgument("tensors are on different devices (cuda:%d and cuda:%d)" % (device, info.device))
    return device


def _torch_current_stream(device: Optional[int]) -> Optional[Tuple[int, int]]:
    torch = torch_module()
    if torch is None:
        return None
    try:
        # Only when torch has initialised CUDA itself: never initialise it on the caller's behalf.
        if not torch.cuda.is_initialized():
            return None
        if device is None:
            device = torch.cuda.current_device()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object per call
        if raw is not None:
            return device, int(raw(device))
        return device, torch.cuda.current_stream(device).cuda_stream
    except Exception:  # a torch without CUDA support
        return None


def default_device() -> int:
    """The device for calls whose tensors do not name one: torch's current device when torch is
    imported and CUDA is initialised, else 0."""
    torch = torch_module()
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                return torch.cuda.current_device()
        except Exception:
            pass
    return 0


def resolve(stream: Any, device: Optional[int]) -> Tuple[c_void_p, int, int]:
    """``(dg_stream*, device, CUstream)`` for a call: an explicit ``stream=`` (a :class:`Stream`,
    a torch/CuPy stream or a raw handle), else torch's current stream when torch is imported,
    else the legacy default stream. Borrowed handles are cached per (device, CUstream)."""
    if isinstance(stream, Stream):
        sdev = stream.device
        if device is not None and device != sdev:
            raise InvalidArgument("stream: dg.Stream is on device %d but the tensors are on device %d" % (sdev, device))
        return stream.handle, sdev, stream.cu_stream
    if stream is None:
        cur = _torch_current_stream(device)
        if cur is not None:
            dev, handle = cur
            return _cached(dev, handle), dev, handle
        dev = device if device is not None else 0
        return _cached(dev, 0), dev, 0
    handle = cu_stream_handle(stream)
    if device is None:
        sdev = getattr(stream, "device", None)
        idx = getattr(sdev, "index", None)
        device = idx if isinstance(idx, int) else default_device()
    return _cached(device, handle), device, handle
