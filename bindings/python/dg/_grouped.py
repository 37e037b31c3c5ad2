"""M-grouped GEMMs (MoE experts): DeepGEMM's ``m_grouped_*`` names and arguments over
``dg_m_grouped_*``.

Scales may be passed in any layout DeepGEMM accepts: per-token A scales are transformed into the
MN-major TMA-aligned layout (batched for masked calls) when they do not have it, as the dense FP8
GEMMs do. Group tensors (``m_indices`` / ``grouped_layout``, ``masked_m``) stay on the device:
libdg never reads them on the host, so masked calls can be captured in CUDA graphs.
"""

from __future__ import annotations

from ctypes import byref
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _epilogue, _lib, _stream
from ._epilogue import GemmEpilogue
from ._tensor import ROLE_SF, Descriptors, TensorInfo
from ._arguments import (
    StreamLike,
    Tensor,
    _dtype_arg,
    _gemm_options,
    _int64,
    _int64s,
    _pair,
    _prepare_call,
    _sf_recipe,
    _transform_info,
    _writable,
)
from .errors import InvalidArgument, Unsupported

_RECIPE = (1, 128, 128)


def _check_recipe(recipe: Optional[Sequence[int]]) -> None:
    if recipe is not None and _int64s(recipe, "recipe") != _RECIPE:
        raise Unsupported("recipe %r: libdg's SM90 M-grouped FP8 GEMMs take %r (1D2D)" % (tuple(recipe), _RECIPE))


def _groups_arg(grouped_layout: Any, m_indices: Any) -> Any:
    if (grouped_layout is None) == (m_indices is None):
        raise InvalidArgument("grouped_layout: pass exactly one of grouped_layout and m_indices (the same tensor)")
    return grouped_layout if grouped_layout is not None else m_indices


def _fp8_scales(
    handle: Any, isfa: TensorInfo, isfb: TensorInfo, ib: TensorInfo, nn: bool, rows: int, k: int, masked_groups: int,
    disable_ue8m0_cast: bool, dev: int, cu: int
) -> Tuple[TensorInfo, TensorInfo, list]:
    """Transforms sfa (per token) and checks sfb (per block) as the C API needs them; returns their
    infos and the objects to keep alive through the call."""
    if ib.rank != 3:
        raise InvalidArgument("b: expected [G, N, K] (nt) or [G, K, N] (nn), got rank %d" % ib.rank)
    n = ib.shape[2] if nn else ib.shape[1]
    g = ib.shape[0]
    new_a, obj_a = _transform_info(handle, isfa, rows, k, _sf_recipe(1, 128, masked_groups, disable_ue8m0_cast), None,
                                   "sfa", dev, cu)
    sfb_nt = isfb.transposed() if nn else isfb
    new_b, obj_b = _transform_info(handle, sfb_nt, n, k, _sf_recipe(128, 128, g, disable_ue8m0_cast), None, "sfb",
                                   dev, cu)
    return new_a, (new_b.transposed() if nn else new_b), [obj_a, obj_b]


def _contiguous(
    kind: str, layout: str, a: Any, b: Any, d: Tensor, groups: Any, use_psum_layout: bool,
    expected_m: Optional[int], alpha: float, disable_ue8m0_cast: bool, stream: StreamLike,
    options: Optional[Dict[str, int]], epilogue: Optional[GemmEpilogue]
) -> None:
    lib = _lib.get()
    name = "dg_m_grouped_%s_gemm_%s_contiguous" % (kind, layout)
    fn = lib.fn(name)
    fp8 = kind == "fp8"
    keep: list = []
    code = _lib.M_GROUPED_LAYOUT_PSUM if use_psum_layout else _lib.M_GROUPED_LAYOUT_INDICES
    exp = _int64(expected_m or 0, "expected_m")
    opts = _gemm_options(alpha, 1.0, options=options)
    extra = _epilogue.tensors(epilogue)
    if fp8:
        a_data, a_sf = _pair(a, "a")
        b_data, b_sf = _pair(b, "b")
        handle, dev, cu, infos = _prepare_call(
            [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None),
             (groups, "grouped_layout", None)] + extra,
            stream,
        )
        ia, isfa, ib, isfb, idd, ig = infos[:6]
        assert ia is not None and isfa is not None and ib is not None and isfb is not None
        _writable(idd, "d")
        sfa2, sfb2, keep = _fp8_scales(handle, isfa, isfb, ib, layout == "nn", ia.shape[0], ia.shape[-1], 0,
                                       disable_ue8m0_cast, dev, cu)
        with Descriptors() as ds:
            o = _epilogue.with_epilogue(opts, epilogue, infos[6:], ds)
            status = fn(handle, ds.add(ia), ds.add(sfa2), ds.add(ib), ds.add(sfb2), ds.add(idd), ds.add(ig), code, exp,
                        byref(o))
            lib.check(status, name)
    else:
        handle, _dev, _cu, infos = _prepare_call(
            [(a, "a", None), (b, "b", None), (d, "d", None), (groups, "grouped_layout", None)] + extra, stream
        )
        ia, ib, idd, ig = infos[:4]
        _writable(idd, "d")
        with Descriptors() as ds:
            o = _epilogue.with_epilogue(opts, epilogue, infos[4:], ds)
            status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ig), code, exp, byref(o))
            lib.check(status, name)
    del keep


