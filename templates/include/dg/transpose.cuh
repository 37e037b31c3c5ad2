// Byte transpose of a matrix through shared memory (templates/kernels/transpose.cu.j2):
//   dst[c * ld_dst + r] = src[r * ld_src + c]   for r < rows, c < cols,
// any strides and alignments; nothing outside the destination matrix is written (its row padding
// included). Each block walks tiles of kTile x kTile bytes in two phases separated by a barrier:
// load_tile (every thread) puts source rows into shared memory, store_tile (every thread) writes
// destination rows. The phases are __host__ __device__ so that the unit tests run the kernel's
// index mapping on the host (tests/unit/test_transpose.cpp), thread by thread.
//
// Global accesses are 16 bytes wide where the address allows it, with byte accesses for tails and
// misaligned rows. Shared memory holds a tile as words (4 source columns of one source row) stored
// column-major: a thread then reads the 16 words of 16 source rows with four 16-byte loads and
// transposes them in registers (PRMT) into 16 bytes of each of 4 destination rows.
#pragma once
#include <dg/types.cuh>

namespace dg::transpose {

constexpr int kTile = 128;                                         // source rows and columns per tile
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;                                    // the grid: at most this many blocks per SM
constexpr int kVec = 16;                                           // bytes per vector access
constexpr int kWordCols = kTile / 4;                               // 4-byte source column groups per tile
constexpr int kLoadsPerThread = kTile * kTile / kVec / kThreads;   // 16-byte source chunks per thread
// Words per word column in shared memory: the 4 words of padding keep each column 16-byte aligned
// and start consecutive columns 4 banks (one 16-byte bank group) apart, which leaves both phases
// free of bank conflicts (load_chunk, store_piece).
constexpr int kSmemColWords = kTile + 4;
static_assert(kWordCols * (kTile / kVec) == kThreads, "store_tile: one piece of 4 x 16 bytes per thread");
static_assert(kLoadsPerThread * kThreads * kVec == kTile * kTile, "load_tile: the chunks cover the tile");

// The kernel argument (host mirror: dg::ops::TransposeParams in src/ops/transpose.h).
struct Params {
  const uint8_t* src;
  int64_t ld_src;  // bytes between source rows
  uint8_t* dst;
  int64_t ld_dst;  // bytes between destination rows
  int64_t rows;    // source rows = destination columns
  int64_t cols;    // source columns = destination rows
};

// Word w of source row r of the tile (source columns 4w..4w+3, lowest in the low byte) at words[w][r].
struct alignas(16) Smem {
  uint32_t words[kWordCols][kSmemColWords];
};

struct Tile {
  int64_t row0, col0;  // source coordinates of the tile's first byte
};

DG_HOST_DEVICE int64_t num_tiles(const Params& p) {
  return ceil_div<int64_t>(p.rows, kTile) * ceil_div<int64_t>(p.cols, kTile);
}

// Tiles in source row-major order: consecutive blocks read neighbouring columns of the same rows.
DG_HOST_DEVICE Tile tile_at(const Params& p, int64_t t) {
  const int64_t tiles_per_row = ceil_div<int64_t>(p.cols, kTile);
  return Tile{t / tiles_per_row * kTile, t % tiles_per_row * kTile};
}

// Source chunk `i` of thread `tid`: 16 bytes of one row of the tile, at (row, col). A warp's 32
// chunks are 2 per row over 16 rows: its shared-memory stores of one word each (word column
// 4 * (col / 16) + q, row `row`) then land in 32 distinct banks, as (16 * (col / 16) + row) % 32 differ.
struct Chunk {
  int row, col;
};
DG_HOST_DEVICE Chunk load_chunk(int tid, int i) {
  const int q = i * kThreads + tid;
  const int lane = q & 31, group = q >> 5;
  return Chunk{(group >> 2) * 16 + (lane >> 1), ((group & 3) * 2 + (lane & 1)) * kVec};
}

// The piece thread `tid` writes: destination rows 4 * word .. 4 * word + 3 of the tile, 16 bytes each
// (source rows row .. row + 15). The 8 lanes of a quarter-warp take consecutive words at the same row,
// so their 16-byte shared loads hit 8 distinct bank groups; a warp writes 64 contiguous bytes of each
// of 8 destination rows per store.
struct Piece {
  int word, row;
};
DG_HOST_DEVICE Piece store_piece(int tid) {
  const int lane = tid & 31, warp = tid >> 5;
  return Piece{(warp & 3) * 8 + (lane & 7), ((warp >> 2) * 4 + (lane >> 3)) * kVec};
}

// prmt.b32 with selectors < 8: byte i of the result is byte (sel >> 4i) & 7 of {b, a}.
DG_HOST_DEVICE uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t ba = static_cast<uint64_t>(b) << 32 | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) d |= static_cast<uint32_t>(ba >> (8 * ((sel >> (4 * i)) & 7)) & 0xffu) << (8 * i);
  return d;
