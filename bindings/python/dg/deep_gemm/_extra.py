"""DeepGEMM 2.6 calls beyond the GEMM families: ``fp8_gemm_nt_skip_head_mid`` (libdg's kernel,
docs/skip_head_mid.md), ``einsum`` and ``fp8_einsum`` (libdg's batched GEMM kernels, docs/einsum.md) and
``tf32_hc_prenorm_gemm`` (libdg's kernel when the library has it)."""

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
    """DeepGEMM's einsum forms on libdg's batched GEMM kernels (``dg.einsum``, docs/einsum.md):
    ``bmk,bnk->mn`` (summed over b in FP32; FP32 ``d`` with ``c`` None, ``d`` itself or another FP32
    tensor accumulated, or BF16 ``d`` without ``c`` through an FP32 temporary), ``bhr,hdr->bhd`` and
    ``bhd,hdr->bhr`` (BF16), every operand read in place.

    ``use_cublaslt`` (DeepGEMM's cuBLASLt path for the per-head forms) runs libdg's kernel as well;
    DeepGEMM refuses it for ``bmk,bnk->mn`` and so does this. Operands whose strides the TMA cannot
    read (a stride not a multiple of 16 bytes, a last dimension not contiguous) fall back to torch."""
    form = expr.replace(" ", "") if isinstance(expr, str) else expr
    if form not in _EINSUM_FORMS:
        raise Unsupported("expr: %r (libdg's einsum takes %s)" % (expr, ", ".join(_EINSUM_FORMS)))
    import torch
    stream = call_stream(a)
    if form == "bmk,bnk->mn":
        if use_cublaslt:
            raise InvalidArgument("use_cublaslt: DeepGEMM has no cuBLASLt path for 'bmk,bnk->mn'")
        if d.dtype == torch.bfloat16:
            if c is not None:
                raise InvalidArgument("c: a BF16 d takes no c (accumulation needs FP32 c and d)")
            acc = torch.empty(d.shape, dtype=torch.float32, device=d.device)
            _einsum_or_torch(form, a, b, acc, None, stream)
            d.copy_(acc)
            return
        if c is not None and c.dtype != torch.float32:
            raise InvalidArgument("c: accumulation needs FP32 c and d, got %s and %s" % (c.dtype, d.dtype))
        _einsum_or_torch(form, a, b, d, c, stream)
        return
    if c is not None:
        raise InvalidArgument("c: only 'bmk,bnk->mn' accumulates")
    _einsum_or_torch(form, a, b, d, None, stream)


def _einsum_or_torch(form: str, a: Any, b: Any, d: Any, c: Any, stream: Any) -> None:
    """libdg's kernel; torch where libdg cannot read the operands' layout (dg.Unsupported)."""
    from .. import _einsum

    try:
        _einsum.einsum(form, a, b, d, c=c, stream=stream)
        return
    except Unsupported:
        if not _layout_unsupported(a, b, d, c):
            raise
    import torch
    if form == "bmk,bnk->mn":
        total = torch.einsum("bmk,bnk->mn", a.float(), b.float())
        d.copy_(total if c is None else c + total)
    else:
        d.copy_(torch.einsum(form, a, b))


def _layout_unsupported(*tensors: Any) -> bool:
    """Whether a tensor has strides the TMA cannot read: a last dimension not contiguous, or another
    stride (of a dimension longer than 1) not a multiple of 16 bytes, or data not 16-byte aligned."""
    for t in tensors:
        if t is None:
            continue
        sizes, strides, item = t.shape, t.stride(), t.element_size()
        if t.data_ptr() % 16 != 0 or (sizes[-1] > 1 and strides[-1] != 1):
            return True
        if any(n > 1 and (s * item) % 16 != 0 for n, s in zip(sizes[:-1], strides[:-1])):
            return True
    return False


# DeepGEMM's FP8 forms that it runs on SM100 only.
_FP8_SM100_FORMS = ("bhd,hdr->bhr", "bhd,bhr->hdr")


def fp8_einsum(expr: str, a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, c: Any = None,
               recipe: Tuple[int, int, int] = (1, 128, 128)) -> None:
    """DeepGEMM's FP8 einsum as it runs on SM90: ``bhr,hdr->bhd`` with ``a = (x, sfa)`` (E4M3
    ``[b, h, r]``, FP32 per-token scales ``[b, h, ceil(r / 128)]``), ``b = (y, sfb)`` (E4M3
    ``[h, d, r]``, FP32 128 x 128 block scales ``[h, ceil(d / 128), ceil(r / 128)]``) and BF16 ``d``
    (libdg's ``dg.fp8_einsum``, docs/einsum.md#fp8). ``sfa`` is transformed as DeepGEMM does when
    it is not already in the per-head MN-major layout. ``c`` and recipes other than
    ``(1, 128, 128)`` raise :class:`dg.Unsupported`, as do DeepGEMM's SM100-only forms."""
    from .. import _einsum

    form = expr.replace(" ", "") if isinstance(expr, str) else expr
    if form in _FP8_SM100_FORMS:
        raise Unsupported("expr: %r (DeepGEMM runs this FP8 form on SM100 only; libdg's SM90 fp8_einsum takes "
                          "'bhr,hdr->bhd')" % (expr,))
    if form != "bhr,hdr->bhd":
        raise Unsupported("expr: %r (libdg's fp8_einsum takes 'bhr,hdr->bhd')" % (expr,))
    _reject_fp4(a, "a")
    _reject_fp4(b, "b")
    _einsum.fp8_einsum(form, a, b, d, c=c, recipe=recipe, stream=call_stream(a))


def tf32_hc_prenorm_gemm(a: Any, b: Any, d: Any, sqr_sum: Any, num_splits: Optional[int] = None) -> None:
    """Hyper-connection pre-norm GEMM: ``D = A @ B.T`` (BF16 A ``[M, K]``, FP32 B ``[N, K]``, FP32
    D) and ``sqr_sum = sum_k A^2``; with ``num_splits`` the K range is split and D ``[splits, M, N]``,
    sqr_sum ``[splits, M]`` hold the partials (their sum over dimension 0 is the result)."""
    from .. import _hc_prenorm

    _hc_prenorm.tf32_hc_prenorm_gemm(a, b, d, sqr_sum, num_splits=num_splits, stream=call_stream(a))