def _masked(
    kind: str, a: Any, b: Any, d: Tensor, masked_m: Tensor, expected_m: int, alpha: float, disable_ue8m0_cast: bool,
    stream: StreamLike, options: Optional[Dict[str, int]], epilogue: Optional[GemmEpilogue]
) -> None:
    lib = _lib.get()
    name = "dg_m_grouped_%s_gemm_nt_masked" % kind
    fn = lib.fn(name)
    opts = _gemm_options(alpha, 1.0, options=options)
    keep: list = []
    extra = _epilogue.tensors(epilogue)
    if kind == "fp8":
        a_data, a_sf = _pair(a, "a")
        b_data, b_sf = _pair(b, "b")
        handle, dev, cu, infos = _prepare_call(
            [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None),
             (masked_m, "masked_m", None)] + extra,
            stream,
        )
        ia, isfa, ib, isfb, idd, im = infos[:6]
        assert ia is not None and isfa is not None and ib is not None and isfb is not None
        if ia.rank != 3:
            raise InvalidArgument("a: expected [G, max_m, K], got rank %d" % ia.rank)
        _writable(idd, "d")
        sfa2, sfb2, keep = _fp8_scales(handle, isfa, isfb, ib, False, ia.shape[1], ia.shape[2], ia.shape[0],
                                       disable_ue8m0_cast, dev, cu)
        with Descriptors() as ds:
            o = _epilogue.with_epilogue(opts, epilogue, infos[6:], ds)
            status = fn(handle, ds.add(ia), ds.add(sfa2), ds.add(ib), ds.add(sfb2), ds.add(idd), ds.add(im),
                        _int64(expected_m, "expected_m"), byref(o))
            lib.check(status, name)
    else:
        handle, _dev, _cu, infos = _prepare_call(
            [(a, "a", None), (b, "b", None), (d, "d", None), (masked_m, "masked_m", None)] + extra, stream
        )
        ia, ib, idd, im = infos[:4]
        _writable(idd, "d")
        with Descriptors() as ds:
            o = _epilogue.with_epilogue(opts, epilogue, infos[4:], ds)
            status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(im), _int64(expected_m, "expected_m"), byref(o))
            lib.check(status, name)
    del keep


_CONTIGUOUS_DOC = """M-grouped {kind} GEMM, contiguous layout: ``D[rows of g] = alpha * A[rows of g] @ B[g]{op}``.

Args:
    a: {a}
    b: {b}
    d: output ``[M, N]`` BF16, written in place.
    grouped_layout: int32 on the device: ``[M]``, each row's group (-1 for padding rows; every group
       starts at a multiple of ``get_mk_alignment_for_contiguous_layout()`` = 128, M a multiple of
       128), or with ``use_psum_layout`` ``[G]``, each group's end row (group g starts at the
       previous end aligned up to 128). ``m_indices=`` is accepted as its older name.
    use_psum_layout: read ``grouped_layout`` as per-group end rows.
    expected_m_for_psum_layout: rows per group the heuristic plans for (default M / G).
    alpha: scale of the product.
    stream: explicit stream; default: torch's current stream, else the legacy default.
    options: kernel-config overrides (``block_n``, ``num_stages``, ``num_sms``, ...).
    epilogue: a :class:`dg.GemmEpilogue` fused into the store (no bias on grouped calls): SwiGLU
       (``d`` then ``[M, N / 2]``; B's rows interleaved by :func:`dg.swiglu_interleave`) and a
       ``float8_e4m3fn`` ``d`` with per-(row, 128 columns) scales ``[M, ceil(N_d / 128)]``
       (``epilogue.d_scales``; :func:`dg.fp8_scales_like`), bit for bit
       :func:`dg.quantize_fp8_per_token_contiguous` of the BF16 result; their padding rows get
       codes and scales 0.

Padding rows of D (-1 entries, or rows between a group's end and the next group's start) that share
a 128-row block with a group are written as zeros; blocks without a group are not written.
"""

