"""K-grouped GEMMs (MoE weight gradient): DeepGEMM's ``k_grouped_*`` names and arguments over
``dg_k_grouped_*``.

``ks`` (each group's K, a multiple of 128) is read on the host: the launch is built from it, so
a CUDA graph replays the ``ks`` it was captured with. ``ks_tensor`` (the int32 device copy DeepGEMM
takes) is checked for shape and dtype and never read. FP8 scales are per token x 128 K (recipe
(1, 1, 128)) in any layout: they are transformed to MN-major TMA-aligned when they do not have it.
"""

from __future__ import annotations

from ctypes import byref
from typing import Any, Dict, Optional, Sequence, Tuple

from . import _lib, _stream
from ._gemm import fp8_gemm_workspace_size
from ._tensor import ROLE_SF, UINT8, Descriptors, TensorInfo, allocate_torch, describe
from ._arguments import (
    StreamLike, Tensor, _dtype_arg, _gemm_options, _int64, _int64s, _ks_array, _nbytes, _pair, _prepare_call, _sf_recipe, _transform_info,
    _writable,
)
from .errors import InvalidArgument, Unsupported

_RECIPE = (1, 1, 128)


def _check_recipe(recipe: Optional[Sequence[int]]) -> None:
    if recipe is not None and _int64s(recipe, "recipe") != _RECIPE:
        raise Unsupported("recipe %r: libdg's SM90 K-grouped FP8 GEMMs take %r (1D1D)" % (tuple(recipe), _RECIPE))


def _fp8_workspace(workspace: Any, like: TensorInfo, m: int, n: int, k: int, cu: int) -> Tuple[Optional[int], int, Any]:
    """The tn form's workspace (K-major copies of A and B): the caller's, or for torch operands a
    buffer from torch's caching allocator on the call's stream."""
    if workspace is not None:
        info = describe(workspace, "workspace")
        return info.ptr, _nbytes(info), workspace
    size = fp8_gemm_workspace_size("tn", m, n, k)
    if size == 0 or not like.is_torch:
        return None, 0, None  # libdg names the size it needs
    buf = allocate_torch(like, UINT8, [size], [1], size, cu)
    return buf.data_ptr(), size, buf


def _fp8(
    layout: str, a: Any, b: Any, d: Tensor, ks: Sequence[int], ks_tensor: Optional[Tensor], c: Optional[Tensor],
    recipe: Optional[Sequence[int]], alpha: float, stream: StreamLike, options: Optional[Dict[str, int]],
    workspace: Any
) -> None:
    _check_recipe(recipe)
    lib = _lib.get()
    name = "dg_k_grouped_fp8_gemm_%s_contiguous" % layout
    fn = lib.fn(name)
    ks_arr, groups = _ks_array(ks)
    a_data, a_sf = _pair(a, "a")
    b_data, b_sf = _pair(b, "b")
    handle, dev, cu, (ia, isfa, ib, isfb, idd, ic, iks) = _prepare_call(
        [(a_data, "a", None), (a_sf, "sfa", ROLE_SF), (b_data, "b", None), (b_sf, "sfb", ROLE_SF), (d, "d", None),
         (c, "c", None), (ks_tensor, "ks_tensor", None)],
        stream,
    )
    assert ia is not None and isfa is not None and ib is not None and isfb is not None and idd is not None
    _writable(idd, "d")
    if idd.rank != 3:
        raise InvalidArgument("d: expected [G, M, N] FP32, got rank %d" % idd.rank)
    m, n, k = idd.shape[1], idd.shape[2], sum(ks_arr[:groups])
    # Per-token scales of both operands, the groups' K blocks concatenated: [MN, K / 128].
    rec = _sf_recipe(1, 128, 0, True)
    sfa2, keep_a = _transform_info(handle, isfa, m, k, rec, None, "sfa", dev, cu)
    sfb2, keep_b = _transform_info(handle, isfb, n, k, rec, None, "sfb", dev, cu)
    ws_ptr, ws_size, ws = (None, 0, None) if layout == "nt" else _fp8_workspace(workspace, ia, m, n, k, cu)
    opts = _gemm_options(alpha, 1.0, options=options, workspace=ws_ptr, workspace_size=ws_size)
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(sfa2), ds.add(ib), ds.add(sfb2), ds.add(idd), ds.add(ic), ks_arr, groups,
                    ds.add(iks), byref(opts))
        lib.check(status, name)
    del keep_a, keep_b, ws


_FP8_DOC = """K-grouped FP8 GEMM (MoE weight gradient), {form}:
``D[g] = alpha * A_g @ B_g.T + C[g]`` over each group's slice of K.

Args:
    a: ``(data, scales)``: {a}; scales FP32 ``[M, K / 128]`` per token x 128 K, the groups' K
       blocks concatenated (any layout; transformed to MN-major TMA-aligned when needed).
    b: ``(data, scales)``: the same with N ({b}).
    d: output FP32 ``[G, M, N]``, contiguous (N a multiple of 4).
    ks: each group's K (host ints, multiples of 128, 0 allowed: that group's D is C, or zeros).
    ks_tensor: optional int32 ``[G]`` device copy of ``ks`` (checked, not read).
    c: optional FP32 ``[G, M, N]`` accumulator, or ``d`` itself (D += ...).
    recipe: ``(1, 1, 128)`` or None.
    alpha: scale of the products.
    stream: explicit stream; default: torch's current stream, else the legacy default.
    options: kernel-config overrides (``block_m``, ``block_n``, ``num_stages``, ``num_sms``, ...).
{extra}"""


