"""Test setup: make the package importable from the source tree without installing it.

libdg is found as the package finds it (DG_LIBRARY_PATH, the package folder, <repo>/build, the
system loader); point DG_LIBRARY_PATH at a fresh build to test that build.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG_ROOT = os.path.dirname(_HERE)
if _PKG_ROOT not in sys.path:
    sys.path.insert(0, _PKG_ROOT)
