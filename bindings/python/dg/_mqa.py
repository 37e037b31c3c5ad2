"""MQA logits of the DeepSeek-V3.2 indexer: DeepGEMM's ``fp8_mqa_logits``,
``get_paged_mqa_logits_metadata`` and ``fp8_paged_mqa_logits`` over ``dg_fp8_mqa_logits`` (and
``dg_fp8_mqa_logits_compressed`` for ``max_seqlen_k > 0``), ``dg_get_paged_mqa_logits_metadata``
and ``dg_fp8_paged_mqa_logits``.

Outputs are allocated with torch for torch inputs (rows padded as ``get_mqa_logits_layout`` says,
the logical shape returned as a view); other callers pass ``out``. Nothing synchronises the host:
the paged pair can be captured in a CUDA graph (call :func:`paged_mqa_logits_prepare` first).
Repeated calls with torch tensors on torch's current stream take the warm path of ``_fast``, also
when they allocate their output.
"""

from __future__ import annotations

from ctypes import byref, c_int32, c_int64, c_size_t
from typing import Any, Optional, Tuple

from . import _fast, _lib, _stream
from ._tensor import BFLOAT16, FLOAT32, INT32, Descriptors, TensorInfo, TorchAllocation, describe
from ._arguments import StreamLike, Tensor, _dtype_arg, _int32, _int64, _pair, _prepare_call, _writable
from .errors import InvalidArgument


# Types of clean_logits a warm-path key may hold (any other object's truth value could cost a sync).
_FLAGS = (bool, int)


def _dtype_key(x: Any, like: Any) -> bool:
    """Whether ``logits_dtype`` ``x`` may be part of a warm-path key: None, an int, a name, or a
    torch dtype (``like`` is a tensor's dtype)."""
    return x is None or type(x) in (int, str) or type(x) is type(like)


def _logits_dtype(x: Any) -> int:
    if x is None:
        return FLOAT32
    if isinstance(x, int) and not isinstance(x, bool):
        dtype = x
    else:
        dtype = _dtype_arg(x, "logits_dtype")
    if dtype not in (FLOAT32, BFLOAT16):
        raise InvalidArgument("logits_dtype: expected float32 or bfloat16, got %r" % (x,))
    return dtype


def get_mqa_logits_layout(seq_len: int, seq_len_kv: int, logits_dtype: Any = None) -> Tuple[Tuple[int, int], Tuple[int, int], int]:
    """``(sizes, strides, nbytes)`` of MQA logits ``[seq_len, seq_len_kv]`` (compressed: ``[S_q,
    max_seqlen_k]``; paged: ``[B * next_n, max_context_len]``): rows padded to 1024 bytes, the
    allocation's size in bytes."""
    sizes, strides, nbytes = (c_int64 * 2)(), (c_int64 * 2)(), c_size_t()
    _lib.get().call("dg_get_mqa_logits_layout", _int64(seq_len, "seq_len"), _int64(seq_len_kv, "seq_len_kv"), _logits_dtype(logits_dtype), sizes,
                    strides, byref(nbytes))
    return (sizes[0], sizes[1]), (strides[0], strides[1]), nbytes.value


def _logits_out(out: Optional[Tensor], like: TensorInfo, rows: int, cols: int, dtype: int,
                cu: int) -> Tuple[Any, TensorInfo, Optional[TorchAllocation]]:
    """(the logits, their info, how they were allocated: None for ``out``)."""
    if out is None:
        sizes, strides, nbytes = get_mqa_logits_layout(rows, cols, dtype)
        alloc = TorchAllocation(like, dtype, sizes, strides, nbytes)
        result = alloc.new(cu)
        return result, describe(result, "logits"), alloc
    info = describe(out, "out")
    _writable(info, "out")
    return out, info, None


def _prefill_entry(max_seqlen_k: int) -> str:
    """The C entry point of a prefill call: the compressed layout's for ``max_seqlen_k != 0``."""
    return "dg_fp8_mqa_logits_compressed" if max_seqlen_k != 0 else "dg_fp8_mqa_logits"


