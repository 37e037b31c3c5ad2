"""DeepGEMM 2.6 calls that libdg has no kernel of its own for yet, composed from libdg's GEMMs or
torch: ``fp8_gemm_nt_skip_head_mid`` (a full GEMM, then the head columns copied around the
skipped middle), ``einsum`` (its three forms) and ``tf32_hc_prenorm_gemm`` (libdg's kernel when
the library has it)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .. import _gemm
from ..errors import InvalidArgument, Unsupported
from ._gemm import _reject_fp4
from ._runtime import call_stream

_EINSUM_FORMS = ("bmk,bnk->mn", "bhr,hdr->bhd", "bhd,hdr->bhr")


def fp8_gemm_nt_skip_head_mid(a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, head_splits: Tuple[int, int, int],
                              recipe: Optional[Tuple[int, int, int]] = None, compiled_dims: str = "nk",
                              disable_ue8m0_cast: bool = False) -> None:
    """``A @ B.T`` with B's rows grouped per head as ``left + right``, written into D whose heads are
    ``left + mid + right`` wide: the ``mid`` columns of every head are left untouched.

    Composed: one FP8 GEMM into a temporary ``[M, N]`` (torch) and two strided copies."""
    import torch

    del compiled_dims
    _reject_fp4(a, "a")
    _reject_fp4(b, "b")
    left, mid, right = (int(x) for x in head_splits)
    m, n = a[0].shape[0], b[0].shape[0]
    if left < 0 or mid < 0 or right < 0 or left + right == 0 or n % (left + right) != 0:
        raise InvalidArgument("head_splits: %r does not divide b's %d rows into heads of left + right"
                              % (tuple(head_splits), n))
    heads = n // (left + right)
    if tuple(d.shape) != (m, n + heads * mid):
        raise InvalidArgument("d: shape %r (expected (%d, %d): %d heads of %d columns)"
                              % (tuple(d.shape), m, n + heads * mid, heads, left + mid + right))
    if m == 0:
        return
    full = torch.empty((m, n), dtype=d.dtype, device=d.device)
    _gemm.fp8_gemm_nt(a, b, full, recipe=recipe, disable_ue8m0_cast=disable_ue8m0_cast, stream=call_stream(a))
    src = full.view(m, heads, left + right)
    dst = d.view(m, heads, left + mid + right)
    dst[:, :, :left].copy_(src[:, :, :left])
    dst[:, :, left + mid:].copy_(src[:, :, left:])


def einsum(expr: str, a: Any, b: Any, d: Any, c: Any = None, use_cublaslt: bool = False) -> None:
    """DeepGEMM's einsum forms: ``bmk,bnk->mn`` (summed over b, FP32 accumulation, ``d = c + ...``
    with FP32 ``c``), ``bhr,hdr->bhd`` and ``bhd,hdr->bhr`` (BF16).

    ``bmk,bnk->mn`` runs as one libdg BF16 GEMM with K = b * k over K-major copies of a and b; the
    two per-head forms run through torch (cuBLAS) until libdg has their kernels. ``use_cublaslt``
    is accepted (both paths end in cuBLAS or libdg)."""
    del use_cublaslt
    form = expr.replace(" ", "")
    if form not in _EINSUM_FORMS:
        raise Unsupported("expr: %r (libdg's einsum takes %s)" % (expr, ", ".join(_EINSUM_FORMS)))
    import torch
    if form == "bmk,bnk->mn":
        s, m, k = a.shape
        n = b.shape[1]
        if c is not None and (c.dtype != torch.float32 or d.dtype != torch.float32):
            raise InvalidArgument("c: accumulation needs FP32 c and d, got %s and %s" % (c.dtype, d.dtype))
        flat_a = a.permute(1, 0, 2).reshape(m, s * k)
        flat_b = b.permute(1, 0, 2).reshape(n, s * k)
        _gemm.bf16_gemm_nt(flat_a, flat_b, d, c=c, stream=call_stream(a))
        return
    if c is not None:
        raise InvalidArgument("c: only 'bmk,bnk->mn' accumulates")
    d.copy_(torch.einsum(form, a, b))


def fp8_einsum(expr: str, a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, c: Any = None,
               recipe: Tuple[int, int, int] = (1, 128, 128)) -> None:
    """DeepGEMM's FP8 ``bhr,hdr->bhd``: not in libdg yet."""
    raise Unsupported("fp8_einsum(%r): libdg has no FP8 einsum kernel yet; dequantise and call einsum" % (expr,))


def tf32_hc_prenorm_gemm(a: Any, b: Any, d: Any, sqr_sum: Any, num_splits: Optional[int] = None) -> None:
    """Hyper-connection pre-norm GEMM: ``D = A @ B.T`` (BF16 A ``[M, K]``, FP32 B ``[N, K]``, FP32
    D) and ``sqr_sum = sum_k A^2``; with ``num_splits`` the K range is split and D ``[splits, M, N]``,
    sqr_sum ``[splits, M]`` hold the partials (their sum over dimension 0 is the result)."""
    from .. import _hc_prenorm

    _hc_prenorm.tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits=num_splits, stream=call_stream(a))
