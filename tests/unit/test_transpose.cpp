// The byte transpose kernel (templates/kernels/transpose.cu.j2) run on the host: its phases come
// from the device header dg/transpose.cuh compiled here with a shim for the CUDA keywords, and the
// kernel's loop is emulated block by block, each phase thread by thread, with the barrier between
// phases. Every output byte must be the input's transposed byte and nothing else may be written,
// over odd shapes, padded and misaligned strides, and grids smaller than the tile count. Also the
// thread mappings' bank-conflict claims, and that the host mirrors match the header.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "ops/transpose.h"

// The CUDA keywords of the device headers, for the host compiler.
#define __host__
#define __device__
#define __forceinline__ inline
inline float __uint_as_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
#include "dg/transpose.cuh"
#undef __host__
#undef __device__
#undef __forceinline__

namespace {

namespace tr = dg::transpose;

constexpr uint8_t kPoison = 0xa5;

// A host buffer whose data() is 16-byte aligned plus `offset`, with guard bytes on both sides.
struct Buffer {
  std::vector<uint8_t> storage;
  size_t begin = 0, size = 0;
  Buffer(size_t bytes, size_t offset) : storage(bytes + 128, kPoison), size(bytes) {
    const auto base = reinterpret_cast<uintptr_t>(storage.data());
    begin = (64 - base % 16) % 16 + 48 + offset;
  }
  uint8_t* data() { return storage.data() + begin; }
};

// Runs the kernel's loop on the host: for each block, its tiles; per tile every thread's load
// phase, then (the barrier) every thread's store phase.
void emulate(const tr::Params& p, unsigned grid) {
  tr::Smem smem;
  std::memset(&smem, 0x5a, sizeof(smem));  // stale shared memory must not leak into the output
  const int64_t tiles = tr::num_tiles(p);
  for (unsigned block = 0; block < grid; ++block)
    for (int64_t t = block; t < tiles; t += grid) {
      const tr::Tile tile = tr::tile_at(p, t);
      for (int tid = 0; tid < tr::kThreads; ++tid) tr::load_tile(p, tile, tid, smem);
      for (int tid = 0; tid < tr::kThreads; ++tid) tr::store_tile(p, tile, tid, smem);
    }
}

void check_transpose(int64_t rows, int64_t cols, int64_t ld_src, int64_t ld_dst, size_t src_offset,
                     size_t dst_offset, int num_sms) {
  CAPTURE(rows);
  CAPTURE(cols);
  CAPTURE(ld_src);
  CAPTURE(ld_dst);
  CAPTURE(src_offset);
  CAPTURE(dst_offset);
  CAPTURE(num_sms);
  Buffer src((rows - 1) * ld_src + cols, src_offset), dst((cols - 1) * ld_dst + rows, dst_offset);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) src.data()[r * ld_src + c] = static_cast<uint8_t>((r * 131 + c * 7) % 251);
  const std::vector<uint8_t> src_before = src.storage;
  tr::Params p{src.data(), ld_src, dst.data(), ld_dst, rows, cols};
  const unsigned grid = dg::ops::transpose_grid(rows, cols, num_sms);
  REQUIRE(grid >= 1);
  CHECK(grid <= unsigned(num_sms * tr::kBlocksPerSm));
  emulate(p, grid);
  CHECK(src.storage == src_before);
  int64_t wrong = 0, stray = 0;
  for (size_t i = 0; i < dst.storage.size(); ++i) {
    const int64_t off = int64_t(i) - int64_t(dst.begin);
    const int64_t c = off >= 0 ? off / ld_dst : -1, r = off >= 0 ? off % ld_dst : -1;
    if (c >= 0 && c < cols && r < rows) {
      wrong += dst.storage[i] != src.data()[r * ld_src + c];
    } else {
      stray += dst.storage[i] != kPoison;  // guard bytes and row padding stay untouched
    }
  }
  CHECK(wrong == 0);
  CHECK(stray == 0);
}

}  // namespace

TEST_CASE("transpose: the host mirrors match dg/transpose.cuh") {
  CHECK(dg::ops::kTransposeTile == tr::kTile);
  CHECK(dg::ops::kTransposeThreads == tr::kThreads);
  CHECK(dg::ops::kTransposeBlocksPerSm == tr::kBlocksPerSm);
  CHECK(sizeof(dg::ops::TransposeParams) == sizeof(tr::Params));
  CHECK(offsetof(dg::ops::TransposeParams, ld_src) == offsetof(tr::Params, ld_src));
  CHECK(offsetof(dg::ops::TransposeParams, dst) == offsetof(tr::Params, dst));
  CHECK(offsetof(dg::ops::TransposeParams, ld_dst) == offsetof(tr::Params, ld_dst));
  CHECK(offsetof(dg::ops::TransposeParams, rows) == offsetof(tr::Params, rows));
  CHECK(offsetof(dg::ops::TransposeParams, cols) == offsetof(tr::Params, cols));
  CHECK(sizeof(tr::Smem) <= 48 * 1024);  // static shared memory
}

