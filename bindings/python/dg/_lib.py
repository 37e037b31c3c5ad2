"""Finding and loading ``libdg.so``, and the ctypes prototypes of ``include/dg.h``.

Discovery order (the first candidate that loads and is a compatible libdg wins):

1. ``DG_LIBRARY_PATH``: a library file or a directory holding ``libdg.so*`` (several entries may be
   separated by ``os.pathsep``);
2. an installed libdg that pkg-config knows (``pkg-config --variable=libdir dg``): a user who
   installed one chose it over the copy a wheel carries;
3. the package's own folder (the wheel that ``pip install`` builds bundles ``libdg.so`` there);
4. the build tree, ``<repo>/build/libdg.so*``, when the package is imported from the source tree;
5. the system loader: ``ctypes.util.find_library("dg")``, then the soname ``libdg.so.<major>``.

When nothing loads, :class:`dg.LibraryNotFoundError` lists every path tried and why it failed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import re
import subprocess
import threading
import warnings
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_float,
    c_int32,
    c_int64,
    c_size_t,
    c_void_p,
)
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import errors

# The libdg major version this binding speaks (dg.h: DG_VERSION_MAJOR).
ABI_MAJOR = 0
LIBRARY_NAME = "libdg.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------


def _library_files(directory: str) -> List[str]:
    """``libdg.so*`` files of a directory, best first: ``libdg.so``, ``libdg.so.<major>``, others."""
    found = sorted(glob.glob(os.path.join(directory, LIBRARY_NAME + "*")))
    preferred = [os.path.join(directory, LIBRARY_NAME), os.path.join(directory, "%s.%d" % (LIBRARY_NAME, ABI_MAJOR))]
    ordered = [p for p in preferred if p in found]
    ordered += [p for p in found if p not in ordered and not p.endswith((".py", ".pc"))]
    return ordered


def _source_tree_root() -> Optional[str]:
    """The repository root when this package is imported from ``<repo>/bindings/python/dg``."""
    root = os.path.abspath(os.path.join(_PACKAGE_DIR, os.pardir, os.pardir, os.pardir))
    if os.path.isfile(os.path.join(root, "include", "dg.h")):
        return root
    return None


def package_version() -> Optional[str]:
    """This package's version, which has one source, ``include/dg.h``: read from it when imported
    from the source tree, else the installed distribution's (the wheel build took it from there);
    None when neither is available."""
    root = _source_tree_root()
    if root is not None:
        with open(os.path.join(root, "include", "dg.h")) as f:
            text = f.read()
        parts = [re.search(r"#define DG_VERSION_%s (\d+)" % k, text) for k in ("MAJOR", "MINOR", "PATCH")]
        if all(parts):
            return ".".join(m.group(1) for m in parts)  # type: ignore[union-attr]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dg")
    except PackageNotFoundError:
        return None


def _pkg_config_libdir() -> Tuple[Optional[str], str]:
    try:
        out = subprocess.run(
            ["pkg-config", "--variable=libdir", "dg"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, "pkg-config not usable: %s" % exc
    if out.returncode != 0:
        err = out.stderr.decode(errors="replace").strip() or "exit status %d, no dg.pc on PKG_CONFIG_PATH" % out.returncode
        return None, "pkg-config --variable=libdir dg failed: %s" % err
    libdir = out.stdout.decode().strip()
    if not libdir:
        return None, "pkg-config gave an empty libdir for dg"
    return libdir, ""


def _candidates(
    env_value: Optional[str],
    package_dir: Optional[str],
    repo_root: Optional[str],
    system: bool,
    tried: List[Tuple[str, str]],
):
    """Yields ``(origin, path_or_name)`` in discovery order; records failures that happen before a
    load is attempted (a missing file, an empty directory) in ``tried``."""
    if env_value:
        for entry in env_value.split(os.pathsep):
            if not entry:
                continue
            if os.path.isdir(entry):
                files = _library_files(entry)
                if not files:
                    tried.append((os.path.join(entry, LIBRARY_NAME + "*"), "DG_LIBRARY_PATH: no libdg.so* in this directory"))
                for f in files:
                    yield "DG_LIBRARY_PATH", f
            elif os.path.exists(entry):
                yield "DG_LIBRARY_PATH", entry
            else:
                tried.append((entry, "DG_LIBRARY_PATH: no such file or directory"))
    if system:
        libdir, why = _pkg_config_libdir()
        if libdir:
            files = _library_files(libdir)
            if not files:
                tried.append((os.path.join(libdir, LIBRARY_NAME + "*"), "pkg-config libdir: not present"))
            for f in files:
                yield "pkg-config", f
        else:
            tried.append(("pkg-config dg", why))
    if package_dir:
        files = _library_files(package_dir)
        if not files:
            tried.append((os.path.join(package_dir, LIBRARY_NAME + "*"), "package folder: not present"))
        for f in files:
            yield "package", f
    if repo_root:
        build = os.path.join(repo_root, "build")
        files = _library_files(build) if os.path.isdir(build) else []
        if not files:
            tried.append((os.path.join(build, LIBRARY_NAME + "*"), "build tree: not present"))
        for f in files:
            yield "build tree", f
    if system:
        name = ctypes.util.find_library("dg")
        if name:
            yield "find_library", name
        else:
            tried.append(("find_library('dg')", "system loader: not found"))
        yield "soname", "%s.%d" % (LIBRARY_NAME, ABI_MAJOR)


def _try_load(path: str) -> Tuple[Optional[ctypes.CDLL], str]:
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return None, str(exc)
    if getattr(lib, "dg_version_number", None) is None or getattr(lib, "dg_last_error", None) is None:
        return None, "loaded, but it is not libdg (no dg_version_number / dg_last_error)"
    lib.dg_version_number.restype = c_int32
    lib.dg_version_number.argtypes = []
    number = lib.dg_version_number()
    major = number // 10000
    if major != ABI_MAJOR:
        return None, "libdg version %d.%d.%d, this binding needs major version %d" % (
            major,
            number // 100 % 100,
            number % 100,
            ABI_MAJOR,
        )
    return lib, ""


def load_library(
    env_value: Optional[str] = None,
    package_dir: Optional[str] = None,
    repo_root: Optional[str] = None,
    system: bool = True,
) -> Tuple[ctypes.CDLL, str]:
    """Finds and loads libdg; returns ``(library, path)``.

    The arguments are the discovery inputs (tests pass their own); :func:`default_load` passes
    ``$DG_LIBRARY_PATH``, this package's folder and the source tree's root.

    Raises:
        LibraryNotFoundError: nothing loaded; ``.tried`` and the message list each path and why.
    """
    tried: List[Tuple[str, str]] = []
    for origin, path in _candidates(env_value, package_dir, repo_root, system, tried):
        lib, why = _try_load(path)
        if lib is not None:
            if env_value and origin != "DG_LIBRARY_PATH":
                warnings.warn(
                    "DG_LIBRARY_PATH=%r did not give a usable libdg; loaded %s instead (%s)"
                    % (env_value, path, "; ".join("%s: %s" % t for t in tried)),
                    RuntimeWarning,
                    stacklevel=3,
                )
            return lib, path
        tried.append((path, why))
    lines = "\n".join("  - %s: %s" % t for t in tried)
    message = (
        "could not load libdg (%s); tried, in order:\n%s\n"
        "Set DG_LIBRARY_PATH to libdg.so or to the directory holding it." % (LIBRARY_NAME, lines)
    )
    raise errors.LibraryNotFoundError(message, tried)


def default_load() -> Tuple[ctypes.CDLL, str]:
    """Discovery with this process's environment and this package's location."""
    return load_library(
        env_value=os.environ.get("DG_LIBRARY_PATH") or None,
        package_dir=_PACKAGE_DIR,
        repo_root=_source_tree_root(),
        system=True,
    )


# ---------------------------------------------------------------------------------------------
# Structs and callback types of dg.h
# ---------------------------------------------------------------------------------------------

dg_status = c_int32
dg_dtype = c_int32
_p = c_void_p  # every opaque handle (dg_config*, dg_stream*, dg_tensor*) and CUstream
_i64p = POINTER(c_int64)

LogCallback = CFUNCTYPE(None, c_int32, c_char_p, c_void_p)


class SfRecipe(Structure):
    """``dg_sf_recipe``: how a GEMM expects a scale tensor (see dg.h)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("gran_mn", c_int32),
        ("gran_k", c_int32),
        ("num_groups", c_int32),
        ("arch_major", c_int32),
        ("disable_ue8m0_cast", c_int32),
    ]

    def __init__(self, **kwargs) -> None:
        init = dict(struct_size=ctypes.sizeof(SfRecipe), gran_mn=1, gran_k=128, num_groups=0, arch_major=0, disable_ue8m0_cast=0)
        init.update(kwargs)
        super().__init__(**init)


