#!/bin/bash
# Session 8 call 4: FP8 k-loop variants (template dirs): ORDER (WG-ordered WGMMA issue), GROUP (overlap group), SHIFT (WG1 phase shift).
set -u
S=devrun/main; R=/tmp/r27; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
C="--gemm-config bm=128,bn=128,stages=6,promo=2 --gemm-config bm=128,bn=128,stages=6,promo=2,cluster=2,mca=0 --gemm-config bm=128,bn=256,stages=4,promo=1,slices=2"
i=0
for v in 040 140 240 080 042 042 080 240 140 040; do
  i=$((i+1))
  DG_TEMPLATE_DIR=$PWD/devrun/tpl$v DG_JIT_CACHE_DIR=/tmp/jit$v $S/bench/dg-bench --suite dense-fp8 --reps 30 --host-calls 1 \
    --shape 4096,4096,7168 --shape 4096,7168,2048 --shape 4096,2112,7168 --shape 4096,576,7168 $C --json $R/v$v-$i.json > $R/v$v-$i.txt 2>&1; echo "$v $i rc $?"
done
cd /tmp && tar czf $OUT/r27.tgz r27
