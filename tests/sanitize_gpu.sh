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
# Environment: DG_GPU_TESTS (the test binary, default build/tests/dg_gpu_tests),
# COMPUTE_SANITIZER (default: on PATH, else $CUDA_HOME/bin or /usr/local/cuda/bin),
# SANITIZE_LOG_DIR (default build/sanitize), SANITIZE_TOOLS (default "memcheck racecheck synccheck
# initcheck", run in that order), SANITIZE_TIMEOUT (seconds each run may take; a run cut short
# fails; default: no limit). Exit 77 (skipped) when the test binary finds no GPU, 2 on a usage
# problem.
set -u -o pipefail

tests=${DG_GPU_TESTS:-build/tests/dg_gpu_tests}
logs=${SANITIZE_LOG_DIR:-build/sanitize}
tools=${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}
limit=${SANITIZE_TIMEOUT:-}
kReportLines=60  # lines of a failing run's reports printed here (the log has them all)

# Runs "$@" under the time limit, if any (exit 124 when it was cut short).
limited() {
  if [ -n "$limit" ]; then timeout --kill-after=10 "$limit" "$@"; else "$@"; fi
}

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

# The plain run: the suite must pass, and the kernels are compiled outside the sanitizers.
start=$SECONDS
limited "$tests" "$@" > "$logs/plain.log" 2>&1
rc=$?
echo "plain run: exit $rc in $((SECONDS - start)) s; $(grep -E '^\[doctest\] test cases' "$logs/plain.log" | tail -1)"
if [ $rc -eq 77 ]; then
  cat "$logs/plain.log"
  exit 77
fi
failed=0
if [ $rc -ne 0 ]; then
  echo "sanitize_gpu: the quick suite fails without a sanitizer$([ $rc -eq 124 ] && echo " (cut short at ${limit} s)"):"
  grep -E 'ERROR|FAILED|error' "$logs/plain.log" | head -n "$kReportLines"
  failed=1
fi

for tool in $tools; do
  args=(--tool "$tool" --error-exitcode 1)
  [ "$tool" = memcheck ] && args+=(--leak-check full)
  start=$SECONDS
  limited "$sanitizer" "${args[@]}" "$tests" "$@" > "$logs/$tool.log" 2>&1
  rc=$?
  echo "== $tool: exit $rc in $((SECONDS - start)) s; $(grep -E '^\[doctest\] test cases' "$logs/$tool.log" | tail -1)"
  grep -E '^========= .*SUMMARY' "$logs/$tool.log"
  bad=$rc
  if grep -qE 'SUMMARY:.*[^0-9][1-9][0-9]* errors?' "$logs/$tool.log"; then bad=1; fi  # besides the exit code
  if ! grep -qE '^========= .*SUMMARY' "$logs/$tool.log"; then
    echo "   (no summary: the run did not finish$([ $rc -eq 124 ] && echo ": cut short at ${limit} s"); see $logs/$tool.log)"
    bad=1
  fi
  if [ $bad -ne 0 ]; then
    failed=1
    grep -E '^=========|FAILED|ERROR:' "$logs/$tool.log" | grep -vE 'SUMMARY|COMPUTE-SANITIZER' | head -n "$kReportLines"
  fi
done

if [ $failed -ne 0 ]; then
  echo "sanitize_gpu: FAILED (logs in $logs)"
  exit 1
fi
echo "sanitize_gpu: every tool clean (logs in $logs)"
