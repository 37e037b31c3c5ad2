// Group sizes of the M-grouped suites (MoE experts), drawn as DeepGEMM's tests and
// bench/peer_bench.py draw them, and the row ranges the checks read. Header-only and free of CUDA
// so that tests/unit can check it without a GPU.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace dgb {

// The rows of A and D of an M-grouped problem, both laid out as one [total_rows, *] matrix: group g
// owns rows [start[g], start[g] + rows[g]); the rows after them up to the next group's start
// (contiguous: the padding to the alignment; masked: max_m - rows[g]) are not part of the problem.
struct GroupPlan {
  bool masked = false;
  std::vector<int64_t> rows;   // valid rows per group (masked: masked_m)
  std::vector<int64_t> start;  // first row of each group
  int64_t total_rows = 0;      // contiguous: M (a multiple of the alignment); masked: G * max_m
  int64_t max_m = 0;           // masked: rows per group in A and D
  int64_t expected_m = 0;      // the hint passed to the call (contiguous: 0, i.e. M / G)

  int64_t groups() const { return static_cast<int64_t>(rows.size()); }
  int64_t valid_rows() const {
    int64_t s = 0;
    for (int64_t r : rows) s += r;
    return s;
  }
  int64_t used_groups() const {
    int64_t s = 0;
    for (int64_t r : rows) s += r > 0;
    return s;
  }
  // Rows from the end of group g's valid rows to the start of the next group (or the end).
  int64_t rest_rows(int64_t g) const {
    const int64_t end = g + 1 < groups() ? start[g + 1] : total_rows;
    return end - start[g] - rows[g];
  }
};

// Uniform in [0.7, 1.3) from 53 random bits (independent of the standard library's distributions).
inline double group_size_factor(std::mt19937_64& rng) { return 0.7 + 0.6 * static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Contiguous layout: group g gets int(expected * U[0.7, 1.3)) rows, one random group none when
// G > 1; each group starts at a multiple of `alignment` (dg_get_mk_alignment_for_contiguous_layout())
// and its rows are padded up to one.
inline GroupPlan contiguous_plan(int64_t groups, int64_t expected, int64_t alignment, uint64_t seed) {
  std::mt19937_64 rng(seed);
  GroupPlan p;
  for (int64_t g = 0; g < groups; ++g) p.rows.push_back(static_cast<int64_t>(expected * group_size_factor(rng)));
  if (groups > 1) p.rows[rng() % groups] = 0;
  for (int64_t r : p.rows) {
    p.start.push_back(p.total_rows);
    p.total_rows += (r + alignment - 1) / alignment * alignment;
  }
  return p;
}

// Masked layout: masked_m[g] = int(expected * U[0.7, 1.3)); max_m 4096, or the largest group
// rounded up to 64 (the masked calls need a multiple of 64) when one is larger; the hint is
// int(1.2 * expected) (at least 1), as bench/peer_bench.py passes it.
inline GroupPlan masked_plan(int64_t groups, int64_t expected, uint64_t seed) {
  std::mt19937_64 rng(seed);
  GroupPlan p;
  p.masked = true;
  for (int64_t g = 0; g < groups; ++g) p.rows.push_back(static_cast<int64_t>(expected * group_size_factor(rng)));
  p.max_m = 4096;
  for (int64_t r : p.rows) p.max_m = std::max(p.max_m, (r + 63) / 64 * 64);
  for (int64_t g = 0; g < groups; ++g) p.start.push_back(g * p.max_m);
  p.total_rows = groups * p.max_m;
  p.expected_m = std::max<int64_t>(1, static_cast<int64_t>(1.2 * static_cast<double>(expected)));
  return p;
}

// The contiguous call's m_indices: each row's group, -1 for a padding row.
inline std::vector<int32_t> contiguous_indices(const GroupPlan& p) {
  std::vector<int32_t> idx(p.total_rows, -1);
  for (int64_t g = 0; g < p.groups(); ++g)
    std::fill(idx.begin() + p.start[g], idx.begin() + p.start[g] + p.rows[g], static_cast<int32_t>(g));
  return idx;
}

// Row of the compact reference ([valid_rows, N]) where group g's rows begin.
inline std::vector<int64_t> reference_offsets(const GroupPlan& p) {
  std::vector<int64_t> off;
  int64_t at = 0;
  for (int64_t r : p.rows) {
    off.push_back(at);
    at += r;
  }
  return off;
}

}  // namespace dgb
