#!/usr/bin/env bash
# Runs every dg-bench suite on the GPU machine. Builds nothing.
#   bench/run_device.sh BUILD_DIR        (BUILD_DIR holds bench/dg-bench and libdg.so)
# Writes JSON, CSV, logs and PNG plots under $OUT when set (else ./bench-out). Each suite runs in
# its own process so one failure loses only that suite. Extra dg-bench flags: $DG_BENCH_ARGS.
set -u
BUILD=${1:?usage: bench/run_device.sh BUILD_DIR}
BIN="$BUILD/bench/dg-bench"
DEST=${OUT:-bench-out}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DEST"
if [ ! -x "$BIN" ]; then echo "run_device.sh: $BIN not found (build the dg-bench target first)" >&2; exit 2; fi

# A fresh JIT cache: first calls then include NVRTC compilation, reported as cold JIT time.
export DG_JIT_CACHE_DIR=$(mktemp -d)
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv \
  > "$DEST/nvidia-smi.csv" 2>&1 || true

status=0
for suite in copy layout dense-bf16 dense-fp8 nvfp4-gemv; do
  echo "=== dg-bench --suite $suite" >&2
  timeout 240 "$BIN" --suite "$suite" --json "$DEST/$suite.json" --csv "$DEST/$suite.csv" ${DG_BENCH_ARGS:-} \
    > "$DEST/$suite.txt" 2> "$DEST/$suite.log"
  rc=$?
  echo "dg-bench --suite $suite: exit $rc" >> "$DEST/exit-codes.txt"
  [ $rc -ne 0 ] && status=1
done
rm -rf "$DG_JIT_CACHE_DIR"

if python3 -c 'import matplotlib' 2>/dev/null; then
  for f in "$DEST"/*.json; do
    [ -s "$f" ] && python3 "$HERE/plot.py" "$f" -o "${f%.json}.png" >> "$DEST/plot.log" 2>&1
  done
else
  echo "matplotlib missing: no plots" >> "$DEST/plot.log"
fi

# The short table last (the reply carries the end of the output).
for suite in copy layout dense-bf16 dense-fp8 nvfp4-gemv; do
  [ -f "$DEST/$suite.txt" ] && cat "$DEST/$suite.txt"
done
cat "$DEST/exit-codes.txt"
exit $status
