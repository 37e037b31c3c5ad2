package dg

// #include "calls.h"
import "C"

// MQA logits of the DeepSeek-V3.2 indexer (SM90): every query token scores the keys of its range,
// logits[i, j] = kv_sf[j] * sum_h weights[i, h] * relu(q[i, h, :] . kv[j, :]), with E4M3 q and kv
// and FP32 sums. H (heads) 32 or 64 and D (head dim) 64 or 128; other values are ErrUnsupported.
// Callers allocate the logits (MQALogitsLayout gives a shape and row stride); nothing
// synchronises the host. dg.h gives the operand layouts.

// MQALogitsLayout is the layout of MQA logits [seqLen, seqLenKV] of logitsDType (Float32 or
// BFloat16): strides (row stride, 1), the row stride seqLenKV rounded up to 1024 bytes, and the
// bytes to allocate (dg_get_mqa_logits_layout). For the compressed logits pass S_q and
// maxSeqLenK, for the paged ones B * next_n and maxContextLen.
func MQALogitsLayout(seqLen, seqLenKV int64, logitsDType DType) (ScaleLayout, error) {
	var sizes, strides [MaxRank]C.int64_t
	var bytes C.size_t
	if err := check(C.dgw_get_mqa_logits_layout(C.int64_t(seqLen), C.int64_t(seqLenKV), C.dg_dtype(logitsDType),
		&sizes[0], &strides[0], &bytes)); err != nil {
		return ScaleLayout{}, err
	}
	return scaleLayout(2, &sizes, &strides, bytes), nil
}

// FP8MQALogits is the non-paged MQA logits (prefill; dg_fp8_mqa_logits, DeepGEMM's
// fp8_mqa_logits): q Float8E4M3 [S_q, H, D], kv Float8E4M3 [S_kv, D] with its Float32 [S_kv]
// per-key scales kvSF, weights Float32 [S_q, H]; token i scores the keys
// [cuSeqLenKStart[i], cuSeqLenKEnd[i]) (Int32 [S_q] each, clipped to [0, S_kv)) into logits
// Float32 or BFloat16 [S_q, S_kv] (row stride a multiple of 16 bytes). cleanLogits: every entry
// outside its row's range is -inf; otherwise such entries may hold anything. S_q or S_kv 0:
// nothing runs.
func (s *Stream) FP8MQALogits(q, kv, kvSF, weights, cuSeqLenKStart, cuSeqLenKEnd, logits *Tensor,
	cleanLogits bool) error {
	err := check(C.dgw_fp8_mqa_logits(s.ptr, q.raw(), kv.raw(), kvSF.raw(), weights.raw(), cuSeqLenKStart.raw(),
		cuSeqLenKEnd.raw(), logits.raw(), cBool(cleanLogits)))
	keep(s, q, kv, kvSF, weights, cuSeqLenKStart, cuSeqLenKEnd, logits)
	return err
}

// FP8MQALogitsCompressed is FP8MQALogits in the compressed layout (dg_fp8_mqa_logits_compressed,
// DeepGEMM's fp8_mqa_logits with max_seqlen_k > 0): row i of logits (Float32 or BFloat16
// [S_q, maxSeqLenK], row stride a multiple of 16 bytes) holds token i's keys from its first,
// logits[i, j - start[i]] for j in [start[i], min(end[i], start[i] + maxSeqLenK)); a longer range
// is clipped, entries past a row's range may hold anything. maxSeqLenK 1 to 2^31 - 1.
// cleanLogits must be false (no -inf is written in this layout; true is ErrUnsupported).
func (s *Stream) FP8MQALogitsCompressed(q, kv, kvSF, weights, cuSeqLenKStart, cuSeqLenKEnd *Tensor, maxSeqLenK int64,
	logits *Tensor, cleanLogits bool) error {
	err := check(C.dgw_fp8_mqa_logits_compressed(s.ptr, q.raw(), kv.raw(), kvSF.raw(), weights.raw(),
		cuSeqLenKStart.raw(), cuSeqLenKEnd.raw(), C.int64_t(maxSeqLenK), logits.raw(), cBool(cleanLogits)))
	keep(s, q, kv, kvSF, weights, cuSeqLenKStart, cuSeqLenKEnd, logits)
	return err
}

