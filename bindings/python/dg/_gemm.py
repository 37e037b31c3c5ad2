"""The dense SM90 GEMMs: ``bf16_gemm_*``, ``fp8_gemm_*`` (nt/nn/tn/tt), ``fp8_gemm_nt_skip_head_mid`` and
``gemm_prepare``."""

from __future__ import annotations

from ctypes import byref, c_int64, c_size_t
from typing import Any, Callable, Dict, Optional, Tuple

from . import _epilogue, _fast, _lib, _stream
from ._tensor import ROLE_SF, UINT8, Descriptors, TensorInfo, allocate_torch, describe
from .errors import InvalidArgument
from ._epilogue import GemmEpilogue
from ._arguments import (
    Recipe,
    StreamLike,
    Tensor,
    _SHAPES,
    _copied_k_major,
    _default_recipe,
    _dense_fp8_scales,
    _dtype_arg,
    _gemm_options,
    _int64,
    _nbytes,
    _nt_dims,
    _pair,
    _prepare_call,
    _recipe_code,
    _recipe_tuple,
    _writable,
)


_GEMM_ARGS_DOC = (
    "    d: output ``[M, N]``, BF16 or FP32, row-major; written in place.\n"
    "    c: optional accumulator ``[M, N]`` with ``d``'s dtype (may alias ``d``).\n"
    "    alpha, beta: scalars of the formula.\n"
    "    stream: explicit stream; default: torch's current stream, else the legacy default.\n"
)
_OPTIONS_DOC = (
    "    options: kernel-config overrides, fields of ``dg_gemm_options`` (``block_m``, ``block_n``,\n"
    "       ``num_stages``, ``cluster``, ``multicast_a``, ``num_math_warpgroups``, ``num_sms``);\n"
    "       unset fields are chosen by libdg's heuristic.\n"
)
_EPILOGUE_DOC = (
    "    epilogue: a :class:`dg.GemmEpilogue` fused into the store: a per-column bias ``[N]``, SwiGLU\n"
    "       (``d`` then ``[M, N / 2]``) and a ``float8_e4m3fn`` ``d`` with per-(row, 128 columns) scales\n"
    "       (``epilogue.d_scales``); not with ``c``. Such calls take the full Python path.\n"
)


_BF16_NAMES = {layout: "dg_bf16_gemm_%s" % layout for layout in _lib.GEMM_LAYOUTS}
_FP8_NAMES = {layout: "dg_fp8_gemm_%s" % layout for layout in _lib.GEMM_LAYOUTS}
# Scalars a warm-path key may hold (a tensor or an array as alpha would be keyed by identity).
_SCALARS = (float, int)


def _bf16_gemm(
    layout: str, a: Tensor, b: Tensor, d: Tensor, c: Optional[Tensor], alpha: float, beta: float, stream: StreamLike,
    options: Optional[Dict[str, int]], epilogue: Optional[GemmEpilogue] = None
) -> None:
    name = _BF16_NAMES[layout]
    key = None
    if stream is None and options is None and epilogue is None and type(alpha) in _SCALARS and type(beta) in _SCALARS:
        types = _fast._types or _fast.tensor_types()
        if types is not None and type(a) in types and type(b) in types and type(d) in types and (c is None or type(c) in types):
            key = (name, alpha, beta, a.data_ptr(), a.shape, a.stride(), a.dtype, b.data_ptr(), b.shape, b.stride(), b.dtype,
                   d.data_ptr(), d.shape, d.stride(), d.dtype, None if c is None else (c.data_ptr(), c.shape, c.stride(), c.dtype))
            if _fast.call(key):
                return
    lib = _lib.get()
    fn = lib.fn(name)  # dg.Unsupported when this build lacks it
    extra = _epilogue.tensors(epilogue)
    handle, dev, _cu, infos = _prepare_call([(a, "a", None), (b, "b", None), (d, "d", None), (c, "c", None)] + extra, stream)
    ia, ib, idd, ic = infos[:4]
    _writable(idd, "d")
    with Descriptors() as ds:
        opts = byref(_epilogue.with_epilogue(_gemm_options(alpha, beta, options=options), epilogue, infos[4:], ds))
        status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ic), opts)
        lib.check(status, name)
    if key is not None:
        _fast.store(key, name, dev, (ia, ib, idd, ic, opts))


