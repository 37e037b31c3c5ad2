"""Host utilities and scaling-factor layouts (DeepGEMM's ``get_tma_aligned_size``,
``get_mn_major_tma_aligned_tensor``, ``transform_sf_into_required_layout``, ...)."""

from __future__ import annotations

from ctypes import byref, c_int64, c_size_t
from typing import Callable, Optional, Sequence, Tuple

from . import _lib
from ._tensor import FLOAT32, ROLE_SF, UE8M0X4, Descriptors, TensorInfo, allocate_torch, describe
from .errors import InvalidArgument, Unsupported
from ._arguments import (
    SfLayout,
    StreamLike,
    Tensor,
    _int32,
    _int64,
    _int64s,
    _ks_array,
    _prepare_call,
    _query_sf,
    _sf_recipe,
    _size,
    _transform_info,
    _writable,
)


def get_tma_aligned_size(x: int, element_size: int) -> int:
    """``align(x, 16 / element_size)``: the size TMA needs for a dimension of ``x`` elements of
    ``element_size`` bytes (which must divide 16)."""
    out = c_int64()
    _lib.get().call("dg_get_tma_aligned_size", _int64(x, "x"), _size(element_size, "element_size"), byref(out))
    return out.value


def get_mk_alignment_for_contiguous_layout() -> int:
    """Row alignment of each group in M-grouped contiguous layouts (128 on SM90)."""
    return int(_lib.get().fn("dg_get_mk_alignment_for_contiguous_layout")())


def _layout_query(fn_name: str, sizes: Sequence[int]) -> Tuple[Tuple[int, ...], Tuple[int, ...], int]:
    sizes = _int64s(sizes, "sizes")
    rank = len(sizes)
    if not 1 <= rank <= 4:
        raise InvalidArgument("sizes: rank %d, expected 2 or 3" % rank)
    in_sizes = (c_int64 * 4)(*sizes)
    out_sizes = (c_int64 * 4)()
    out_strides = (c_int64 * 4)()
    nbytes = c_size_t()
    _lib.get().call(fn_name, rank, in_sizes, out_sizes, out_strides, byref(nbytes))
    return tuple(out_sizes[:rank]), tuple(out_strides[:rank]), nbytes.value


def get_mn_major_tma_aligned_tensor_layout(sizes: Sequence[int]) -> SfLayout:
    """Sizes, strides (elements) and bytes of :func:`get_mn_major_tma_aligned_tensor`'s output for
    an FP32 input of shape ``sizes`` (``[MN, SF_K]`` or ``[G, MN, SF_K]``)."""
    s, st, n = _layout_query("dg_get_mn_major_tma_aligned_tensor_layout", sizes)
    return SfLayout(False, FLOAT32, s, st, n)


def get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(sizes: Sequence[int]) -> SfLayout:
    """Sizes, strides (elements) and bytes of the packed-UE8M0 output for an FP32 input of shape
    ``sizes``."""
    s, st, n = _layout_query("dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout", sizes)
    return SfLayout(False, UE8M0X4, s, st, n)