// GetPagedMQALogitsMetadata computes on the stream the schedule of FP8PagedMQALogits
// (dg_get_paged_mqa_logits_metadata, DeepGEMM's get_paged_mqa_logits_metadata) into
// scheduleMeta, Int32 [numSMs + 1, 2] contiguous, from contextLens as the paged call gets them
// (Int32 [B] or [B, next_n]). blockKV must be 64; numSMs (1 to 65535) is the number of CTAs the
// paged call runs (DeepGEMM passes the SM count). No host synchronisation.
func (s *Stream) GetPagedMQALogitsMetadata(contextLens *Tensor, blockKV, numSMs int, scheduleMeta *Tensor) error {
	var a cArgs
	bkv, sms := a.int32("block_kv", blockKV), a.int32("num_sms", numSMs)
	if a.err != nil {
		return a.err
	}
	err := check(C.dgw_get_paged_mqa_logits_metadata(s.ptr, contextLens.raw(), bkv, sms, scheduleMeta.raw()))
	keep(s, contextLens, scheduleMeta)
	return err
}

// FP8PagedMQALogits is the paged MQA logits (decoding; dg_fp8_paged_mqa_logits, DeepGEMM's
// fp8_paged_mqa_logits): row r = b * next_n + j of logits (Float32 or BFloat16
// [B * next_n, maxContextLen], row stride a multiple of 16 bytes) scores the cached keys of
// sequence b. q Float8E4M3 [B, next_n, H, D] (next_n 1, 2 or 4); kvCache Uint8
// [num_blocks, 64, 1, D + 4], each block its 64 keys' FP8 values, then their FP32 scales; weights
// Float32 [B * next_n, H]; contextLens Int32 [B] (row j covers keys t <= ctx[b] - next_n + j) or
// [B, next_n] (t < ctx[b, j]); blockTable Int32 [B, max_blocks] (key t is slot t % 64 of block
// blockTable[b, t / 64]); scheduleMeta from GetPagedMQALogitsMetadata with the same context
// lengths. cleanLogits: entries past a row's end are -inf. No host synchronisation: the call can
// be captured in a CUDA graph (call PagedMQALogitsPrepare first).
func (s *Stream) FP8PagedMQALogits(q, kvCache, weights, contextLens, blockTable, scheduleMeta *Tensor,
	maxContextLen int64, logits *Tensor, cleanLogits bool) error {
	err := check(C.dgw_fp8_paged_mqa_logits(s.ptr, q.raw(), kvCache.raw(), weights.raw(), contextLens.raw(),
		blockTable.raw(), scheduleMeta.raw(), C.int64_t(maxContextLen), logits.raw(), cBool(cleanLogits)))
	keep(s, q, kvCache, weights, contextLens, blockTable, scheduleMeta, logits)
	return err
}

// PagedMQALogitsPrepare compiles and loads, without launching, the schedule kernel and the paged
// kernel for heads (32 or 64), headDim (64 or 128), nextN (1, 2 or 4) and logitsDType (Float32 or
// BFloat16) (dg_paged_mqa_logits_prepare). Call it before capturing a CUDA graph. Works on an
// offline stream.
func (s *Stream) PagedMQALogitsPrepare(heads, headDim, nextN int, logitsDType DType) error {
	var a cArgs
	h, d, n := a.int32("heads", heads), a.int32("head_dim", headDim), a.int32("next_n", nextN)
	if a.err != nil {
		return a.err
	}
	err := check(C.dgw_paged_mqa_logits_prepare(s.ptr, h, d, n, C.dg_dtype(logitsDType)))
	keep(s)
	return err
}
