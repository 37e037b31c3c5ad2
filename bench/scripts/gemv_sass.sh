#!/bin/bash
# SASS of the NVFP4 GEMV for the heuristic's configurations of the three benchmark shapes
# (7168,16384,1): KT 512 RG 1; (4096,7168,8): KT 224 RG 1; (7168,2048,4): KT 64 RG 4; all NC 1, R 2,
# 16-byte loads, exact cover, one round ahead), for sm_90a and sm_100a. No GPU needed.
# Usage: bench/scripts/gemv_sass.sh TEMPLATE_DIR DG_CODEGEN OUT_DIR
# Writes OUT_DIR/s{1,2,3}-{90,100}.{cu,cubin,sass,ptxas}; count with gemv_sass_count.py.
set -e
T=$1 CG=$2 O=$3
mkdir -p "$O"
declare -A CFG=([s1]="kt=512 rg=1" [s2]="kt=224 rg=1" [s3]="kt=64 rg=4")
for s in s1 s2 s3; do
  for arch in 90 100; do
    read -r kt rg <<<"${CFG[$s]}"
    "$CG" --template-dir "$T" nvfp4_gemv --set arch=$arch --set "$kt" --set "$rg" --set nc=1 --set rows=2 \
      --set vec=16 --set exact=1 --set pipe=1 --set loopk=0 --set defer=1 --set-str a_cop=.nc.L1::no_allocate \
      --set-str s_cop=.nc.L1::no_allocate --set-str b_cop=.nc >"$O/$s-$arch.cu"
    nvcc -std=c++17 -O3 -I"$T/include" -arch=sm_${arch}a -cubin -Xptxas -v -o "$O/$s-$arch.cubin" "$O/$s-$arch.cu" \
      2>"$O/$s-$arch.ptxas"
    cuobjdump -sass "$O/$s-$arch.cubin" >"$O/$s-$arch.sass"
    echo "$s sm_${arch}a: $(grep -o 'Used [0-9]* registers' "$O/$s-$arch.ptxas"), $(grep -o '[0-9]* bytes spill stores' "$O/$s-$arch.ptxas")"
  done
done