#endif
}

// 4 x 4 byte transpose: byte j of out[i] = byte i of in[j].
DG_HOST_DEVICE void transpose_4x4(const uint32_t* in, uint32_t* out) {
  const uint32_t lo01 = byte_perm(in[0], in[1], 0x5140), hi01 = byte_perm(in[0], in[1], 0x7362);
  const uint32_t lo23 = byte_perm(in[2], in[3], 0x5140), hi23 = byte_perm(in[2], in[3], 0x7362);
  out[0] = byte_perm(lo01, lo23, 0x5410);
  out[1] = byte_perm(lo01, lo23, 0x7632);
  out[2] = byte_perm(hi01, hi23, 0x5410);
  out[3] = byte_perm(hi01, hi23, 0x7632);
}

// 16-byte accesses at a 16-byte aligned address (global or shared). The host build (tests) moves
// the bytes one at a time instead of type-punning.
struct alignas(16) Vec16 {
  uint32_t w[4];
};
DG_HOST_DEVICE void load16(const void* p, uint32_t* v) {
#if defined(__CUDA_ARCH__)
  const Vec16 x = *static_cast<const Vec16*>(p);
  for (int i = 0; i < 4; ++i) v[i] = x.w[i];
#else
  const uint8_t* b = static_cast<const uint8_t*>(p);
  for (int i = 0; i < 4; ++i)
    v[i] = b[4 * i] | b[4 * i + 1] << 8 | b[4 * i + 2] << 16 | static_cast<uint32_t>(b[4 * i + 3]) << 24;
#endif
}
DG_HOST_DEVICE void store16(void* p, const uint32_t* v) {
#if defined(__CUDA_ARCH__)
  *static_cast<Vec16*>(p) = Vec16{{v[0], v[1], v[2], v[3]}};
#else
  uint8_t* b = static_cast<uint8_t*>(p);
  for (int i = 0; i < kVec; ++i) b[i] = static_cast<uint8_t>(v[i / 4] >> (8 * (i % 4)));
#endif
}
DG_HOST_DEVICE bool aligned16(const void* p) { return (reinterpret_cast<uint64_t>(p) & 15) == 0; }

// 16 source bytes of row r from column c into v (little-endian words); bytes outside the matrix are 0.
DG_HOST_DEVICE void load_source(const Params& p, int64_t r, int64_t c, uint32_t* v) {
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = 0;
  if (r >= p.rows || c >= p.cols) return;
  const uint8_t* g = p.src + r * p.ld_src + c;
  if (c + kVec <= p.cols && aligned16(g)) {
    load16(g, v);
    return;
  }
#pragma unroll
  for (int b = 0; b < kVec; ++b)
    if (c + b < p.cols) v[b / 4] |= static_cast<uint32_t>(g[b]) << (8 * (b % 4));
}

// Phase 1: thread `tid` copies its chunks of tile `t` into shared memory (all loads first, so that
// they are in flight together).
DG_HOST_DEVICE void load_tile(const Params& p, const Tile& t, int tid, Smem& s) {
  uint32_t v[kLoadsPerThread][4];
#pragma unroll
  for (int i = 0; i < kLoadsPerThread; ++i) {
    const Chunk c = load_chunk(tid, i);
    load_source(p, t.row0 + c.row, t.col0 + c.col, v[i]);
  }
#pragma unroll
  for (int i = 0; i < kLoadsPerThread; ++i) {
    const Chunk c = load_chunk(tid, i);
#pragma unroll
    for (int q = 0; q < 4; ++q) s.words[c.col / 4 + q][c.row] = v[i][q];
  }
}

// Phase 2, after a barrier: thread `tid` writes its piece of tile `t`.
DG_HOST_DEVICE void store_tile(const Params& p, const Tile& t, int tid, const Smem& s) {
  const Piece pc = store_piece(tid);
  const int64_t r = t.row0 + pc.row;  // first source row = first destination column
  if (r >= p.rows) return;
  uint32_t in[16], out[4][4];  // out[q]: 16 bytes of destination row 4 * word + q
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    load16(&s.words[pc.word][pc.row + 4 * j], &in[4 * j]);
    uint32_t col[4];
    transpose_4x4(&in[4 * j], col);
#pragma unroll
    for (int q = 0; q < 4; ++q) out[q][j] = col[q];
  }
  const bool full = r + kVec <= p.rows;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int64_t d = t.col0 + 4 * pc.word + q;  // destination row
    if (d >= p.cols) return;
    uint8_t* g = p.dst + d * p.ld_dst + r;
    if (full && aligned16(g)) {
      store16(g, out[q]);
    } else {
#pragma unroll
      for (int b = 0; b < kVec; ++b)
        if (r + b < p.rows) g[b] = static_cast<uint8_t>(out[q][b / 4] >> (8 * (b % 4)));
    }
  }
}

}  // namespace dg::transpose
