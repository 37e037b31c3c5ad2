"""DeepGEMM's quantisation helpers (``deep_gemm.utils.math``), written with torch ops.

FP8 is E4M3 (largest finite 448); a scale covers ``gran_k`` consecutive elements of a row
(per token), of a column (per channel) or a ``gran_k x gran_k`` block. Amax is clamped to 1e-4 so
an all-zero group gets a finite scale. With ``use_ue8m0`` each scale is rounded up to a power of
two (the exponent-only format SM100 reads); ``use_packed_ue8m0`` packs four such exponents per int32.
"""

from __future__ import annotations

from typing import Any, Tuple

__all__ = [
    "align", "cast_back_from_fp4", "ceil_div", "ceil_to_ue8m0", "pack_ue8m0_to_int", "per_block_cast_to_fp8",
    "per_channel_cast_to_fp8", "per_custom_dims_cast_to_fp8", "per_token_cast_to_fp4", "per_token_cast_to_fp8",
    "transpose_packed_fp4", "unpack_ue8m0_from_int",
]

E4M3_MAX = 448.0
E2M1_MAX = 6.0
AMAX_FLOOR = 1e-4
_MANTISSA_BITS = 23
_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _torch() -> Any:
    import torch  # deferred: the package imports without torch

    return torch


def ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def align(x: int, y: int) -> int:
    return ceil_div(x, y) * y


def ceil_to_ue8m0(x: Any) -> Any:
    """The smallest power of two >= |x| (exponent kept within 2^-126 .. 2^127), FP32."""
    torch = _torch()
    bits = x.abs().float().view(torch.int32)
    exponent = bits >> _MANTISSA_BITS
    exponent = exponent + ((bits & ((1 << _MANTISSA_BITS) - 1)) != 0).to(torch.int32)
    return (exponent.clamp(1, 254) << _MANTISSA_BITS).view(torch.float32)


def pack_ue8m0_to_int(x: Any) -> Any:
    """FP32 powers of two ``[..., 4n]`` -> int32 ``[..., n]``: their exponent bytes, the first in the low byte."""
    torch = _torch()
    if x.dtype != torch.float32 or x.size(-1) % 4 != 0:
        raise ValueError("pack_ue8m0_to_int: expected float32 with a last dimension divisible by 4")
    bits = x.view(torch.int32)
    if bool(((bits < 0) | ((bits & ((1 << _MANTISSA_BITS) - 1)) != 0)).any()):
        raise ValueError("pack_ue8m0_to_int: every value must be a non-negative power of two")
    return (bits >> _MANTISSA_BITS).to(torch.uint8).view(torch.int32)


def unpack_ue8m0_from_int(packed_sf: Any) -> Any:
    """The inverse of :func:`pack_ue8m0_to_int`."""
    torch = _torch()
    return (packed_sf.view(torch.uint8).to(torch.int32) << _MANTISSA_BITS).view(torch.float32)


def _scale(amax: Any, fmt_max: float, use_ue8m0: bool) -> Any:
    sf = amax.clamp(min=AMAX_FLOOR) / fmt_max
    return ceil_to_ue8m0(sf) if use_ue8m0 else sf


