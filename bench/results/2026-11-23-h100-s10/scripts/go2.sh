#!/bin/bash
# Session 10 call 2: skinny with launch bounds (one wave): tests, then M=1 sweep of unroll and split, then M=4/8/16.
set -u
S=devrun/main; R=$OUT/r2; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi0.csv
DG_JIT_CACHE_DIR=$J timeout 200 $S/tests/dg_gpu_tests -tc="skinny*" > $R/gpu-tests.txt 2>&1; echo "tests rc $?"
tail -3 $R/gpu-tests.txt
NK="2112,7168 576,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048"
SH=""; for nk in $NK; do SH="$SH --shape 1,$nk"; done
DG_JIT_CACHE_DIR=$J timeout 240 $S/bench/dg-bench --suite dense-bf16,dense-fp8 $SH --reps 30 --host-calls 1 \
  --gemm-config kernel=1 --gemm-config kernel=2 \
  --gemm-config kernel=2,stages=1 --gemm-config kernel=2,stages=2 --gemm-config kernel=2,stages=3 --gemm-config kernel=2,stages=4 \
  --gemm-config kernel=2,splitk=1 --gemm-config kernel=2,splitk=2 --gemm-config kernel=2,splitk=4 --gemm-config kernel=2,splitk=8 \
  --json $R/sweep.json > $R/sweep.txt 2>&1; echo "sweep rc $?"
SH=""; for m in 4 8 16; do for nk in $NK; do SH="$SH --shape $m,$nk"; done; done
DG_JIT_CACHE_DIR=$J timeout 200 $S/bench/dg-bench --suite dense-bf16,dense-fp8 $SH --reps 30 --host-calls 1 \
  --gemm-config kernel=1 --gemm-config kernel=2 --json $R/m.json > $R/m.txt 2>&1; echo "m rc $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi1.csv
