"""``dg.info()`` and the ``dg-info`` command of the wheel: libdg's own report
(``dg_info_report``: version and build, NVRTC, driver, GPUs, JIT cache, DG_* variables) after
what only the binding knows (the package, the Python, where libdg and NVRTC were loaded from)."""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from typing import List, Optional

from . import _lib

# The report can grow between the size query and the copy (a cache entry appears): a few tries.
_TRIES = 3


def library_report() -> str:
    """libdg's ``dg_info_report()`` text."""
    lib = _lib.get()
    fn = lib.fn("dg_info_report")
    for _ in range(_TRIES):
        size = ctypes.c_size_t()
        lib.check(fn(None, 0, ctypes.byref(size)), "dg_info_report")
        buf = ctypes.create_string_buffer(size.value)
        if fn(buf, size.value, None) == 0:
            return buf.value.decode("utf-8", errors="replace")
    lib.check(fn(buf, size.value, None), "dg_info_report")  # raises with the last reason
    return ""


def binding_report() -> str:
    """The binding's lines: package, Python, the libdg and NVRTC it loaded."""
    lib = _lib.get()
    nvrtc = _lib.nvrtc_origin()
    lines = [
        "python package: %s %s at %s" % (_lib.DISTRIBUTION, _lib.package_version() or "(no metadata)", _lib._PACKAGE_DIR),
        "python: %s (%s)" % (sys.version.split()[0], sys.executable),
        "loaded libdg: %s%s" % (lib.path, " (DG_LIBRARY_PATH)" if os.environ.get("DG_LIBRARY_PATH") else ""),
        "loaded nvrtc: %s" % ("%s (%s)" % (nvrtc[1], nvrtc[0]) if nvrtc else "found by libdg itself (system loader)"),
    ]
    return "\n".join(lines) + "\n"


def info() -> str:
    """Everything a bug report needs, as text: :func:`binding_report` then libdg's report."""
    return binding_report() + library_report()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dg-info",
        description="Prints what the dg package and libdg find on this machine (versions, NVRTC, the CUDA "
        "driver, GPUs, the JIT cache, DG_* variables). Paste it into bug reports.",
    )
    parser.add_argument("--version", action="version", version="dg-info (libdg) %s" % (_lib.package_version() or "?"))
    parser.parse_args(argv)
    sys.stdout.write(info())
    return 0


if __name__ == "__main__":
    sys.exit(main())
