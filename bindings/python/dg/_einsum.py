"""DeepGEMM's einsum forms over ``dg_bf16_einsum`` (docs/einsum.md): ``bmk,bnk->mn`` (summed over
the batch, FP32 ``d``, ``c`` accumulated), ``bhr,hdr->bhd`` and ``bhd,hdr->bhr`` (the MLA weight
absorption products), BF16 operands read in place (strided views included)."""

from __future__ import annotations

from ctypes import byref, c_int64
from typing import Dict, Optional, Sequence

from . import _lib, _stream
from ._arguments import StreamLike, Tensor, _gemm_options, _int64s, _prepare, _writable
from ._tensor import Descriptors
from .errors import InvalidArgument

_NAME = "dg_bf16_einsum"
_PREPARE = "dg_bf16_einsum_prepare"


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


def einsum_prepare(expr: str, a_shape: Sequence[int], b_shape: Sequence[int], with_c: bool = False,
                   device: Optional[int] = None, stream: StreamLike = None,
                   options: Optional[Dict[str, int]] = None) -> None:
    """Compiles and loads the kernels :func:`einsum` will use for ``expr`` with operands of these
    shapes, running nothing (call it before capturing a CUDA graph)."""
    if not isinstance(expr, str):
        raise InvalidArgument("expr: %r (expected a string)" % (expr,))
    sizes = []
    for shape, name in ((a_shape, "a_shape"), (b_shape, "b_shape")):
        values = _int64s(shape, name)
        if len(values) != 3:
            raise InvalidArgument("%s: %r (expected 3 sizes)" % (name, tuple(values)))
        sizes.append((c_int64 * 3)(*values))
    lib = _lib.get()
    handle, _dev, _cu = _stream.resolve(stream, device)
    opts = _gemm_options(1.0, 1.0, options=options)
    status = lib.fn(_PREPARE)(handle, expr.encode("utf-8"), sizes[0], sizes[1], 1 if with_c else 0, byref(opts))
    lib.check(status, _PREPARE)
