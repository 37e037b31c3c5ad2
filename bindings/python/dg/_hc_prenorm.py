"""The hyper-connection pre-norm GEMM (``tf32_hc_prenorm_gemm``, ``dg_tf32_hc_prenorm_gemm``)."""

from __future__ import annotations

from typing import Optional

from . import _lib
from ._tensor import Descriptors
from ._arguments import StreamLike, Tensor, _int32, _prepare, _writable
from .errors import InvalidArgument

_NAME = "dg_tf32_hc_prenorm_gemm"


def tf32_hc_prenorm_gemm(a: Tensor, b: Tensor, d: Tensor, sqr_sum: Tensor, num_splits: Optional[int] = None,
                         stream: StreamLike = None) -> None:
    """Hyper-connection pre-norm GEMM: ``d = a @ b.T`` and ``sqr_sum = (a * a).sum(-1)`` in one pass.

    Args:
        a: ``[M, K]`` bfloat16, stride 1 along K.
        b: ``[N, K]`` float32 (1 <= N <= 32), stride 1 along K.
        d: output float32 ``[M, N]``, or ``[num_splits, M, N]`` with ``num_splits``.
        sqr_sum: output float32 ``[M]``, or ``[num_splits, M]``.
        num_splits: None: full sums. An int >= 1: K is split into that many ranges of whole
            32-element chunks and ``d[s]``, ``sqr_sum[s]`` hold range s's partial sums (sum them
            over dimension 0); ranges past K's last chunk are zeros.
        stream: explicit stream; default: torch's current stream, else the legacy default.

    TF32 tensor-core products (A exact, B rounded to nearest TF32) with FP32 accumulation.
    """
    splits = 0 if num_splits is None else _int32(num_splits, "num_splits")
    if num_splits is not None and splits < 1:
        raise InvalidArgument("num_splits: %d (expected None or >= 1)" % splits)
    lib = _lib.get()
    fn = lib.fn(_NAME)
    handle, (ia, ib, idd, isq) = _prepare([(a, "a", None), (b, "b", None), (d, "d", None), (sqr_sum, "sqr_sum", None)],
                                          stream)
    _writable(idd, "d")
    _writable(isq, "sqr_sum")
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(isq), splits)
        lib.check(status, _NAME)
