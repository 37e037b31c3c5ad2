"""Python numbers to C integers.

Every number a wrapper hands libdg as an integer goes through :func:`integer` (or one of its
spellings below): ctypes would silently wrap a Python int modulo 2^64 (``2**64 + 8`` becomes 8)
and ``int()`` truncates ``1.5`` to 1, so each value is checked against the C type's range and must
be integral (an int, an object with ``__index__`` such as a NumPy integer, or a float or 0-d
tensor holding a whole number). A value that fails raises :class:`dg.InvalidArgument` naming the
argument and the range.
"""

from __future__ import annotations

import ctypes
import operator
from typing import Any, Dict, Sequence, Tuple

from .errors import InvalidArgument

_SIZE_BITS = 8 * ctypes.sizeof(ctypes.c_size_t)
_POINTER_BITS = 8 * ctypes.sizeof(ctypes.c_void_p)

# Inclusive ranges of the C integer types that cross dg.h.
RANGES: Dict[str, Tuple[int, int]] = {
    "int32_t": (-(2**31), 2**31 - 1),
    "int64_t": (-(2**63), 2**63 - 1),
    "size_t": (0, 2**_SIZE_BITS - 1),
    "uint64_t": (0, 2**64 - 1),
    "pointer": (0, 2**_POINTER_BITS - 1),
}


def _integral(value: Any, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        pass
    try:
        iv = int(value)
        exact = bool(iv == value)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        exact = False
    if not exact:
        raise InvalidArgument("%s: expected an integer, got %r" % (name, value)) from None
    return iv


def integer(value: Any, name: str, c_type: str = "int64_t") -> int:
    """``value`` as a Python int that the C type ``c_type`` (a key of :data:`RANGES`) holds."""
    iv = value if type(value) is int else _integral(value, name)
    lo, hi = RANGES[c_type]
    if not lo <= iv <= hi:
        raise InvalidArgument("%s = %d is outside the %s range [%d, %d]" % (name, iv, c_type, lo, hi))
    return iv


def int32(value: Any, name: str) -> int:
    return integer(value, name, "int32_t")


def int64(value: Any, name: str) -> int:
    return integer(value, name, "int64_t")


def size(value: Any, name: str) -> int:
    """A ``size_t``: non-negative."""
    return integer(value, name, "size_t")


def int64s(values: Sequence[Any], name: str) -> Tuple[int, ...]:
    """Each of ``values`` as an ``int64_t``, named ``name[i]`` in errors."""
    if type(values) is tuple and all(type(v) is int and -(2**63) <= v < 2**63 for v in values):
        return values  # the common case (torch shapes, earlier results), without a call per entry
    try:
        items = list(values)
    except TypeError:
        raise InvalidArgument("%s: expected a sequence of integers, got %s" % (name, type(values).__name__)) from None
    return tuple(integer(v, "%s[%d]" % (name, i)) for i, v in enumerate(items))
