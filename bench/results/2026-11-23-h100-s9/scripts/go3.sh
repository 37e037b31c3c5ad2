#!/bin/bash
# Session 9 call 3: promotion instruction type (FFMA vs FADD vs FMUL) on 128x256 sliced and 128x128.
set -u
S=devrun/main; R=/tmp/r3; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi0.csv
SHT="--shape 4096,4096,2048 --shape 4096,4096,7168"
C="--gemm-config bm=128,bn=128,stages=6,promo=1 --gemm-config bm=128,bn=128,stages=6,promo=2"
i=0
for v in real fadd fmul noprom noprom fmul fadd real; do
  i=$((i+1))
  if [ $v = real ]; then T=""; else T="DG_TEMPLATE_DIR=devrun/exp/$v"; fi
  env $T DG_JIT_CACHE_DIR=$J/$v $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 $SHT $C --json $R/t$i-$v.json > $R/t$i-$v.txt 2>&1; echo "t $i $v rc $?"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi1.csv
cd /tmp && tar czf $OUT/r3.tgz r3
