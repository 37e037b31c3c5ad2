"""The library itself: version, logging, process-wide settings, :class:`Config`, devices and
which kernel families this build exports."""

from __future__ import annotations

import ctypes
from ctypes import byref, c_double, c_int32, c_int64, c_size_t, c_void_p
from typing import Any, Callable, Dict, Optional, Tuple, Union

from . import _lib
from ._lib import LogCallback
from .errors import ERROR_NO_DEVICE, InvalidArgument, NoDevice
from ._arguments import _int32, _int64, _LAYOUTS
from ._cublaslt import cublaslt_available


def version() -> str:
    """The loaded libdg's version, ``"MAJOR.MINOR.PATCH"`` (``dg_version()``)."""
    return _lib.get().version()


def version_number() -> int:
    """The loaded libdg's version as ``MAJOR * 10000 + MINOR * 100 + PATCH``."""
    return int(_lib.get().fn("dg_version_number")())


def library_path() -> str:
    """The path (or soname) from which libdg was loaded."""
    return _lib.get().path


def status_string(status: int) -> str:
    """The static C name of a ``dg_status`` (``dg_status_string``)."""
    return _lib.get().fn("dg_status_string")(_int32(status, "status")).decode()


LOG_LEVELS: Dict[str, int] = {"trace": 0, "debug": 1, "info": 2, "warn": 3, "warning": 3, "error": 4, "off": 5}


def _log_level(level: Union[int, str]) -> int:
    if isinstance(level, str):
        key = level.strip().lower()
        if key not in LOG_LEVELS:
            raise InvalidArgument("log level %r: expected one of %s" % (level, ", ".join(sorted(set(LOG_LEVELS)))))
        return LOG_LEVELS[key]
    return _int32(level, "level")


def set_log_level(level: Union[int, str]) -> None:
    """Sets the process-wide log level: a ``DG_LOG_*`` int (0 trace .. 5 off) or a name
    (``"trace"``, ``"debug"``, ``"info"``, ``"warn"``, ``"error"``, ``"off"``)."""
    _lib.get().call("dg_set_log_level", _log_level(level))


def get_log_level() -> int:
    """The process-wide log level (``DG_LOG_*`` int)."""
    return int(_lib.get().fn("dg_get_log_level")())


_log_callback_ref: Optional[Any] = None


def set_log_callback(callback: Optional[Callable[[int, str], None]]) -> None:
    """Routes libdg's log messages to ``callback(level, message)`` (called from any thread);
    ``None`` restores the default (stderr, prefixed ``[libdg]``). Exceptions raised by the
    callback are printed and swallowed (they cannot cross the C ABI)."""
    global _log_callback_ref
    lib = _lib.get()
    if callback is None:
        lib.call("dg_set_log_callback", ctypes.cast(None, LogCallback), None)
        _log_callback_ref = None
        return

    def trampoline(level: int, message: bytes, _user: Any) -> None:
        try:
            callback(int(level), message.decode("utf-8", errors="replace") if message else "")
        except Exception:  # never let an exception unwind into C
            import traceback

            traceback.print_exc()

    ref = LogCallback(trampoline)
    lib.call("dg_set_log_callback", ref, None)
    _log_callback_ref = ref  # keep alive while installed


def set_num_sms(n: int) -> None:
    """Caps the SMs kernels may use (process-wide); 0 resets to every SM of the device."""
    _lib.get().call("dg_set_num_sms", _int32(n, "num_sms"))


def get_num_sms() -> int:
    """The SM cap set with :func:`set_num_sms`, else the SM count of device 0.

    Raises:
        NoDevice: no cap is set and there is no device to count (``dg_get_num_sms`` returns 0).
    """
    n = int(_lib.get().fn("dg_get_num_sms")())
    if n == 0:
        count = device_count()  # raises NoDevice with the driver's reason when it cannot load
        raise NoDevice("get_num_sms: no SM cap is set and %s" % (
            "no CUDA device was found" if count == 0 else "device 0 reported no SMs"), status=ERROR_NO_DEVICE)
    return n


def set_tc_util(ratio: float) -> None:
    """Sets the tensor-core utilisation target as a ratio in (0, 1]; 0 resets to 1. Only SM100
    BF16 kernels honour values below 1."""
    _lib.get().call("dg_set_tc_util", c_double(float(ratio)))


def get_tc_util() -> float:
    """The tensor-core utilisation target, a ratio in (0, 1]."""
    return float(_lib.get().fn("dg_get_tc_util")())