def _make_bf16(layout: str) -> Callable[..., None]:
    def gemm(
        a: Tensor,
        b: Tensor,
        d: Tensor,
        c: Optional[Tensor] = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        stream: StreamLike = None,
        options: Optional[Dict[str, int]] = None,
        epilogue: Optional[GemmEpilogue] = None,
    ) -> None:
        _bf16_gemm(layout, a, b, d, c, alpha, beta, stream, options, epilogue)

    sa, sb, op = _SHAPES[layout]
    gemm.__name__ = gemm.__qualname__ = "bf16_gemm_%s" % layout
    gemm.__doc__ = (
        "BF16 GEMM: ``D = alpha * (%s) + beta * C``.\n\n"
        "Args:\n"
        "    a: ``%s`` bfloat16 (major-ness is read from the strides, so views work).\n"
        "    b: ``%s`` bfloat16.\n" % (op, sa, sb)
    ) + _GEMM_ARGS_DOC + _OPTIONS_DOC + _EPILOGUE_DOC + "Raises:\n    dg.InvalidArgument, dg.Unsupported, dg.NoDevice, dg.CompileError, dg.CudaError.\n"
    return gemm


bf16_gemm_nt = _make_bf16("nt")
bf16_gemm_nn = _make_bf16("nn")
bf16_gemm_tn = _make_bf16("tn")
bf16_gemm_tt = _make_bf16("tt")


def fp8_gemm_workspace_size(layout: str, m: int, n: int, k: int) -> int:
    """Bytes of workspace the FP8 GEMMs need when ``a`` and ``b`` are stored as ``layout`` names them
    (``dg_fp8_gemm_workspace_size``): a K-major copy of each operand stored ``[K, M]`` / ``[K, N]``
    (rows ``align(K, 16)`` bytes apart, each copy 256-byte aligned); 0 for ``"nt"``."""
    if layout not in _lib.GEMM_LAYOUTS:
        raise InvalidArgument("layout: expected one of nt, nn, tn, tt, got %r" % (layout,))
    out = c_size_t()
    _lib.get().call("dg_fp8_gemm_workspace_size", _lib.GEMM_LAYOUTS[layout], _int64(m, "m"), _int64(n, "n"), _int64(k, "k"), byref(out))
    return out.value


def _fp8_workspace(
    workspace: Any, a_nt: TensorInfo, b_nt: TensorInfo, m: int, n: int, k: int, cu: int
) -> Tuple[Optional[int], int, Any]:
    """(pointer, bytes, object to keep alive) of the workspace an FP8 call gets: the caller's, none
    (``False``), or for torch operands that need copies a buffer from torch's caching allocator on the
    call's stream, so that it is reused only after the call's work there."""
    if workspace is False:
        return None, 0, None
    if workspace is not None:
        info = describe(workspace, "workspace")
        return info.ptr, _nbytes(info), workspace
    copy_a, copy_b = k > 0 and _copied_k_major(a_nt), k > 0 and _copied_k_major(b_nt)
    like = a_nt if a_nt.is_torch else b_nt if b_nt.is_torch else None
    if not (copy_a or copy_b) or like is None:
        return None, 0, None  # libdg says what it needs where this guess falls short
    layout = "tn" if copy_a and copy_b else "tt" if copy_a else "nn"
    size = fp8_gemm_workspace_size(layout, m, n, k)
    if size == 0:
        return None, 0, None
    buf = allocate_torch(like, UINT8, [size], [1], size, cu)
    return buf.data_ptr(), size, buf


