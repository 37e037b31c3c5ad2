#!/usr/bin/env sh
# Every query form of dg-gemm-estimate (tests/model/estimate.cpp) answers with a config of 9 fields (A:
# then its count-adaptive tiles), and an explicit config given to a masked, contiguous or K-grouped
# query is the one it answers for; --device names a GPU.
#   bench/models/check_queries.sh BUILD/tests/dg-gemm-estimate
set -eu
est=${1:?usage: check_queries.sh DG_GEMM_ESTIMATE}
out=$(printf '%s\n' \
  'H 1 4096 7168 2048' \
  'G 2 8 4096 7168 4096' \
  'Q 1 1 4096 1228 6144 7168 0 0 0 0 -1 0 0 0' \
  'Q 0 32 4096 24 4096 7168 64 32 0 0 -1 0 0 0' \
  'G 2 8 4096 7168 4096 128 96 0 0 -1 2 0 0' \
  'C 1 8 32768 4096 7168' \
  'C 0 4 32768 7168 2048 128 128 0 0 -1 0 0 0' | "$est")
echo "$out"
echo "$out" | awk 'NF != 9 || /ERR/ { bad = 1 } END { exit (bad || NR != 7) }' ||
  { echo "check_queries: expected seven answers of 9 fields" >&2; exit 1; }
echo "$out" | awk 'NR == 6 && $2 != 128 { exit 1 }' ||
  { echo "check_queries: a contiguous query must plan 128-row tiles (the groups' alignment)" >&2; exit 1; }
echo "$out" | awk 'NR == 7 && !($2 == 128 && $3 == 128) { exit 1 }' ||
  { echo "check_queries: the contiguous query did not keep its explicit 128x128 tile" >&2; exit 1; }
echo "$out" | awk 'NR == 4 && !($2 == 64 && $3 == 32) { exit 1 }' ||
  { echo "check_queries: the masked query did not keep its explicit 64x32 tile" >&2; exit 1; }
echo "$out" | awk 'NR == 5 && !($2 == 128 && $3 == 96 && $7 == 2) { exit 1 }' ||
  { echo "check_queries: the K-grouped query did not keep its explicit overlapped 128x96 tile" >&2; exit 1; }
printf 'Q 2 1 4096 1228 6144 7168 0 0 0 0 -1 0 0 0\n' | "$est" | grep -q '^ERR' ||
  { echo "check_queries: a masked 1D1D query must be refused" >&2; exit 1; }
printf 'C 2 8 32768 4096 7168\n' | "$est" | grep -q '^ERR' ||
  { echo "check_queries: a contiguous 1D1D query must be refused" >&2; exit 1; }
# R: a masked query priced at a known total of row blocks keeps its tile, and more blocks cost more.
r=$(printf '%s\n' 'R 0 1 4096 1024 6 4096 7168 128 192 0 0 -1 0 0 2' \
  'R 0 1 4096 1024 10 4096 7168 128 192 0 0 -1 0 0 2' | "$est" --device 'NVIDIA H200')
echo "$r" | awk 'NF != 9 || /ERR/ || $2 != 128 || $3 != 192 { bad = 1 } NR == 1 { a = $1 } NR == 2 && $1 <= a { bad = 1 }
  END { exit (bad || NR != 2) }' ||
  { echo "check_queries: R did not price 128x192 higher at 10 row blocks than at 6" >&2; exit 1; }
printf 'R 0 1 4096 1024 0 4096 7168 128 192 0 0 -1 0 0 2\n' | "$est" | grep -q '^ERR' ||
  { echo "check_queries: an R query of 0 row blocks must be refused" >&2; exit 1; }
# --device: the calibration of a GPU by name answers the same query form; a missing name is a usage error.
printf 'H 1 4096 7168 2048\n' | "$est" --device 'NVIDIA H200' | awk 'NF != 9 || /ERR/ { exit 1 }' ||
  { echo "check_queries: --device 'NVIDIA H200' did not answer a heuristic query" >&2; exit 1; }
if "$est" --device < /dev/null > /dev/null 2>&1; then
  echo "check_queries: --device without a name must be refused" >&2; exit 1
fi
# A: a masked BF16 query of one group on the H200 names its count-adaptive tiles (128x256 at 7-8 row
# blocks, 128x160 at 10: docs/m_grouped_gemm.md#count-adaptive-tiles); FP8 keeps one tile.
a=$(printf '%s\n' 'A 0 1 4096 1228 4096 7168' 'A 1 1 4096 1228 4096 7168' | "$est" --device 'NVIDIA H200')
echo "$a" | cut -c1-160
echo "$a" | awk 'NR == 1 { ok = $3 == 192 && $10 == "alt" && $11 == 256 && $13 ~ /(^|,)7-8(,|$)/ &&
  $14 == "alt" && $15 == 160 && $17 ~ /(^|,)10(,|$)/ } NR == 2 { ok = ok && NF == 9 } END { exit !(ok && NR == 2) }' ||
  { echo "check_queries: A did not name 128x256 at 7-8 and 128x160 at 10 row blocks (BF16), or gave FP8 a tile" >&2; exit 1; }
printf 'A 0 1 4096 1228 4096\n' | "$est" | grep -q '^ERR' ||
  { echo "check_queries: a short A query must be refused" >&2; exit 1; }
