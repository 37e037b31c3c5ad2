"""Fused GEMM epilogues (``dg_gemm_epilogue``; docs/gemm_epilogues.md): :class:`GemmEpilogue`, what
the dense and M-grouped GEMM wrappers take as ``epilogue=``, the helpers an engine prepares its
operands with (:func:`swiglu_interleave`, :func:`fp8_scales_like`), and the plumbing that turns an
epilogue into the C struct of one call.

A call with an epilogue takes the full Python path (no warm-path replay): its descriptors live in
the C struct the options point to, which a replayed plan would have to own."""

from __future__ import annotations

import ctypes
from typing import Any, List, Optional, Sequence, Tuple

from . import _declarations, _lib
from ._tensor import ROLE_SF, Descriptors, TensorInfo, allocate_torch, contiguous_strides, describe
from ._layout import get_mn_major_tma_aligned_packed_ue8m0_tensor_layout, get_mn_major_tma_aligned_tensor_layout
from ._arguments import StreamLike, Tensor, _int64, _nbytes, _prepare_call, _writable
from .errors import InvalidArgument

_ACTIVATIONS = {None: _declarations.DG_ACTIVATION_NONE, "none": _declarations.DG_ACTIVATION_NONE,
                "swiglu": _declarations.DG_ACTIVATION_SWIGLU}
# Rows of each gate (and up) block of the interleaved SwiGLU weights; the block scales' rows.
SWIGLU_BLOCK = 128
_GROUP = 128  # columns of D per scale


class GemmEpilogue:
    """What a GEMM does to its result before storing it (``dg_gemm_epilogue``), in this order:

    ``v = alpha * (A @ B.T)[row, col] + bias[col]``; with ``activation="swiglu"``,
    ``d[row, j] = silu(v[gate j]) * v[up j]`` (D has N / 2 columns; B's rows alternate blocks of 128
    gate rows and the 128 matching up rows, see :func:`swiglu_interleave`); and for a
    ``float8_e4m3fn`` d, E4M3 codes with one scale per row and 128 columns of D, bit for bit what
    :func:`dg.quantize_fp8_per_token` (``*_contiguous`` / ``*_masked`` for the grouped calls) gives
    for the same call's BF16 D.

    Args:
        activation: ``None`` (or ``"none"``) or ``"swiglu"`` (N a multiple of 256).
        bias: ``None`` or ``[N]`` BF16 / FP32, stride 1 (N the GEMM's columns, before SwiGLU); dense
           calls only.
        d_scales: with a ``float8_e4m3fn`` d only: FP32 ``[(G,) M, ceil(N_d / 128)]`` in the MN-major
           TMA-aligned layout (the ``sfa`` the FP8 GEMMs read), or int32 packed UE8M0 words
           ``[(G,) M, ceil(N_d / 512)]`` as :func:`dg.quantize_fp8_per_token` writes them with
           ``packed_ue8m0=True``; :func:`fp8_scales_like` allocates them for a torch d.
        pow2_scales: FP32 scales rounded up to powers of two (packed scales always are).
        amax_floor: 0 for the default 1e-4, else 1e-30 .. 1e30 (as the quantization calls).

    Not with a C term, the 1D1D recipe, ``split_k`` > 1, K == 0 or the skinny kernel
    (``dg.Unsupported``). The tensors are described like the call's other operands (torch tensors,
    ``__dlpack__`` / ``__cuda_array_interface__`` objects or :class:`dg.TensorInfo`).
    """

    __slots__ = ("activation", "bias", "d_scales", "pow2_scales", "amax_floor")

    def __init__(self, activation: Optional[str] = None, bias: Optional[Tensor] = None,
                 d_scales: Optional[Tensor] = None, pow2_scales: bool = False, amax_floor: float = 0.0) -> None:
        self.activation = activation
        self.bias = bias
        self.d_scales = d_scales
        self.pow2_scales = pow2_scales
        self.amax_floor = amax_floor
        self.struct_fields()  # refuse bad values now; the calls check again (the fields may be reassigned)

    def struct_fields(self) -> Tuple[int, int, float]:
        """``(activation, pow2_scales, amax_floor)`` as ``dg_gemm_epilogue`` holds them."""
        act = self.activation
        key = act.lower() if isinstance(act, str) else act
        if not (key is None or isinstance(key, str)) or key not in _ACTIVATIONS:
            raise InvalidArgument("epilogue.activation: %r (expected None, 'none' or 'swiglu')" % (act,))
        if self.pow2_scales not in (False, True):  # also 0 and 1
            raise InvalidArgument("epilogue.pow2_scales: expected a bool, got %r" % (self.pow2_scales,))
        floor = self.amax_floor
        if isinstance(floor, bool) or not isinstance(floor, (int, float)):
            raise InvalidArgument("epilogue.amax_floor: expected a number, got %r" % (floor,))
        return _ACTIVATIONS[key], int(bool(self.pow2_scales)), float(floor)

    def __repr__(self) -> str:
        return "GemmEpilogue(activation=%r, bias=%s, d_scales=%s, pow2_scales=%r, amax_floor=%r)" % (
            self.activation, "None" if self.bias is None else "<tensor>",
            "None" if self.d_scales is None else "<tensor>", self.pow2_scales, self.amax_floor)


def tensors(epilogue: Optional[GemmEpilogue]) -> List[Tuple[Any, str, Optional[str]]]:
    """The epilogue's tensors as ``_prepare_call`` arguments (appended after the call's own)."""
    if epilogue is None:
        return []
    if not isinstance(epilogue, GemmEpilogue):
        raise InvalidArgument("epilogue: expected dg.GemmEpilogue or None, got %s" % type(epilogue).__name__)
    out: List[Tuple[Any, str, Optional[str]]] = []
    if epilogue.bias is not None:
        out.append((epilogue.bias, "epilogue.bias", None))
    if epilogue.d_scales is not None:
        out.append((epilogue.d_scales, "epilogue.d_scales", ROLE_SF))
    return out


