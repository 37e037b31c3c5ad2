#!/usr/bin/env bash
# A/B of two libdg builds (e.g. main and a kernel branch) on one GPU: each dg-bench suite is run in
# the order A B B A, one process per run, so that a drift of the clocks over the runs weighs on
# both builds alike. Each run times libdg beside cuBLASLt in the same process; compare the builds by
# their ratios to cuBLASLt (printed at the end), not by raw times across processes.
#   bench/scripts/ab_builds.sh STAGE_A STAGE_B "SUITE ..." [dg-bench args ...]
# STAGE_*: build trees or stage_device.sh copies (libdg.so.0 and bench/dg-bench).
# Results: $OUT/ab/{A,B}{1,2}-SUITE.{txt,json} (else ./bench-out/ab).
set -u
A=${1:?usage: bench/scripts/ab_builds.sh STAGE_A STAGE_B "SUITE ..." [dg-bench args]}
B=${2:?stage B}
SUITES=${3:?suites}
shift 3
EXTRA=("$@")  # passed to every dg-bench run
DEST=${OUT:-bench-out}/ab
JIT=$(mktemp -d)  # one JIT cache per build, outside the results
mkdir -p "$DEST"
run() {  # label stage suite
  local label=$1 stage=$2 suite=$3
  LD_LIBRARY_PATH="$stage${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DG_JIT_CACHE_DIR="$JIT/${label:0:1}" \
    "$stage/bench/dg-bench" --suite "$suite" --json "$DEST/$label-$suite.json" "${EXTRA[@]}" \
    > "$DEST/$label-$suite.txt" 2> "$DEST/$label-$suite.log"
  echo "$label $suite: exit $?" >&2
}
for suite in $SUITES; do
  run A1 "$A" "$suite"
  run B1 "$B" "$suite"
  run B2 "$B" "$suite"
  run A2 "$A" "$suite"
done
python3 "$(dirname "$0")/ab_summary.py" "$DEST" $SUITES
