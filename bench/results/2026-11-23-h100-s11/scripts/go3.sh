#!/bin/bash
# Session 11 call 3: (a) the skinny kernel with the next round's loads issued before this round's MMAs
# (P1) against without (P0), both forced, tiled forced as the in-process reference; (b) power and clocks
# during a long BF16 / FP8 4096 x 4096 x 7168 loop. (P1's template did not compile here -- a constant
# used before its declaration -- so (a) was rerun as call 4; only (b) is kept, in call3/.)
set -u
S=devrun/main; R=/tmp/r3; mkdir -p $R
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
for c in 1; do
  DG_TEMPLATE_DIR=$PWD/devrun/s11/tplP$c DG_JIT_CACHE_DIR=/tmp/jit$c timeout 200 $S/tests/dg_gpu_tests -tc="*skinny*" > $R/gpu-p$c.txt 2>&1; echo "gpu tests p$c rc $?"; tail -3 $R/gpu-p$c.txt
done
for suite in dense-bf16 dense-fp8; do
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 50 > $R/smi-$suite.csv &
  SMI=$!
  sleep 0.5
  DG_JIT_CACHE_DIR=/tmp/jit1 timeout 120 $S/bench/dg-bench --suite $suite --reps 3000 --host-calls 1 --no-peers --shape 4096,4096,7168 > $R/long-$suite.txt 2>&1
  kill $SMI; sleep 0.2
  echo "$suite long: $(grep 'libdg ' $R/long-$suite.txt | head -1)"
  python3 - $R/smi-$suite.csv <<'PY'
import sys, statistics
rows=[l.strip().split(', ') for l in open(sys.argv[1]) if l.count(',')>=5]
busy=[r for r in rows if float(r[2].split()[0])>300]
if busy:
  clk=[float(r[1].split()[0]) for r in busy]; pw=[float(r[2].split()[0]) for r in busy]
  print("samples %d busy %d: clock MHz median %.0f min %.0f max %.0f; power W median %.0f max %.0f (limit %s); temp %s..%s; reasons %s"%(len(rows),len(busy),statistics.median(clk),min(clk),max(clk),statistics.median(pw),max(pw),busy[0][3],busy[0][4],busy[-1][4],sorted(set(r[5] for r in busy))))
else: print("no busy samples", len(rows))
PY
done
cd /tmp && tar czf $OUT/r3.tgz r3
