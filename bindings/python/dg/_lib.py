"""Finding and loading ``libdg.so`` and binding the prototypes of ``include/dg.h`` (generated into
``_declarations.py`` by ``bindings/generate.py``) to it.

Discovery order (the first candidate that loads and is a compatible libdg wins):

1. ``DG_LIBRARY_PATH``: a library file or a directory holding ``libdg.so*`` (several entries may be
   separated by ``os.pathsep``): the one way to make an installed package use another libdg;
2. the package's own folder (a wheel bundles ``libdg.so`` there);
3. the build tree, ``<repo>/build/libdg.so*``, when the package is imported from the source tree;
4. an installed libdg that pkg-config knows (``pkg-config --variable=libdir dg``);
5. the system loader: ``ctypes.util.find_library("dg")``, then the soname ``libdg.so.<major>``.

When nothing loads, :class:`dg.LibraryNotFoundError` lists every path tried and why it failed.

libdg links NVRTC (``libnvrtc.so.<CUDA major>``). Before loading libdg, :func:`load_nvrtc` loads
it from NVIDIA's ``nvidia-cuda-nvrtc`` wheel when that is installed (the wheel's dependency), else
leaves it to the system loader, else tries ``$CUDA_HOME``/``$CUDA_PATH``/``/usr/local/cuda``; the
dynamic loader then binds libdg to the copy already loaded. :func:`nvrtc_origin` says which.
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
from ctypes import c_int32
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import _declarations, errors

# The libdg major version this binding speaks.
ABI_MAJOR = _declarations.DG_VERSION_MAJOR
LIBRARY_NAME = "libdg.so"
DISTRIBUTION = "libdg"  # the package's name on PyPI and pip (the import name is dg)
# The CUDA major whose NVRTC libdg links (the toolkit it was built with), and NVIDIA's PyPI wheel
# that ships it: nvidia-cuda-nvrtc 13.x puts it in site-packages/nvidia/cu13/lib.
CUDA_MAJOR = 13
NVRTC_SONAME = "libnvrtc.so.%d" % CUDA_MAJOR
NVRTC_WHEEL = "nvidia-cuda-nvrtc"
NVRTC_WHEEL_DIR = os.path.join("cu%d" % CUDA_MAJOR, "lib")

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
        return version(DISTRIBUTION)
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
        libdir, why = _pkg_config_libdir()
        if libdir:
            files = _library_files(libdir)
            if not files:
                tried.append((os.path.join(libdir, LIBRARY_NAME + "*"), "pkg-config libdir: not present"))
            for f in files:
                yield "pkg-config", f
        else:
            tried.append(("pkg-config dg", why))
        name = ctypes.util.find_library("dg")
        if name:
            yield "find_library", name
        else:
            tried.append(("find_library('dg')", "system loader: not found"))
        yield "soname", "%s.%d" % (LIBRARY_NAME, ABI_MAJOR)


# ---------------------------------------------------------------------------------------------
# NVRTC
# ---------------------------------------------------------------------------------------------

_nvrtc: Optional[Tuple[str, str]] = None  # (origin, path or soname) once load_nvrtc succeeded


def _nvrtc_wheel_dirs() -> List[str]:
    """``nvidia/cu<major>/lib`` of every installed ``nvidia`` namespace package folder."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    return [os.path.join(r, NVRTC_WHEEL_DIR) for r in roots]


