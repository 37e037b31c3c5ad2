"""DeepGEMM 2.6's GEMM entry points with its argument lists and defaults, over libdg's functions.

The ``fp8_fp4_*`` names run libdg's FP8 path: SM90 has no FP4 tensor-core operands, so an FP4
operand (DeepGEMM packs E2M1 pairs into ``int8``/``uint8``, or ``float4_e2m1fn_x2``) raises
:class:`dg.Unsupported`. ``compiled_dims`` is accepted and ignored (libdg bakes no problem size
into a kernel); ``ensure_zero_padding`` matters on SM100 only in DeepGEMM.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from .. import _cublaslt, _gemm, _grouped, _k_grouped, _mqa
from ..errors import InvalidArgument, Unsupported
from ._runtime import call_stream

Recipe3 = Optional[Tuple[int, int, int]]
Recipe2 = Optional[Tuple[int, int]]

_FP4_DTYPES = ("int8", "uint8", "float4")


def _reject_fp4(operand: Any, name: str) -> None:
    data = operand[0] if isinstance(operand, tuple) else operand
    dtype = str(getattr(data, "dtype", ""))
    if any(tag in dtype for tag in _FP4_DTYPES):
        raise Unsupported(
            "%s: %s data is DeepGEMM's packed FP4 (E2M1); FP4 operands need SM100 (tcgen05), which libdg's "
            "SM90 path lacks; pass float8_e4m3fn data" % (name, dtype))


def _merge_recipe(recipe: Recipe3, recipe_a: Recipe2, recipe_b: Recipe2) -> Recipe3:
    """One ``(gran_m, gran_n, gran_k)`` from DeepGEMM's ``recipe`` or its per-operand pair."""
    if recipe_a is None and recipe_b is None:
        return None if recipe is None else tuple(int(x) for x in recipe)
    if recipe is not None:
        raise InvalidArgument("recipe: pass either recipe or recipe_a/recipe_b, not both")
    if recipe_a is None or recipe_b is None:
        raise InvalidArgument("recipe_a, recipe_b: pass both (gran_mn, gran_k) pairs")
    ra, rb = tuple(int(x) for x in recipe_a), tuple(int(x) for x in recipe_b)
    if len(ra) != 2 or len(rb) != 2 or ra[1] != rb[1]:
        raise Unsupported("recipe_a %r, recipe_b %r: libdg's SM90 FP8 GEMMs need (gran_mn, gran_k) pairs with one "
                          "gran_k" % (ra, rb))
    return (ra[0], rb[0], ra[1])


def _fp8_dense(layout: str):
    fn = getattr(_gemm, "fp8_gemm_" + layout)

    def gemm(a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, c: Any = None, recipe: Recipe3 = None,
             recipe_a: Recipe2 = None, recipe_b: Recipe2 = None, compiled_dims: str = "nk" if layout[0] == "n" else "mn",
             disable_ue8m0_cast: bool = False) -> None:
        del compiled_dims
        _reject_fp4(a, "a")
        _reject_fp4(b, "b")
        fn(a, b, d, c=c, disable_ue8m0_cast=disable_ue8m0_cast, recipe=_merge_recipe(recipe, recipe_a, recipe_b),
           stream=call_stream(a))

    gemm.__name__ = gemm.__qualname__ = "fp8_fp4_gemm_" + layout
    gemm.__doc__ = ("DeepGEMM's ``fp8_fp4_gemm_%s``: ``D = A @ B%s (+ C)`` on libdg's FP8 path "
                    "(:func:`dg.fp8_gemm_%s`); FP4 operands raise dg.Unsupported on SM90."
                    % (layout, ".T" if layout[1] == "t" else "", layout))
    return gemm


fp8_fp4_gemm_nt = _fp8_dense("nt")
fp8_fp4_gemm_nn = _fp8_dense("nn")
fp8_fp4_gemm_tn = _fp8_dense("tn")
fp8_fp4_gemm_tt = _fp8_dense("tt")
fp8_gemm_nt, fp8_gemm_nn, fp8_gemm_tn, fp8_gemm_tt = fp8_fp4_gemm_nt, fp8_fp4_gemm_nn, fp8_fp4_gemm_tn, fp8_fp4_gemm_tt


def _bf16_dense(layout: str):
    fn = getattr(_gemm, "bf16_gemm_" + layout)

    def gemm(a: Any, b: Any, d: Any, c: Any = None, compiled_dims: str = "nk" if layout[0] == "n" else "mn") -> None:
        del compiled_dims
        fn(a, b, d, c=c, stream=call_stream(a))

    gemm.__name__ = gemm.__qualname__ = "bf16_gemm_" + layout
    gemm.__doc__ = "DeepGEMM's ``bf16_gemm_%s`` over :func:`dg.bf16_gemm_%s`." % (layout, layout)
    return gemm


bf16_gemm_nt = _bf16_dense("nt")
bf16_gemm_nn = _bf16_dense("nn")
bf16_gemm_tn = _bf16_dense("tn")
bf16_gemm_tt = _bf16_dense("tt")


