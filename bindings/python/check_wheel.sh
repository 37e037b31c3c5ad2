#!/usr/bin/env bash
# Checks a libdg wheel as users get it:
#   1. the wheel's ELF files (dg/libdg.so): no empty, relative or build-machine RUNPATH entry, no
#      debug info (cmake/check_install.py --wheel); for a manylinux wheel, auditwheel confirms its
#      tag ($AUDITWHEEL or on PATH), for others it shows what it sees when installed;
#   2. installed, outside the source tree, with DG_LIBRARY_PATH unset and a PKG_CONFIG_PATH that
#      names another libdg: the package loads its own copy, its version is the library's, NVRTC
#      comes from NVIDIA's wheel when that is installed (at the end, with that wheel removed, from
#      a CUDA 13 toolkit), a GEMM kernel JIT-compiles offline, and the dg-info command works;
#   3. the binding's tests against the installed package; with FAKE_DRIVER_DIR (the build tree's
#      tests/fake_driver), the warm-path tests again with its libcuda.so.1: launches through the
#      wheel's libdg without a GPU.
#   bindings/python/check_wheel.sh WHEEL [OTHER_PKGCONFIG_DIR [FAKE_DRIVER_DIR]]
# By default into a fresh virtual environment (pytest and the wheel's dependency, nvidia-cuda-nvrtc,
# from PyPI). DG_WHEEL_OFFLINE=1 downloads nothing: the wheel goes into a scratch folder on
# PYTHONPATH of $PYTHON (default python3), whose own packages (pytest, and torch for the GPU tests)
# stay visible, NVRTC comes from the system, and a manylinux tag is checked only where auditwheel
# is installed; for a GPU machine without network.
set -eu
WHEEL=$(readlink -f "${1:?usage: bindings/python/check_wheel.sh WHEEL [OTHER_PKGCONFIG_DIR [FAKE_DRIVER_DIR]]}")
OTHER_PC=${2:-}
FAKE_DRIVER=${3:+$(readlink -f "$3")}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 "$ROOT/cmake/check_install.py" --wheel "$WHEEL"
# A wheel tagged manylinux must keep its tags' promise: the glibc symbol versions auditwheel finds
# constrain it to a manylinux_2_N no newer than its oldest tag (libnvrtc.so.13 is external by
# design: NVIDIA's wheel or a toolkit provides it). Other wheels are shown when auditwheel is there.
AUDITWHEEL=${AUDITWHEEL:-$(command -v auditwheel || true)}
CLAIMED=$(basename "$WHEEL" | grep -o 'manylinux_2_[0-9]*' | sed 's/manylinux_2_//' | sort -n | head -n1 || true)
if [ -n "$CLAIMED" ] && [ -z "$AUDITWHEEL" ] && [ "${DG_WHEEL_OFFLINE:-0}" = 1 ]; then
  echo "note: no auditwheel here (offline): the manylinux tag is not checked, the rest is"
elif [ -n "$CLAIMED" ]; then
  [ -n "$AUDITWHEEL" ] || { echo "error: auditwheel is needed to check a manylinux wheel" >&2; exit 1; }
  "$AUDITWHEEL" show "$WHEEL" | tee "$WORK/auditwheel.txt"
  FOUND=$(tr -s ' \n' '  ' < "$WORK/auditwheel.txt" | grep -o 'platform tag[^"]*"manylinux_2_[0-9]*' |
          grep -o '[0-9]*$' | sort -n | tail -n1 || true)
  if [ -z "$FOUND" ] || [ "$FOUND" -gt "$CLAIMED" ]; then
    echo "error: tagged manylinux_2_$CLAIMED, but auditwheel finds manylinux_2_${FOUND:-?}" >&2
    exit 1
  fi
  echo "manylinux: tagged 2_$CLAIMED, symbols need 2_$FOUND"
elif [ -n "$AUDITWHEEL" ]; then
  "$AUDITWHEEL" show "$WHEEL" || true
fi

