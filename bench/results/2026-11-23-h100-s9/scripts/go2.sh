#!/bin/bash
# Session 9 call 2: where promotion costs (FFMA count variants) + ncu source-level of 4 kernels.
set -u
S=devrun/main; R=/tmp/r2; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi0.csv
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
SHT="--shape 4096,4096,2048 --shape 4096,4096,7168"
C="--gemm-config bm=128,bn=128,stages=6,promo=2"
for r in a b; do
  for v in real nofma halffma noprom; do
    if [ $v = real ]; then T=""; else T="DG_TEMPLATE_DIR=devrun/exp/$v"; fi
    env $T DG_JIT_CACHE_DIR=$J/$v $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 $SHT $C --json $R/t-$v-$r.json > $R/t-$v-$r.txt 2>&1; echo "t $v $r rc $?"
  done
done
SH="--shape 4096,4096,7168"
prof() {  # name template kernel-regex extra-args
  local name=$1 tdir=$2 kre=$3; shift 3
  local T=""; [ -n "$tdir" ] && T="DG_TEMPLATE_DIR=devrun/exp/$tdir"
  timeout 120 env $T DG_JIT_CACHE_DIR=$J/${tdir:-real} $NCU --clock-control none -k regex:"$kre" --launch-skip 2 -c 1 --set full --import-source no -o $R/$name \
    $S/bench/dg-bench --suite dense-fp8 $SH --reps 30 --warmup 1 --host-calls 1 "$@" > $R/ncu-$name.log 2>&1; echo "ncu $name rc $?"
  $NCU -i $R/$name.ncu-rep --page raw --csv > $R/$name-raw.csv 2>&1
  $NCU -i $R/$name.ncu-rep --page details > $R/$name-details.txt 2>&1
  $NCU -i $R/$name.ncu-rep --page source --csv --print-source sass > $R/$name-source.csv 2> $R/$name-source.err; echo "src $name rc $?"
}
prof dg256 "" '^dg_sm90_fp8' --no-peers
prof dg128 "" 'dg_sm90_fp8.*128x128' --no-peers $C
prof lt "" '^nvjet.*_TNT$'
prof np256 noprom '^dg_sm90_fp8' --no-peers
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi1.csv
rm -f $R/*.ncu-rep.tmp
cd /tmp && tar czf $OUT/r2.tgz r2
