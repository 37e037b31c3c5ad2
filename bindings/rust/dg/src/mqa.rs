//! MQA logits of the DeepSeek-V3.2 indexer (SM90): every query token scores the keys of its range,
//! `logits[i, j] = kv_sf[j] * sum_h weights[i, h] * relu(q[i, h, :] . kv[j, :])`, with E4M3 q and
//! kv and FP32 sums. H (heads) 32 or 64 and D (head dim) 64 or 128; other values are
//! [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported). Callers allocate the logits
//! ([`mqa_logits_layout`] gives a shape and row stride); nothing synchronises the host.
//! `include/dg.h` gives the operand layouts.

use dg_sys as sys;

use crate::error::{check, Result};
use crate::layout::ScaleLayout;
use crate::stream::Stream;
use crate::tensor::{DType, Tensor};

/// The layout of MQA logits `[seq_len, seq_len_kv]` of `logits_dtype` (FLOAT32 or BFLOAT16):
/// strides (row stride, 1), the row stride `seq_len_kv` rounded up to 1024 bytes, and the bytes
/// to allocate (`dg_get_mqa_logits_layout`). For the compressed logits pass `S_q` and
/// `max_seqlen_k`, for the paged ones `B * next_n` and `max_context_len`.
pub fn mqa_logits_layout(seq_len: i64, seq_len_kv: i64, logits_dtype: DType) -> Result<ScaleLayout> {
    let mut sizes = [0i64; 2];
    let mut strides = [0i64; 2];
    let mut bytes = 0;
    // SAFETY: the outputs hold 2 entries each.
    check(unsafe {
        sys::dg_get_mqa_logits_layout(seq_len, seq_len_kv, logits_dtype.raw(), sizes.as_mut_ptr(),
                                      strides.as_mut_ptr(), &mut bytes)
    })?;
    Ok(ScaleLayout { sizes: sizes.to_vec(), strides: strides.to_vec(), bytes })
}