PIP_ARGS=(-q --disable-pip-version-check)
EXPECT_NVRTC_WHEEL=1
if [ "${DG_WHEEL_OFFLINE:-0}" = 1 ]; then
  PY=${PYTHON:-python3}
  "$PY" -m pip install "${PIP_ARGS[@]}" --no-index --no-deps --target "$WORK/site" "$WHEEL"
  export PYTHONPATH="$WORK/site"
  DG_INFO=("$PY" -m dg info)
  EXPECT_NVRTC_WHEEL=0
else
  python3 -m venv "$WORK/venv"
  PY="$WORK/venv/bin/python"
  "$PY" -m pip install "${PIP_ARGS[@]}" pytest "$WHEEL"
  DG_INFO=("$WORK/venv/bin/dg-info")
fi
cp -r "$HERE/tests" "$WORK/tests"
cd "$WORK"
unset DG_LIBRARY_PATH
# Another libdg that pkg-config knows must not replace the wheel's own.
[ -n "$OTHER_PC" ] && export PKG_CONFIG_PATH="$OTHER_PC"
# The package loads its own libdg and NVRTC from where $1 says ("wheel": NVIDIA's nvidia-cuda-nvrtc,
# "system": a toolkit's, "any"), and its JIT works: a GEMM kernel compiled for sm_90a on an offline
# stream (no GPU needed) lands in a scratch cache.
cat > "$WORK/check_package.py" <<'PY'
import glob
import os
import sys
import tempfile

cache = tempfile.mkdtemp(prefix="jit-cache-")
os.environ["DG_JIT_CACHE_DIR"] = cache
import dg
from dg import _lib

package = os.path.dirname(os.path.abspath(dg.__file__))
assert os.path.dirname(dg.library_path()) == package, "loaded %s, not the wheel's copy in %s" % (dg.library_path(), package)
assert dg.__version__ == dg.version(), (dg.__version__, dg.version())
origin = _lib.nvrtc_origin()
expected = sys.argv[1]
assert origin is not None, "no NVRTC loaded"
if expected == "wheel":
    assert origin[0] == "nvidia-cuda-nvrtc wheel", origin
elif expected == "system":
    assert origin[0] in ("system loader", "CUDA toolkit"), origin
with dg.Stream.offline((9, 0), num_sms=132) as stream:
    dg.gemm_prepare("bfloat16", "nt", 256, 512, 384, "bfloat16", stream=stream)
cubins = glob.glob(os.path.join(cache, "libdg", "*.cubin"))
assert cubins, "gemm_prepare left no kernel in %s" % cache
print("dg %s: %s; NVRTC: %s; JIT: %s" % (dg.__version__, dg.library_path(), origin, os.path.basename(cubins[0])))
PY
NVRTC_FROM=any
[ "$EXPECT_NVRTC_WHEEL" = 1 ] && NVRTC_FROM=wheel
"$PY" "$WORK/check_package.py" "$NVRTC_FROM"
"${DG_INFO[@]}" > "$WORK/info.txt"
grep -q "^libdg: " "$WORK/info.txt" && grep -q "^loaded libdg: $WORK" "$WORK/info.txt" ||
  { echo "dg-info printed:"; cat "$WORK/info.txt"; exit 1; }
"$PY" -m pytest -q -rs -p no:cacheprovider tests
if [ -n "$FAKE_DRIVER" ]; then
  [ -f "$FAKE_DRIVER/libcuda.so.1" ] || { echo "error: no libcuda.so.1 in $FAKE_DRIVER" >&2; exit 1; }
  LD_LIBRARY_PATH="$FAKE_DRIVER" DG_JIT_CACHE_DIR="$WORK/fake-driver-cache" \
    "$PY" -m pytest -q -rs -p no:cacheprovider tests/test_warm_path.py
fi
# Without NVIDIA's wheel, a CUDA 13 toolkit's NVRTC is the fallback (where this machine has one).
if [ "$EXPECT_NVRTC_WHEEL" = 1 ]; then
  "$PY" -m pip uninstall -q -y nvidia-cuda-nvrtc
  if "$PY" -c 'import sys; from dg import _lib; sys.exit(len(_lib.nvrtc_candidates()) < 2)' 2>/dev/null ||
     ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.13 '; then
    "$PY" "$WORK/check_package.py" system
  else
    echo "no system NVRTC 13: the toolkit fallback is not checked here"
  fi
fi
