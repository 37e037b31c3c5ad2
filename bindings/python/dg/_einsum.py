"""DeepGEMM's einsum forms over ``dg_bf16_einsum`` (docs/einsum.md): ``bmk,bnk->mn`` (summed over
the batch, FP32 ``d``, ``c`` accumulated), ``bhr,hdr->bhd`` and ``bhd,hdr->bhr`` (the MLA weight
absorption products), BF16 operands read in place (strided views included); and the FP8
``bhr,hdr->bhd`` over ``dg_fp8_einsum`` (DeepGEMM's ``fp8_einsum`` recipe on SM90)."""

from __future__ import annotations

from ctypes import byref, c_int64
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _lib, _stream
from ._arguments import (
    StreamLike,
    Tensor,
    _gemm_options,
    _int64s,
    _pair,
    _prepare,
    _prepare_call,
    _sf_recipe,
    _transform_info,
    _writable,
)
from ._tensor import ROLE_SF, Descriptors, TensorInfo
from .errors import InvalidArgument, Unsupported

_NAME = "dg_bf16_einsum"
_PREPARE = "dg_bf16_einsum_prepare"
_FP8_NAME = "dg_fp8_einsum"
_FP8_PREPARE = "dg_fp8_einsum_prepare"
# DeepGEMM's fp8_einsum recipe on SM90: per-token sfa x 128 of r, 128 x 128 block sfb.
FP8_EINSUM_RECIPE = (1, 128, 128)
_SF_BLOCK = 128


def einsum(expr: str, a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor] = None, stream: StreamLike = None,
           options: Optional[Dict[str, int]] = None) -> None:
    """One of three contractions of bfloat16 ``a`` and ``b`` into ``d``:

    - ``"bmk,bnk->mn"``: ``d = c + sum_b a[b] @ b[b].T``; a ``[s, m, k]``, b ``[s, n, k]``, d float32
      ``[m, n]``, c None (d = the sum), float32 ``[m, n]``, or d itself (d += the sum). The batch's K
      blocks are split over the SMs and summed with FP32 reduce-adds: the last bits vary run to run.
    - ``"bhr,hdr->bhd"``: a ``[b, h, r]``, b ``[h, d, r]``, d bfloat16 ``[b, h, d]``.
    - ``"bhd,hdr->bhr"``: a ``[b, h, d]``, b ``[h, d, r]``, d bfloat16 ``[b, h, r]``.

    Every tensor has stride 1 in its last dimension and its other strides multiples of 16 bytes;
    anything else, or another expression, raises :class:`dg.Unsupported`. ``options``: kernel-config
    overrides (``block_m``, ``block_n``, ``num_stages``, ``cluster``, ...), as for the GEMMs.
    """
    if not isinstance(expr, str):
        raise InvalidArgument("expr: %r (expected a string)" % (expr,))
    lib = _lib.get()
    fn = lib.fn(_NAME)
    handle, (ia, ib, idd, ic) = _prepare([(a, "a", None), (b, "b", None), (d, "d", None), (c, "c", None)], stream)
    _writable(idd, "d")
    opts = _gemm_options(1.0, 1.0, options=options)
    with Descriptors() as ds:
        status = fn(handle, expr.encode("utf-8"), ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ic), byref(opts))
        lib.check(status, _NAME)


def _swap_heads(info: TensorInfo) -> TensorInfo:
    """The same memory with the first two dimensions swapped (``sfa`` [b, h, ..] <-> [h, b, ..])."""
    shape = (info.shape[1], info.shape[0]) + tuple(info.shape[2:])
    strides = (info.strides[1], info.strides[0]) + tuple(info.strides[2:])
    return TensorInfo(info.ptr, info.dtype, shape, strides, info.device, info.source, info.keepalive, info.readonly,
                      info.is_torch)


def _fp8_recipe(recipe: Any) -> None:
    try:
        rt = tuple(int(x) for x in recipe)
    except TypeError:
        raise InvalidArgument("recipe: %r (expected a (gran_m, gran_n, gran_k) tuple)" % (recipe,)) from None
    if rt != FP8_EINSUM_RECIPE:
        raise Unsupported("recipe: %r (libdg's SM90 FP8 einsum takes DeepGEMM's %r: per-token sfa, 128 x 128 block "
                          "sfb)" % (rt, FP8_EINSUM_RECIPE))


def _head_scales(handle: Any, sfa: TensorInfo, r: int, dev: int, cu: int) -> Tuple[TensorInfo, Any]:
    """sfa [b, h, ceil(r / 128)] in the layout dg_fp8_einsum reads: its [h, b, ..] view MN-major and
    TMA-aligned per head (transformed where it is not; the new tensor must outlive the call)."""
    if sfa.rank != 3 or 0 in sfa.shape:
        return sfa, None  # libdg checks the shape; nothing to transform
    recipe = _sf_recipe(1, _SF_BLOCK, sfa.shape[1], False)
    per_head, obj = _transform_info(handle, _swap_heads(sfa), sfa.shape[0], r, recipe, None, "sfa", dev, cu)
    return _swap_heads(per_head), obj


