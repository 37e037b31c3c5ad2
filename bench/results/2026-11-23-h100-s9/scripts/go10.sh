#!/bin/bash
# Session 9 call 10: FP8 M = 1 (decode) shapes, where cuBLASLt leads: tile / split-K / stage sweeps.
set -u
S=devrun/main; R=/tmp/r10; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S DG_JIT_CACHE_DIR=$J
B="$S/bench/dg-bench --suite dense-fp8 --reps 30 --host-calls 1"
C="--gemm-config bm=64,bn=128,splitk=4 --gemm-config bm=64,bn=64,splitk=2 --gemm-config bm=64,bn=256,splitk=4 --gemm-config bm=64,bn=128,splitk=2,stages=6 --gemm-config bm=64,bn=128,splitk=2,stages=12 --gemm-config bm=64,bn=64 --gemm-config bm=64,bn=128,splitk=8 --gemm-config bm=64,bn=32,splitk=2"
for r in a b; do
$B --shape 1,7168,2048 --shape 1,4096,7168 --shape 1,2112,7168 $C --json $R/m1-$r.json > $R/m1-$r.txt 2>&1; echo "m1 $r rc $?"
done
cd /tmp && tar czf $OUT/r10.tgz r10
