#!/usr/bin/env bash
# The compute-sanitizer gate: the quick GPU suite (DG_GPU_TEST_QUICK=1) once without a sanitizer,
# which also compiles every kernel it needs into the JIT cache, then under memcheck (with the leak
# check), racecheck, synccheck and initcheck. Fails (exit 1) when the plain run or any tool run
# fails: an error a tool reports (racecheck: a hazard it rates an error; warnings are printed in
# its summary, not failed on), or a test that fails under it. Prints each tool's summary lines; the
# whole output of each run is kept in the log folder, and a failing run's first reports are printed.
#
#   tests/sanitize_gpu.sh [doctest options...]      e.g. -tce='*nvfp4*' to leave cases out
#
# Environment:
#   DG_GPU_TESTS       the test binary (default build/tests/dg_gpu_tests)
#   COMPUTE_SANITIZER  the tool (default: on PATH, else in $CUDA_HOME/bin or /usr/local/cuda/bin)
#   SANITIZE_LOG_DIR   where the logs go (default build/sanitize)
#   SANITIZE_TOOLS     default "memcheck racecheck synccheck initcheck", reported in that order
#   SANITIZE_PARALLEL  1: the tool runs share the GPU at once (each is mostly host-bound; the
#                      tests time nothing), the wall time of the slowest instead of the sum
#   SANITIZE_TIMEOUT   seconds a tool run may take; one cut short fails (default: no limit)
# Exit 77 (skipped) when the test binary finds no GPU, 2 on a usage problem.
set -u -o pipefail

tests=${DG_GPU_TESTS:-build/tests/dg_gpu_tests}
logs=${SANITIZE_LOG_DIR:-build/sanitize}
tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
parallel=${SANITIZE_PARALLEL:-0}
limit=${SANITIZE_TIMEOUT:-}
kReportLines=60  # lines of a failing run's reports printed here (the log has them all)

sanitizer=${COMPUTE_SANITIZER:-}
if [ -z "$sanitizer" ]; then
  sanitizer=$(command -v compute-sanitizer || true)
  for dir in "${CUDA_HOME:-}/bin" /usr/local/cuda/bin; do
    [ -z "$sanitizer" ] && [ -x "$dir/compute-sanitizer" ] && sanitizer=$dir/compute-sanitizer
  done
fi
if [ ! -x "$tests" ]; then
  echo "sanitize_gpu: no test binary at $tests (build the dg_gpu_tests target, or set DG_GPU_TESTS)" >&2
  exit 2
fi
if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
  echo "sanitize_gpu: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2
  exit 2
fi
mkdir -p "$logs" || exit 2
export DG_GPU_TEST_QUICK=1

doctest_line() { grep -E '^\[doctest\] test cases' "$1" | tail -1; }

# The plain run: the suite must pass, and the kernels are compiled outside the sanitizers.
start=$SECONDS
"$tests" "$@" > "$logs/plain.log" 2>&1
rc=$?
echo "plain run: exit $rc in $((SECONDS - start)) s; $(doctest_line "$logs/plain.log")"
if [ $rc -eq 77 ]; then
  cat "$logs/plain.log"
  exit 77
fi
failed=0
if [ $rc -ne 0 ]; then
  echo "sanitize_gpu: the quick suite fails without a sanitizer:"
  grep -E 'ERROR|FAILED|error' "$logs/plain.log" | head -n "$kReportLines"
  failed=1
fi

# One tool over the suite: its log, its exit status in $logs/<tool>.rc, its wall time in .sec.
run_tool() {
  local tool=$1 start=$SECONDS rc
  shift
  local args=(--tool "$tool" --error-exitcode 1)
  [ "$tool" = memcheck ] && args+=(--leak-check full)
  if [ -n "$limit" ]; then
    timeout --kill-after=10 "$limit" "$sanitizer" "${args[@]}" "$tests" "$@" > "$logs/$tool.log" 2>&1
  else
    "$sanitizer" "${args[@]}" "$tests" "$@" > "$logs/$tool.log" 2>&1
  fi
  rc=$?
  echo $rc > "$logs/$tool.rc"
  echo $((SECONDS - start)) > "$logs/$tool.sec"
}

start=$SECONDS
for tool in $tools; do
  rm -f "$logs/$tool.rc" "$logs/$tool.sec"
  if [ "$parallel" = 1 ]; then run_tool "$tool" "$@" & else run_tool "$tool" "$@"; fi
done
wait
[ "$parallel" = 1 ] && echo "tool runs (in parallel): $((SECONDS - start)) s"

for tool in $tools; do
  log=$logs/$tool.log
  rc=$(cat "$logs/$tool.rc" 2>/dev/null || echo 1)
  echo "== $tool: exit $rc in $(cat "$logs/$tool.sec" 2>/dev/null) s; $(doctest_line "$log")"
  grep -E '^========= .*SUMMARY' "$log"
  bad=$rc
  if grep -qE 'SUMMARY:.*[^0-9][1-9][0-9]* errors?' "$log"; then bad=1; fi  # besides the exit status
  if ! grep -qE '^========= .*SUMMARY' "$log"; then
    echo "   (no summary: the run did not finish$([ "$rc" = 124 ] && echo ": cut short at $limit s"); see $log)"
    bad=1
  fi
  if [ "$bad" != 0 ]; then
    failed=1
    grep -E '^=========|FAILED|ERROR:' "$log" | grep -vE 'SUMMARY|COMPUTE-SANITIZER' | head -n "$kReportLines"
  fi
done

if [ $failed -ne 0 ]; then
  echo "sanitize_gpu: FAILED (logs in $logs)"
  exit 1
fi
echo "sanitize_gpu: every tool clean (logs in $logs)"