class Config:
    """A set of libdg settings (``dg_config``), initialised from the environment (``DG_*``).

    Use it with ``dg.Stream(device, cu_stream, config=cfg)`` to run kernels with settings other
    than the process-wide ones. Integer settings are checked against :meth:`bounds`.

    >>> cfg = dg.Config(num_sms=66, pdl=True)
    >>> cfg.num_sms
    66
    """

    NUM_SMS = 1
    TC_UTIL = 2
    PDL = 3
    CACHE_DIR = 4
    COMPILER = 5
    PRINT_CONFIGS = 6
    LOG_LEVEL = 7
    TUNING_TABLE = 8
    COMPILER_NVRTC = 0
    COMPILER_NVCC = 1

    _INT_KEYS = {"num_sms": 1, "tc_util": 2, "pdl": 3, "compiler": 5, "print_configs": 6, "log_level": 7}
    _STR_KEYS = {"cache_dir": 4, "tuning_table": 8}

    def __init__(self, **settings: Any) -> None:
        self._lib = _lib.get()
        self._handle = c_void_p()
        self._lib.call("dg_config_create", byref(self._handle))
        for k, v in settings.items():
            setattr(self, k, v)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Config._INT_KEYS:
            if name == "compiler" and isinstance(value, str):
                value = {"nvrtc": 0, "nvcc": 1}.get(value.lower(), value)
            if name == "log_level":
                value = _log_level(value)
            self.set_int(Config._INT_KEYS[name], value)
        elif name in Config._STR_KEYS:
            self.set_string(Config._STR_KEYS[name], value)
        elif name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError("dg.Config has no setting %r" % name)

    def __getattr__(self, name: str) -> Any:
        if name in Config._INT_KEYS:
            v = self.get_int(Config._INT_KEYS[name])
            return bool(v) if name in ("pdl", "print_configs") else v
        if name in Config._STR_KEYS:
            return self.get_string(Config._STR_KEYS[name])
        raise AttributeError("dg.Config has no setting %r" % name)

    def set_int(self, key: int, value: Any) -> None:
        """``dg_config_set_int``: sets an integer setting by ``DG_CONFIG_*`` key."""
        key = _int32(key, "key")
        self._lib.call("dg_config_set_int", self._handle, key, _int64(value, "config key %d: value" % key))

    def get_int(self, key: int) -> int:
        """``dg_config_get_int``."""
        v = c_int64()
        self._lib.call("dg_config_get_int", self._handle, _int32(key, "key"), byref(v))
        return v.value

    def set_string(self, key: int, value: str) -> None:
        """``dg_config_set_string``."""
        self._lib.call("dg_config_set_string", self._handle, _int32(key, "key"), str(value).encode())

    def get_string(self, key: int) -> str:
        """``dg_config_get_string``."""
        need = c_size_t()
        self._lib.call("dg_config_get_string", self._handle, _int32(key, "key"), None, 0, byref(need))
        buf = ctypes.create_string_buffer(max(need.value, 1))
        self._lib.call("dg_config_get_string", self._handle, _int32(key, "key"), buf, len(buf), byref(need))
        return buf.value.decode()

    @staticmethod
    def bounds(key: Union[int, str]) -> Tuple[int, int]:
        """Inclusive ``(min, max)`` of an integer setting (a ``DG_CONFIG_*`` key or its name)."""
        if isinstance(key, str):
            if key not in Config._INT_KEYS:
                raise InvalidArgument("no integer setting %r" % key)
            key = Config._INT_KEYS[key]
        lo, hi = c_int64(), c_int64()
        _lib.get().call("dg_config_get_bounds", _int32(key, "key"), byref(lo), byref(hi))
        return lo.value, hi.value

    def clone(self) -> "Config":
        """An independent copy of these settings."""
        new = Config.__new__(Config)
        object.__setattr__(new, "_lib", self._lib)
        object.__setattr__(new, "_handle", c_void_p())
        self._lib.call("dg_config_clone", self._handle, byref(new._handle))
        return new

    def __del__(self) -> None:
        h = self.__dict__.get("_handle")
        if h:
            try:
                self._lib.fn("dg_config_destroy")(h)
            except Exception:
                pass
            object.__setattr__(self, "_handle", c_void_p())

    def __repr__(self) -> str:
        try:
            return "dg.Config(%s)" % ", ".join(
                "%s=%r" % (k, getattr(self, k)) for k in list(Config._INT_KEYS) + list(Config._STR_KEYS)
            )
        except Exception as exc:  # pragma: no cover
            return "dg.Config(<%s>)" % exc


def device_count() -> int:
    """Number of CUDA devices; raises :class:`dg.NoDevice` when the driver cannot be loaded."""
    n = c_int32()
    _lib.get().call("dg_device_count", byref(n))
    return n.value


def get_device_capability(device: int = 0) -> Tuple[int, int]:
    """Compute capability ``(major, minor)`` of a device, e.g. ``(9, 0)`` for an H100."""
    major, minor = c_int32(), c_int32()
    _lib.get().call("dg_device_get_capability", _int32(device, "device"), byref(major), byref(minor))
    return major.value, minor.value


def jit_stats() -> Dict[str, int]:
    """Kernels compiled, loaded from the disk cache, and memory-cache hits so far."""
    c, d, m = c_int64(), c_int64(), c_int64()
    _lib.get().call("dg_jit_get_stats", byref(c), byref(d), byref(m))
    return {"compiled": c.value, "loaded_from_disk": d.value, "memory_hits": m.value}


def available() -> Dict[str, bool]:
    """Which kernel families this build of libdg exports (functions whose C symbol is missing
    raise :class:`dg.Unsupported`)."""
    names = ["dg_%s_gemm_%s" % (k, l) for k in ("bf16", "fp8", "cublaslt") for l in _LAYOUTS] + ["dg_nvfp4_gemv"]
    names += ["dg_m_grouped_%s_gemm_%s" % (k, f) for k in ("bf16", "fp8")
              for f in ("nt_contiguous", "nn_contiguous", "nt_masked")]
    names += ["dg_k_grouped_fp8_gemm_nt_contiguous", "dg_k_grouped_fp8_gemm_tn_contiguous",
              "dg_k_grouped_bf16_gemm_tn_contiguous", "dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor"]
    names += ["dg_fp8_mqa_logits", "dg_fp8_mqa_logits_compressed", "dg_get_paged_mqa_logits_metadata",
              "dg_fp8_paged_mqa_logits"]
    names += ["dg_quantize_fp8_%s" % f for f in ("per_token", "per_token_contiguous", "per_token_masked", "per_block",
                                                 "mn_major")]
    names += ["dg_swiglu_interleave", "dg_bf16_einsum"]
    lib = _lib.get()
    out = {n[3:]: lib.has(n) for n in names}
    if not cublaslt_available():  # symbols present, cuBLASLt itself not loadable
        out.update({"cublaslt_gemm_%s" % l: False for l in _LAYOUTS})
    return out
