#!/bin/bash
# Session 10 call 4: the dense suites on the final library (AUTO), the demo, the Python binding's GPU tests.
set -u
S=devrun/main; R=$OUT/r4; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi0.csv
DG_JIT_CACHE_DIR=$J timeout 60 $S/dg-demo > $R/demo.txt 2>&1; echo "demo rc $?"
DG_JIT_CACHE_DIR=$J timeout 300 $S/bench/dg-bench --suite dense-bf16,dense-fp8 --reps 30 --host-calls 1 --json $R/dense.json > $R/dense.txt 2>&1; echo "dense rc $?"
DG_JIT_CACHE_DIR=$J DG_LIBRARY_PATH=$PWD/$S timeout 200 python3 -m pytest bindings/python/tests -q -x > $R/pytest.txt 2>&1; echo "pytest rc $?"
tail -2 $R/pytest.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $R/smi1.csv