TEST_CASE("transpose: 4 x 4 byte transpose in registers") {
  const uint32_t in[4] = {0x03020100u, 0x13121110u, 0x23222120u, 0x33323130u};
  uint32_t out[4];
  tr::transpose_4x4(in, out);
  CHECK(out[0] == 0x30201000u);
  CHECK(out[1] == 0x31211101u);
  CHECK(out[2] == 0x32221202u);
  CHECK(out[3] == 0x33231303u);
  // prmt with a sign-free selector: bytes of {b, a}.
  CHECK(tr::byte_perm(0x33221100u, 0x77665544u, 0x7531) == 0x77553311u);
}

TEST_CASE("transpose: thread mappings cover the tile and avoid shared-memory bank conflicts") {
  // Loads: every 16-byte chunk of the tile once; per warp and per word of its chunks, 32 banks.
  std::set<std::pair<int, int>> chunks;
  for (int i = 0; i < tr::kLoadsPerThread; ++i)
    for (int warp = 0; warp < tr::kThreads / 32; ++warp)
      for (int q = 0; q < 4; ++q) {
        std::set<int> banks;
        for (int lane = 0; lane < 32; ++lane) {
          const tr::Chunk c = tr::load_chunk(warp * 32 + lane, i);
          REQUIRE((c.row >= 0 && c.row < tr::kTile && c.col >= 0 && c.col < tr::kTile && c.col % tr::kVec == 0));
          if (q == 0) chunks.insert({c.row, c.col});
          banks.insert(((c.col / 4 + q) * tr::kSmemColWords + c.row) % 32);
        }
        CHECK(banks.size() == 32);
      }
  CHECK(chunks.size() == size_t(tr::kTile * tr::kTile / tr::kVec));
  // Stores: every (word column, 16-row group) once; each quarter-warp's 16-byte shared loads hit 8
  // distinct 16-byte bank groups, at 16-byte aligned addresses.
  std::set<std::pair<int, int>> pieces;
  for (int tid = 0; tid < tr::kThreads; ++tid) {
    const tr::Piece pc = tr::store_piece(tid);
    REQUIRE((pc.word >= 0 && pc.word < tr::kWordCols && pc.row >= 0 && pc.row < tr::kTile && pc.row % 16 == 0));
    pieces.insert({pc.word, pc.row});
  }
  CHECK(pieces.size() == size_t(tr::kThreads));
  for (int quarter = 0; quarter < tr::kThreads / 8; ++quarter)
    for (int j = 0; j < 4; ++j) {
      std::set<int> groups;
      for (int lane = 0; lane < 8; ++lane) {
        const tr::Piece pc = tr::store_piece(quarter * 8 + lane);
        const int word = pc.word * tr::kSmemColWords + pc.row + 4 * j;
        CHECK(word % 4 == 0);
        groups.insert(word / 4 % 8);
      }
      CHECK(groups.size() == 8);
    }
}

TEST_CASE("transpose: emulated kernel over odd shapes, strides and alignments") {
  for (int64_t rows : {1, 15, 16, 17, 129, 1000})
    for (int64_t cols : {1, 15, 16, 17, 129, 1000}) {
      const int64_t rows16 = (rows + 15) / 16 * 16, cols16 = (cols + 15) / 16 * 16;
      // As the FP8 GEMMs call it: rows 16-byte multiples apart on both sides.
      check_transpose(rows, cols, cols16, rows16, 0, 0, 132);
      // Tight and padded rows, misaligned bases, and a grid of fewer blocks than tiles.
      check_transpose(rows, cols, cols, rows, 0, 0, 1);
      check_transpose(rows, cols, cols16 + 48, rows16 + 32, 0, 0, 1);
      check_transpose(rows, cols, cols + 3, rows + 5, 1, 3, 2);
      check_transpose(rows, cols, cols16, rows16, 8, 0, 132);
      check_transpose(rows, cols, cols16, rows16, 0, 4, 1);
    }
}

TEST_CASE("transpose: tile indices and the grid for sizes up to 2^31") {
  const int64_t big = (int64_t(1) << 31) - 1;
  tr::Params p{nullptr, big, nullptr, big, big, big};
  const int64_t per_side = (big + tr::kTile - 1) / tr::kTile;
  CHECK(tr::num_tiles(p) == per_side * per_side);
  const tr::Tile last = tr::tile_at(p, tr::num_tiles(p) - 1);
  CHECK(last.row0 == (per_side - 1) * tr::kTile);
  CHECK(last.col0 == (per_side - 1) * tr::kTile);
  CHECK(last.row0 < big);
  const tr::Tile second_row = tr::tile_at(p, per_side);
  CHECK((second_row.row0 == tr::kTile && second_row.col0 == 0));
  CHECK(dg::ops::transpose_grid(big, big, 132) == 132u * tr::kBlocksPerSm);
  CHECK(dg::ops::transpose_grid(7168, 1, 132) == 56u);
  CHECK(dg::ops::transpose_grid(1, 1, 132) == 1u);
  CHECK(dg::ops::transpose_grid(7168, 2048, 132) == 448u);  // 896 tiles: 2 per block, not 1 or 2 over 528
  CHECK(dg::ops::transpose_grid(7168, 2048, 1) == 4u);
}