FP8_RECIPE_1D2D = 0  # sfa per token x 128 K, sfb per 128 x 128 block (default)
FP8_RECIPE_1D1D = 1  # sfa and sfb per token x 128 K; d FLOAT32
FP8_PROMOTION_AFTER = 1  # DG_FP8_PROMOTION_*: fold each K block's partial sums after its WGMMAs
FP8_PROMOTION_OVERLAP = 2  # ... while the next K block's WGMMAs run
GEMM_KERNEL_AUTO = 0  # DG_GEMM_KERNEL_*: the heuristic picks the kernel family
GEMM_KERNEL_TILED = 1  # the persistent WGMMA kernel
GEMM_KERNEL_SKINNY = 2  # few tokens (M <= 32): B streamed once through warp-level MMAs

GEMM_LAYOUTS = {"nt": 0, "nn": 1, "tn": 2, "tt": 3}  # DG_GEMM_LAYOUT_*
M_GROUPED_LAYOUT_INDICES = 0  # DG_M_GROUPED_LAYOUT_*: each row's group (m_indices), -1 = padding
M_GROUPED_LAYOUT_PSUM = 1  # each group's end row
M_GROUPED_LAYOUT_MASKED = 2  # (prepare) the masked calls


class GemmOptions(Structure):
    """``dg_gemm_options`` (DG_GEMM_OPTIONS_INIT defaults): recipe, alpha, beta, per-field
    kernel-config overrides (0 = heuristic; ``multicast_a`` -1 = heuristic), and the FP8 calls'
    workspace for K-major copies of MN-major operands."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("recipe", c_int32),
        ("alpha", c_float),
        ("beta", c_float),
        ("disable_ue8m0_cast", c_int32),
        ("block_m", c_int32),
        ("block_n", c_int32),
        ("num_stages", c_int32),
        ("cluster", c_int32),
        ("multicast_a", c_int32),
        ("num_math_warpgroups", c_int32),
        ("num_sms", c_int32),
        ("fp8_promotion", c_int32),
        ("fp8_promotion_slices", c_int32),
        ("split_k", c_int32),
        # Appended in 0.4:
        ("workspace", c_void_p),
        ("workspace_size", c_size_t),
        # Appended in 0.5:
        ("kernel", c_int32),
    ]

    # Fields a caller may override through ``options=`` of the GEMM wrappers.
    TUNING = (
        "block_m",
        "block_n",
        "num_stages",
        "cluster",
        "multicast_a",
        "num_math_warpgroups",
        "num_sms",
        "fp8_promotion",
        "fp8_promotion_slices",
        "split_k",
        "kernel",
    )

    def __init__(self, **kwargs) -> None:
        init = dict(
            struct_size=ctypes.sizeof(GemmOptions),
            recipe=FP8_RECIPE_1D2D,
            alpha=1.0,
            beta=1.0,
            disable_ue8m0_cast=0,
            multicast_a=-1,
            workspace=None,
            workspace_size=0,
        )
        init.update(kwargs)
        super().__init__(**init)


class NvFp4GemvOptions(Structure):
    """``dg_nvfp4_gemv_options``: tuning overrides; every field left 0 is chosen by libdg."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("threads_per_row", c_int32),
        ("row_groups", c_int32),
        ("chunks_per_thread", c_int32),
        ("rows_per_round", c_int32),
        ("vector_bytes", c_int32),
        ("grid_blocks", c_int32),
        ("cache_hint", c_int32),
        ("prefetch", c_int32),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(struct_size=ctypes.sizeof(NvFp4GemvOptions), **kwargs)


