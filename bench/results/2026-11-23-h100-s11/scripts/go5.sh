#!/bin/bash
# Session 11 call 5: FP8 skinny kernel at M = 12 / 16 with every split forced (is the split rule what
# loses there?); then the dense suites on main (AUTO) with plots' JSON; GPU tests.
set -u
S=devrun/main; R=/tmp/r5; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
SH=""
for m in 12 16; do for nk in 2112,7168 576,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do SH="$SH --shape $m,$nk"; done; done
DG_JIT_CACHE_DIR=/tmp/jit timeout 250 $S/bench/dg-bench --suite dense-fp8 --reps 30 --host-calls 1 $SH \
  --gemm-config kernel=2,splitk=1 --gemm-config kernel=2,splitk=2 --gemm-config kernel=2,splitk=4 --gemm-config kernel=2,splitk=8 \
  --gemm-config kernel=1 --json $R/fp8-split.json > $R/fp8-split.txt 2>&1; echo "split rc $?"
DG_JIT_CACHE_DIR=/tmp/jit timeout 300 $S/bench/dg-bench --suite dense-bf16,dense-fp8 --reps 30 --host-calls 1 --json $R/dense.json > $R/dense.txt 2>&1; echo "dense rc $?"
DG_JIT_CACHE_DIR=/tmp/jit timeout 200 $S/tests/dg_gpu_tests > $R/gpu-tests.txt 2>&1; echo "gpu tests rc $?"; tail -3 $R/gpu-tests.txt
cd /tmp && tar czf $OUT/r5.tgz r5
