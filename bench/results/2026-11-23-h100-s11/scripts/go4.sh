#!/bin/bash
# Session 11 call 4: the skinny kernel with the next round's loads issued before this round's MMAs (P1)
# against without (P0), both forced, the tiled kernel forced as the in-process reference; P1's GPU tests.
set -u
S=devrun/main; R=/tmp/r4; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
SH=""
for m in 1 4 8 16; do for nk in 2112,7168 576,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do SH="$SH --shape $m,$nk"; done; done
for rep in a b; do
for c in 0 1; do
for suite in dense-bf16 dense-fp8; do
  DG_TEMPLATE_DIR=$PWD/devrun/s11/tplP$c DG_JIT_CACHE_DIR=/tmp/jit$c timeout 250 $S/bench/dg-bench --suite $suite --reps 30 --host-calls 1 \
    $SH --gemm-config kernel=2 --gemm-config kernel=1 --json $R/$suite-p$c-$rep.json > $R/$suite-p$c-$rep.txt 2>&1; echo "$suite p$c $rep rc $?"
done
done
done
DG_TEMPLATE_DIR=$PWD/devrun/s11/tplP1 DG_JIT_CACHE_DIR=/tmp/jit1 timeout 200 $S/tests/dg_gpu_tests -tc="*skinny*" > $R/gpu-p1.txt 2>&1; echo "gpu tests p1 rc $?"; tail -3 $R/gpu-p1.txt
cd /tmp && tar czf $OUT/r4.tgz r4