def _cublaslt_dense(layout: str):
    fn = getattr(_cublaslt, "cublaslt_gemm_" + layout)

    def gemm(a: Any, b: Any, d: Any, c: Any = None) -> None:
        fn(a, b, d, c=c, stream=call_stream(a))

    gemm.__name__ = gemm.__qualname__ = "cublaslt_gemm_" + layout
    gemm.__doc__ = "DeepGEMM's ``cublaslt_gemm_%s`` over :func:`dg.cublaslt_gemm_%s`." % (layout, layout)
    return gemm


cublaslt_gemm_nt = _cublaslt_dense("nt")
cublaslt_gemm_nn = _cublaslt_dense("nn")
cublaslt_gemm_tn = _cublaslt_dense("tn")
cublaslt_gemm_tt = _cublaslt_dense("tt")


def _m_grouped_fp8(layout: str):
    fn = getattr(_grouped, "m_grouped_fp8_gemm_%s_contiguous" % layout)

    def gemm(a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, grouped_layout: Any, recipe: Recipe3 = None,
             recipe_a: Recipe2 = None, recipe_b: Recipe2 = None, compiled_dims: str = "nk",
             disable_ue8m0_cast: bool = False, use_psum_layout: bool = False, ensure_zero_padding: bool = True,
             expected_m_for_psum_layout: Optional[int] = None) -> None:
        del compiled_dims, ensure_zero_padding
        _reject_fp4(a, "a")
        _reject_fp4(b, "b")
        fn(a, b, d, grouped_layout, recipe=_merge_recipe(recipe, recipe_a, recipe_b),
           disable_ue8m0_cast=disable_ue8m0_cast, use_psum_layout=use_psum_layout,
           expected_m_for_psum_layout=expected_m_for_psum_layout, stream=call_stream(a))

    gemm.__name__ = gemm.__qualname__ = "m_grouped_fp8_fp4_gemm_%s_contiguous" % layout
    gemm.__doc__ = ("DeepGEMM's ``m_grouped_fp8_fp4_gemm_%s_contiguous`` over "
                    ":func:`dg.m_grouped_fp8_gemm_%s_contiguous` (FP8 operands only on SM90)." % (layout, layout))
    return gemm


m_grouped_fp8_fp4_gemm_nt_contiguous = _m_grouped_fp8("nt")
m_grouped_fp8_fp4_gemm_nn_contiguous = _m_grouped_fp8("nn")
m_grouped_fp8_gemm_nt_contiguous = m_grouped_fp8_fp4_gemm_nt_contiguous
m_grouped_fp8_gemm_nn_contiguous = m_grouped_fp8_fp4_gemm_nn_contiguous


def m_grouped_fp8_fp4_gemm_nt_masked(a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, masked_m: Any, expected_m: int,
                                     recipe: Recipe3 = None, recipe_a: Recipe2 = None, recipe_b: Recipe2 = None,
                                     compiled_dims: str = "nk", disable_ue8m0_cast: bool = False) -> None:
    """DeepGEMM's masked M-grouped FP8/FP4 GEMM over :func:`dg.m_grouped_fp8_gemm_nt_masked`."""
    del compiled_dims
    _reject_fp4(a, "a")
    _reject_fp4(b, "b")
    _grouped.m_grouped_fp8_gemm_nt_masked(a, b, d, masked_m, expected_m, recipe=_merge_recipe(recipe, recipe_a, recipe_b),
                                          disable_ue8m0_cast=disable_ue8m0_cast, stream=call_stream(a))


m_grouped_fp8_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked
fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_fp4_gemm_nt_masked


def _m_grouped_bf16(layout: str):
    fn = getattr(_grouped, "m_grouped_bf16_gemm_%s_contiguous" % layout)

    def gemm(a: Any, b: Any, d: Any, grouped_layout: Any, compiled_dims: str = "nk", use_psum_layout: bool = False,
             ensure_zero_padding: bool = True, expected_m_for_psum_layout: Optional[int] = None) -> None:
        del compiled_dims, ensure_zero_padding
        fn(a, b, d, grouped_layout, use_psum_layout=use_psum_layout,
           expected_m_for_psum_layout=expected_m_for_psum_layout, stream=call_stream(a))

    gemm.__name__ = gemm.__qualname__ = "m_grouped_bf16_gemm_%s_contiguous" % layout
    gemm.__doc__ = "DeepGEMM's ``m_grouped_bf16_gemm_%s_contiguous`` over libdg's." % layout
    return gemm


m_grouped_bf16_gemm_nt_contiguous = _m_grouped_bf16("nt")
m_grouped_bf16_gemm_nn_contiguous = _m_grouped_bf16("nn")


def m_grouped_bf16_gemm_nt_masked(a: Any, b: Any, d: Any, masked_m: Any, expected_m: int,
                                  compiled_dims: str = "nk") -> None:
    """DeepGEMM's masked M-grouped BF16 GEMM over :func:`dg.m_grouped_bf16_gemm_nt_masked`."""
    del compiled_dims
    _grouped.m_grouped_bf16_gemm_nt_masked(a, b, d, masked_m, expected_m, stream=call_stream(a))


bf16_m_grouped_gemm_nt_masked = m_grouped_bf16_gemm_nt_masked


