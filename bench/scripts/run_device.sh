#!/usr/bin/env bash
# Runs every dg-bench suite on the GPU machine. Builds nothing.
#   bench/scripts/run_device.sh STAGE_DIR
# STAGE_DIR: a build tree or a stage_device.sh copy of one (libdg.so.0 and bench/dg-bench).
# Writes SUITE.{json,txt,png} per suite under $OUT (else ./bench-out), the layout of bench/results
# (OUT=bench/results regenerates them), and stderr, exit codes, nvidia-smi and the plot log under
# $OUT/logs. Each suite runs in its own process so one failure loses only that suite. Extra
# dg-bench flags: $DG_BENCH_ARGS.
set -u
STAGE=${1:?usage: bench/scripts/run_device.sh STAGE_DIR}
BIN="$STAGE/bench/dg-bench"
DEST=${OUT:-bench-out}
LOGS="$DEST/logs"
HERE=$(cd "$(dirname "$0")" && pwd)
SUITES="copy layout dense-bf16 dense-fp8 nvfp4-gemv contiguous-fp8 contiguous-bf16 masked-fp8 masked-bf16"
mkdir -p "$LOGS"
if [ ! -x "$BIN" ]; then echo "run_device.sh: $BIN not found (build the dg-bench target first)" >&2; exit 2; fi

# A fresh JIT cache: first calls then include NVRTC compilation, reported as cold JIT time.
export DG_JIT_CACHE_DIR=$(mktemp -d)
export LD_LIBRARY_PATH="$STAGE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv \
  > "$LOGS/nvidia-smi.csv" 2>&1 || true

status=0
: > "$LOGS/exit-codes.txt"
for suite in $SUITES; do
  echo "=== dg-bench --suite $suite" >&2
  timeout 240 "$BIN" --suite "$suite" --json "$DEST/$suite.json" ${DG_BENCH_ARGS:-} \
    > "$DEST/$suite.txt" 2> "$LOGS/$suite.log"
  rc=$?
  echo "dg-bench --suite $suite: exit $rc" >> "$LOGS/exit-codes.txt"
  [ $rc -ne 0 ] && status=1
done
rm -rf "$DG_JIT_CACHE_DIR"

if python3 -c 'import matplotlib' 2>/dev/null; then
  for suite in $SUITES; do
    [ -s "$DEST/$suite.json" ] && python3 "$HERE/plot.py" "$DEST/$suite.json" -o "$DEST/$suite.png" >> "$LOGS/plot.log" 2>&1
  done
else
  echo "matplotlib missing: no plots" >> "$LOGS/plot.log"
fi

# The short tables last (the device tool's reply carries the end of the output).
for suite in $SUITES; do
  [ -f "$DEST/$suite.txt" ] && cat "$DEST/$suite.txt"
done
cat "$LOGS/exit-codes.txt"
exit $status