def with_epilogue(opts: Any, epilogue: Optional[GemmEpilogue], infos: Sequence[Optional[TensorInfo]],
                  ds: Descriptors) -> Any:
    """``opts`` (a shared ``GemmOptions``, left unchanged) or, with an epilogue, a copy pointing at
    a new ``dg_gemm_epilogue`` whose tensors are ``infos`` (as :func:`tensors` listed them), with
    descriptors from ``ds``. The result must live through the call."""
    if epilogue is None:
        return opts
    it = iter(infos)
    bias = next(it) if epilogue.bias is not None else None
    scales = next(it) if epilogue.d_scales is not None else None
    _writable(scales, "epilogue.d_scales")
    activation, pow2, floor = epilogue.struct_fields()
    e = _lib.GemmEpilogueStruct(activation=activation, bias=ds.add(bias), d_scales=ds.add(scales),
                                pow2_scales=pow2, amax_floor=floor)
    copy = type(opts).from_buffer_copy(opts)
    copy.epilogue = ctypes.pointer(e)  # the copy keeps e alive
    return copy


def for_prepare(opts: Any, epilogue: Optional[GemmEpilogue], ds: Descriptors) -> Any:
    """``opts`` for a prepare call: with an epilogue, a copy pointing at its struct. A prepare reads
    the epilogue's tensors' shapes and dtypes, never their memory: each may be a
    :class:`dg.TensorInfo` without data."""
    if epilogue is None:
        return opts
    infos = [describe(obj, name, role) for obj, name, role in tensors(epilogue)]
    return with_epilogue(opts, epilogue, infos, ds)


def swiglu_interleave(src: Tensor, dst: Optional[Tensor] = None, block: int = SWIGLU_BLOCK, *,
                      stream: StreamLike = None) -> Tensor:
    """Reorders SwiGLU weights for ``GemmEpilogue(activation="swiglu")`` (``dg_swiglu_interleave``).

    ``src`` ``[(G,) 2I, C]`` holds the gate rows ``[0, I)`` then the up rows ``[I, 2I)`` (w1 and w3
    concatenated, as checkpoints store them); ``dst``, of the same shape and dtype, gets blocks of
    ``block`` rows alternating: gate block j, then up block j. Use ``block=128`` for the weights
    (``[G, 2I, K]``, I a multiple of 128) and ``block=1`` for their 128 x 128 block scales
    (``[G, 2I / 128, ceil(K / 128)]``). Rows must be packed (stride along rows = C, stride 1 along
    C); any dtype. Copies on the stream, no kernel.

    Args:
        src: the ``[gate; up]`` tensor.
        dst: the output (must not overlap ``src``); ``None``: allocated contiguous like ``src``
           (torch ``src`` only).
        block: rows per block (128 for weights, 1 for their block scales).
        stream: explicit stream; default: torch's current stream, else the legacy default.

    Returns:
        ``dst``.
    """
    blk = _int64(block, "block")
    args = [(src, "src", None)] + ([(dst, "dst", None)] if dst is not None else [])
    handle, _dev, cu, infos = _prepare_call(args, stream)
    isrc = infos[0]
    assert isrc is not None
    if dst is None:
        if not isrc.is_torch:
            raise InvalidArgument("dst: required for a non-torch src (a tensor of src's shape and dtype)")
        nbytes = max(_nbytes(isrc), 1)
        dst = allocate_torch(isrc, isrc.dtype, isrc.shape, contiguous_strides(isrc.shape), nbytes, cu)
        idst = describe(dst, "dst")
    else:
        idst = infos[1]
    _writable(idst, "dst")
    lib = _lib.get()
    with Descriptors() as ds:
        lib.check(lib.fn("dg_swiglu_interleave")(handle, ds.add(isrc), ds.add(idst), blk), "dg_swiglu_interleave")
    return dst


def fp8_scales_like(d: Tensor, packed_ue8m0: bool = False) -> Tensor:
    """The ``d_scales`` of a ``float8_e4m3fn`` torch tensor ``d`` ``[(G,) M, N_d]``, newly allocated
    (not initialised) on d's device with torch's current stream: FP32 ``[(G,) M, ceil(N_d / 128)]``
    in the MN-major TMA-aligned layout or, with ``packed_ue8m0``, int32 ``[(G,) M, ceil(N_d / 512)]``
    packed UE8M0 words; the layouts :func:`dg.quantize_fp8_per_token` writes and the FP8 GEMMs read
    as ``sfa`` (``dg.get_mn_major_tma_aligned_tensor_layout`` and
    ``dg.get_mn_major_tma_aligned_packed_ue8m0_tensor_layout`` of ``[(G,) M, ceil(N_d / 128)]`` give
    them for other tensor types)."""
    info = describe(d, "d")
    if not info.is_torch:
        raise InvalidArgument("d: fp8_scales_like allocates with torch; for other tensors allocate the layout "
                              "dg.get_mn_major_tma_aligned_tensor_layout gives")
    if info.rank not in (2, 3):
        raise InvalidArgument("d: expected [M, N] or [G, M, N], got rank %d" % info.rank)
    sizes = list(info.shape[:-1]) + [-(-info.shape[-1] // _GROUP)]
    query = get_mn_major_tma_aligned_packed_ue8m0_tensor_layout if packed_ue8m0 else get_mn_major_tma_aligned_tensor_layout
    layout = query(sizes)
    return allocate_torch(info, layout.dtype, layout.sizes, layout.strides, max(layout.nbytes, 4))
