#!/bin/bash
# Session 11 call 2: the FP8 skinny kernel's E4M3 -> FP16 conversion (mma.sync e4m3 is F2FP + HMMA on SM90):
# conv 0 = F2FP (mma e4m3), 1 = integer ops, 2 = half and half. Tiled forced as the in-process reference.
set -u
S=devrun/main; R=$OUT/r2; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
SH=""
for m in 1 8 12 16; do for nk in 2112,7168 576,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do SH="$SH --shape $m,$nk"; done; done
for rep in a b; do
for c in 0 1 2; do
  DG_TEMPLATE_DIR=$PWD/devrun/s11/tpl$c DG_JIT_CACHE_DIR=/tmp/jit$c timeout 250 $S/bench/dg-bench --suite dense-fp8 --reps 30 --host-calls 1 \
    $SH --gemm-config kernel=2 --gemm-config kernel=1 --json $R/c$c-$rep.json > $R/c$c-$rep.txt 2>&1; echo "conv $c $rep rc $?"
done
done
# correctness of each variant on the skinny GPU test case
for c in 1 2; do
  DG_TEMPLATE_DIR=$PWD/devrun/s11/tpl$c DG_JIT_CACHE_DIR=/tmp/jit$c timeout 200 $S/tests/dg_gpu_tests -tc="*skinny*" > $R/gpu-c$c.txt 2>&1; echo "gpu tests conv $c rc $?"; tail -3 $R/gpu-c$c.txt
done
