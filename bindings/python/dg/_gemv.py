"""The batched NVFP4 GEMV (``nvfp4_gemv``)."""

from __future__ import annotations

from ctypes import byref
from typing import Dict, Optional

from . import _lib
from ._lib import NvFp4GemvOptions
from ._tensor import ROLE_FP4, Descriptors
from .errors import InvalidArgument
from ._arguments import StreamLike, Tensor, _int32, _prepare, _writable


def nvfp4_gemv(
    a: Tensor, sfa: Tensor, b: Tensor, sfb: Tensor, c: Tensor, stream: StreamLike = None, options: Optional[Dict[str, int]] = None
) -> None:
    """Batched NVFP4 GEMV: ``c[m, 0, l] = sum_k A[m, k, l] * b[0, k, l]`` (FP32 accumulate,
    FP16 out), every value an E2M1 nibble times an FP8 E4M3 scale per 16 K elements.

    Args:
        a: ``[M, K/2, L]`` bytes, two E2M1 values each (torch.uint8/int8, or float4_e2m1fn_x2).
        sfa: ``[M, K/16, L]`` float8_e4m3fn.
        b: ``[Np, K/2, L]`` like ``a``; only row 0 is the vector.
        sfb: ``[Np, K/16, L]`` float8_e4m3fn.
        c: output ``[M, 1, L]`` float16, written in place.
        stream: explicit stream; default: torch's current stream, else the legacy default.
        options: tuning overrides, fields of ``dg_nvfp4_gemv_options`` (``threads_per_row``,
            ``row_groups``, ``chunks_per_thread``, ``rows_per_round``, ``vector_bytes``,
            ``grid_blocks``, ``cache_hint``, ``prefetch``); unset fields are chosen by libdg.

    Rank-2 tensors (``[M, K/2]`` ... ``[M, 1]``) mean L = 1. K must be a multiple of 32.
    """
    lib = _lib.get()
    fn = lib.fn("dg_nvfp4_gemv")
    for obj, name in ((a, "a"), (sfa, "sfa"), (b, "b"), (sfb, "sfb"), (c, "c")):  # c is the output here
        if obj is None:
            raise InvalidArgument("%s: expected a tensor, got None" % name)
    handle, (ia, isfa, ib, isfb, ic) = _prepare(
        [(a, "a", ROLE_FP4), (sfa, "sfa", None), (b, "b", ROLE_FP4), (sfb, "sfb", None), (c, "c", None)], stream
    )
    _writable(ic, "c")
    opts = None
    if options:
        known = {f[0] for f in NvFp4GemvOptions._fields_} - {"struct_size"}
        unknown = set(options) - known
        if unknown:
            raise InvalidArgument("options: unknown field(s) %s; known: %s" % (sorted(unknown), sorted(known)))
        opts = byref(NvFp4GemvOptions(**{k: _int32(v, k) for k, v in options.items()}))
    with Descriptors() as ds:
        status = fn(handle, ds.add(ia), ds.add(isfa), ds.add(ib), ds.add(isfb), ds.add(ic), opts)
        lib.check(status, "dg_nvfp4_gemv")
