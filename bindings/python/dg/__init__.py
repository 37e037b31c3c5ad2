"""``dg``: DeepGEMM's kernels through libdg's C ABI (ctypes; no compiled extension).

Tensors are PyTorch tensors or any object with ``__dlpack__`` or ``__cuda_array_interface__``;
function names and arguments follow DeepGEMM (``dg.fp8_gemm_nt((a, sfa), (b, sfb), d)``,
``dg.bf16_gemm_nn(a, b, d)``, ``dg.set_num_sms(n)``, ...). Every libdg failure raises a subclass of
:class:`dg.Error` carrying libdg's message.

The library is found through ``DG_LIBRARY_PATH`` (a file or directory), pkg-config, this package's
folder (where ``pip install`` puts the libdg it builds), the source tree's ``build/`` directory,
then the system loader.

Modules (all private; everything public is exported here): one per call family, ``_core``
(version, logging, config, devices), ``_layout`` (host utilities, scale layouts), ``_gemm``,
``_grouped`` (M-grouped), ``_epilogue`` (fused GEMM epilogues), ``_k_grouped``, ``_einsum``, ``_mqa``, ``_gemv``, ``_cublaslt``, ``_stream``
(``dg.Stream``); beneath them ``_arguments`` (argument handling the families share), ``_tensor``
(tensor descriptors), ``_fast`` (the warm path of repeated calls), ``_lib`` (finding and loading
libdg and NVRTC), ``_integers`` (integer arguments), ``_declarations`` (ctypes declarations
generated from ``include/dg.h``), ``_info`` (``dg.info()``, the ``dg-info`` command), ``_tune`` (``dg.tune``, the ``dg-tune`` command)
and ``errors``.
"""

from __future__ import annotations

from . import _lib
from .errors import (
    CompileError,
    CudaError,
    Error,
    InternalError,
    InvalidArgument,
    LibraryNotFoundError,
    NoDevice,
    OutOfMemory,
    Unsupported,
    exception_for_status,
)

# Load libdg now so that a missing or incompatible library is reported at import.
_lib.get()

# The package's version is the library's (include/dg.h); a package folder copied without its
# distribution metadata reports the loaded library's.
__version__ = _lib.package_version() or _lib.get().version()

from ._stream import Stream  # noqa: E402
from ._tensor import TensorInfo  # noqa: E402
from ._core import (  # noqa: E402
    LOG_LEVELS,
    Config,
    available,
    device_count,
    get_device_capability,
    get_log_level,
    get_num_sms,
    get_tc_util,
    jit_stats,
    library_path,
    set_log_callback,
    set_log_level,
    set_num_sms,
    set_tc_util,
    status_string,
    version,
    version_number,
)
from ._layout import (  # noqa: E402
    get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout,
    get_mk_alignment_for_contiguous_layout,
    get_mn_major_tma_aligned_packed_ue8m0_tensor,
    get_mn_major_tma_aligned_packed_ue8m0_tensor_layout,
    get_mn_major_tma_aligned_tensor,
    get_mn_major_tma_aligned_tensor_layout,
    get_tma_aligned_size,
    get_transform_sf_layout,
    transform_sf_into_required_layout,
)
from ._gemm import (  # noqa: E402
    bf16_gemm_nn,
    bf16_gemm_nt,
    bf16_gemm_tn,
    bf16_gemm_tt,
    fp8_gemm_nn,
    fp8_gemm_nt,
    fp8_gemm_nt_skip_head_mid,
    fp8_gemm_tn,
    fp8_gemm_tt,
    fp8_gemm_workspace_size,
    gemm_prepare,
)
from ._grouped import (  # noqa: E402
    bf16_m_grouped_gemm_nt_masked,
    fp8_m_grouped_gemm_nt_masked,
    m_grouped_bf16_gemm_nn_contiguous,
    m_grouped_bf16_gemm_nt_contiguous,
    m_grouped_bf16_gemm_nt_masked,
    m_grouped_fp8_gemm_nn_contiguous,
    m_grouped_fp8_gemm_nt_contiguous,
    m_grouped_fp8_gemm_nt_masked,
    m_grouped_gemm_prepare,
)
from ._k_grouped import (  # noqa: E402
    k_grouped_bf16_gemm_tn_contiguous,
    k_grouped_fp8_gemm_nt_contiguous,
    k_grouped_fp8_gemm_tn_contiguous,
    k_grouped_gemm_prepare,
)
from ._cublaslt import (  # noqa: E402
    cublaslt_available,
    cublaslt_gemm_nn,
    cublaslt_gemm_nt,
    cublaslt_gemm_tn,
    cublaslt_gemm_tt,
)
from ._epilogue import GemmEpilogue, fp8_scales_like, swiglu_interleave  # noqa: E402
from ._gemv import nvfp4_gemv  # noqa: E402
from ._hc_prenorm import tf32_hc_prenorm_gemm  # noqa: E402
from ._einsum import einsum, einsum_prepare, fp8_einsum, fp8_einsum_prepare  # noqa: E402
from ._quant import (  # noqa: E402
    k_grouped_padded_ks,
    quantize_fp8_k_grouped,
    quantize_fp8_mn_major,
    quantize_fp8_per_block,
    quantize_fp8_per_token,
    quantize_fp8_per_token_contiguous,
    quantize_fp8_per_token_masked,
)
from ._mqa import (  # noqa: E402
    fp8_mqa_logits,
    fp8_paged_mqa_logits,
    get_mqa_logits_layout,
    get_paged_mqa_logits_metadata,
    paged_mqa_logits_prepare,
)
from ._arguments import SfLayout  # noqa: E402
from ._info import info  # noqa: E402
from ._tune import prepare_problems, tune  # noqa: E402