impl Stream {
    /// Non-paged MQA logits (prefill; `dg_fp8_mqa_logits`, DeepGEMM's `fp8_mqa_logits`): q
    /// FLOAT8_E4M3 [S_q, H, D], kv FLOAT8_E4M3 [S_kv, D] with its FLOAT32 [S_kv] per-key scales
    /// `kv_sf`, weights FLOAT32 [S_q, H]; token i scores the keys
    /// [`cu_seq_len_k_start[i]`, `cu_seq_len_k_end[i]`) (INT32 [S_q] each, clipped to [0, S_kv))
    /// into logits FLOAT32 or BFLOAT16 [S_q, S_kv] (row stride a multiple of 16 bytes).
    /// `clean_logits`: every entry outside its row's range is -inf; otherwise such entries may hold
    /// anything. S_q or S_kv 0: nothing runs.
    #[allow(clippy::too_many_arguments)]
    pub fn fp8_mqa_logits(&self, q: &Tensor, kv: &Tensor, kv_sf: &Tensor, weights: &Tensor,
                          cu_seq_len_k_start: &Tensor, cu_seq_len_k_end: &Tensor, logits: &Tensor,
                          clean_logits: bool) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_fp8_mqa_logits(self.as_raw(), q.as_raw(), kv.as_raw(), kv_sf.as_raw(), weights.as_raw(),
                                   cu_seq_len_k_start.as_raw(), cu_seq_len_k_end.as_raw(), logits.as_raw(),
                                   i32::from(clean_logits))
        })
    }

    /// [`Stream::fp8_mqa_logits`] in the compressed layout (`dg_fp8_mqa_logits_compressed`,
    /// DeepGEMM's `fp8_mqa_logits` with `max_seqlen_k > 0`): row i of logits (FLOAT32 or BFLOAT16
    /// [S_q, max_seqlen_k], row stride a multiple of 16 bytes) holds token i's keys from its
    /// first, `logits[i, j - start[i]]` for j in [start[i], min(end[i], start[i] + max_seqlen_k));
    /// a longer range is clipped, entries past a row's range may hold anything. `max_seqlen_k` 1
    /// to 2^31 - 1. `clean_logits` must be false (no -inf is written in this layout; true is
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)).
    #[allow(clippy::too_many_arguments)]
    pub fn fp8_mqa_logits_compressed(&self, q: &Tensor, kv: &Tensor, kv_sf: &Tensor, weights: &Tensor,
                                     cu_seq_len_k_start: &Tensor, cu_seq_len_k_end: &Tensor, max_seqlen_k: i64,
                                     logits: &Tensor, clean_logits: bool) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_fp8_mqa_logits_compressed(self.as_raw(), q.as_raw(), kv.as_raw(), kv_sf.as_raw(),
                                              weights.as_raw(), cu_seq_len_k_start.as_raw(),
                                              cu_seq_len_k_end.as_raw(), max_seqlen_k, logits.as_raw(),
                                              i32::from(clean_logits))
        })
    }

    /// Computes on the stream the schedule of [`Stream::fp8_paged_mqa_logits`]
    /// (`dg_get_paged_mqa_logits_metadata`, DeepGEMM's `get_paged_mqa_logits_metadata`) into
    /// `schedule_meta`, INT32 [num_sms + 1, 2] contiguous, from `context_lens` as the paged call
    /// gets them (INT32 [B] or [B, next_n]). `block_kv` must be 64; `num_sms` (1 to 65535) is the
    /// number of CTAs the paged call runs (DeepGEMM passes the SM count). No host synchronisation.
    pub fn get_paged_mqa_logits_metadata(&self, context_lens: &Tensor, block_kv: i32, num_sms: i32,
                                         schedule_meta: &Tensor) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_get_paged_mqa_logits_metadata(self.as_raw(), context_lens.as_raw(), block_kv, num_sms,
                                                  schedule_meta.as_raw())
        })
    }

    /// Paged MQA logits (decoding; `dg_fp8_paged_mqa_logits`, DeepGEMM's `fp8_paged_mqa_logits`):
    /// row r = b * next_n + j of logits (FLOAT32 or BFLOAT16 [B * next_n, max_context_len], row
    /// stride a multiple of 16 bytes) scores the cached keys of sequence b. q FLOAT8_E4M3
    /// [B, next_n, H, D] (next_n 1, 2 or 4); kv_cache UINT8 [num_blocks, 64, 1, D + 4], each block
    /// its 64 keys' FP8 values, then their FP32 scales; weights FLOAT32 [B * next_n, H];
    /// context_lens INT32 [B] (row j covers keys t <= ctx[b] - next_n + j) or [B, next_n]
    /// (t < ctx[b, j]); block_table INT32 [B, max_blocks] (key t is slot t % 64 of block
    /// block_table[b, t / 64]); schedule_meta from [`Stream::get_paged_mqa_logits_metadata`] with
    /// the same context lengths. `clean_logits`: entries past a row's end are -inf. No host
    /// synchronisation: the call can be captured in a CUDA graph (call
    /// [`Stream::paged_mqa_logits_prepare`] first).
    #[allow(clippy::too_many_arguments)]
    pub fn fp8_paged_mqa_logits(&self, q: &Tensor, kv_cache: &Tensor, weights: &Tensor, context_lens: &Tensor,
                                block_table: &Tensor, schedule_meta: &Tensor, max_context_len: i64, logits: &Tensor,
                                clean_logits: bool) -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_fp8_paged_mqa_logits(self.as_raw(), q.as_raw(), kv_cache.as_raw(), weights.as_raw(),
                                         context_lens.as_raw(), block_table.as_raw(), schedule_meta.as_raw(),
                                         max_context_len, logits.as_raw(), i32::from(clean_logits))
        })
    }

    /// Compiles and loads, without launching, the schedule kernel and the paged kernel for `heads`
    /// (32 or 64), `head_dim` (64 or 128), `next_n` (1, 2 or 4) and `logits_dtype` (FLOAT32 or
    /// BFLOAT16) (`dg_paged_mqa_logits_prepare`). Call it before capturing a CUDA graph. Works on
    /// an [offline](Stream::offline) stream.
    pub fn paged_mqa_logits_prepare(&self, heads: i32, head_dim: i32, next_n: i32, logits_dtype: DType)
                                    -> Result<()> {
        // SAFETY: a live handle; no device memory is touched.
        check(unsafe { sys::dg_paged_mqa_logits_prepare(self.as_raw(), heads, head_dim, next_n, logits_dtype.raw()) })
    }
}