class CublasltOptions(Structure):
    """``dg_cublaslt_options``: alpha, beta and the caller's split-K workspace."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("alpha", c_float),
        ("beta", c_float),
        ("workspace", c_void_p),
        ("workspace_size", c_size_t),
    ]

    def __init__(self, **kwargs) -> None:
        init = dict(struct_size=ctypes.sizeof(CublasltOptions), alpha=1.0, beta=1.0, workspace=None, workspace_size=0)
        init.update(kwargs)
        super().__init__(**init)


class QuantOptions(Structure):
    """``dg_quant_options``: power-of-two (UE8M0) scales and the amax floor (0 = 1e-4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("pow2_scales", c_int32),
        ("amax_floor", c_float),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(struct_size=ctypes.sizeof(QuantOptions), **kwargs)


# ---------------------------------------------------------------------------------------------
# Prototypes: name -> (restype, argtypes). Every function of dg.h this binding calls.
# ---------------------------------------------------------------------------------------------

_T = _p  # const dg_tensor*
_GEMM2 = [_p, _T, _T, _T, _T, POINTER(GemmOptions)]  # stream, a, b, d, c, const dg_gemm_options*
_CUBLASLT = [_p, _T, _T, _T, _T, POINTER(CublasltOptions)]
_GEMM_FP8 = [_p, _T, _T, _T, _T, _T, _T, POINTER(GemmOptions)]  # stream, a, sfa, b, sfb, d, c, options
_GROUPED_FP8 = [_p, _T, _T, _T, _T, _T, _T, c_int32, c_int64, POINTER(GemmOptions)]
_GROUPED_BF16 = [_p, _T, _T, _T, _T, c_int32, c_int64, POINTER(GemmOptions)]
_K_GROUPED_FP8 = [_p, _T, _T, _T, _T, _T, _T, _i64p, c_int64, _T, POINTER(GemmOptions)]

PROTOTYPES: Dict[str, Tuple[object, list]] = {
    # Status and errors, version
    "dg_status_string": (c_char_p, [dg_status]),
    "dg_last_error": (c_char_p, []),
    "dg_version": (c_char_p, []),
    "dg_version_number": (c_int32, []),
    # Logging
    "dg_set_log_callback": (dg_status, [LogCallback, c_void_p]),
    "dg_set_log_level": (dg_status, [c_int32]),
    "dg_get_log_level": (c_int32, []),
    # Data types
    "dg_dtype_size": (c_size_t, [dg_dtype]),
    "dg_dtype_name": (c_char_p, [dg_dtype]),
    # Configuration
    "dg_config_create": (dg_status, [POINTER(c_void_p)]),
    "dg_config_destroy": (None, [_p]),
    "dg_config_clone": (dg_status, [_p, POINTER(c_void_p)]),
    "dg_config_set_int": (dg_status, [_p, c_int32, c_int64]),
    "dg_config_get_int": (dg_status, [_p, c_int32, _i64p]),
    "dg_config_set_string": (dg_status, [_p, c_int32, c_char_p]),
    "dg_config_get_string": (dg_status, [_p, c_int32, c_char_p, c_size_t, POINTER(c_size_t)]),
    "dg_config_get_bounds": (dg_status, [c_int32, _i64p, _i64p]),
    "dg_set_num_sms": (dg_status, [c_int32]),
    "dg_get_num_sms": (c_int32, []),
    "dg_set_tc_util": (dg_status, [c_double]),
    "dg_get_tc_util": (c_double, []),
    # Devices and streams
    "dg_device_count": (dg_status, [POINTER(c_int32)]),
    "dg_device_get_capability": (dg_status, [c_int32, POINTER(c_int32), POINTER(c_int32)]),
    "dg_stream_create": (dg_status, [POINTER(c_void_p), c_int32, c_void_p, c_int32, _p]),
    "dg_stream_create_offline": (dg_status, [POINTER(c_void_p), c_int32, c_int32, c_int32, _p]),
    "dg_stream_destroy": (None, [_p]),
    "dg_stream_get_cu_stream": (dg_status, [_p, POINTER(c_void_p)]),
    "dg_stream_get_device": (dg_status, [_p, POINTER(c_int32)]),
    "dg_stream_synchronize": (dg_status, [_p]),
    # Tensor descriptors
    "dg_tensor_create": (dg_status, [POINTER(c_void_p), c_void_p, dg_dtype, c_int32, _i64p, _i64p]),
    "dg_tensor_destroy": (None, [_p]),
    "dg_tensor_set_data": (dg_status, [_p, c_void_p]),
    "dg_tensor_get": (dg_status, [_p, POINTER(c_void_p), POINTER(dg_dtype), POINTER(c_int32), _i64p, _i64p]),
    # Host utilities
    "dg_get_tma_aligned_size": (dg_status, [c_int64, c_size_t, _i64p]),
    "dg_get_mk_alignment_for_contiguous_layout": (c_int32, []),
    # Scaling-factor layouts
    "dg_get_mn_major_tma_aligned_tensor_layout": (dg_status, [c_int32, _i64p, _i64p, _i64p, POINTER(c_size_t)]),
    "dg_get_mn_major_tma_aligned_tensor": (dg_status, [_p, _T, _T]),
    "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout": (
        dg_status,
        [c_int32, _i64p, _i64p, _i64p, POINTER(c_size_t)],
    ),
    "dg_get_mn_major_tma_aligned_packed_ue8m0_tensor": (dg_status, [_p, _T, _T]),
    # mn, const int64_t* ks, num_groups, out_sizes, out_strides, out_bytes
    "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout": (
        dg_status,
        [c_int64, _i64p, c_int64, _i64p, _i64p, POINTER(c_size_t)],
    ),
    # stream, sf, const int64_t* ks, num_groups, ks_tensor, out
    "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor": (dg_status, [_p, _T, _i64p, c_int64, _T, _T]),
    "dg_transform_sf_layout": (
        dg_status,
        [_p, _T, c_int64, c_int64, POINTER(SfRecipe), POINTER(c_int32), POINTER(dg_dtype), _i64p, _i64p, POINTER(c_size_t)],
    ),
    "dg_transform_sf_into_required_layout": (dg_status, [_p, _T, c_int64, c_int64, POINTER(SfRecipe), _T]),
    # Kernel preparation
    "dg_jit_get_stats": (dg_status, [_i64p, _i64p, _i64p]),
    # GEMMs (bound defensively: absent symbols make their wrappers raise dg.Unsupported)
    "dg_bf16_gemm_nt": (dg_status, _GEMM2),
    "dg_bf16_gemm_nn": (dg_status, _GEMM2),
    "dg_bf16_gemm_tn": (dg_status, _GEMM2),
    "dg_bf16_gemm_tt": (dg_status, _GEMM2),
    "dg_fp8_gemm_nt": (dg_status, _GEMM_FP8),
    "dg_fp8_gemm_nn": (dg_status, _GEMM_FP8),
    "dg_fp8_gemm_tn": (dg_status, _GEMM_FP8),
    "dg_fp8_gemm_tt": (dg_status, _GEMM_FP8),
    # layout, m, n, k, size_t* bytes
    "dg_fp8_gemm_workspace_size": (dg_status, [c_int32, c_int64, c_int64, c_int64, POINTER(c_size_t)]),
    # stream, ab_dtype, layout, m, n, k, d_dtype, with_c, options
    "dg_gemm_prepare": (dg_status, [_p, dg_dtype, c_int32, c_int64, c_int64, c_int64, dg_dtype, c_int32, POINTER(GemmOptions)]),
    # M-grouped GEMMs: stream, a, [sfa,] b, [sfb,] d, grouped_layout | masked_m, [layout,] expected_m, options
    "dg_m_grouped_fp8_gemm_nt_contiguous": (dg_status, _GROUPED_FP8),
    "dg_m_grouped_fp8_gemm_nn_contiguous": (dg_status, _GROUPED_FP8),
    "dg_m_grouped_bf16_gemm_nt_contiguous": (dg_status, _GROUPED_BF16),
    "dg_m_grouped_bf16_gemm_nn_contiguous": (dg_status, _GROUPED_BF16),
    "dg_m_grouped_fp8_gemm_nt_masked": (dg_status, [_p, _T, _T, _T, _T, _T, _T, c_int64, POINTER(GemmOptions)]),
    "dg_m_grouped_bf16_gemm_nt_masked": (dg_status, [_p, _T, _T, _T, _T, c_int64, POINTER(GemmOptions)]),
    # stream, ab_dtype, gemm_layout, grouping, num_groups, m, n, k, expected_m, options
    "dg_m_grouped_gemm_prepare": (
        dg_status,
        [_p, dg_dtype, c_int32, c_int32, c_int64, c_int64, c_int64, c_int64, c_int64, POINTER(GemmOptions)],
    ),
    # K-grouped GEMMs: stream, a, [sfa,] b, [sfb,] d, c, const int64_t* ks, num_groups, ks_tensor, options
    "dg_k_grouped_fp8_gemm_nt_contiguous": (dg_status, _K_GROUPED_FP8),
    "dg_k_grouped_fp8_gemm_tn_contiguous": (dg_status, _K_GROUPED_FP8),
    "dg_k_grouped_bf16_gemm_tn_contiguous": (dg_status, [_p, _T, _T, _T, _T, _i64p, c_int64, _T, POINTER(GemmOptions)]),
    # stream, ab_dtype, layout, m, n, ks, num_groups, with_c, options
    "dg_k_grouped_gemm_prepare": (
        dg_status,
        [_p, dg_dtype, c_int32, c_int64, c_int64, _i64p, c_int64, c_int32, POINTER(GemmOptions)],
    ),
    # MQA logits: seq_len, seq_len_kv, logits_dtype, int64_t sizes[2], int64_t strides[2], size_t* bytes
    "dg_get_mqa_logits_layout": (dg_status, [c_int64, c_int64, dg_dtype, _i64p, _i64p, POINTER(c_size_t)]),
    # stream, q, kv, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, logits, clean_logits
    "dg_fp8_mqa_logits": (dg_status, [_p, _T, _T, _T, _T, _T, _T, _T, c_int32]),
    # stream, q, kv, kv_sf, weights, cu_seq_len_k_start, cu_seq_len_k_end, max_seqlen_k, logits, clean_logits
    "dg_fp8_mqa_logits_compressed": (dg_status, [_p, _T, _T, _T, _T, _T, _T, c_int64, _T, c_int32]),
    # stream, context_lens, block_kv, num_sms, schedule_meta
    "dg_get_paged_mqa_logits_metadata": (dg_status, [_p, _T, c_int32, c_int32, _T]),
    # stream, q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len, logits, clean_logits
    "dg_fp8_paged_mqa_logits": (dg_status, [_p, _T, _T, _T, _T, _T, _T, c_int64, _T, c_int32]),
    # stream, heads, head_dim, next_n, logits_dtype
    "dg_paged_mqa_logits_prepare": (dg_status, [_p, c_int32, c_int32, c_int32, dg_dtype]),
    # FP8 quantization: stream, x, out, sf, [grouped_layout, layout, num_groups | masked_m,] options
    "dg_quantize_fp8_per_token": (dg_status, [_p, _T, _T, _T, POINTER(QuantOptions)]),
    "dg_quantize_fp8_per_token_contiguous": (dg_status, [_p, _T, _T, _T, _T, c_int32, c_int64, POINTER(QuantOptions)]),
    "dg_quantize_fp8_per_token_masked": (dg_status, [_p, _T, _T, _T, _T, POINTER(QuantOptions)]),
    "dg_quantize_fp8_per_block": (dg_status, [_p, _T, _T, _T, POINTER(QuantOptions)]),
    "dg_quantize_fp8_mn_major": (dg_status, [_p, _T, _T, _T, POINTER(QuantOptions)]),
    # NVFP4 GEMV: stream, a, sfa, b, sfb, c, const dg_nvfp4_gemv_options*
    "dg_nvfp4_gemv": (dg_status, [_p, _T, _T, _T, _T, _T, POINTER(NvFp4GemvOptions)]),
    # Hyper-connection pre-norm GEMM: stream, a, b, d, sqr_sum, num_splits
    "dg_tf32_hc_prenorm_gemm": (dg_status, [_p, _T, _T, _T, _T, c_int32]),
    # cuBLASLt baseline: stream, a, b, d, c, const dg_cublaslt_options*
    "dg_cublaslt_workspace_size": (c_size_t, []),
    "dg_cublaslt_available": (dg_status, []),
    "dg_cublaslt_gemm_nt": (dg_status, _CUBLASLT),
    "dg_cublaslt_gemm_nn": (dg_status, _CUBLASLT),
    "dg_cublaslt_gemm_tn": (dg_status, _CUBLASLT),
    "dg_cublaslt_gemm_tt": (dg_status, _CUBLASLT),
}

# Functions without which the binding cannot even report errors: a library lacking one is refused.
REQUIRED = ("dg_status_string", "dg_last_error", "dg_version", "dg_version_number")


class Library:
    """The loaded libdg with its prototypes applied.

    ``functions[name]`` holds the ctypes function, or ``None`` where this build lacks the symbol
    (functions added to dg.h after the library was built); :meth:`fn` raises ``dg.Unsupported``
    for those.
    """

    def __init__(self, cdll: ctypes.CDLL, path: str) -> None:
        self.cdll = cdll
        self.path = path
        self.functions: Dict[str, Optional[Callable]] = {}
        for name, (restype, argtypes) in PROTOTYPES.items():
            f = getattr(cdll, name, None)
            if f is not None:
                f.restype = restype
                f.argtypes = argtypes
            self.functions[name] = f
        missing = [n for n in REQUIRED if self.functions.get(n) is None]
        if missing:
            raise errors.LibraryNotFoundError("%s lacks %s" % (path, ", ".join(missing)), [(path, "lacks " + ", ".join(missing))])
        self.dg_last_error = self.functions["dg_last_error"]

    def has(self, name: str) -> bool:
        """Whether this build of libdg exports ``name``."""
        return self.functions.get(name) is not None

    def fn(self, name: str) -> Callable:
        """The bound C function ``name``; ``dg.Unsupported`` when this build lacks it."""
        f = self.functions.get(name)
        if f is None:
            raise errors.Unsupported(
                "libdg.so has no %s: the library at %s (version %s) was built without it; "
                "rebuild libdg from a tree whose dg.h declares it" % (name, self.path, self.version())
            )
        return f

    def version(self) -> str:
        return self.functions["dg_version"]().decode()

    def last_error(self) -> str:
        """This thread's ``dg_last_error()`` message."""
        raw = self.dg_last_error()
        return raw.decode("utf-8", errors="replace") if raw else ""

    def check(self, status: int, where: str) -> None:
        """Raises the exception for ``status`` (with ``dg_last_error()``) unless it is DG_SUCCESS.

        Must be called right after the failing call, on the same thread, before any other libdg
        call (``dg_last_error`` is per thread and replaced by the next failure)."""
        if status != 0:
            raise errors.error_from_status(status, self.last_error(), where)

    def call(self, name: str, *args) -> None:
        """Calls ``name(*args)`` and raises on a non-success status."""
        status = self.fn(name)(*args)
        if status != 0:
            raise errors.error_from_status(status, self.last_error(), name)


_lock = threading.Lock()
_library: Optional[Library] = None


def get() -> Library:
    """The process's libdg (loaded on first use with :func:`default_load`)."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                cdll, path = default_load()
                _library = Library(cdll, path)
    return _library


def symbols(names: Sequence[str]) -> Dict[str, bool]:
    """Which of ``names`` this build exports."""
    lib = get()
    return {n: lib.has(n) for n in names}
