#!/bin/bash
# Session 9 call 9: ncu of BF16 4096x4096x7168, libdg vs cuBLASLt (tensor pipe, clocks, smem).
set -u
S=devrun/main; R=/tmp/r9; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S DG_JIT_CACHE_DIR=$J
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
M="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_cycles_active.max.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,dram__bytes_read.sum.per_second,launch__grid_size"
for kre in '^dg_sm90_bf16' '^nvjet'; do
  timeout 150 $NCU --clock-control none -k regex:"$kre" --launch-skip 2 -c 2 --metrics $M \
    $S/bench/dg-bench --suite dense-bf16 --shape 4096,4096,7168 --reps 30 --warmup 1 --host-calls 1 > $R/ncu-$(echo $kre | tr -dc a-z0-9_).txt 2>&1; echo "ncu $kre rc $?"
done
cd /tmp && tar czf $OUT/r9.tgz r9
