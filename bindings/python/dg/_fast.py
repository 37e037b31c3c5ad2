"""The warm path of the GEMM and MQA-logits wrappers: a call whose arguments were all seen before
is one C call (two torch calls and two C calls where it returns a new output tensor).

A wrapper that can take it builds a key from everything its Python plumbing decides on: each
tensor's data pointer, sizes, strides and dtype, the scalars and the entry point. The first call
with a key runs the full plumbing (argument checks, layout queries, descriptors); when it launched
with nothing made for it (no scale transform, no workspace) but perhaps its output, :func:`store`
records the arguments it passed after the stream (descriptors, scalars, options) and the device. A
later call with the same key goes straight to :func:`call` (or :func:`call_new` where the call
allocates its output): it reads torch's current stream, and makes the one C call, which validates
its arguments as every libdg call does. Same key, same arguments, so the skipped Python checks
passed already. A new output has the layout of the first call's (the layout is a function of the
key): it is allocated as that one was, and the plan's own descriptor of it is re-pointed at it
with ``dg_tensor_set_data``.

Only plain torch tensors (``torch.Tensor``, ``torch.nn.Parameter``) on torch's current stream
qualify, after torch has initialised CUDA: their attributes are cheap to read and their device
pointers are unique within the process (so the pointer fixes the device). Tables are per thread,
as the descriptor cache is: a table's descriptors are destroyed only by its own thread.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from ctypes import c_int64, c_void_p
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _lib, _stream
from ._tensor import TensorInfo, TorchAllocation, torch_module

# Plans per thread; a full table is emptied (its descriptors destroyed) and refilled.
CAPACITY = 256

_types: Optional[Tuple[type, ...]] = None  # the tensor classes that qualify, once torch is imported
_raw_stream: Any = None  # torch._C._cuda_getCurrentRawStream


def tensor_types() -> Optional[Tuple[type, ...]]:
    """The classes whose instances may take the warm path, or ``None`` while torch is not imported
    or has not initialised CUDA (then torch's current stream is not what a call runs on)."""
    global _types, _raw_stream
    if _types is not None:
        return _types
    torch = torch_module()
    if torch is None:
        return None
    try:
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None or not torch.cuda.is_initialized():
            return None
    except Exception:  # a torch without CUDA
        return None
    param = getattr(sys.modules.get("torch.nn.parameter"), "Parameter", None)
    _raw_stream = raw
    _types = (torch.Tensor,) + ((param,) if isinstance(param, type) else ())
    return _types


class Plan:
    """What a call with one key hands libdg: the entry point, the device, and the arguments after
    the stream (descriptors owned by the plan, ctypes scalars, a byref of the options); for a call
    that allocates its output, how (``alloc``), and which argument describes it (``out``)."""

    __slots__ = ("lib", "name", "fn", "device", "args", "alloc", "out", "set_data")

    def __init__(self, lib: Any, name: str, device: int, args: Tuple[Any, ...], alloc: Optional[TorchAllocation],
                 out: Any) -> None:
        self.lib = lib
        self.name = name
        # A function object of its own without argtypes: the arguments are ctypes objects already
        # (c_void_p handles, None, c_int32/c_int64 scalars, a byref of the options), so ctypes
        # passes them without converting each one; the return value is the int32 dg_status.
        self.fn = lib.cdll[name]
        self.device = device
        self.args = args
        self.alloc = alloc
        self.out = out
        self.set_data = lib.fn("dg_tensor_set_data") if alloc is not None else None


class _Table(threading.local):
    def __init__(self) -> None:
        self.plans: Dict[Any, Plan] = {}

    def clear(self) -> None:
        for plan in self.plans.values():
            destroy = plan.lib.functions.get("dg_tensor_destroy")
            for h in plan.args:
                if isinstance(h, c_void_p) and h.value:
                    destroy(h)
        self.plans.clear()

    def __del__(self) -> None:
        try:
            self.clear()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


_table = _Table()


def _plan(key: Any) -> Optional[Plan]:
    """The plan of ``key``, or None when there is none or it belongs to another library."""
    plan = _table.plans.get(key)
    return plan if plan is not None and plan.lib is _lib._library else None


def _launch(plan: Plan) -> None:
    """The plan's one C call on torch's current stream of its device; libdg's errors raise as on
    the full path."""
    dev = plan.device
    cu = _raw_stream(dev)
    handle = _stream._cache.get((dev, cu)) or _stream._cached(dev, cu)
    status = plan.fn(handle, *plan.args)
    if status != 0:
        plan.lib.check(status, plan.name)


def call(key: Any) -> bool:
    """Runs the plan of ``key`` and returns True, or returns False when there is none (or it
    belongs to another library)."""
    plan = _plan(key)
    if plan is None:
        return False
    _launch(plan)
    return True


def call_new(key: Any) -> Any:
    """Runs the plan of ``key``, a call that allocates its output, on a new output and returns it,
    or returns None when there is no plan (or it belongs to another library)."""
    plan = _plan(key)
    if plan is None:
        return None
    alloc = plan.alloc
    # torch's current stream of the device, as the full path allocates when no stream is given.
    result = alloc.empty(alloc.shape, dtype=alloc.dtype, device=alloc.device)
    status = plan.set_data(plan.out, result.data_ptr())
    if status != 0:
        plan.lib.check(status, "dg_tensor_set_data")
    if alloc.view is not None:
        result = result.as_strided(*alloc.view)
    _launch(plan)
    return result


def replay(key: Any, out: Any) -> Any:
    """The warm call of ``key``: its result (``out``, or the new output when ``out`` is None), or
    None when there is no plan."""
    if out is None:
        return call_new(key)
    return out if call(key) else None


def _descriptor(lib: Any, info: TensorInfo) -> c_void_p:
    rank = info.rank
    sizes = (c_int64 * max(rank, 1))(*info.shape)
    strides = (c_int64 * max(rank, 1))(*info.strides)
    handle = c_void_p()
    status = lib.fn("dg_tensor_create")(ctypes.byref(handle), c_void_p(info.ptr or None), info.dtype, rank, sizes, strides)
    lib.check(status, "dg_tensor_create")
    return handle


def store(key: Any, name: str, device: int, args: Sequence[Any], alloc: Optional[TorchAllocation] = None,
          out: int = -1) -> None:
    """Records the plan of a call that just succeeded with ``key``: ``name`` called with the stream
    and ``args``, where each :class:`TensorInfo` becomes a descriptor of the plan's own and anything
    else (None, a ctypes scalar, a ``byref`` of an options struct) passes as it is. A call that
    allocated its output with ``alloc`` names the output's argument with ``out``."""
    if tensor_types() is None:
        return
    lib = _lib.get()
    table = _table
    if len(table.plans) >= CAPACITY:
        table.clear()
    plan_args = tuple(_descriptor(lib, a) if isinstance(a, TensorInfo) else a for a in args)
    table.plans[key] = Plan(lib, name, device, plan_args, alloc, plan_args[out] if alloc is not None else None)


def clear() -> None:
    """Forgets this thread's plans (tests; a library reload makes them unused anyway)."""
    _table.clear()