def _fp8_gemm(
    layout: str,
    a: Tuple[Tensor, Tensor],
    b: Tuple[Tensor, Tensor],
    d: Tensor,
    c: Optional[Tensor],
    alpha: float,
    beta: float,
    disable_ue8m0_cast: bool,
    recipe: Recipe,
    stream: StreamLike,
    options: Optional[Dict[str, int]] = None,
    workspace: Any = None,
    epilogue: Optional[GemmEpilogue] = None,
) -> None:
    name = _FP8_NAMES[layout]
    key = None
    if (stream is None and options is None and workspace is None and epilogue is None
            and type(alpha) in _SCALARS and type(beta) in _SCALARS
            and type(a) is tuple and type(b) is tuple and len(a) == 2 and len(b) == 2
            and (recipe is None or type(recipe) is tuple)):
        types = _fast._types or _fast.tensor_types()
        if types is not None:
            x, sx = a
            y, sy = b
            if (type(x) in types and type(sx) in types and type(y) in types and type(sy) in types and type(d) in types
                    and (c is None or type(c) in types)):
                key = (name, alpha, beta, bool(disable_ue8m0_cast), recipe,
                       x.data_ptr(), x.shape, x.stride(), x.dtype, sx.data_ptr(), sx.shape, sx.stride(), sx.dtype,
                       y.data_ptr(), y.shape, y.stride(), y.dtype, sy.data_ptr(), sy.shape, sy.stride(), sy.dtype,
                       d.data_ptr(), d.shape, d.stride(), d.dtype,
                       None if c is None else (c.data_ptr(), c.shape, c.stride(), c.dtype))
                if _fast.call(key):
                    return
    lib = _lib.get()
    fn = lib.fn(name)
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    handle, dev, cu, infos = _prepare_call(
        [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None), (c, "c", None)]
        + _epilogue.tensors(epilogue),
        stream,
    )
    ia, isfa, ib, isfb, idd, ic = infos[:6]
    assert ia is not None and ib is not None and isfa is not None and isfb is not None
    _writable(idd, "d")
    m, n, k, ta, tb = _nt_dims(ia, ib, layout)
    rt = _recipe_tuple(recipe)
    eff = rt if rt is not None else _default_recipe(isfb, n, tb)
    _recipe_code(eff)  # refuse an unknown recipe before any transform runs
    # Scales travel with their data; the transformed ones and the workspace must outlive the call.
    isfa2, isfb2, keep = _dense_fp8_scales(handle, isfa, isfb, m, n, k, ta, tb, eff, disable_ue8m0_cast, dev, cu)
    a_nt, b_nt = (ia.transposed() if ta else ia), (ib.transposed() if tb else ib)
    ws_ptr, ws_size, ws = _fp8_workspace(workspace, a_nt, b_nt, m, n, k, cu)
    keep.append(ws)
    opts0 = _gemm_options(alpha, beta, _recipe_code(eff), disable_ue8m0_cast, options, ws_ptr, ws_size)
    with Descriptors() as ds:
        opts = byref(_epilogue.with_epilogue(opts0, epilogue, infos[6:], ds))
        status = fn(handle, ds.add(ia), ds.add(isfa2), ds.add(ib), ds.add(isfb2), ds.add(idd), ds.add(ic), opts)
        lib.check(status, name)
    # Warm path only where the call made nothing of its own (no scale copies, no workspace).
    if key is not None and keep[0] is a_sf and keep[1] is b_sf and ws is None:
        _fast.store(key, name, dev, (ia, isfa2, ib, isfb2, idd, ic, opts))
    del keep


def _fp8_doc(layout: str) -> str:
    shapes = _SHAPES[layout]
    return (
        "FP8 GEMM with fine-grained scaling: ``D = alpha * (%s) + beta * C``.\n\n"
        "Args:\n"
        "    a: ``(data %s float8_e4m3fn, scales)``; per-token FP32 scales ``[M, ceil(K/128)]`` in any\n"
        "       layout DeepGEMM accepts (transformed to MN-major TMA-aligned when needed; scales are\n"
        "       transposed together with the data for the alias layouts).\n"
        "    b: ``(data %s float8_e4m3fn, scales)``; per-block ``[ceil(N/128), ceil(K/128)]`` (recipe\n"
        "       (1, 128, 128)) or per-token ``[N, ceil(K/128)]`` (recipe (1, 1, 128)); packed int32\n"
        "       UE8M0 on SM100.\n"
        "    d: output ``[M, N]``: BF16 (1D2D, no C) or FP32 with C (1D1D) on SM90.\n"
        "    c: optional accumulator (may alias ``d``).\n"
        "    alpha, beta: scalars of the formula.\n"
        "    disable_ue8m0_cast: SM100: keep FP32 scales.\n"
        "    recipe: ``(1, 128, 128)`` (1D2D) or ``(1, 1, 128)`` (1D1D); default: read from ``b``'s\n"
        "       scales (per-token rows -> 1D1D, else 1D2D).\n"
        "    stream: explicit stream; default: torch's current stream, else the legacy default.\n"
    ) % (shapes[2], shapes[0], shapes[1]) + _OPTIONS_DOC + (
        "    workspace: device memory (a tensor, 256-byte aligned) for K-major copies of operands that are\n"
        "       MN-major in memory, which SM90 FP8 tensor cores cannot read (``fp8_gemm_workspace_size``\n"
        "       gives the bytes). Default: for torch operands that need copies, a buffer from torch's\n"
        "       caching allocator on the call's stream; ``False`` for none (such operands then raise\n"
        "       dg.Unsupported). Unused when both operands are K-major.\n"
    ) + _EPILOGUE_DOC