__all__ = [
    "__version__",
    # errors
    "Error",
    "InvalidArgument",
    "Unsupported",
    "NoDevice",
    "CudaError",
    "CompileError",
    "OutOfMemory",
    "InternalError",
    "LibraryNotFoundError",
    "exception_for_status",
    # library
    "version",
    "version_number",
    "library_path",
    "status_string",
    "available",
    "info",
    "tune",
    "prepare_problems",
    "set_log_level",
    "get_log_level",
    "set_log_callback",
    "LOG_LEVELS",
    # configuration, devices, streams
    "Config",
    "Stream",
    "set_num_sms",
    "get_num_sms",
    "set_tc_util",
    "get_tc_util",
    "device_count",
    "get_device_capability",
    "jit_stats",
    # utilities and layouts
    "TensorInfo",
    "SfLayout",
    "get_tma_aligned_size",
    "get_mk_alignment_for_contiguous_layout",
    "get_mn_major_tma_aligned_tensor",
    "get_mn_major_tma_aligned_tensor_layout",
    "get_mn_major_tma_aligned_packed_ue8m0_tensor",
    "get_mn_major_tma_aligned_packed_ue8m0_tensor_layout",
    "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor",
    "get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout",
    "get_transform_sf_layout",
    "transform_sf_into_required_layout",
    # kernels
    "fp8_gemm_nt",
    "fp8_gemm_nn",
    "fp8_gemm_tn",
    "fp8_gemm_tt",
    "fp8_gemm_nt_skip_head_mid",
    "fp8_gemm_workspace_size",
    "bf16_gemm_nt",
    "bf16_gemm_nn",
    "bf16_gemm_tn",
    "bf16_gemm_tt",
    "cublaslt_available",
    "cublaslt_gemm_nt",
    "cublaslt_gemm_nn",
    "cublaslt_gemm_tn",
    "cublaslt_gemm_tt",
    "nvfp4_gemv",
    "tf32_hc_prenorm_gemm",
    "k_grouped_padded_ks",
    "quantize_fp8_k_grouped",
    "quantize_fp8_mn_major",
    "quantize_fp8_per_block",
    "quantize_fp8_per_token",
    "quantize_fp8_per_token_contiguous",
    "quantize_fp8_per_token_masked",
    "gemm_prepare",
    # fused GEMM epilogues
    "GemmEpilogue",
    "swiglu_interleave",
    "fp8_scales_like",
    # MQA logits (DeepSeek-V3.2 indexer)
    "fp8_mqa_logits",
    "fp8_paged_mqa_logits",
    "get_mqa_logits_layout",
    "get_paged_mqa_logits_metadata",
    "paged_mqa_logits_prepare",
    # M-grouped GEMMs
    "m_grouped_fp8_gemm_nt_contiguous",
    "m_grouped_fp8_gemm_nn_contiguous",
    "m_grouped_bf16_gemm_nt_contiguous",
    "m_grouped_bf16_gemm_nn_contiguous",
    "m_grouped_fp8_gemm_nt_masked",
    "m_grouped_bf16_gemm_nt_masked",
    "fp8_m_grouped_gemm_nt_masked",
    "bf16_m_grouped_gemm_nt_masked",
    "m_grouped_gemm_prepare",
    # K-grouped GEMMs
    "k_grouped_fp8_gemm_nt_contiguous",
    "k_grouped_fp8_gemm_tn_contiguous",
    "k_grouped_bf16_gemm_tn_contiguous",
    "k_grouped_gemm_prepare",
    # einsum forms (docs/einsum.md)
    "einsum",
    "einsum_prepare",
    "fp8_einsum",
    "fp8_einsum_prepare",
]
