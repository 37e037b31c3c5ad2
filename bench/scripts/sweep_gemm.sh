#!/usr/bin/env bash
# Times a grid of explicit libdg GEMM kernel configs beside the heuristic's choice and cuBLASLt, one
# dg-bench process per suite (inputs made once per shape), for tuning src/ops/gemm_heuristic.cpp
# (bench/models/ keeps the sweeps it is fitted to).
#   bench/scripts/sweep_gemm.sh STAGE_DIR SUITE "M,N,K ..." "CONFIG ..."
# CONFIG is a --gemm-config value (bm=128,bn=256,cluster=2,...). Results: $OUT/sweep-SUITE.{txt,json}
# (else ./bench-out). A config that cannot run a shape is reported as an error for that shape only.
set -u
BUILD=${1:?usage: bench/scripts/sweep_gemm.sh STAGE_DIR SUITE SHAPES CONFIGS}
SUITE=${2:?suite: dense-bf16 or dense-fp8}
SHAPES=${3:?shapes: "m,n,k ..."}
CONFIGS=${4:?configs: "key=v,... ..."}
DEST=${OUT:-bench-out}
mkdir -p "$DEST"
export LD_LIBRARY_PATH="$BUILD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
args=(--suite "$SUITE" --reps 30 --host-calls 10 --json "$DEST/sweep-$SUITE.json")
for s in $SHAPES; do args+=(--shape "$s"); done
for c in $CONFIGS; do args+=(--gemm-config "$c"); done
"$BUILD/bench/dg-bench" "${args[@]}" > "$DEST/sweep-$SUITE.txt" 2> "$DEST/sweep-$SUITE.log"
rc=$?
echo "sweep $SUITE: exit $rc" >&2
exit $rc
