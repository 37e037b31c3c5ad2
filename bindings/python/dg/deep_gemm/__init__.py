"""``dg.deep_gemm``: DeepGEMM 2.6's Python API over libdg, for engines that call ``deep_gemm.<name>``.

    import dg.deep_gemm as deep_gemm

Names, argument lists and defaults follow DeepGEMM 2.6.1's ``deep_gemm`` package; each call runs
on torch's current stream. What differs (SM90 only, no FP4 operands, the composed calls, the
SM100-only names that raise :class:`dg.Unsupported`) is in docs/deep_gemm_dropin.md.
"""

from ._runtime import (  # noqa: F401
    get_num_sms,
    get_pdl,
    get_tc_util,
    set_block_size_multiple_of,
    set_ignore_compile_dims,
    set_num_sms,
    set_pdl,
    set_tc_util,
)
from ._gemm import (  # noqa: F401
    bf16_gemm_nn,
    bf16_gemm_nt,
    bf16_gemm_tn,
    bf16_gemm_tt,
    bf16_m_grouped_gemm_nt_masked,
    cublaslt_gemm_nn,
    cublaslt_gemm_nt,
    cublaslt_gemm_tn,
    cublaslt_gemm_tt,
    fp8_fp4_gemm_nn,
    fp8_fp4_gemm_nt,
    fp8_fp4_gemm_tn,
    fp8_fp4_gemm_tt,
    fp8_fp4_mqa_logits,
    fp8_fp4_paged_mqa_logits,
    fp8_gemm_nn,
    fp8_gemm_nt,
    fp8_gemm_tn,
    fp8_gemm_tt,
    fp8_m_grouped_gemm_nt_masked,
    fp8_mqa_logits,
    fp8_paged_mqa_logits,
    get_paged_mqa_logits_metadata,
    k_grouped_bf16_gemm_tn_contiguous,
    k_grouped_fp8_gemm_nt_contiguous,
    k_grouped_fp8_gemm_tn_contiguous,
    m_grouped_bf16_gemm_nn_contiguous,
    m_grouped_bf16_gemm_nt_contiguous,
    m_grouped_bf16_gemm_nt_masked,
    m_grouped_fp8_fp4_gemm_nn_contiguous,
    m_grouped_fp8_fp4_gemm_nt_contiguous,
    m_grouped_fp8_fp4_gemm_nt_masked,
    m_grouped_fp8_gemm_nn_contiguous,
    m_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_masked,
)
from ._extra import einsum, fp8_einsum, fp8_gemm_nt_skip_head_mid, tf32_hc_prenorm_gemm  # noqa: F401
from ._layout import transform_sf_into_required_layout  # noqa: F401
from .mega import (  # noqa: F401
    SymmBuffer,
    bf16_mega_moe,
    fp8_fp4_mega_moe,
    get_symm_buffer_for_mega_moe,
    transform_weights_for_mega_moe,
)
from . import legacy, mega, testing, utils  # noqa: F401
from .utils import *  # noqa: F401,F403

# The DeepGEMM release whose API this module follows.
__version__ = "2.6.1"
