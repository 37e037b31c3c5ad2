"""FP8 quantization (``dg_quantize_fp8_*``; docs/quantization.md): BF16 or FP32 tensors to E4M3
codes with FP32 (or packed UE8M0) scales, written in the layouts libdg's FP8 GEMMs read (the
K-grouped form also pads each group to 128 rows and can write the nt GEMM's K-major operand).

Each function returns ``(codes, scales)``. For torch inputs the outputs are allocated with torch
when not given (on the stream the kernel runs on); other callers pass ``out`` and ``sf`` (the
``get_mn_major_tma_aligned*_layout`` queries give the scale layouts)."""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _lib
from ._layout import get_mn_major_tma_aligned_packed_ue8m0_tensor_layout, get_mn_major_tma_aligned_tensor_layout
from ._tensor import FLOAT8_E4M3, FLOAT32, ROLE_SF, Descriptors, TensorInfo, allocate_torch, contiguous_strides, describe
from ._arguments import StreamLike, Tensor, _ks_array, _memo, _prepare_call, _writable
from .errors import InvalidArgument

GROUP = 128  # elements per scale along the quantized axis

_OPTIONS: Dict[Any, _lib.QuantOptions] = {}


def _options(pow2_scales: bool, amax_floor: float) -> _lib.QuantOptions:
    key = (bool(pow2_scales), float(amax_floor))
    return _memo(_OPTIONS, key, lambda: _lib.QuantOptions(pow2_scales=int(key[0]), amax_floor=key[1]))


def _ceil(a: int, b: int) -> int:
    return (a + b - 1) // b


def _alloc(like: TensorInfo, dtype: int, sizes: Sequence[int], strides: Sequence[int], cu: int) -> Any:
    extent = 1 + sum((s - 1) * st for s, st in zip(sizes, strides)) if all(s > 0 for s in sizes) else 0
    itemsize = 1 if dtype == FLOAT8_E4M3 else 4
    return allocate_torch(like, dtype, sizes, strides, max(extent, 1) * itemsize, cu)


def _run(fn_name: str, x: Tensor, out: Optional[Tensor], sf: Optional[Tensor], extra: Sequence[Tuple[Any, str]],
         sf_shape: Any, stream: StreamLike, args_after: Sequence[Any], pow2_scales: bool, amax_floor: float,
         ) -> Tuple[Tensor, Tensor]:
    """Describes the tensors, allocates missing outputs (torch), and calls ``fn_name``.
    ``sf_shape(x_info)`` gives (dtype, sizes, strides) of the scales to allocate."""
    # Outputs left None are allocated below: only the given ones are described with the inputs.
    outputs = [(out, "out", None), (sf, "sf", ROLE_SF)]
    tensors = [(x, "x", None)] + [(t, n, None) for t, n in extra] + [o for o in outputs if o[0] is not None]
    handle, _dev, cu, infos = _prepare_call(tensors, stream)
    x_info, extra_infos, given = infos[0], infos[1:1 + len(extra)], iter(infos[1 + len(extra):])
    out_info = next(given) if out is not None else None
    sf_info = next(given) if sf is not None else None
    assert x_info is not None
    if out_info is None:
        if not x_info.is_torch:
            raise InvalidArgument("out: required for non-torch inputs (an E4M3 tensor with x's shape)")
        out = _alloc(x_info, FLOAT8_E4M3, x_info.shape, contiguous_strides(x_info.shape), cu)
        out_info = describe(out, "out")
    if sf_info is None:
        if not x_info.is_torch:
            raise InvalidArgument("sf: required for non-torch inputs (see docs/quantization.md for its layout)")
        dtype, sizes, strides = sf_shape(x_info)
        sf = _alloc(x_info, dtype, sizes, strides, cu)
        sf_info = describe(sf, "sf", ROLE_SF)
    _writable(out_info, "out")
    _writable(sf_info, "sf")
    lib = _lib.get()
    with Descriptors() as ds:
        handles = [ds.add(x_info), ds.add(out_info), ds.add(sf_info)] + [ds.add(i) for i in extra_infos]
        call_args = [handle] + handles + list(args_after) + [ctypes.byref(_options(pow2_scales, amax_floor))]
        lib.check(lib.fn(fn_name)(*call_args), fn_name)
    return out, sf


def _token_sf(packed: bool):
    def shape(x_info: TensorInfo):
        sizes = list(x_info.shape[:-1]) + [_ceil(x_info.shape[-1], GROUP)]
        query = get_mn_major_tma_aligned_packed_ue8m0_tensor_layout if packed else get_mn_major_tma_aligned_tensor_layout
        layout = query(sizes)
        return layout.dtype, layout.sizes, layout.strides

    return shape


