#!/bin/bash
# Session 10 call 5: the GPU test executable on final main.
set -u
S=devrun/main; R=$OUT/r5; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
DG_JIT_CACHE_DIR=/tmp/jit timeout 300 $S/tests/dg_gpu_tests > $R/gpu-tests.txt 2>&1; echo "tests rc $?"
tail -3 $R/gpu-tests.txt