def per_token_cast_to_fp8(x: Any, use_ue8m0: bool, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[Any, Any]:
    """``[M, N]`` -> (float8_e4m3fn ``[M, N]``, FP32 scales ``[M, ceil(N / gran_k)]``, or packed int32)."""
    torch = _torch()
    if x.dim() != 2:
        raise ValueError("per_token_cast_to_fp8: expected a 2-D tensor")
    m, n = x.shape
    padded = torch.zeros((m, align(n, gran_k)), dtype=x.dtype, device=x.device)
    padded[:, :n] = x
    groups = padded.view(m, -1, gran_k)
    sf = _scale(groups.abs().float().amax(dim=2), E4M3_MAX, use_ue8m0)
    q = (groups * (1.0 / sf).unsqueeze(2)).to(torch.float8_e4m3fn).view(m, -1)[:, :n].contiguous()
    return q, (pack_ue8m0_to_int(sf) if use_packed_ue8m0 else sf)


def per_channel_cast_to_fp8(x: Any, use_ue8m0: bool, gran_k: int = 128) -> Tuple[Any, Any]:
    """``[M, N]`` (M a multiple of ``gran_k``) -> (FP8, FP32 scales ``[M / gran_k, N]``): one scale per
    ``gran_k`` rows of a column."""
    torch = _torch()
    if x.dim() != 2 or x.size(0) % gran_k != 0:
        raise ValueError("per_channel_cast_to_fp8: expected [M, N] with M a multiple of gran_k")
    m, n = x.shape
    groups = x.view(-1, gran_k, n)
    sf = _scale(groups.abs().float().amax(dim=1), E4M3_MAX, use_ue8m0)
    return (groups * (1.0 / sf).unsqueeze(1)).to(torch.float8_e4m3fn).view(m, n), sf


def per_block_cast_to_fp8(x: Any, use_ue8m0: bool, gran_k: int = 128) -> Tuple[Any, Any]:
    """``[M, N]`` -> (FP8 ``[M, N]``, FP32 scales ``[ceil(M / gran_k), ceil(N / gran_k)]``)."""
    torch = _torch()
    if x.dim() != 2:
        raise ValueError("per_block_cast_to_fp8: expected a 2-D tensor")
    m, n = x.shape
    padded = torch.zeros((align(m, gran_k), align(n, gran_k)), dtype=x.dtype, device=x.device)
    padded[:m, :n] = x
    blocks = padded.view(padded.size(0) // gran_k, gran_k, padded.size(1) // gran_k, gran_k)
    sf = _scale(blocks.abs().float().amax(dim=(1, 3), keepdim=True), E4M3_MAX, use_ue8m0)
    q = (blocks * (1.0 / sf)).to(torch.float8_e4m3fn).view_as(padded)[:m, :n].contiguous()
    return q, sf.view(blocks.size(0), blocks.size(2))


def per_custom_dims_cast_to_fp8(x: Any, dims: Tuple[int, ...], use_ue8m0: bool) -> Tuple[Any, Any]:
    """One scale per index of the dimensions ``dims`` (amax over all others)."""
    torch = _torch()
    keep = set(dims)
    reduce = tuple(i for i in range(x.dim()) if i not in keep)
    sf = _scale(x.abs().float().amax(dim=reduce, keepdim=True), E4M3_MAX, use_ue8m0)
    return (x * (1.0 / sf)).to(torch.float8_e4m3fn), sf.squeeze()


def _e2m1_codes(x: Any) -> Any:
    """Nearest E2M1 code (sign in bit 3) of each value, as int8; ties go to the larger magnitude."""
    torch = _torch()
    mag = x.abs()
    code = torch.zeros_like(x, dtype=torch.uint8)
    for lo, hi in zip(_E2M1_VALUES[:-1], _E2M1_VALUES[1:]):
        code += (mag > (lo + hi) / 2).to(torch.uint8)
    negative = (x < 0) & (code != 0)
    return (code | (negative.to(torch.uint8) << 3)).view(torch.int8)


def _pack_nibbles(codes: Any) -> Any:
    pairs = codes.view(*codes.shape[:-1], -1, 2)
    return (pairs[..., 0] & 0x0F) | ((pairs[..., 1] & 0x0F) << 4)


def per_token_cast_to_fp4(x: Any, use_ue8m0: bool, gran_k: int = 128,
                          use_packed_ue8m0: bool = False) -> Tuple[Any, Any]:
    """``[M, N]`` (N even) -> (int8 ``[M, N / 2]``, two E2M1 per byte with the even element in the low
    nibble; scales ``[M, ceil(N / gran_k)]`` FP32, or packed UE8M0 padded to a multiple of four with 1.0)."""
    torch = _torch()
    m, n = x.shape
    if n % 2 != 0 or (use_packed_ue8m0 and not use_ue8m0):
        raise ValueError("per_token_cast_to_fp4: N must be even; use_packed_ue8m0 needs use_ue8m0")
    padded = torch.zeros((m, align(n, gran_k)), dtype=x.dtype, device=x.device)
    padded[:, :n] = x
    groups = padded.view(m, -1, gran_k)
    sf = _scale(groups.abs().float().amax(dim=2), E2M1_MAX, use_ue8m0)
    packed = _pack_nibbles(_e2m1_codes(groups * (1.0 / sf).unsqueeze(2)).view(m, -1))[:, :n // 2].contiguous()
    if not use_packed_ue8m0:
        return packed, sf
    extra = align(sf.size(-1), 4) - sf.size(-1)
    if extra:
        sf = torch.nn.functional.pad(sf, (0, extra), value=1.0)
    return packed, pack_ue8m0_to_int(sf)


def _unpack_nibbles(packed: Any) -> Any:
    torch = _torch()
    codes = torch.empty((*packed.shape[:-1], packed.size(-1) * 2), dtype=torch.int8, device=packed.device)
    codes[..., 0::2] = packed & 0x0F
    codes[..., 1::2] = (packed >> 4) & 0x0F
    return codes


def transpose_packed_fp4(a: Any) -> Any:
    """Packed FP4 ``[M, N / 2]`` (M even) -> packed FP4 of the transpose, ``[N, M / 2]``."""
    torch = _torch()
    if a.dtype != torch.int8 or a.dim() != 2 or a.size(0) % 2 != 0:
        raise ValueError("transpose_packed_fp4: expected int8 [M, N / 2] with M even")
    return _pack_nibbles(_unpack_nibbles(a).t().contiguous()).contiguous()


def cast_back_from_fp4(packed: Any, sf: Any, gran_k: int = 128, use_packed_ue8m0: bool = False) -> Any:
    """Packed FP4 and its scales back to FP32 ``[M, N]``."""
    torch = _torch()
    if use_packed_ue8m0:
        sf = unpack_ue8m0_from_int(sf)
    codes = _unpack_nibbles(packed).to(torch.int64)
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=packed.device)
    values = table[codes & 0x7]
    values = torch.where((codes & 0x8) != 0, -values, values)
    n = values.size(-1)
    return values * sf[:, torch.arange(n, device=packed.device) // gran_k]