_A_FP8 = "``(data [M, K] float8_e4m3fn, scales [M, ceil(K/128)] FP32)``, per-token scales."
_B_FP8 = {
    "nt": "``(data [G, N, K] float8_e4m3fn, scales [G, ceil(N/128), ceil(K/128)] FP32)``.",
    "nn": "``(data [G, K, N], scales [G, ceil(K/128), ceil(N/128)])`` whose ``[N, K]`` views are K-major in memory.",
}
_B_BF16 = {"nt": "``[G, N, K]`` BF16.", "nn": "``[G, K, N]`` BF16 (K a multiple of 64)."}


def _make_contiguous(kind: str, layout: str) -> Any:
    fp8 = kind == "fp8"

    def gemm(
        a: Any,
        b: Any,
        d: Tensor,
        grouped_layout: Any = None,
        recipe: Optional[Sequence[int]] = None,
        compiled_dims: Optional[str] = None,
        disable_ue8m0_cast: bool = False,
        use_psum_layout: bool = False,
        expected_m_for_psum_layout: Optional[int] = None,
        alpha: float = 1.0,
        stream: StreamLike = None,
        options: Optional[Dict[str, int]] = None,
        m_indices: Any = None,
        epilogue: Optional[GemmEpilogue] = None,
    ) -> None:
        del compiled_dims  # libdg bakes no problem size into its kernels
        if fp8:
            _check_recipe(recipe)
        elif recipe is not None:
            raise InvalidArgument("recipe: BF16 GEMMs take no recipe")
        _contiguous(kind, layout, a, b, d, _groups_arg(grouped_layout, m_indices), use_psum_layout,
                    expected_m_for_psum_layout, alpha, disable_ue8m0_cast, stream, options, epilogue)

    gemm.__name__ = gemm.__qualname__ = "m_grouped_%s_gemm_%s_contiguous" % (kind, layout)
    gemm.__doc__ = _CONTIGUOUS_DOC.format(
        kind=kind.upper(), op=".T" if layout == "nt" else "", a=_A_FP8 if fp8 else "``[M, K]`` BF16, K-major.",
        b=(_B_FP8 if fp8 else _B_BF16)[layout])
    return gemm


m_grouped_fp8_gemm_nt_contiguous = _make_contiguous("fp8", "nt")
m_grouped_fp8_gemm_nn_contiguous = _make_contiguous("fp8", "nn")
m_grouped_bf16_gemm_nt_contiguous = _make_contiguous("bf16", "nt")
m_grouped_bf16_gemm_nn_contiguous = _make_contiguous("bf16", "nn")


def m_grouped_fp8_gemm_nt_masked(
    a: Tuple[Tensor, Tensor],
    b: Tuple[Tensor, Tensor],
    d: Tensor,
    masked_m: Tensor,
    expected_m: int,
    recipe: Optional[Sequence[int]] = None,
    compiled_dims: Optional[str] = None,
    disable_ue8m0_cast: bool = False,
    alpha: float = 1.0,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
    epilogue: Optional[GemmEpilogue] = None,
) -> None:
    """M-grouped FP8 GEMM, masked layout: ``D[g, :masked_m[g]] = alpha * A[g, :masked_m[g]] @ B[g].T``.

    Args:
        a: ``(data [G, max_m, K] float8_e4m3fn, scales [G, max_m, ceil(K/128)] FP32)``; max_m a
           multiple of 64.
        b: ``(data [G, N, K] float8_e4m3fn, scales [G, ceil(N/128), ceil(K/128)] FP32)``.
        d: output ``[G, max_m, N]`` BF16.
        masked_m: int32 ``[G]`` on the device: valid rows per group (clamped to [0, max_m]); never
           read on the host, so the call can be captured in a CUDA graph and replayed with new counts.
        expected_m: rows per group the heuristic plans for (> 0).
        alpha: scale of the product.
        stream, options: as for the dense GEMMs.
        epilogue: a :class:`dg.GemmEpilogue` fused into the store (no bias on grouped calls): SwiGLU
           (``d`` then ``[G, max_m, N / 2]``; B's rows interleaved by :func:`dg.swiglu_interleave`)
           and a ``float8_e4m3fn`` ``d`` with per-(row, 128 columns) scales
           ``[G, max_m, ceil(N_d / 128)]`` (``epilogue.d_scales``; :func:`dg.fp8_scales_like`), bit
           for bit :func:`dg.quantize_fp8_per_token_masked` of the BF16 result on the valid rows;
           rows past ``masked_m[g]`` get codes and scales 0.

    D rows past ``masked_m[g]`` are written as zeros to the end of their tile; later rows are not written.
    """
    del compiled_dims
    _check_recipe(recipe)
    _masked("fp8", a, b, d, masked_m, expected_m, alpha, disable_ue8m0_cast, stream, options, epilogue)


