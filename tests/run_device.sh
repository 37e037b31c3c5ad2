#!/usr/bin/env bash
# Runs the GPU-facing suites on the lent GPU machine from a staged folder of stripped binaries
# (libdg.so.0, dg-demo, tests/dg_unit_tests, tests/dg_gpu_tests, bench/dg-bench: a build tree or
# bench/stage_device.sh's copy; bindings/gemm-rust and gemm-go from bindings/stage_examples.sh when
# present). Logs go under $OUT.
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
