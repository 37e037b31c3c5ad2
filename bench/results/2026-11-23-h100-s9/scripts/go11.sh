#!/bin/bash
# Session 9 call 11: M = 128 narrow-N long-K shapes (576, 2112 x 7168), BF16 and FP8: split-K / block_m sweeps.
set -u
S=devrun/main; R=/tmp/r11; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S DG_JIT_CACHE_DIR=$J
C576="--gemm-config bm=128,bn=64,splitk=8 --gemm-config bm=128,bn=32,splitk=4 --gemm-config bm=128,bn=48,splitk=8 --gemm-config bm=128,bn=96,splitk=8 --gemm-config bm=64,bn=64,splitk=2 --gemm-config bm=128,bn=64,splitk=4 --gemm-config bm=64,bn=32,splitk=4"
C2112="--gemm-config bm=128,bn=32,splitk=2 --gemm-config bm=128,bn=64,splitk=4 --gemm-config bm=128,bn=96,splitk=4 --gemm-config bm=64,bn=64,splitk=2 --gemm-config bm=128,bn=48,splitk=2 --gemm-config bm=64,bn=32,splitk=2"
for r in a b; do
for suite in dense-bf16 dense-fp8; do
  $S/bench/dg-bench --suite $suite --reps 30 --host-calls 1 --shape 128,576,7168 $C576 --json $R/$suite-576-$r.json > $R/$suite-576-$r.txt 2>&1; echo "$suite 576 $r rc $?"
  $S/bench/dg-bench --suite $suite --reps 30 --host-calls 1 --shape 128,2112,7168 $C2112 --json $R/$suite-2112-$r.json > $R/$suite-2112-$r.txt 2>&1; echo "$suite 2112 $r rc $?"
done
done
cd /tmp && tar czf $OUT/r11.tgz r11