def _same_memory(info: TensorInfo, sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether ``info`` puts its elements where the layout ``(sizes, strides)`` does: the same sizes
    and the same strides along every dimension of more than one entry (any, with no elements)."""
    if tuple(info.shape) != tuple(sizes):
        return False
    return 0 in info.shape or all(sz <= 1 or a == b for sz, a, b in zip(sizes, info.strides, strides))


def _with_strides(info: TensorInfo, sizes: Sequence[int], strides: Sequence[int]) -> Tensor:
    """The tensor of ``info`` (which has the layout in memory) with exactly the layout's strides, as
    DeepGEMM returns it (code may check the layout by its strides): the tensor itself when they are
    its strides already, else for torch a view of the same memory with them (the strides differ
    only along dimensions of one entry, which address nothing). Other tensor types come back as
    they are."""
    if tuple(info.strides) == tuple(strides) or not info.is_torch:
        return info.source
    return info.source.as_strided(tuple(sizes), tuple(strides))


def _layout_transform(fn_name: str, layout_fn: Callable, sf: Tensor, out: Optional[Tensor], stream: StreamLike) -> Tensor:
    handle, dev, cu, infos = _prepare_call([(sf, "sf", None), (out, "out", ROLE_SF)], stream)
    sf_info, out_info = infos
    assert sf_info is not None
    layout = layout_fn(sf_info.shape)
    result = out
    if out_info is None:
        if layout.dtype == FLOAT32 and sf_info.dtype == FLOAT32 and _same_memory(sf_info, layout.sizes, layout.strides):
            return _with_strides(sf_info, layout.sizes, layout.strides)  # already in the layout: no copy
        result = allocate_torch(sf_info, layout.dtype, layout.sizes, layout.strides, layout.nbytes, cu)
        out_info = describe(result, "out", ROLE_SF)
    _writable(out_info, "out")
    lib = _lib.get()
    with Descriptors() as ds:
        status = lib.fn(fn_name)(handle, ds.add(sf_info), ds.add(out_info))
        lib.check(status, fn_name)
    return result


def get_mn_major_tma_aligned_tensor(sf: Tensor, out: Optional[Tensor] = None, stream: StreamLike = None) -> Tensor:
    """Returns FP32 scales ``sf`` (``[MN, SF_K]`` or ``[G, MN, SF_K]``, any strides) in the
    MN-major, TMA-aligned layout the SM90 kernels read: same shape, strides
    ``(.., 1, align(MN, 4))`` and batch stride ``align(MN, 4) * SF_K``, DeepGEMM's for every shape
    (``[MN, 1]`` included). An input whose memory already has that layout is not copied: it is
    returned as is, or (torch) as a view with those strides where its own differ along dimensions
    of size 1. The output is allocated with torch for torch inputs; other callers pass ``out``
    (see :func:`get_mn_major_tma_aligned_tensor_layout`)."""
    return _layout_transform("dg_get_mn_major_tma_aligned_tensor", get_mn_major_tma_aligned_tensor_layout, sf, out, stream)


def get_mn_major_tma_aligned_packed_ue8m0_tensor(sf: Tensor, out: Optional[Tensor] = None, stream: StreamLike = None) -> Tensor:
    """Packs FP32 power-of-two scales ``sf`` (``[.., MN, SF_K]``) into UE8M0, four per int32,
    MN-major and TMA-aligned: int32 ``[.., MN, ceil(SF_K / 4)]`` with strides
    ``(.., 1, align(MN, 4))`` (the SM100 scale format). Allocated with torch for torch inputs;
    others pass ``out``."""
    return _layout_transform(
        "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor", get_mn_major_tma_aligned_packed_ue8m0_tensor_layout, sf, out, stream
    )


def get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(mn: int, ks: Sequence[int]) -> SfLayout:
    """Sizes, strides (elements) and bytes of
    :func:`get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor`'s output for scales of ``mn``
    columns and groups of ``ks`` K (each a multiple of 128): int32 ``[P, mn]`` with strides
    ``(align(mn, 4), 1)``, ``P = sum(ceil(k / 512) for k in ks)``."""
    ks_arr, groups = _ks_array(ks)
    sizes = (c_int64 * 2)()
    strides = (c_int64 * 2)()
    nbytes = c_size_t()
    _lib.get().call("dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout", _int64(mn, "mn"), ks_arr, groups, sizes,
                    strides, byref(nbytes))
    return SfLayout(False, UE8M0X4, tuple(sizes), tuple(strides), nbytes.value)


def get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor(
    sf: Tensor,
    ks_tensor: Optional[Tensor],
    ks: Sequence[int],
    gran_k: int = 128,
    k_alignment: int = 128,
    use_psum_layout: bool = False,
    out: Optional[Tensor] = None,
    stream: StreamLike = None,
) -> Tensor:
    """Packs K-grouped FP32 power-of-two scales into UE8M0 per group (DeepGEMM's function of the
    same name; the SM100 K-grouped GEMMs' scale format).

    Args:
        sf: FP32 ``[sum(ks) / 128, MN]``: one row of MN scales per 128-wide K block, the groups'
            blocks concatenated (any strides; fastest with stride 1 along MN).
        ks_tensor: int32 ``[G]`` device copy of ``ks`` (checked, not read), or None.
        ks: each group's K (host ints, multiples of 128, 0 allowed).
        gran_k, k_alignment, use_psum_layout: DeepGEMM's later arguments; libdg packs 128-wide K
            blocks of contiguous groups only (gran_k 128, no psum layout).
        out: a caller-allocated output (see
            :func:`get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout`); allocated with
            torch for torch inputs when omitted.
    Returns:
        int32 ``[sum(ceil(k / 512)), MN]`` with strides ``(align(MN, 4), 1)``: group g's rows
        follow those of groups before it, row j of a group packs its K blocks 4j .. 4j + 3 (the
        first in the low byte; blocks past the group's end are 0).
    """
    gran_k, k_alignment = _int64(gran_k, "gran_k"), _int64(k_alignment, "k_alignment")
    if gran_k != 128:
        raise Unsupported("gran_k = %d: libdg packs 128-wide K blocks (gran_k 32 is SM100's MXFP8 format)" % gran_k)
    if k_alignment <= 0 or k_alignment % 32 != 0:
        raise InvalidArgument("k_alignment = %d (expected a positive multiple of 32)" % k_alignment)
    if use_psum_layout:
        raise Unsupported("use_psum_layout: libdg packs contiguous groups of the given ks only")
    ks_arr, groups = _ks_array(ks)
    handle, _dev, cu, (sf_info, ks_info, out_info) = _prepare_call(
        [(sf, "sf", ROLE_SF), (ks_tensor, "ks_tensor", None), (out, "out", ROLE_SF)], stream
    )
    assert sf_info is not None
    result = out
    if out_info is None:
        if sf_info.rank != 2:
            raise InvalidArgument("sf: expected [sum(ks) / 128, MN], got rank %d" % sf_info.rank)
        layout = get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(sf_info.shape[1], ks_arr[:groups])
        result = allocate_torch(sf_info, layout.dtype, layout.sizes, layout.strides, layout.nbytes, cu)
        out_info = describe(result, "out", ROLE_SF)
    _writable(out_info, "out")
    lib = _lib.get()
    name = "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor"
    with Descriptors() as ds:
        status = lib.fn(name)(handle, ds.add(sf_info), ks_arr, groups, ds.add(ks_info), ds.add(out_info))
        lib.check(status, name)
    return result


def _gran(recipe: Sequence[int], is_sfa: bool) -> Tuple[int, int]:
    r = _int64s(recipe, "recipe")
    if len(r) == 3:
        return (r[0] if is_sfa else r[1]), r[2]
    if len(r) == 2:
        return r[0], r[1]
    raise InvalidArgument("recipe: expected (gran_m, gran_n, gran_k) or (gran_mn, gran_k), got %r" % (recipe,))


def _num_groups(info: TensorInfo, num_groups: Optional[int]) -> int:
    if num_groups is None:
        return info.shape[0] if info.rank == 3 else 0
    return _int32(num_groups, "num_groups")


def get_transform_sf_layout(
    sf: Tensor,
    mn: int,
    k: int,
    recipe: Sequence[int],
    num_groups: Optional[int] = None,
    is_sfa: bool = False,
    disable_ue8m0_cast: bool = False,
    arch_major: int = 0,
    stream: StreamLike = None,
) -> SfLayout:
    """What :func:`transform_sf_into_required_layout` would produce (``dg_transform_sf_layout``):
    whether ``sf`` can be used as is, else the dtype, sizes, strides and bytes of the output.
    ``arch_major`` 9 or 10 answers for that architecture without touching a device; 0 asks the
    device of the tensors / stream."""
    gran_mn, gran_k = _gran(recipe, is_sfa)
    if arch_major:
        info = describe(sf, "sf")
        handle = None
        dev = None
    else:
        handle, dev, _cu, (info,) = _prepare_call([(sf, "sf", ROLE_SF)], stream)
    assert info is not None
    rec = _sf_recipe(gran_mn, gran_k, _num_groups(info, num_groups), disable_ue8m0_cast, arch_major)
    return _query_sf(handle, info, mn, k, rec, dev)


def transform_sf_into_required_layout(
    sf: Tensor,
    mn: int,
    k: int,
    recipe: Sequence[int],
    num_groups: Optional[int] = None,
    is_sfa: bool = False,
    disable_ue8m0_cast: bool = False,
    out: Optional[Tensor] = None,
    stream: StreamLike = None,
) -> Tensor:
    """Transforms scaling factors ``sf`` of an ``[MN, K]`` operand into the layout the GEMMs need,
    as DeepGEMM does: SM90 FP32 per-token scales become MN-major TMA-aligned; SM90 per-block
    scales are checked and returned as is; SM100 scales are packed to UE8M0 (unless
    ``disable_ue8m0_cast``).

    Args:
        sf: FP32 ``[ceil(MN / gran_mn), ceil(K / gran_k)]`` (or ``[G, ..]``), or packed int32.
        mn, k: the operand's MN and K.
        recipe: ``(gran_m, gran_n, gran_k)`` (pick A's or B's granularity with ``is_sfa``) or
            ``(gran_mn, gran_k)``.
        num_groups: G for a 3-D input (default: its first dimension).
        out: a caller-allocated output (required for non-torch inputs that need a copy).
    Returns:
        ``sf`` itself when no copy is needed (for torch, a view of it with the layout's strides
        where its own differ along dimensions of size 1, as DeepGEMM's copy would have), else the
        new tensor (``out`` when given).
    """
    gran_mn, gran_k = _gran(recipe, is_sfa)
    handle, dev, cu, infos = _prepare_call([(sf, "sf", ROLE_SF)], stream)
    info = infos[0]
    assert info is not None
    rec = _sf_recipe(gran_mn, gran_k, _num_groups(info, num_groups), disable_ue8m0_cast)
    _, result = _transform_info(handle, info, mn, k, rec, out, "sf", dev, cu)
    if result is not info.source:
        return result
    layout = _query_sf(handle, info, mn, k, rec, dev)  # memoised: the answer _transform_info used
    return _with_strides(info, layout.sizes, layout.strides)
