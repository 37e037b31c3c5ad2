// Packing of K-grouped FP32 scales into UE8M0 (templates/kernels/layout.cu.j2, op
// "k_grouped_pack_ue8m0"). The input holds one row of MN scales per 128-wide K block, the groups'
// blocks concatenated: group g owns rows [sf_row[g], sf_row[g + 1]). The output holds, per group,
// ceil(rows / 4) rows of MN words, the groups concatenated in the same order: word (j, i) of group
// g packs the exponents of its scale rows 4j .. 4j + 3 at column i, the first in the low byte, and
// rows past the group's end give 0 (each group is padded on its own). Columns mn .. out_ld - 1 (the
// TMA row padding) are written as 0.
//
// One launch covers up to kMaxGroups groups. Each warp packs one output row (so a warp's group is
// uniform), its lanes walking the columns kVec at a time. The functions are __host__ __device__ so
// that the unit tests run the kernel's mapping on the host (tests/unit/test_k_grouped_sf.cpp).
#pragma once
#include <dg/types.cuh>

namespace dg::k_grouped_sf {

constexpr int kMaxGroups = 128;  // groups per launch: the prefix tables below stay near 1 KiB
constexpr int kThreadsX = 64;    // threads along MN per block
constexpr int kRowsPerBlock = 4; // output rows per block (blockDim.y; two warps per row)
constexpr int kMaxBlocksY = 65535;

// The kernel argument (host mirror: dg::ops::KGroupedPackParams in src/ops/layout.h).
struct Params {
  const float* sf;      // the launch's first scale row
  uint32_t* out;        // the launch's first output row
  int64_t sf_ld;        // elements between scale rows (K blocks)
  int64_t sf_mn_stride; // elements between neighbouring MN columns of the scales
  int64_t out_ld;       // words between output rows (align(mn, 4))
  int32_t mn;
  int32_t num_groups;                  // groups of this launch, 1 .. kMaxGroups
  int32_t sf_row[kMaxGroups + 1];      // group g's scale rows: [sf_row[g], sf_row[g + 1])
  int32_t packed_row[kMaxGroups + 1];  // group g's output rows: [packed_row[g], packed_row[g + 1])
};

// The group that owns output row `row` (< packed_row[num_groups]): the last g whose first output
// row is at or before it (groups with no rows are skipped over).
DG_HOST_DEVICE int group_of(const Params& p, int32_t row) {
  int lo = 0, hi = p.num_groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (p.packed_row[mid] <= row) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

// The UE8M0 code of a scale: its exponent field (sign and mantissa must be 0 for the value to
// round-trip; they are dropped).
DG_HOST_DEVICE uint32_t ue8m0_of(uint32_t bits) { return (bits >> 23) & 0xffu; }

// Words (row, col .. col + kVec - 1). kVec 4 needs stride 1 along MN, mn % 4 == 0, sf_ld % 4 == 0
// and 16-byte aligned sf and out (the host checks): then every access is 16 bytes wide.
template <int kVec>
DG_HOST_DEVICE void pack_words(const Params& p, int32_t row, int64_t col) {
  const int g = group_of(p, row);
  const int32_t first = p.sf_row[g] + 4 * (row - p.packed_row[g]);
  const int32_t rows = p.sf_row[g + 1] - first;  // scale rows left in the group from `first`
  uint32_t words[kVec] = {};
  if constexpr (kVec == 4) {
    struct alignas(16) F4 { float v[4]; };
    for (int t = 0; t < 4 && t < rows; ++t) {
      const F4 in = *reinterpret_cast<const F4*>(p.sf + (first + t) * p.sf_ld + col);
      for (int c = 0; c < 4; ++c) words[c] |= ue8m0_of(__float_as_uint(in.v[c])) << (8 * t);
    }
    uint32_t* dst = p.out + row * p.out_ld + col;
#if defined(__CUDA_ARCH__)
    // One 16-byte store (a plain struct store is split into four).
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(words[0]), "r"(words[1]), "r"(words[2]),
                 "r"(words[3]) : "memory");
#else
    for (int c = 0; c < 4; ++c) dst[c] = words[c];
#endif
  } else {
    if (col < p.mn)
      for (int t = 0; t < 4 && t < rows; ++t)
        words[0] |= ue8m0_of(__float_as_uint(p.sf[(first + t) * p.sf_ld + col * p.sf_mn_stride])) << (8 * t);
    p.out[row * p.out_ld + col] = words[0];
  }
}

}  // namespace dg::k_grouped_sf