def fp8_mqa_logits(
    q: Tensor,
    kv: Tuple[Tensor, Tensor],
    weights: Tensor,
    cu_seq_len_k_start: Tensor,
    cu_seq_len_k_end: Tensor,
    clean_logits: bool = True,
    max_seqlen_k: int = 0,
    logits_dtype: Any = None,
    out: Optional[Tensor] = None,
    stream: StreamLike = None,
) -> Tensor:
    """Non-paged MQA logits (prefill): ``logits[i, j] = kv_sf[j] * sum_h weights[i, h] *
    relu(q[i, h] . kv[j])`` for ``j`` in ``[cu_seq_len_k_start[i], cu_seq_len_k_end[i])``; with
    ``max_seqlen_k > 0`` the compressed layout, that score at ``logits[i, j - start[i]]``.

    Args:
        q: float8_e4m3fn ``[S_q, H, D]`` (H 32 or 64, D 64 or 128).
        kv: ``(kv_fp8, kv_sf)``: float8_e4m3fn ``[S_kv, D]`` and float32 ``[S_kv]`` per-key scales.
        weights: float32 ``[S_q, H]``.
        cu_seq_len_k_start, cu_seq_len_k_end: int32 ``[S_q]``: each token's key range (clipped to
            ``[0, S_kv)``).
        clean_logits: write -inf outside each row's range (must be False with ``max_seqlen_k``).
        max_seqlen_k: 0, or the compressed layout's columns: row i holds the keys
            ``[start[i], min(end[i], start[i] + max_seqlen_k))`` from column 0 (a longer range is
            clipped; entries past a row's range may hold anything).
        logits_dtype: float32 (default) or bfloat16.
        out: the logits ``[S_q, S_kv]`` (compressed: ``[S_q, max_seqlen_k]``; row stride a
            multiple of 16 bytes); default: allocated with torch, rows padded as
            :func:`get_mqa_logits_layout` says.
        stream: explicit stream; default: torch's current stream, else the legacy default.

    Returns:
        The logits ``[S_q, S_kv]`` (compressed: ``[S_q, max_seqlen_k]``)."""
    key = None
    if (stream is None and type(max_seqlen_k) is int and type(clean_logits) in _FLAGS
            and type(kv) is tuple and len(kv) == 2):
        types = _fast._types or _fast.tensor_types()
        x, sx = kv
        if (types is not None and type(q) in types and type(x) in types and type(sx) in types and type(weights) in types
                and type(cu_seq_len_k_start) in types and type(cu_seq_len_k_end) in types
                and (out is None or type(out) in types) and _dtype_key(logits_dtype, q.dtype)):
            ks, ke = cu_seq_len_k_start, cu_seq_len_k_end
            key = (_prefill_entry(max_seqlen_k), max_seqlen_k, bool(clean_logits), logits_dtype,
                   q.data_ptr(), q.shape, q.stride(), q.dtype, x.data_ptr(), x.shape, x.stride(), x.dtype,
                   sx.data_ptr(), sx.shape, sx.stride(), sx.dtype,
                   weights.data_ptr(), weights.shape, weights.stride(), weights.dtype,
                   ks.data_ptr(), ks.shape, ks.stride(), ks.dtype, ke.data_ptr(), ke.shape, ke.stride(), ke.dtype,
                   None if out is None else (out.data_ptr(), out.shape, out.stride(), out.dtype))
            result = _fast.replay(key, out)
            if result is not None:
                return result
    max_seqlen_k = _int64(max_seqlen_k, "max_seqlen_k")
    compressed = max_seqlen_k != 0
    name = _prefill_entry(max_seqlen_k)
    kv_fp8, kv_sf = _pair(kv, "kv")
    dtype = _logits_dtype(logits_dtype)
    handle, dev, cu, (iq, ikv, isf, iw, iks, ike) = _prepare_call(
        [(q, "q", None), (kv_fp8, "kv", None), (kv_sf, "kv_sf", None), (weights, "weights", None),
         (cu_seq_len_k_start, "cu_seq_len_k_start", None), (cu_seq_len_k_end, "cu_seq_len_k_end", None)],
        stream,
    )
    assert iq is not None and ikv is not None
    if iq.rank != 3 or ikv.rank != 2:
        raise InvalidArgument("q: expected [S_q, H, D] and kv [S_kv, D], got ranks %d and %d" % (iq.rank, ikv.rank))
    if max_seqlen_k < 0:
        raise InvalidArgument("max_seqlen_k: %d (expected 0, or the compressed layout's columns)" % max_seqlen_k)
    result, il, alloc = _logits_out(out, iq, iq.shape[0], max_seqlen_k if compressed else ikv.shape[0], dtype, cu)
    lib = _lib.get()
    clean = 1 if clean_logits else 0
    operands = (iq, ikv, isf, iw, iks, ike)
    with Descriptors() as ds:
        handles = [ds.add(i) for i in operands]
        if compressed:
            status = lib.fn(name)(handle, *handles, max_seqlen_k, ds.add(il), clean)
        else:
            status = lib.fn(name)(handle, *handles, ds.add(il), clean)
        lib.check(status, name)
    if key is not None:
        if compressed:
            _fast.store(key, name, dev, operands + (c_int64(max_seqlen_k), il, c_int32(clean)), alloc, 7)
        else:
            _fast.store(key, name, dev, operands + (il, c_int32(clean)), alloc, 6)
    return result