def quantize_fp8_per_token(x: Tensor, out: Optional[Tensor] = None, sf: Optional[Tensor] = None, *,
                           pow2_scales: bool = False, packed_ue8m0: bool = False, amax_floor: float = 0.0,
                           stream: StreamLike = None) -> Tuple[Tensor, Tensor]:
    """1 x 128 per-token quantization of ``x`` (BF16/FP32 ``[M, K]`` or ``[G, M, K]``): E4M3 codes
    and scales ``[(G,) M, ceil(K/128)]`` in the MN-major TMA-aligned layout ``fp8_gemm_nt`` reads as
    ``sfa`` (``packed_ue8m0``: int32 UE8M0 words, the SM100 form). ``pow2_scales`` rounds scales up
    to powers of two; ``amax_floor`` 0 means 1e-4."""
    return _run("dg_quantize_fp8_per_token", x, out, sf, [], _token_sf(packed_ue8m0), stream, [], pow2_scales, amax_floor)


def quantize_fp8_per_token_contiguous(x: Tensor, grouped_layout: Tensor, num_groups: int, use_psum_layout: bool = False,
                                      out: Optional[Tensor] = None, sf: Optional[Tensor] = None, *,
                                      pow2_scales: bool = False, packed_ue8m0: bool = False, amax_floor: float = 0.0,
                                      stream: StreamLike = None) -> Tuple[Tensor, Tensor]:
    """Per-token quantization for ``m_grouped_fp8_gemm_nt_contiguous``: ``grouped_layout`` is the
    int32 per-row group index (-1 padding) or, with ``use_psum_layout``, the ``[num_groups]`` group
    ends. Padding rows' values are not used (they may be loaded); their codes and scales are written
    as 0."""
    layout = 1 if use_psum_layout else 0
    return _run("dg_quantize_fp8_per_token_contiguous", x, out, sf, [(grouped_layout, "grouped_layout")],
                _token_sf(packed_ue8m0), stream, [layout, int(num_groups)], pow2_scales, amax_floor)


def quantize_fp8_per_token_masked(x: Tensor, masked_m: Tensor, out: Optional[Tensor] = None, sf: Optional[Tensor] = None,
                                  *, pow2_scales: bool = False, packed_ue8m0: bool = False, amax_floor: float = 0.0,
                                  stream: StreamLike = None) -> Tuple[Tensor, Tensor]:
    """Per-token quantization for ``m_grouped_fp8_gemm_nt_masked``: ``x`` ``[G, max_m, K]``,
    ``masked_m`` int32 ``[G]`` on the device (never read by the host). Rows past a group's count
    are neither read nor written."""
    return _run("dg_quantize_fp8_per_token_masked", x, out, sf, [(masked_m, "masked_m")], _token_sf(packed_ue8m0),
                stream, [], pow2_scales, amax_floor)


def quantize_fp8_per_block(x: Tensor, out: Optional[Tensor] = None, sf: Optional[Tensor] = None, *,
                           pow2_scales: bool = False, amax_floor: float = 0.0,
                           stream: StreamLike = None) -> Tuple[Tensor, Tensor]:
    """128 x 128 per-block quantization of weights ``x`` (``[N, K]`` or ``[G, N, K]``): codes and
    FP32 scales ``[(G,) ceil(N/128), ceil(K/128)]`` contiguous (the 1D2D recipe's ``sfb``)."""

    def shape(x_info: TensorInfo):
        sizes = list(x_info.shape[:-2]) + [_ceil(x_info.shape[-2], GROUP), _ceil(x_info.shape[-1], GROUP)]
        return FLOAT32, sizes, contiguous_strides(sizes)

    return _run("dg_quantize_fp8_per_block", x, out, sf, [], shape, stream, [], pow2_scales, amax_floor)


def quantize_fp8_mn_major(x: Tensor, out: Optional[Tensor] = None, sf: Optional[Tensor] = None, *,
                          pow2_scales: bool = False, amax_floor: float = 0.0,
                          stream: StreamLike = None) -> Tuple[Tensor, Tensor]:
    """1 x 128 quantization of ``x`` ``[K, MN]`` (stride 1 along MN) along K: codes ``[K, MN]`` and
    scales ``[MN, ceil(K/128)]`` MN-major TMA-aligned, the operands of the K-grouped (weight
    gradient) ``k_grouped_fp8_gemm_tn_contiguous``."""

    def shape(x_info: TensorInfo):
        layout = get_mn_major_tma_aligned_tensor_layout([x_info.shape[1], _ceil(x_info.shape[0], GROUP)])
        return layout.dtype, layout.sizes, layout.strides

    return _run("dg_quantize_fp8_mn_major", x, out, sf, [], shape, stream, [], pow2_scales, amax_floor)