def _make_fp8(layout: str) -> Callable[..., None]:
    def gemm(
        a: Tuple[Tensor, Tensor],
        b: Tuple[Tensor, Tensor],
        d: Tensor,
        c: Optional[Tensor] = None,
        alpha: float = 1.0,
        beta: float = 1.0,
        disable_ue8m0_cast: bool = False,
        recipe: Recipe = None,
        stream: StreamLike = None,
        options: Optional[Dict[str, int]] = None,
        workspace: Any = None,
        epilogue: Optional[GemmEpilogue] = None,
    ) -> None:
        _fp8_gemm(layout, a, b, d, c, alpha, beta, disable_ue8m0_cast, recipe, stream, options, workspace, epilogue)

    gemm.__name__ = gemm.__qualname__ = "fp8_gemm_%s" % layout
    gemm.__doc__ = _fp8_doc(layout)
    return gemm


fp8_gemm_nt = _make_fp8("nt")
fp8_gemm_nn = _make_fp8("nn")
fp8_gemm_tn = _make_fp8("tn")
fp8_gemm_tt = _make_fp8("tt")


def fp8_gemm_nt_skip_head_mid(
    a: Tuple[Tensor, Tensor],
    b: Tuple[Tensor, Tensor],
    d: Tensor,
    head_splits: Tuple[int, int, int],
    alpha: float = 1.0,
    disable_ue8m0_cast: bool = False,
    recipe: Recipe = None,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
    workspace: Any = None,
) -> None:
    """FP8 GEMM ``alpha * A @ B.T`` whose output skips the middle columns of each head
    (``dg_fp8_gemm_nt_skip_head_mid``): B's ``N`` rows are heads of ``left + right``, ``d`` is
    ``[M, N / (left + right) * (left + mid + right)]`` and GEMM column ``h * (left + right) + o``
    goes to ``d``'s column ``h * (left + mid + right) + (o if o < left else o + mid)``. The ``mid``
    columns of every head are never written.

    Args:
        a, b: as for :func:`fp8_gemm_nt` with the 1D2D recipe (``(1, 128, 128)``).
        d: BF16 or FP32, row-major (row stride a multiple of 16 bytes); written in place.
        head_splits: ``(left, mid, right)``, each >= 0; ``left`` and ``right`` multiples of 16 for a
           BF16 ``d`` (8 for FP32) take the TMA store, other values a slower per-element store.
        alpha, disable_ue8m0_cast, recipe, stream, workspace: as for :func:`fp8_gemm_nt`.
    """ + _OPTIONS_DOC + """
    Raises:
        dg.InvalidArgument, dg.Unsupported, dg.NoDevice, dg.CompileError, dg.CudaError.
    """
    name = "dg_fp8_gemm_nt_skip_head_mid"
    if not isinstance(head_splits, (tuple, list)) or len(head_splits) != 3:
        raise InvalidArgument("head_splits: expected (left, mid, right), got %r" % (head_splits,))
    left, mid, right = (_int64(x, "head_splits[%d]" % i) for i, x in enumerate(head_splits))
    key = None
    if stream is None and options is None and workspace is None:
        key = _skip_head_mid_key(a, b, d, (left, mid, right), alpha, disable_ue8m0_cast, recipe)
        if key is not None and _fast.call(key):
            return
    lib = _lib.get()
    fn = lib.fn(name)
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    handle, dev, cu, infos = _prepare_call(
        [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None)],
        stream,
    )
    ia, isfa, ib, isfb, idd = infos
    assert ia is not None and ib is not None and isfa is not None and isfb is not None
    _writable(idd, "d")
    m, n, k, _, _ = _nt_dims(ia, ib, "nt")
    eff = _recipe_tuple(recipe) or (1, 128, 128)
    _recipe_code(eff)
    isfa2, isfb2, keep = _dense_fp8_scales(handle, isfa, isfb, m, n, k, False, False, eff, disable_ue8m0_cast, dev, cu)
    ws_ptr, ws_size, ws = _fp8_workspace(workspace, ia, ib, m, n, k, cu)
    keep.append(ws)
    opts = byref(_gemm_options(alpha, 1.0, _recipe_code(eff), disable_ue8m0_cast, options, ws_ptr, ws_size))
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(isfa2), ds.add(ib), ds.add(isfb2), ds.add(idd), left, mid, right, opts)
        lib.check(status, name)
    # Warm path only where the call made nothing of its own (no scale copies, no workspace).
    if key is not None and keep[0] is a_sf and keep[1] is b_sf and ws is None:
        _fast.store(key, name, dev, (ia, isfa2, ib, isfb2, idd, c_int64(left), c_int64(mid), c_int64(right), opts))
    del keep


