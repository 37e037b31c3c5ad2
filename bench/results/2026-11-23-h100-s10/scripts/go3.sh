#!/bin/bash
# Session 10 call 3: skinny at one unit per warp, M = 1..16 against the tiled kernel; then every GPU test.
set -u
S=devrun/main; R=$OUT/r3; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi0.csv
NK="2112,7168 576,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048"
SH=""; for m in 1 2 4 8 12 16; do for nk in $NK; do SH="$SH --shape $m,$nk"; done; done
DG_JIT_CACHE_DIR=$J timeout 300 $S/bench/dg-bench --suite dense-bf16,dense-fp8 $SH --reps 30 --host-calls 1 \
  --gemm-config kernel=1 --gemm-config kernel=2 --gemm-config kernel=2,stages=2 --json $R/m.json > $R/m.txt 2>&1; echo "m rc $?"
DG_JIT_CACHE_DIR=$J timeout 240 $S/tests/dg_gpu_tests > $R/gpu-tests.txt 2>&1; echo "tests rc $?"
tail -3 $R/gpu-tests.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi1.csv
