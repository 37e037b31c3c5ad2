#!/bin/bash
# Session 8 call 5: A/B/C on the dense suites: A = persistent grid on every SM (HEAD behaviour),
# B = fewest CTAs at equal waves, C = B + FP8 overlapped promotion grouped by 8 K blocks (template dir).
set -u
S=devrun/B; R=/tmp/r28; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi0.csv
i=0
for v in A B C C B A; do
  i=$((i+1))
  for suite in dense-fp8 dense-bf16; do
    case $v in
      A) env DG_EXP_NOTRIM=1 DG_JIT_CACHE_DIR=/tmp/jitAB $S/bench/dg-bench --suite $suite --reps 30 --host-calls 1 --json $R/$v-$i-$suite.json > $R/$v-$i-$suite.txt 2>&1 ;;
      B) env DG_JIT_CACHE_DIR=/tmp/jitAB $S/bench/dg-bench --suite $suite --reps 30 --host-calls 1 --json $R/$v-$i-$suite.json > $R/$v-$i-$suite.txt 2>&1 ;;
      C) env DG_TEMPLATE_DIR=$PWD/devrun/tpl080 DG_JIT_CACHE_DIR=/tmp/jitC $S/bench/dg-bench --suite $suite --reps 30 --host-calls 1 --json $R/$v-$i-$suite.json > $R/$v-$i-$suite.txt 2>&1 ;;
    esac
    echo "$v $i $suite rc $? $(date +%s)"
  done
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi1.csv
cd /tmp && tar czf $OUT/r28.tgz r28
