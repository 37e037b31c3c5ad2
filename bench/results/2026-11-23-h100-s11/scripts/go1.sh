#!/bin/bash
# Session 11 call 1: is the SM90 GEMM power-capped at M = 4096? Tiles per SM held at 4 / 7, SMs 128 vs 132.
set -u
S=devrun/main; R=$OUT/r1; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv -lms 50 > $R/smi.csv &
SMI=$!
for rep in a b; do
for suite in dense-bf16 dense-fp8; do
  DG_JIT_CACHE_DIR=$J timeout 200 $S/bench/dg-bench --suite $suite --reps 400 --host-calls 1 \
    --shape 4096,4096,7168 --shape 4224,4096,7168 --shape 4096,7168,16384 --shape 4224,7168,16384 \
    --json $R/$suite-$rep.json > $R/$suite-$rep.txt 2>&1; echo "$suite $rep rc $?"
  date +%s.%N >> $R/marks.txt
done
done
kill $SMI
grep -h "m=4" $R/*.txt | grep -v absent
