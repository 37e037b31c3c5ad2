"""DeepGEMM's ``deep_gemm.legacy``: Triton kernels for SM80 (A100). libdg has none: any name read
from this module raises :class:`dg.Unsupported` (a ``NotImplementedError``)."""

from typing import Any

from ..errors import Unsupported


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise Unsupported("deep_gemm.legacy.%s: DeepGEMM's SM80 (A100) Triton kernels are not part of libdg" % name)
