#!/bin/bash
# Session 8 call 1: (a) ncu full of single vs pair vs cuBLASLt on 4096x576x7168 FP8;
# (b) clocks / tensor activity of ours vs cuBLASLt on 4096x4096x7168; (c) fewer SMs at equal waves.
set -u
S=devrun/main; R=/tmp/r24; J=/tmp/jit; mkdir -p $R
export LD_LIBRARY_PATH=$PWD/$S
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi0.csv
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
C576="--gemm-config bm=128,bn=144,stages=5,cluster=2,mca=0 --gemm-config bm=128,bn=144,stages=5,cluster=2,mca=1"
DG_JIT_CACHE_DIR=$J timeout 240 $NCU --clock-control none -k regex:'^(dg_sm90|nvjet)' --launch-skip 4 -c 8 --set full -o $R/p576 \
  $S/bench/dg-bench --suite dense-fp8 --shape 4096,576,7168 --reps 30 --warmup 1 --host-calls 1 $C576 > $R/ncu576.log 2>&1; echo "ncu576 rc $?"
$NCU -i $R/p576.ncu-rep --page details --print-details all > $R/p576-details.txt 2>&1
$NCU -i $R/p576.ncu-rep --page raw --csv > $R/p576-raw.csv 2>&1
M="sm__cycles_elapsed.avg.per_second,sm__cycles_elapsed.max,gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum,sm__inst_executed_pipe_fma.sum,lts__t_bytes.sum.per_second,dram__bytes_read.sum.per_second,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed"
DG_JIT_CACHE_DIR=$J timeout 200 $NCU --clock-control none -k regex:'^(dg_sm90|nvjet)' --launch-skip 6 -c 9 --metrics $M \
  $S/bench/dg-bench --suite dense-fp8 --shape 4096,4096,7168 --shape 4096,7168,16384 --reps 30 --warmup 1 --host-calls 1 > $R/ncu-clk.txt 2>&1; echo "ncuclk rc $?"
F="--gemm-config bm=128,bn=256,stages=4,promo=1,slices=2,sms=128"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 --shape 4096,4096,7168 --shape 4096,7168,16384 --shape 4096,7168,2048 $F --json $R/sms-fp8-a.json > $R/sms-fp8-a.txt 2>&1; echo "fp8a rc $?"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 --shape 4096,24576,1536 --gemm-config bm=128,bn=192,stages=4,promo=2,slices=2,sms=128 --json $R/sms-fp8-b.json > $R/sms-fp8-b.txt 2>&1; echo "fp8b rc $?"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-fp8 --reps 40 --host-calls 1 --shape 4096,2112,7168 --gemm-config bm=128,bn=192,stages=4,promo=2,slices=2,sms=118 --json $R/sms-fp8-c.json > $R/sms-fp8-c.txt 2>&1; echo "fp8c rc $?"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-bf16 --reps 40 --host-calls 1 --shape 4096,4096,7168 --shape 4096,7168,16384 --shape 4096,7168,2048 --gemm-config bm=128,bn=256,stages=4,sms=128 --json $R/sms-bf16-a.json > $R/sms-bf16-a.txt 2>&1; echo "bf16a rc $?"
DG_JIT_CACHE_DIR=$J $S/bench/dg-bench --suite dense-bf16 --reps 40 --host-calls 1 --shape 4096,2112,7168 --gemm-config bm=128,bn=176,stages=4,sms=128 --json $R/sms-bf16-c.json > $R/sms-bf16-c.txt 2>&1; echo "bf16c rc $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/smi1.csv
rm -f $R/*.ncu-rep.tmp
cd /tmp && tar czf $OUT/r24.tgz r24
