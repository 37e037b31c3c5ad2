#!/bin/bash
# Session 9 call 5: libdg beside PyTorch's cuBLASLt paths (do_bench, one process) and dg-bench's suites.
set -u
S=devrun/main; R=/tmp/r5; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi0.csv
DG_JIT_CACHE_DIR=$J DG_LIBRARY_PATH=$PWD/$S PYTHONPATH=$PWD/bindings/python timeout 300 python3 devrun/peers.py $R/peers-a.json > $R/peers-a.txt 2>&1; echo "peers a rc $?"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-fp8,dense-bf16 --reps 30 --host-calls 1 --json $R/bench.json > $R/bench.txt 2>&1; echo "bench rc $?"
DG_JIT_CACHE_DIR=$J DG_LIBRARY_PATH=$PWD/$S PYTHONPATH=$PWD/bindings/python timeout 300 python3 devrun/peers.py $R/peers-b.json > $R/peers-b.txt 2>&1; echo "peers b rc $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi1.csv
cd /tmp && tar czf $OUT/r5.tgz r5