def k_grouped_padded_ks(ks: Sequence[int]) -> Sequence[int]:
    """Each count rounded up to 128: the ``ks`` to pass the K-grouped GEMMs that read the output of
    :func:`quantize_fp8_k_grouped`."""
    return [_ceil(int(k), GROUP) * GROUP for k in ks]


def quantize_fp8_k_grouped(x: Tensor, ks: Optional[Sequence[int]] = None, ks_tensor: Optional[Tensor] = None,
                           out: Optional[Tensor] = None, sf: Optional[Tensor] = None, *, k_major: bool = False,
                           out_rows: Optional[int] = None, pow2_scales: bool = False, amax_floor: float = 0.0,
                           stream: StreamLike = None) -> Tuple[Tensor, Tensor]:
    """1 x 128 quantization along K of the K-grouped GEMMs' operands (MoE weight gradient):
    ``x`` ``[rows, MN]`` (stride 1 along MN) holds each group's ``ks[g]`` rows one after another
    (any counts); each group is padded to a multiple of 128 rows in the output, so the codes and
    scales feed ``k_grouped_fp8_gemm_*_contiguous`` called with ``k_grouped_padded_ks(ks)``.

    Codes: ``[P, MN]`` MN-major (the tn form), or with ``k_major`` the flat ``[MN * P]`` whose group
    g is ``[MN, align(k_g, 128)]`` row-major (the nt form), P the padded rows. Scales: FP32
    ``[MN, P / 128]`` MN-major TMA-aligned. ``ks`` (host ints) or, without it, ``ks_tensor`` (int32
    ``[G]``, read on the device only; then ``out_rows`` sizes an allocated output, by default
    ``align(rows, 128) + 128 * G``, and groups that do not fit are not written). With ``ks`` given,
    ``ks_tensor`` is checked and not read."""
    lib = _lib.get()
    if ks is None and ks_tensor is None:
        raise InvalidArgument("ks: None and ks_tensor None (expected the host counts, or the int32 device counts)")
    ks_arr, groups = (None, 0) if ks is None else _ks_array(ks)
    tensors = [(x, "x", None), (ks_tensor, "ks_tensor", None)]
    tensors += [t for t in ((out, "out", None), (sf, "sf", ROLE_SF)) if t[0] is not None]
    handle, _dev, cu, infos = _prepare_call(tensors, stream)
    x_info, ks_info, given = infos[0], infos[1], iter(infos[2:])
    out_info = next(given) if out is not None else None
    sf_info = next(given) if sf is not None else None
    assert x_info is not None
    if ks is None:
        assert ks_info is not None
        groups = ks_info.shape[0] if ks_info.rank == 1 else 0
    rows, mn = (x_info.shape[0], x_info.shape[1]) if x_info.rank == 2 else (0, 0)  # libdg names a wrong rank
    if out_rows is None:
        out_rows = sum(k_grouped_padded_ks(ks)) if ks is not None else _ceil(rows, GROUP) * GROUP + GROUP * groups
    if out_info is None:
        if not x_info.is_torch:
            raise InvalidArgument("out: required for non-torch inputs (E4M3 [P, MN], or [MN * P] with k_major)")
        shape = [mn * out_rows] if k_major else [out_rows, mn]
        out = _alloc(x_info, FLOAT8_E4M3, shape, contiguous_strides(shape), cu)
        out_info = describe(out, "out")
    if sf_info is None:
        if not x_info.is_torch:
            raise InvalidArgument("sf: required for non-torch inputs (see docs/quantization.md for its layout)")
        layout = get_mn_major_tma_aligned_tensor_layout([mn, _ceil(int(out_rows), GROUP)])
        sf = _alloc(x_info, layout.dtype, layout.sizes, layout.strides, cu)
        sf_info = describe(sf, "sf", ROLE_SF)
    _writable(out_info, "out")
    _writable(sf_info, "sf")
    name = "dg_quantize_fp8_k_grouped"
    with Descriptors() as ds:
        status = lib.fn(name)(handle, ds.add(x_info), ds.add(out_info), ds.add(sf_info), ks_arr, groups,
                              ds.add(ks_info), ctypes.byref(_options(pow2_scales, amax_floor)))
        lib.check(status, name)
    return out, sf
