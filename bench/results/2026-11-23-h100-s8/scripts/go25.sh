#!/bin/bash
# Session 8 call 2: SM/GPC placement probe; time vs K (per-tile fixed cost) for ours and cuBLASLt.
set -u
S=devrun/main; R=/tmp/r25; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
devrun/gpcprobe > $R/gpcprobe.txt 2>&1; echo "probe rc $?"
SH=""; for k in 512 1024 2048 4096 7168; do SH="$SH --shape 4096,4096,$k"; done
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 $SH \
  --gemm-config bm=128,bn=256,stages=4,promo=1,slices=2 --gemm-config bm=128,bn=128,stages=6,promo=1 --gemm-config bm=128,bn=128,stages=6,promo=2 \
  --json $R/k-fp8.json > $R/k-fp8.txt 2>&1; echo "kfp8 rc $?"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-bf16 --reps 40 --host-calls 1 $SH \
  --gemm-config bm=128,bn=256,stages=4 --gemm-config bm=128,bn=128,stages=6 \
  --json $R/k-bf16.json > $R/k-bf16.txt 2>&1; echo "kbf16 rc $?"
cd /tmp && tar czf $OUT/r25.tgz r25