def _ks(ks_cpu: Optional[Sequence[int]], grouped_layout: Any, use_psum_layout: bool) -> Tuple[list, Any]:
    if ks_cpu is None:
        raise InvalidArgument("ks_cpu: libdg plans K-grouped calls from each group's K on the host; pass ks_cpu")
    # With the psum layout grouped_layout holds cumulative ends, not the ks libdg checks it against.
    return [int(x) for x in ks_cpu], (None if use_psum_layout else grouped_layout)


def _k_grouped_fp8(layout: str):
    fn = getattr(_k_grouped, "k_grouped_fp8_gemm_%s_contiguous" % layout)

    def gemm(a: Tuple[Any, Any], b: Tuple[Any, Any], d: Any, ks_cpu: Optional[Sequence[int]], grouped_layout: Any,
             c: Any = None, recipe: Tuple[int, int, int] = (1, 1, 128), compiled_dims: str = "mn",
             use_psum_layout: bool = False) -> None:
        del compiled_dims
        ks, ks_tensor = _ks(ks_cpu, grouped_layout, use_psum_layout)
        fn(a, b, d, ks, ks_tensor=ks_tensor, c=c, recipe=recipe, stream=call_stream(a))

    gemm.__name__ = gemm.__qualname__ = "k_grouped_fp8_gemm_%s_contiguous" % layout
    gemm.__doc__ = "DeepGEMM's ``k_grouped_fp8_gemm_%s_contiguous`` over libdg's (needs ``ks_cpu``)." % layout
    return gemm


k_grouped_fp8_gemm_nt_contiguous = _k_grouped_fp8("nt")
k_grouped_fp8_gemm_tn_contiguous = _k_grouped_fp8("tn")


def k_grouped_bf16_gemm_tn_contiguous(a: Any, b: Any, d: Any, ks_cpu: Optional[Sequence[int]], grouped_layout: Any,
                                      c: Any = None, compiled_dims: str = "mn", use_psum_layout: bool = False) -> None:
    """DeepGEMM's ``k_grouped_bf16_gemm_tn_contiguous`` over libdg's (needs ``ks_cpu``)."""
    del compiled_dims
    ks, ks_tensor = _ks(ks_cpu, grouped_layout, use_psum_layout)
    _k_grouped.k_grouped_bf16_gemm_tn_contiguous(a, b, d, ks, ks_tensor=ks_tensor, c=c, stream=call_stream(a))


def fp8_fp4_mqa_logits(q: Any, kv: Tuple[Any, Any], weights: Any, cu_seq_len_k_start: Any, cu_seq_len_k_end: Any,
                       clean_logits: bool = True, max_seqlen_k: int = 0, logits_dtype: Any = None) -> Any:
    """DeepGEMM's ``fp8_fp4_mqa_logits`` over :func:`dg.fp8_mqa_logits` (FP8 q and kv on SM90;
    ``logits_dtype`` defaults to float32)."""
    _reject_fp4(q, "q")
    _reject_fp4(kv, "kv")
    return _mqa.fp8_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=clean_logits,
                               max_seqlen_k=max_seqlen_k, logits_dtype=logits_dtype, stream=call_stream(q))


def fp8_mqa_logits(q: Any, kv: Tuple[Any, Any], weights: Any, cu_seq_len_k_start: Any, cu_seq_len_k_end: Any,
                   clean_logits: bool = True, max_seqlen_k: int = 0) -> Any:
    """DeepGEMM's older ``fp8_mqa_logits`` (float32 logits)."""
    return fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits, max_seqlen_k)


def _no_indices(indices: Any) -> None:
    if indices is not None:
        raise Unsupported("indices: libdg's paged MQA logits score every cached key; the indexed form is not there")


def get_paged_mqa_logits_metadata(context_lens: Any, block_kv: int, num_sms: int, indices: Any = None) -> Any:
    """DeepGEMM's schedule for the paged MQA logits over libdg's (``indices`` unsupported)."""
    _no_indices(indices)
    return _mqa.get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms, stream=call_stream(context_lens))


def fp8_fp4_paged_mqa_logits(q: Any, kv_cache: Any, weights: Any, context_lens: Any, block_table: Any,
                             schedule_meta: Any, max_context_len: int, clean_logits: bool = False,
                             logits_dtype: Any = None, indices: Any = None) -> Any:
    """DeepGEMM's ``fp8_fp4_paged_mqa_logits`` over :func:`dg.fp8_paged_mqa_logits` (FP8 only on SM90)."""
    _reject_fp4(q, "q")
    _no_indices(indices)
    return _mqa.fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len,
                                     clean_logits=clean_logits, logits_dtype=logits_dtype, stream=call_stream(q))


def fp8_paged_mqa_logits(q: Any, kv_cache: Any, weights: Any, context_lens: Any, block_table: Any,
                         schedule_meta: Any, max_context_len: int, clean_logits: bool = False,
                         indices: Any = None) -> Any:
    """DeepGEMM's older ``fp8_paged_mqa_logits`` (float32 logits)."""
    return fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len,
                                    clean_logits, None, indices)
