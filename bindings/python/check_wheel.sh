#!/usr/bin/env bash
# Installs a dg wheel and runs the binding's tests against the installed package: a copy of tests/
# outside the source tree, DG_LIBRARY_PATH unset, and a check that the libdg it loads is the one
# inside the package.
#   bindings/python/check_wheel.sh WHEEL
# By default into a fresh virtual environment (pytest from PyPI). DG_WHEEL_OFFLINE=1 downloads
# nothing: the wheel goes into a scratch folder on PYTHONPATH of $PYTHON (default python3), whose
# own packages (pytest, and torch for the GPU tests) stay visible; for a GPU machine without network.
set -eu
WHEEL=$(readlink -f "${1:?usage: bindings/python/check_wheel.sh WHEEL}")
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
PIP_ARGS=(-q --disable-pip-version-check --no-index --no-deps)
if [ "${DG_WHEEL_OFFLINE:-0}" = 1 ]; then
  PY=${PYTHON:-python3}
  "$PY" -m pip install "${PIP_ARGS[@]}" --target "$WORK/site" "$WHEEL"
  export PYTHONPATH="$WORK/site"
else
  python3 -m venv "$WORK/venv"
  PY="$WORK/venv/bin/python"
  "$PY" -m pip install -q --disable-pip-version-check pytest
  "$PY" -m pip install "${PIP_ARGS[@]}" "$WHEEL"
fi
cp -r "$HERE/tests" "$WORK/tests"
cd "$WORK"
unset DG_LIBRARY_PATH
"$PY" - <<'PY'
import os

import dg

package = os.path.dirname(os.path.abspath(dg.__file__))
assert os.path.dirname(dg.library_path()) == package, "loaded %s, not the wheel's copy in %s" % (dg.library_path(), package)
assert dg.__version__ == dg.version(), (dg.__version__, dg.version())
print("dg %s: %s" % (dg.__version__, dg.library_path()))
PY
"$PY" -m pytest -q -rs -p no:cacheprovider tests
