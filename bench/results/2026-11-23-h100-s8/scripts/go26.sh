#!/bin/bash
# Session 8 call 3: 2-CTA clusters ordered for round-robin GPC placement (DG_EXP_PERIOD) vs as launched.
set -u
S=devrun/X; R=/tmp/r26; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
F8="--gemm-config bm=128,bn=144,stages=5,cluster=2,mca=0 --gemm-config bm=128,bn=144,stages=5,cluster=2,mca=1 --gemm-config bm=128,bn=128,stages=6,promo=2,cluster=2,mca=0 --gemm-config bm=128,bn=128,stages=6,promo=2,cluster=2,mca=1 --gemm-config bm=128,bn=256,stages=4,promo=1,slices=2,cluster=2,mca=1 --gemm-config bm=128,bn=256,stages=4,promo=1,slices=2,cluster=2,mca=0"
B16="--gemm-config bm=128,bn=256,stages=4,cluster=2,mca=1 --gemm-config bm=128,bn=256,stages=4,cluster=2,mca=0 --gemm-config bm=128,bn=128,stages=6,cluster=2,mca=0 --gemm-config bm=128,bn=128,stages=6,cluster=2,mca=1"
for P in 0 8 7; do
  DG_EXP_PERIOD=$P DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-fp8 --reps 30 --host-calls 1 --shape 4096,576,7168 --shape 4096,4096,7168 --shape 4096,2112,7168 $F8 --json $R/fp8-p$P.json > $R/fp8-p$P.txt 2>&1; echo "fp8 $P rc $?"
  DG_EXP_PERIOD=$P DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-bf16 --reps 30 --host-calls 1 --shape 4096,576,7168 --shape 4096,4096,7168 $B16 --json $R/bf16-p$P.json > $R/bf16-p$P.txt 2>&1; echo "bf16 $P rc $?"
done
cd /tmp && tar czf $OUT/r26.tgz r26
