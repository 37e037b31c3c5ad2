#!/bin/bash
# Session 9 call 8: BF16 shapes below cuBLASLt (M = 128 and 4096): tile / cluster / split-K alternatives.
set -u
S=devrun/main; R=/tmp/r8; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S DG_JIT_CACHE_DIR=$J
B="$S/bench/dg-bench --suite dense-bf16 --reps 30 --host-calls 1"
for r in a b; do
$B --shape 4096,24576,1536 --gemm-config bm=128,bn=256 --gemm-config bm=128,bn=240 --gemm-config bm=128,bn=192 --gemm-config bm=128,bn=208 \
   --gemm-config bm=128,bn=224,cluster=2,mca=0 --gemm-config bm=128,bn=224,cluster=2,mca=1 --json $R/s1-$r.json > $R/s1-$r.txt 2>&1; echo "s1 $r rc $?"
$B --shape 4096,2112,7168 --gemm-config bm=128,bn=176,cluster=2,mca=0 --gemm-config bm=128,bn=176,cluster=2,mca=1 --gemm-config bm=128,bn=192 \
   --gemm-config bm=128,bn=176,stages=5 --json $R/s2-$r.json > $R/s2-$r.txt 2>&1; echo "s2 $r rc $?"
$B --shape 4096,576,7168 --gemm-config bm=128,bn=144,cluster=2,mca=0 --gemm-config bm=128,bn=144,cluster=2,mca=1 --gemm-config bm=128,bn=192 \
   --gemm-config bm=128,bn=144,stages=6 --json $R/s3-$r.json > $R/s3-$r.txt 2>&1; echo "s3 $r rc $?"
$B --shape 128,7168,2048 --gemm-config bm=128,bn=56 --gemm-config bm=128,bn=112,splitk=2 --gemm-config bm=64,bn=128 --gemm-config bm=64,bn=96 \
   --gemm-config bm=128,bn=64 --gemm-config bm=64,bn=112,stages=6 --gemm-config bm=64,bn=56,splitk=2 --json $R/s4-$r.json > $R/s4-$r.txt 2>&1; echo "s4 $r rc $?"
done
cd /tmp && tar czf $OUT/r8.tgz r8
