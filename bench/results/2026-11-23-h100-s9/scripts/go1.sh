#!/bin/bash
# Session 9 call 1: ncu (full + source SASS) of FP8 4096^3x7168 contenders; no-promotion ceilings.
set -u
S=devrun/main; R=/tmp/r1; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi0.csv
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
$NCU --version > $R/ncu-version.txt 2>&1
SH="--shape 4096,4096,7168"
# Timing first (cool-ish GPU): real vs no-promotion variants, ABBA.
REAL="--gemm-config bm=128,bn=256,stages=4,promo=1,slices=2 --gemm-config bm=128,bn=128,stages=6,promo=2 --gemm-config bm=128,bn=128,stages=6,promo=1"
NP="--gemm-config bm=128,bn=256,stages=4,promo=1,slices=2 --gemm-config bm=128,bn=128,stages=6,promo=1"
SHT="--shape 4096,4096,2048 --shape 4096,4096,7168"
for r in a b; do
  for v in real noprom noprom2 ; do
    if [ $v = real ]; then T=""; C="$REAL"; else T="DG_TEMPLATE_DIR=devrun/exp/$v"; C="$NP"; fi
    env $T DG_JIT_CACHE_DIR=$J/$v $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 $SHT $C --json $R/t-$v-$r.json > $R/t-$v-$r.txt 2>&1; echo "t $v $r rc $?"
  done
done
# ncu: real kernels and cuBLASLt
timeout 200 env DG_JIT_CACHE_DIR=$J/real $NCU --clock-control none -k regex:'^(dg_sm90_fp8|nvjet)' -c 12 --set full --import-source no -o $R/real \
  $S/bench/dg-bench --suite dense-fp8 $SH --reps 1 --warmup 0 --host-calls 1 \
  --gemm-config bm=128,bn=128,stages=6,promo=2 > $R/ncu-real.log 2>&1; echo "ncu real rc $?"
timeout 150 env DG_TEMPLATE_DIR=devrun/exp/noprom2 DG_JIT_CACHE_DIR=$J/noprom2 $NCU --clock-control none -k regex:'^dg_sm90_fp8' -c 6 --set full -o $R/np \
  $S/bench/dg-bench --suite dense-fp8 $SH --reps 1 --warmup 0 --host-calls 1 --no-peers \
  --gemm-config bm=128,bn=128,stages=6,promo=1 > $R/ncu-np.log 2>&1; echo "ncu np rc $?"
for f in real np; do
  $NCU -i $R/$f.ncu-rep --page raw --csv > $R/$f-raw.csv 2>&1
  $NCU -i $R/$f.ncu-rep --page details > $R/$f-details.txt 2>&1
  $NCU -i $R/$f.ncu-rep --page source --csv --print-source sass > $R/$f-source.csv 2> $R/$f-source.err; echo "src $f rc $?"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi1.csv
rm -f $R/*.ncu-rep.tmp
cd /tmp && tar czf $OUT/r1.tgz r1
