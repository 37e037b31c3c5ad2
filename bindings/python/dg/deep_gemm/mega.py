"""DeepGEMM's Mega MoE (``deep_gemm.mega``): fused dispatch, expert GEMMs and combine over
symmetric memory, tcgen05 kernels for SM100 (Blackwell) only. libdg targets SM90 here: every name
exists and raises :class:`dg.Unsupported` (a ``NotImplementedError``)."""

from __future__ import annotations

from typing import Any

from ..errors import Unsupported

_SM100 = "%s: DeepGEMM's Mega MoE kernels run on SM100 (Blackwell) only; libdg has no SM90 form"


class SymmBuffer:
    """Placeholder of DeepGEMM's symmetric-memory buffer (SM100 Mega MoE)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise Unsupported(_SM100 % "SymmBuffer")


def _sm100_only(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise Unsupported(_SM100 % name)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = "DeepGEMM's ``%s``: SM100 only; raises dg.Unsupported." % name
    return call


get_symm_buffer_for_mega_moe = _sm100_only("get_symm_buffer_for_mega_moe")
transform_weights_for_mega_moe = _sm100_only("transform_weights_for_mega_moe")
fp8_fp4_mega_moe = _sm100_only("fp8_fp4_mega_moe")
bf16_mega_moe = _sm100_only("bf16_mega_moe")