def m_grouped_bf16_gemm_nt_masked(
    a: Tensor,
    b: Tensor,
    d: Tensor,
    masked_m: Tensor,
    expected_m: int,
    compiled_dims: Optional[str] = None,
    alpha: float = 1.0,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
    epilogue: Optional[GemmEpilogue] = None,
) -> None:
    """M-grouped BF16 GEMM, masked layout (see :func:`m_grouped_fp8_gemm_nt_masked`, also for
    ``epilogue``): a ``[G, max_m, K]``, b ``[G, N, K]``, d ``[G, max_m, N]``, all BF16 (d
    ``[G, max_m, N / 2]`` with SwiGLU, ``float8_e4m3fn`` with ``epilogue.d_scales``)."""
    del compiled_dims
    _masked("bf16", a, b, d, masked_m, expected_m, alpha, False, stream, options, epilogue)


# DeepGEMM's older names of the masked GEMMs.
fp8_m_grouped_gemm_nt_masked = m_grouped_fp8_gemm_nt_masked
bf16_m_grouped_gemm_nt_masked = m_grouped_bf16_gemm_nt_masked

_GROUPINGS = {"contiguous": _lib.M_GROUPED_LAYOUT_INDICES, "psum": _lib.M_GROUPED_LAYOUT_PSUM,
              "masked": _lib.M_GROUPED_LAYOUT_MASKED}


def m_grouped_gemm_prepare(
    ab_dtype: Any,
    grouping: str,
    num_groups: int,
    m: int,
    n: int,
    k: int,
    expected_m: int = 0,
    layout: str = "nt",
    alpha: float = 1.0,
    device: Optional[int] = None,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
    epilogue: Optional[GemmEpilogue] = None,
) -> None:
    """Compiles and loads the kernel an M-grouped call will use, without running anything (call it
    before capturing a CUDA graph). ``grouping``: ``"contiguous"``, ``"psum"`` or ``"masked"``; ``m``:
    rows of A (contiguous) or max_m (masked); other arguments as the call will pass them. With
    ``epilogue`` (the call's :class:`dg.GemmEpilogue`; its tensors' shapes and dtypes are read, not
    their memory), d is ``float8_e4m3fn`` exactly when the epilogue has ``d_scales``."""
    if grouping not in _GROUPINGS:
        raise InvalidArgument("grouping: %r (expected one of %s)" % (grouping, sorted(_GROUPINGS)))
    if layout not in _lib.GEMM_LAYOUTS:
        raise InvalidArgument("layout: %r (expected 'nt' or 'nn')" % (layout,))
    lib = _lib.get()
    fn = lib.fn("dg_m_grouped_gemm_prepare")
    handle, _dev, _cu = _stream.resolve(stream, device)
    opts = _gemm_options(alpha, 1.0, options=options)
    with Descriptors() as ds:
        o = _epilogue.for_prepare(opts, epilogue, ds)
        status = fn(handle, _dtype_arg(ab_dtype, "ab_dtype"), _lib.GEMM_LAYOUTS[layout], _GROUPINGS[grouping],
                    _int64(num_groups, "num_groups"), _int64(m, "m"), _int64(n, "n"), _int64(k, "k"),
                    _int64(expected_m, "expected_m"), byref(o))
    lib.check(status, "dg_m_grouped_gemm_prepare")