def _skip_head_mid_key(a: Any, b: Any, d: Any, splits: Tuple[int, int, int], alpha: Any, disable_ue8m0_cast: bool,
                       recipe: Recipe) -> Any:
    """The warm-path key of a skip_head_mid call on plain torch tensors (:mod:`dg._fast`), else None."""
    if not (type(alpha) in _SCALARS and type(a) is tuple and type(b) is tuple and len(a) == 2 and len(b) == 2
            and (recipe is None or type(recipe) is tuple)):
        return None
    types = _fast._types or _fast.tensor_types()
    x, sx = a
    y, sy = b
    if types is None or not all(type(t) in types for t in (x, sx, y, sy, d)):
        return None
    return ("dg_fp8_gemm_nt_skip_head_mid", splits, alpha, bool(disable_ue8m0_cast), recipe,
            x.data_ptr(), x.shape, x.stride(), x.dtype, sx.data_ptr(), sx.shape, sx.stride(), sx.dtype,
            y.data_ptr(), y.shape, y.stride(), y.dtype, sy.data_ptr(), sy.shape, sy.stride(), sy.dtype,
            d.data_ptr(), d.shape, d.stride(), d.dtype)


def gemm_prepare(
    ab_dtype: Any,
    layout: str,
    m: int,
    n: int,
    k: int,
    d_dtype: Any,
    with_c: bool = False,
    recipe: Recipe = None,
    device: Optional[int] = None,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
    epilogue: Optional[GemmEpilogue] = None,
) -> None:
    """Compiles and loads (no launch, no device memory touched) every kernel the matching GEMM call
    would use, for contiguous operands: call it before capturing a CUDA graph.

    Args:
        ab_dtype: ``torch.bfloat16`` / ``torch.float8_e4m3fn`` (or ``"bfloat16"``, ``"float8_e4m3fn"``).
        layout: ``"nt"``, ``"nn"``, ``"tn"`` or ``"tt"``.
        m, n, k: the problem.
        d_dtype: ``torch.bfloat16`` or ``torch.float32`` (``torch.float8_e4m3fn`` with an epilogue
           with ``d_scales``).
        with_c: whether a C term will be given.
        recipe: FP8 only, as for :func:`fp8_gemm_nt` (default (1, 128, 128)).
        device, stream: where the kernels will run (default: torch's current device/stream).
        options: kernel-config overrides, as for the GEMM functions.
        epilogue: the call's :class:`dg.GemmEpilogue`; its tensors' shapes and dtypes are read, not
           their memory.
    """
    if layout not in _lib.GEMM_LAYOUTS:
        raise InvalidArgument("layout: expected one of nt, nn, tn, tt, got %r" % (layout,))
    ab = _dtype_arg(ab_dtype, "ab_dtype")
    dd = _dtype_arg(d_dtype, "d_dtype")
    rt = _recipe_tuple(recipe) or (1, 128, 128)
    opts = _gemm_options(1.0, 1.0, _recipe_code(rt), False, options)
    lib = _lib.get()
    fn = lib.fn("dg_gemm_prepare")
    handle, _dev, _cu = _stream.resolve(stream, device)
    with Descriptors() as ds:
        o = _epilogue.for_prepare(opts, epilogue, ds)
        status = fn(handle, ab, _lib.GEMM_LAYOUTS[layout], _int64(m, "m"), _int64(n, "n"), _int64(k, "k"), dd,
                    1 if with_c else 0, byref(o))
    lib.check(status, "dg_gemm_prepare")
