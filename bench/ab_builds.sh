#!/usr/bin/env bash
# A/B of two libdg builds (e.g. main and a kernel branch) on one GPU: each dg-bench suite is run in
# the order A B B A, one process per run, so that a drift of the clocks over the session weighs on
# both builds alike. Each run times libdg beside cuBLASLt in the same process; compare the builds by
# their ratios to cuBLASLt (printed at the end), not by raw times across processes.
#   bench/ab_builds.sh STAGE_A STAGE_B "SUITE ..." [dg-bench args ...]
# STAGE_*: folders holding libdg.so.0 and bench/dg-bench (a build tree or a staged copy).
# Results: $OUT/ab/{A,B}{1,2}-SUITE.{txt,json} (else ./bench-out/ab).
set -u
A=${1:?usage: bench/ab_builds.sh STAGE_A STAGE_B "SUITE ..." [dg-bench args]}
B=${2:?stage B}
SUITES=${3:?suites}
shift 3
EXTRA=("$@")  # passed to every dg-bench run
DEST=${OUT:-bench-out}/ab
JIT=$(mktemp -d)  # one JIT cache per build, outside the results
mkdir -p "$DEST"
run() {  # label stage suite
  local label=$1 stage=$2 suite=$3
  LD_LIBRARY_PATH="$stage${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DG_JIT_CACHE_DIR="$JIT/${label:0:1}" \
    "$stage/bench/dg-bench" --suite "$suite" --json "$DEST/$label-$suite.json" "${EXTRA[@]}" \
    > "$DEST/$label-$suite.txt" 2> "$DEST/$label-$suite.log"
  echo "$label $suite: exit $?" >&2
}
for suite in $SUITES; do
  run A1 "$A" "$suite"
  run B1 "$B" "$suite"
  run B2 "$B" "$suite"
  run A2 "$A" "$suite"
done
python3 - "$DEST" $SUITES <<'EOF'
import json, sys, os
dest, suites = sys.argv[1], sys.argv[2:]
for suite in suites:
    print(f"== {suite}: geomean t_peer / t_libdg per run")
    for label in ("A1", "B1", "B2", "A2"):
        path = os.path.join(dest, f"{label}-{suite}.json")
        try:
            summary = json.load(open(path)).get("summary", {}).get(suite, {})
        except (OSError, ValueError) as e:
            print(f"  {label}: unreadable ({e})")
            continue
        ratios = {k: round(v["geomean_time_ratio_to_libdg"], 4) for k, v in summary.items()
                  if isinstance(v, dict) and "geomean_time_ratio_to_libdg" in v}
        print(f"  {label}: {ratios}")
EOF
