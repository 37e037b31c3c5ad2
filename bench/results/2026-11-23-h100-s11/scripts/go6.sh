#!/bin/bash
# Session 11 call 6: the demo and the GPU tests on final main.
set -u
S=devrun/main; R=/tmp/r6; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
DG_JIT_CACHE_DIR=/tmp/jit timeout 60 $S/dg-demo > $R/demo.txt 2>&1; echo "demo rc $?"; tail -3 $R/demo.txt
DG_JIT_CACHE_DIR=/tmp/jit timeout 300 $S/tests/dg_gpu_tests > $R/gpu-tests.txt 2>&1; echo "gpu tests rc $?"; tail -3 $R/gpu-tests.txt
cd /tmp && tar czf $OUT/r6.tgz r6
