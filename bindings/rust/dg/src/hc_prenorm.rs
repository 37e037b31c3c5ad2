//! The hyper-connection pre-norm GEMM (`dg_tf32_hc_prenorm_gemm`): BF16 A [M, K] times FP32 B
//! [N, K] (N <= 32) on TF32 tensor cores, FP32 D, and each row's sum of squares of A.

use dg_sys as sys;

use crate::error::{check, Result};
use crate::stream::Stream;
use crate::tensor::Tensor;

impl Stream {
    /// `d = a . bᵀ` and `sqr_sum[m] = sum_k a[m, k]²` (`dg_tf32_hc_prenorm_gemm`): a BFLOAT16 [M, K],
    /// b FLOAT32 [N, K], d FLOAT32 [M, N] and sqr_sum FLOAT32 [M]; with `num_splits` > 0, K is split
    /// into that many parts and d [num_splits, M, N], sqr_sum [num_splits, M] hold the partial sums.
    pub fn tf32_hc_prenorm_gemm(&self, a: &Tensor, b: &Tensor, d: &Tensor, sqr_sum: &Tensor, num_splits: i32)
                                -> Result<()> {
        // SAFETY: live handles; the memory they describe is covered by Tensor::new's contract.
        check(unsafe {
            sys::dg_tf32_hc_prenorm_gemm(self.as_raw(), a.as_raw(), b.as_raw(), d.as_raw(), sqr_sum.as_raw(), num_splits)
        })
    }
}
