#!/usr/bin/env bash
# Runs the GPU-facing suites on the GPU machine: the demo, the unit and GPU test executables (twice:
# the second run loads every kernel from the disk cache), the Python binding's tests, and the Rust
# and Go examples when bindings/stage_examples.sh staged them (bindings/gemm-rust, gemm-go).
# STAGE_DIR: a build tree or a bench/scripts/stage_device.sh copy of one (libdg.so.0, dg-demo,
# tests/dg_unit_tests, tests/dg_gpu_tests). Logs go under $OUT (else ./device-out).
#   tests/run_device.sh STAGE_DIR [gpu-test-filter]
set -u
STAGE=${1:?usage: tests/run_device.sh STAGE_DIR [doctest -tc filter]}
DEST=${OUT:-device-out}
mkdir -p "$DEST"
export LD_LIBRARY_PATH="$STAGE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DG_JIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$DEST/nvidia-smi.csv"
run() {  # name, command...
  local name=$1; shift
  local t0=$(date +%s%N)
  "$@" > "$DEST/$name.log" 2>&1
  local rc=$?
  printf '%-12s exit %3d  %6.1fs  %s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { print (b - a) / 1e9 }')" \
    "$(grep -E 'test cases:|passed|failed' "$DEST/$name.log" | tail -1)" | tee -a "$DEST/summary.txt"
}
run demo "$STAGE/dg-demo"
run unit "$STAGE/tests/dg_unit_tests"
run gpu "$STAGE/tests/dg_gpu_tests" ${2:+-tc="$2"}
run gpu-warm "$STAGE/tests/dg_gpu_tests" ${2:+-tc="$2"}   # second run: every kernel from the disk cache
DG_LIBRARY_PATH="$STAGE/libdg.so.0" PYTHONUNBUFFERED=1 run python python3 -m pytest -q -rs bindings/python/tests
# The Rust and Go examples, where bindings/stage_examples.sh put them into the stage.
[ -x "$STAGE/bindings/gemm-rust" ] && run rust-gemm "$STAGE/bindings/gemm-rust"
[ -x "$STAGE/bindings/gemm-go" ] && run go-gemm "$STAGE/bindings/gemm-go"
cat "$DEST/summary.txt"