def k_grouped_fp8_gemm_nt_contiguous(
    a: Tuple[Tensor, Tensor],
    b: Tuple[Tensor, Tensor],
    d: Tensor,
    ks: Sequence[int],
    ks_tensor: Optional[Tensor] = None,
    c: Optional[Tensor] = None,
    recipe: Optional[Sequence[int]] = _RECIPE,
    compiled_dims: Optional[str] = None,
    alpha: float = 1.0,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
) -> None:
    del compiled_dims  # libdg bakes no problem size into its kernels
    _fp8("nt", a, b, d, ks, ks_tensor, c, recipe, alpha, stream, options, None)


def k_grouped_fp8_gemm_tn_contiguous(
    a: Tuple[Tensor, Tensor],
    b: Tuple[Tensor, Tensor],
    d: Tensor,
    ks: Sequence[int],
    ks_tensor: Optional[Tensor] = None,
    c: Optional[Tensor] = None,
    recipe: Optional[Sequence[int]] = _RECIPE,
    compiled_dims: Optional[str] = None,
    alpha: float = 1.0,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
    workspace: Any = None,
) -> None:
    del compiled_dims
    _fp8("tn", a, b, d, ks, ks_tensor, c, recipe, alpha, stream, options, workspace)


k_grouped_fp8_gemm_nt_contiguous.__doc__ = _FP8_DOC.format(
    form="nt (flat K-major operands)",
    a="flat ``[M * K]`` float8_e4m3fn, group g's ``[M, k_g]`` row-major at element ``M * (k_0 + ... + k_(g-1))``",
    b="flat ``[N * K]``", extra="")
k_grouped_fp8_gemm_tn_contiguous.__doc__ = _FP8_DOC.format(
    form="tn (operands ``[K, M]`` / ``[K, N]``, MN-major)",
    a="``[K, M]`` float8_e4m3fn, stride 1 along M; group g is rows ``[k_0 + ... + k_(g-1), + k_g)``",
    b="``[K, N]``",
    extra=("    workspace: device memory for the K-major copies SM90 FP8 tensor cores need\n"
           "       (``fp8_gemm_workspace_size('tn', M, N, K)`` bytes, 256-byte aligned); default: for torch\n"
           "       operands, a buffer from torch's caching allocator on the call's stream.\n"))


def k_grouped_bf16_gemm_tn_contiguous(
    a: Tensor,
    b: Tensor,
    d: Tensor,
    ks: Sequence[int],
    ks_tensor: Optional[Tensor] = None,
    c: Optional[Tensor] = None,
    compiled_dims: Optional[str] = None,
    alpha: float = 1.0,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
) -> None:
    """K-grouped BF16 GEMM (MoE weight gradient): ``D[g] = alpha * A_g.T @ B_g + C[g]``.

    Args:
        a: ``[K, M]`` BF16, stride 1 along M; group g is rows ``[k_0 + ... + k_(g-1), + k_g)``.
        b: ``[K, N]`` BF16, likewise.
        d, ks, ks_tensor, c, alpha, stream, options: as for :func:`k_grouped_fp8_gemm_nt_contiguous`.
    """
    del compiled_dims
    lib = _lib.get()
    name = "dg_k_grouped_bf16_gemm_tn_contiguous"
    fn = lib.fn(name)
    ks_arr, groups = _ks_array(ks)
    handle, _dev, _cu, (ia, ib, idd, ic, iks) = _prepare_call(
        [(a, "a", None), (b, "b", None), (d, "d", None), (c, "c", None), (ks_tensor, "ks_tensor", None)], stream
    )
    _writable(idd, "d")
    opts = _gemm_options(alpha, 1.0, options=options)
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(ib), ds.add(idd), ds.add(ic), ks_arr, groups, ds.add(iks), byref(opts))
        lib.check(status, name)


_LAYOUTS = {"nt": _lib.GEMM_LAYOUTS["nt"], "tn": _lib.GEMM_LAYOUTS["tn"]}


def k_grouped_gemm_prepare(
    ab_dtype: Any,
    layout: str,
    m: int,
    n: int,
    ks: Sequence[int],
    with_c: bool = False,
    alpha: float = 1.0,
    device: Optional[int] = None,
    stream: StreamLike = None,
    options: Optional[Dict[str, int]] = None,
) -> None:
    """Compiles and loads the kernels a K-grouped call will use, without running anything (call it
    before capturing a CUDA graph): ``ab_dtype`` float8_e4m3fn with ``layout`` ``"nt"`` or ``"tn"``,
    or bfloat16 with ``"tn"``; the call's ``m``, ``n`` and ``ks``; ``with_c`` when it passes ``c``."""
    if layout not in _LAYOUTS:
        raise InvalidArgument("layout: %r (expected 'nt' or 'tn')" % (layout,))
    ks_arr, groups = _ks_array(ks)
    lib = _lib.get()
    handle, _dev, _cu = _stream.resolve(stream, device)
    opts = _gemm_options(alpha, 1.0, options=options)
    status = lib.fn("dg_k_grouped_gemm_prepare")(handle, _dtype_arg(ab_dtype, "ab_dtype"), _LAYOUTS[layout],
                                                 _int64(m, "m"), _int64(n, "n"), ks_arr, groups, 1 if with_c else 0, byref(opts))
    lib.check(status, "dg_k_grouped_gemm_prepare")