def get_paged_mqa_logits_metadata(
    context_lens: Tensor, block_kv: int, num_sms: int, out: Optional[Tensor] = None, stream: StreamLike = None
) -> Tensor:
    """The schedule of :func:`fp8_paged_mqa_logits`: int32 ``[num_sms + 1, 2]`` computed on the
    stream from ``context_lens`` (int32 ``[B]`` or ``[B, next_n]``). ``block_kv`` must be 64;
    ``num_sms`` is the number of CTAs the paged call runs (DeepGEMM passes the SM count)."""
    name = "dg_get_paged_mqa_logits_metadata"
    key = None
    if stream is None and type(block_kv) is int and type(num_sms) is int:
        types = _fast._types or _fast.tensor_types()
        if types is not None and type(context_lens) in types and (out is None or type(out) in types):
            ctx = context_lens
            key = (name, block_kv, num_sms, ctx.data_ptr(), ctx.shape, ctx.stride(), ctx.dtype,
                   None if out is None else (out.data_ptr(), out.shape, out.stride(), out.dtype))
            result = _fast.replay(key, out)
            if result is not None:
                return result
    block_kv, num_sms = _int32(block_kv, "block_kv"), _int32(num_sms, "num_sms")
    handle, dev, cu, (ictx, iout) = _prepare_call([(context_lens, "context_lens", None), (out, "out", None)], stream)
    assert ictx is not None
    result, alloc = out, None
    if iout is None:
        if num_sms < 1:
            raise InvalidArgument("num_sms: %d (expected at least 1)" % num_sms)
        alloc = TorchAllocation(ictx, INT32, [num_sms + 1, 2], [2, 1], 8 * (num_sms + 1))
        result = alloc.new(cu)
        iout = describe(result, "out")
    _writable(iout, "out")
    lib = _lib.get()
    with Descriptors() as ds:
        status = lib.fn(name)(handle, ds.add(ictx), block_kv, num_sms, ds.add(iout))
        lib.check(status, name)
    if key is not None:
        _fast.store(key, name, dev, (ictx, c_int32(block_kv), c_int32(num_sms), iout), alloc, 3)
    return result