def fp8_einsum(expr: str, a: Tuple[Tensor, Tensor], b: Tuple[Tensor, Tensor], d: Tensor, c: Optional[Tensor] = None,
               recipe: Sequence[int] = FP8_EINSUM_RECIPE, stream: StreamLike = None,
               options: Optional[Dict[str, int]] = None) -> None:
    """``"bhr,hdr->bhd"`` on FP8 operands (docs/einsum.md#fp8): ``d[b, h, :] = (a[b, h, :] with its
    scales) @ (b[h] with its scales).T`` for every head h.

    - ``a``: ``(float8_e4m3fn [b, h, r], float32 sfa [b, h, ceil(r / 128)])``, one scale per token,
      head and 128 of r; any layout DeepGEMM accepts (``per_token_cast_to_fp8``'s row-major one is
      transformed into the per-head MN-major layout libdg reads, a tensor already in it is read in place).
    - ``b``: ``(float8_e4m3fn [h, d, r], float32 sfb [h, ceil(d / 128), ceil(r / 128)])``, one scale
      per head and 128 x 128 block.
    - ``d``: bfloat16 ``[b, h, d]``, written. ``c`` must be None and ``recipe`` ``(1, 128, 128)``
      (DeepGEMM's SM90 path has no other); data and ``d`` have stride 1 in their last dimension and
      16-byte multiples elsewhere. Other expressions raise :class:`dg.Unsupported`.
    ``options``: kernel-config overrides, as for the GEMMs.
    """
    if not isinstance(expr, str):
        raise InvalidArgument("expr: %r (expected a string)" % (expr,))
    _fp8_recipe(recipe)
    lib = _lib.get()
    fn = lib.fn(_FP8_NAME)
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    handle, dev, cu, infos = _prepare_call(
        [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None),
         (c, "c", None)], stream)
    ia, isfa, ib, isfb, idd, ic = infos
    assert ia is not None and isfa is not None
    _writable(idd, "d")
    isfa2, keep = _head_scales(handle, isfa, ia.shape[-1] if ia.rank == 3 else 0, dev, cu)
    opts = _gemm_options(1.0, 1.0, options=options)
    with Descriptors() as ds:
        status = fn(handle, expr.encode("utf-8"), ds.add(ia), ds.add(isfa2), ds.add(ib), ds.add(isfb), ds.add(idd),
                    ds.add(ic), byref(opts))
        lib.check(status, _FP8_NAME)
    del keep


def fp8_einsum_prepare(expr: str, a_shape: Sequence[int], b_shape: Sequence[int], device: Optional[int] = None,
                       stream: StreamLike = None, options: Optional[Dict[str, int]] = None) -> None:
    """Compiles and loads the kernel :func:`fp8_einsum` will use for ``expr`` with ``a`` of shape
    ``(b, h, r)`` and ``b`` of shape ``(h, d, r)``, running nothing (call it before capturing a CUDA
    graph)."""
    _prepare_kernels(_FP8_PREPARE, expr, a_shape, b_shape, False, device, stream, options)


def _prepare_kernels(name: str, expr: str, a_shape: Sequence[int], b_shape: Sequence[int], with_c: bool,
                     device: Optional[int], stream: StreamLike, options: Optional[Dict[str, int]]) -> None:
    """The C prepare call `name` (``dg_bf16_einsum_prepare`` or ``dg_fp8_einsum_prepare``)."""
    if not isinstance(expr, str):
        raise InvalidArgument("expr: %r (expected a string)" % (expr,))
    sizes = _three_sizes(a_shape, b_shape)
    lib = _lib.get()
    handle, _dev, _cu = _stream.resolve(stream, device)
    opts = _gemm_options(1.0, 1.0, options=options)
    status = lib.fn(name)(handle, expr.encode("utf-8"), sizes[0], sizes[1], 1 if with_c else 0, byref(opts))
    lib.check(status, name)


def _three_sizes(a_shape: Sequence[int], b_shape: Sequence[int]) -> List[Any]:
    sizes = []
    for shape, name in ((a_shape, "a_shape"), (b_shape, "b_shape")):
        values = _int64s(shape, name)
        if len(values) != 3:
            raise InvalidArgument("%s: %r (expected 3 sizes)" % (name, tuple(values)))
        sizes.append((c_int64 * 3)(*values))
    return sizes


def einsum_prepare(expr: str, a_shape: Sequence[int], b_shape: Sequence[int], with_c: bool = False,
                   device: Optional[int] = None, stream: StreamLike = None,
                   options: Optional[Dict[str, int]] = None) -> None:
    """Compiles and loads the kernels :func:`einsum` will use for ``expr`` with operands of these
    shapes, running nothing (call it before capturing a CUDA graph)."""
    _prepare_kernels(_PREPARE, expr, a_shape, b_shape, with_c, device, stream, options)
