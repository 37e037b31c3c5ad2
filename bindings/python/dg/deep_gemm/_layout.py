"""DeepGEMM's scaling-factor layout calls with its argument lists, over libdg's."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple, Union

from .. import _layout
from ..errors import InvalidArgument, Unsupported
from ._runtime import call_stream

get_tma_aligned_size = _layout.get_tma_aligned_size


def transform_sf_into_required_layout(sf: Any, mn: int, k: int,
                                      recipe: Union[Tuple[int, int, int], Tuple[int, int]],
                                      num_groups: Optional[int] = None, is_sfa: Optional[bool] = None,
                                      disable_ue8m0_cast: bool = False, psum_layout: Any = None) -> Any:
    """As DeepGEMM: a 3-element ``recipe`` ``(gran_m, gran_n, gran_k)`` needs ``is_sfa`` to pick the
    operand; a 2-element ``(gran_mn, gran_k)`` must come without it. ``psum_layout`` (SM100 packing
    that skips gap rows) is not supported."""
    r = tuple(int(x) for x in recipe)
    if len(r) == 3 and is_sfa is None:
        raise InvalidArgument("is_sfa: required with a 3-element recipe %r (which operand's granularity?)" % (r,))
    if len(r) == 2 and is_sfa is not None:
        raise InvalidArgument("is_sfa: must be None with a 2-element recipe %r" % (r,))
    if psum_layout is not None:
        raise Unsupported("psum_layout: the SM100 UE8M0 packing that skips gap rows is not in libdg")
    return _layout.transform_sf_into_required_layout(sf, mn, k, r, num_groups=num_groups, is_sfa=bool(is_sfa),
                                                     disable_ue8m0_cast=disable_ue8m0_cast, stream=call_stream(sf))


def get_mn_major_tma_aligned_tensor(sf: Any) -> Any:
    """FP32 scales into the MN-major TMA-aligned layout (a new tensor, or ``sf`` when it has it)."""
    return _layout.get_mn_major_tma_aligned_tensor(sf, stream=call_stream(sf))


def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Any, psum_layout: Any = None) -> Any:
    """FP32 scales packed into UE8M0 words, MN-major and TMA-aligned (``psum_layout`` unsupported)."""
    if psum_layout is not None:
        raise Unsupported("psum_layout: the UE8M0 packing that skips gap rows is not in libdg")
    return _layout.get_mn_major_tma_aligned_packed_ue8m0_tensor(sf, stream=call_stream(sf))


def get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Any, grouped_layout: Any, ks_cpu: Sequence[int],
                                                           gran_k: int, k_alignment: int,
                                                           use_psum_layout: bool = False) -> Any:
    """K-grouped UE8M0 packing over libdg's (gran_k 128, no psum layout); ``grouped_layout`` is the
    device copy of ``ks_cpu``."""
    return _layout.get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(
        sf, grouped_layout, [int(x) for x in ks_cpu], gran_k, k_alignment, use_psum_layout, stream=call_stream(sf))