def fp8_paged_mqa_logits(
    q: Tensor,
    kv_cache: Tensor,
    weights: Tensor,
    context_lens: Tensor,
    block_table: Tensor,
    schedule_meta: Tensor,
    max_context_len: int,
    clean_logits: bool = False,
    logits_dtype: Any = None,
    out: Optional[Tensor] = None,
    stream: StreamLike = None,
) -> Tensor:
    """Paged MQA logits (decoding): row ``b * next_n + j`` scores the cached keys of sequence b.

    Args:
        q: float8_e4m3fn ``[B, next_n, H, D]`` (next_n 1, 2 or 4; H 32 or 64; D 64 or 128).
        kv_cache: uint8 ``[num_blocks, 64, 1, D + 4]``: each block's 64 rows of FP8 values, then
            their 64 float32 scales.
        weights: float32 ``[B * next_n, H]``.
        context_lens: int32 ``[B]`` (row j covers keys ``t <= ctx[b] - next_n + j``) or
            ``[B, next_n]`` (``t < ctx[b, j]``).
        block_table: int32 ``[B, max_blocks]``: key t is slot ``t % 64`` of block
            ``block_table[b, t // 64]``.
        schedule_meta: from :func:`get_paged_mqa_logits_metadata` with the same ``context_lens``.
        max_context_len: the logits' columns.
        clean_logits: write -inf past each row's end.
        logits_dtype: float32 (default) or bfloat16.
        out: the logits ``[B * next_n, max_context_len]``; default: allocated with torch.
        stream: explicit stream; default: torch's current stream, else the legacy default.

    Returns:
        The logits ``[B * next_n, max_context_len]``."""
    name = "dg_fp8_paged_mqa_logits"
    key = None
    if stream is None and type(max_context_len) is int and type(clean_logits) in _FLAGS:
        types = _fast._types or _fast.tensor_types()
        if (types is not None and type(q) in types and type(kv_cache) in types and type(weights) in types
                and type(context_lens) in types and type(block_table) in types and type(schedule_meta) in types
                and (out is None or type(out) in types) and _dtype_key(logits_dtype, q.dtype)):
            c, ctx, bt, sm = kv_cache, context_lens, block_table, schedule_meta
            key = (name, max_context_len, bool(clean_logits), logits_dtype, q.data_ptr(), q.shape, q.stride(), q.dtype,
                   c.data_ptr(), c.shape, c.stride(), c.dtype, weights.data_ptr(), weights.shape, weights.stride(),
                   weights.dtype, ctx.data_ptr(), ctx.shape, ctx.stride(), ctx.dtype,
                   bt.data_ptr(), bt.shape, bt.stride(), bt.dtype, sm.data_ptr(), sm.shape, sm.stride(), sm.dtype,
                   None if out is None else (out.data_ptr(), out.shape, out.stride(), out.dtype))
            result = _fast.replay(key, out)
            if result is not None:
                return result
    max_context_len = _int64(max_context_len, "max_context_len")
    dtype = _logits_dtype(logits_dtype)
    handle, dev, cu, (iq, ic, iw, ictx, ibt, ism) = _prepare_call(
        [(q, "q", None), (kv_cache, "kv_cache", None), (weights, "weights", None), (context_lens, "context_lens", None),
         (block_table, "block_table", None), (schedule_meta, "schedule_meta", None)],
        stream,
    )
    assert iq is not None
    if iq.rank != 4:
        raise InvalidArgument("q: expected [B, next_n, H, D], got rank %d" % iq.rank)
    result, il, alloc = _logits_out(out, iq, iq.shape[0] * iq.shape[1], max_context_len, dtype, cu)
    lib = _lib.get()
    clean = 1 if clean_logits else 0
    with Descriptors() as ds:
        status = lib.fn(name)(handle, ds.add(iq), ds.add(ic), ds.add(iw), ds.add(ictx), ds.add(ibt), ds.add(ism),
                              max_context_len, ds.add(il), clean)
        lib.check(status, name)
    if key is not None:
        _fast.store(key, name, dev, (iq, ic, iw, ictx, ibt, ism, c_int64(max_context_len), il, c_int32(clean)), alloc, 7)
    return result


def paged_mqa_logits_prepare(heads: int, head_dim: int, next_n: int, logits_dtype: Any = None,
                             device: Optional[int] = None, stream: StreamLike = None) -> None:
    """Compiles and loads the schedule and paged kernels for ``(heads, head_dim, next_n,
    logits_dtype)`` without launching anything: call it before capturing a CUDA graph.
    ``device``, ``stream``: where they will run (default: torch's current device/stream)."""
    handle, _dev, _cu = _stream.resolve(stream, device)
    _lib.get().call("dg_paged_mqa_logits_prepare", handle, _int32(heads, "heads"), _int32(head_dim, "head_dim"),
                    _int32(next_n, "next_n"), _logits_dtype(logits_dtype))
