"""Exceptions raised by the ``dg`` binding.

Every ``dg_status`` of the C API maps to one class below; the exception carries the library's
``dg_last_error()`` message, read right after the failing call on the same thread.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "Error",
    "InvalidArgument",
    "Unsupported",
    "NoDevice",
    "CudaError",
    "CompileError",
    "OutOfMemory",
    "InternalError",
    "LibraryNotFoundError",
    "STATUS_NAMES",
    "exception_for_status",
    "error_from_status",
]

# dg.h status values (only ever appended).
SUCCESS = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_UNSUPPORTED = 2
ERROR_NO_DEVICE = 3
ERROR_CUDA = 4
ERROR_COMPILE = 5
ERROR_OUT_OF_MEMORY = 6
ERROR_INTERNAL = 7

STATUS_NAMES: Dict[int, str] = {
    SUCCESS: "DG_SUCCESS",
    ERROR_INVALID_ARGUMENT: "DG_ERROR_INVALID_ARGUMENT",
    ERROR_UNSUPPORTED: "DG_ERROR_UNSUPPORTED",
    ERROR_NO_DEVICE: "DG_ERROR_NO_DEVICE",
    ERROR_CUDA: "DG_ERROR_CUDA",
    ERROR_COMPILE: "DG_ERROR_COMPILE",
    ERROR_OUT_OF_MEMORY: "DG_ERROR_OUT_OF_MEMORY",
    ERROR_INTERNAL: "DG_ERROR_INTERNAL",
}


class Error(RuntimeError):
    """Base class of every error libdg or this binding reports.

    Attributes:
        status: the ``dg_status`` value (``None`` for errors raised by the binding itself
            before reaching the library, e.g. a Python object that is not a tensor).
        message: the detailed message (``dg_last_error()`` for library failures).
    """

    status: Optional[int] = None

    def __init__(self, message: str = "", status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status

    @property
    def status_name(self) -> str:
        """The C name of the status (``"DG_ERROR_INVALID_ARGUMENT"``, ...)."""
        if self.status is None:
            return "DG_ERROR"
        return STATUS_NAMES.get(self.status, "DG_UNKNOWN_STATUS")


class InvalidArgument(Error, ValueError):
    """DG_ERROR_INVALID_ARGUMENT: a wrong dtype, shape, stride, bound, or a non-tensor object."""

    status = ERROR_INVALID_ARGUMENT


class Unsupported(Error, NotImplementedError):
    """DG_ERROR_UNSUPPORTED: valid input that this build of libdg or this device cannot run."""

    status = ERROR_UNSUPPORTED


class NoDevice(Error):
    """DG_ERROR_NO_DEVICE: no CUDA driver, or no device with that ordinal."""

    status = ERROR_NO_DEVICE


class CudaError(Error):
    """DG_ERROR_CUDA: the CUDA driver returned an error; the message names it."""

    status = ERROR_CUDA


class CompileError(Error):
    """DG_ERROR_COMPILE: NVRTC or nvcc failed; the message holds the compiler log."""

    status = ERROR_COMPILE


class OutOfMemory(Error, MemoryError):
    """DG_ERROR_OUT_OF_MEMORY: a host allocation failed."""

    status = ERROR_OUT_OF_MEMORY


class InternalError(Error):
    """DG_ERROR_INTERNAL: a bug in libdg; please report the message."""

    status = ERROR_INTERNAL


class LibraryNotFoundError(ImportError):
    """No usable ``libdg.so`` was found; the message lists every path tried and why it failed.

    Attributes:
        tried: list of ``(path, reason)`` pairs in the order they were tried.
    """

    def __init__(self, message: str, tried: "list[tuple[str, str]]") -> None:
        super().__init__(message)
        self.tried = tried


_CLASSES: Dict[int, Type[Error]] = {
    ERROR_INVALID_ARGUMENT: InvalidArgument,
    ERROR_UNSUPPORTED: Unsupported,
    ERROR_NO_DEVICE: NoDevice,
    ERROR_CUDA: CudaError,
    ERROR_COMPILE: CompileError,
    ERROR_OUT_OF_MEMORY: OutOfMemory,
    ERROR_INTERNAL: InternalError,
}


def exception_for_status(status: int) -> Type[Error]:
    """The exception class for a ``dg_status`` (``Error`` for values this binding does not know)."""
    return _CLASSES.get(int(status), Error)


def error_from_status(status: int, message: str, where: Optional[str] = None) -> Error:
    """Builds the exception for a failed call; ``where`` (the C function) prefixes the message."""
    cls = exception_for_status(status)
    name = STATUS_NAMES.get(int(status), "DG_UNKNOWN_STATUS(%d)" % int(status))
    text = message if message else name
    if where:
        text = "%s: %s" % (where, text)
    return cls(text, status=int(status))
