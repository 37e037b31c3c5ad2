"""DeepGEMM 2.6 calls beyond the GEMM families: ``fp8_gemm_nt_skip_head_mid`` (libdg's kernel),
``einsum`` (its three forms, composed from libdg's GEMMs or torch) and ``tf32_hc_prenorm_gemm``
(libdg's kernel when the library has it)."""

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

    One libdg kernel (``dg.fp8_gemm_nt_skip_head_mid``): the GEMM's store writes each head's left
    and right columns in place. ``compiled_dims`` is accepted and unused."""
    del compiled_dims
    _reject_fp4(a, "a")
    _reject_fp4(b, "b")
    _gemm.fp8_gemm_nt_skip_head_mid(a, b, d, head_splits, recipe=recipe, disable_ue8m0_cast=disable_ue8m0_cast,
                                    stream=call_stream(a))


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