def _cuda_toolkit_dirs() -> List[str]:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    dirs: List[str] = []
    for root in roots:
        if root:
            dirs += [os.path.join(root, sub) for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib"))]
    return dirs


def nvrtc_candidates() -> List[Tuple[str, str]]:
    """``(origin, path or soname)`` in the order :func:`load_nvrtc` tries them."""
    found = [("nvidia-cuda-nvrtc wheel", os.path.join(d, NVRTC_SONAME)) for d in _nvrtc_wheel_dirs()]
    found = [c for c in found if os.path.isfile(c[1])]
    found.append(("system loader", NVRTC_SONAME))
    found += [("CUDA toolkit", os.path.join(d, NVRTC_SONAME)) for d in _cuda_toolkit_dirs()
              if os.path.isfile(os.path.join(d, NVRTC_SONAME))]
    return found


def load_nvrtc(tried: Optional[List[Tuple[str, str]]] = None) -> Optional[Tuple[str, str]]:
    """Loads ``libnvrtc.so.<major>`` from the first of :func:`nvrtc_candidates` that loads, so that
    libdg, loaded next, binds to it; returns ``(origin, path)`` or None (failures go to ``tried``)."""
    global _nvrtc
    if _nvrtc is not None:
        return _nvrtc
    for origin, path in nvrtc_candidates():
        try:
            ctypes.CDLL(path)
        except OSError as exc:
            if tried is not None:
                tried.append((path, "NVRTC (%s): %s" % (origin, exc)))
            continue
        _nvrtc = (origin, path)
        return _nvrtc
    return None


def nvrtc_origin() -> Optional[Tuple[str, str]]:
    """Where the NVRTC libdg uses was loaded from, ``(origin, path or soname)``; None before libdg
    is loaded or when libdg found it on its own."""
    return _nvrtc


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
    if any("libnvrtc" in why for _, why in tried):
        message += (
            "\nlibdg needs NVRTC (%s): `pip install '%s>=%d,<%d'` or a CUDA %d toolkit on the loader's path."
            % (NVRTC_SONAME, NVRTC_WHEEL, CUDA_MAJOR, CUDA_MAJOR + 1, CUDA_MAJOR)
        )
    raise errors.LibraryNotFoundError(message, tried)


def default_load() -> Tuple[ctypes.CDLL, str]:
    """NVRTC (:func:`load_nvrtc`), then libdg's discovery with this process's environment and this
    package's location."""
    load_nvrtc()
    return load_library(
        env_value=os.environ.get("DG_LIBRARY_PATH") or None,
        package_dir=_PACKAGE_DIR,
        repo_root=_source_tree_root(),
        system=True,
    )


# ---------------------------------------------------------------------------------------------
# The declarations of dg.h (generated into _declarations.py) under the names the binding uses
# ---------------------------------------------------------------------------------------------

PROTOTYPES = _declarations.PROTOTYPES  # every function of dg.h: name -> (restype, argtypes)
LogCallback = _declarations.dg_log_callback
SfRecipe = _declarations.dg_sf_recipe
NvFp4GemvOptions = _declarations.dg_nvfp4_gemv_options
CublasltOptions = _declarations.dg_cublaslt_options
QuantOptions = _declarations.dg_quant_options
GemmEpilogueStruct = _declarations.dg_gemm_epilogue  # what dg.GemmEpilogue becomes for one call


class GemmOptions(_declarations.dg_gemm_options):
    """``dg_gemm_options`` (DG_GEMM_OPTIONS_INIT defaults): recipe, alpha, beta, per-field
    kernel-config overrides (0 = heuristic; ``multicast_a`` -1 = heuristic), and the FP8 calls'
    workspace for K-major copies of MN-major operands."""

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


FP8_RECIPE_1D2D = _declarations.DG_FP8_RECIPE_1D2D
FP8_RECIPE_1D1D = _declarations.DG_FP8_RECIPE_1D1D
GEMM_LAYOUTS = {
    "nt": _declarations.DG_GEMM_LAYOUT_NT,
    "nn": _declarations.DG_GEMM_LAYOUT_NN,
    "tn": _declarations.DG_GEMM_LAYOUT_TN,
    "tt": _declarations.DG_GEMM_LAYOUT_TT,
}
M_GROUPED_LAYOUT_INDICES = _declarations.DG_M_GROUPED_LAYOUT_INDICES
M_GROUPED_LAYOUT_PSUM = _declarations.DG_M_GROUPED_LAYOUT_PSUM
M_GROUPED_LAYOUT_MASKED = _declarations.DG_M_GROUPED_LAYOUT_MASKED

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
