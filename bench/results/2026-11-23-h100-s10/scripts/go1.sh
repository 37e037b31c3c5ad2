#!/bin/bash
# Session 10 call 1: skinny GEMM correctness, then M <= 32 timing (auto, tiled forced, skinny forced).
set -u
S=devrun/main; R=$OUT/r1; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi0.csv
DG_JIT_CACHE_DIR=$J timeout 240 $S/tests/dg_gpu_tests -tc="skinny*,sm90 bf16 gemm*,sm90 fp8 gemm: 1D2D*" > $R/gpu-tests.txt 2>&1; echo "tests rc $?"
tail -5 $R/gpu-tests.txt
SH=""
for m in 1 8 16 32; do for nk in 2112,7168 576,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do SH="$SH --shape $m,$nk"; done; done
DG_JIT_CACHE_DIR=$J DG_PRINT_CONFIGS=1 timeout 300 $S/bench/dg-bench --suite dense-bf16,dense-fp8 $SH --reps 30 --host-calls 1 \
  --gemm-config kernel=1 --gemm-config kernel=2 --json $R/bench.json > $R/bench.txt 2>&1; echo "bench rc $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi1.csv
