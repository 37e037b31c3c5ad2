// SM90 GEMM epilogue: one consumer warp-group writes its WG_M x BLOCK_N accumulator block (WGMMA
// fragment layout) into swizzled shared memory (stmatrix for BF16, 8-byte stores for FP32, 2-byte
// stores of E4M3 pairs for an FP8 D, whose values sm90_fused.cuh has already scaled) and sends
// it to global memory with TMA, as plain stores or as reduce-add (accumulation into D). The block is
// cut into column strips of kStrip elements, one TMA box each; the strip width in bytes is the swizzle
// width (128/64/32 B) or 16 B without swizzle.
//
// Staging: with kBufs == 0 every strip has its own buffer (the whole block is staged, one barrier).
// With kBufs > 0 the strips rotate through kBufs buffers: strip s waits until the store of strip
// s - kBufs has read its buffer. That costs a barrier per strip but frees shared memory for another
// pipeline stage on wide tiles (128x256: 64 KB of staging becomes 16 KB with two buffers).
#pragma once
#include <dg/ptx/common.cuh>
#include <dg/ptx/stmatrix.cuh>
#include <dg/ptx/tma.cuh>
#include <dg/quant.cuh>

namespace dg::epilogue {

// Byte offset -> swizzled byte offset for a buffer whose base is 1024-byte aligned.
template <uint32_t kSwizzleBytes> DG_DEVICE constexpr uint32_t swizzle(uint32_t off) {
  return kSwizzleBytes >= 32 ? (off ^ (((off >> 7) & (kSwizzleBytes / 16 - 1)) << 4)) : off;
}

template <typename OutT> struct OutTraits;
template <> struct OutTraits<bf16> { static constexpr uint32_t kBytes = 2; };
template <> struct OutTraits<float> { static constexpr uint32_t kBytes = 4; };
template <> struct OutTraits<fp8_e4m3> { static constexpr uint32_t kBytes = 1; };

// Largest strip width (elements) with strip bytes in {128, 64, 32, 16} dividing block_n and
// `divisor` (0: no constraint beyond block_n). The widths are powers of two, so one divides both
// numbers exactly when it divides their bitwise or.
template <typename OutT> DG_HOST_DEVICE constexpr uint32_t strip_elems(uint32_t block_n, uint32_t divisor = 0) {
  constexpr uint32_t b = OutTraits<OutT>::kBytes;
  return (block_n | divisor) % (128 / b) == 0 ? 128 / b
         : (block_n | divisor) % (64 / b) == 0 ? 64 / b
         : (block_n | divisor) % (32 / b) == 0 ? 32 / b
                                               : 16 / b;
}

// The output scale of a kernel that folded alpha into its FP8 scales (sm90_gemm.cuh, kAlphaInSfb):
// x * UnitScale{} is x, so the epilogue spends no multiply per element. Otherwise the scale is alpha.
struct UnitScale {};
DG_DEVICE constexpr float operator*(float x, UnitScale) { return x; }

DG_HOST_DEVICE constexpr uint32_t gcd_of(uint32_t a, uint32_t b) { return b == 0 ? a : gcd_of(b, a % b); }

// Where the store puts the tile's columns in D. IdentityColumns: GEMM column n is D's column n.
struct IdentityColumns {
  static constexpr bool kDirect = false;
  static constexpr uint32_t kStripDivisor = 0;
  DG_DEVICE static int32_t map(int32_t col) { return col; }
};

// skip_head_mid (docs/skip_head_mid.md): the GEMM's columns are heads of kLeft + kRight, D's heads
// are kLeft + kMid + kRight wide, and GEMM column n = h (kLeft + kRight) + o goes to D's column
// h (kLeft + kMid + kRight) + (o < kLeft ? o : o + kMid): the kMid middle columns of each head are
// never written. Each strip is one TMA box at the mapped column, so a strip must not straddle a
// left / right boundary: its width divides kLeft and kRight (strips start at multiples of their
// width, which then divides every boundary). A TMA box must also start on a 16-byte boundary of D
// (else the store faults with an illegal instruction), so kMid must span whole 16 bytes. Where no
// strip of 32 bytes or more divides kLeft and kRight (the narrowest the store writes) or kMid is not
// 16-byte aligned, kDirect: the tile goes to D from registers (direct_store), element by element.
template <typename OutT, uint32_t kLeft, uint32_t kMid, uint32_t kRight>
struct HeadColumns {
  static constexpr uint32_t kHead = kLeft + kRight;
  static constexpr uint32_t kMinStrip = 32 / sizeof(OutT);
  static constexpr bool kDirect = gcd_of(kLeft, kRight) % kMinStrip != 0 || kMid * sizeof(OutT) % 16 != 0;
  static constexpr uint32_t kStripDivisor = kDirect ? 0 : gcd_of(kLeft, kRight);
  DG_DEVICE static int32_t map(int32_t col) {
    const uint32_t c = static_cast<uint32_t>(col), h = c / kHead, o = c - h * kHead;
    const uint64_t out = uint64_t(h) * (kLeft + kMid + kRight) + (o < kLeft ? o : o + kMid);
    // Columns past N (a CTA pair's spare tile) land past D's last column: the box is clipped whole.
    return out > 0x7fffffffu ? 0x7fffffff : static_cast<int32_t>(out);
  }
};

// The store of HeadColumns::kDirect: every thread writes its fragment's elements (acc[i][.], the
// WGMMA m64nN layout) to their mapped D columns with plain stores, rows below `rows` and GEMM
// columns below `cols` only. No shared memory, no TMA: slower, for heads whose parts are narrower
// than a 32-byte strip.
template <typename OutT, uint32_t kWgM, uint32_t kBlockN, class Columns, typename AccArray, typename Scale>
DG_DEVICE void direct_store(const AccArray& acc, Scale alpha, void* d, int64_t ldd, uint32_t rows, uint32_t cols,
                            uint32_t row0, uint32_t col0) {
  const uint32_t tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
#pragma unroll
  for (uint32_t i = 0; i < kWgM / 64; ++i)
#pragma unroll
    for (uint32_t hi = 0; hi < 2; ++hi) {  // the fragment's rows r and r + 8
      const uint32_t row = row0 + i * 64 + warp * 16 + lane / 4 + hi * 8;
      if (row >= rows) continue;
      OutT* out = static_cast<OutT*>(d) + static_cast<int64_t>(row) * ldd;
#pragma unroll
      for (uint32_t g = 0; g < kBlockN / 8; ++g)
#pragma unroll
        for (uint32_t e = 0; e < 2; ++e) {
          const uint32_t col = col0 + g * 8 + (lane % 4) * 2 + e;
          if (col >= cols) continue;
          const float v = acc[i][g * 4 + hi * 2 + e] * alpha;
          if constexpr (sizeof(OutT) == 4) out[Columns::map(static_cast<int32_t>(col))] = v;
          else out[Columns::map(static_cast<int32_t>(col))] = float_to_bf16(v);
        }
    }
}

// Before a warp-group stages a tile: its previous tile's TMA stores (one per strip, each issued by
// thread `strip` of the warp-group) must have read the staging buffers.
template <uint32_t kStrips> DG_DEVICE void await_staging(uint32_t bar_id) {
  if (threadIdx.x % 128 < kStrips) ptx::tma_store_wait_read<0>();
  ptx::named_barrier_sync(bar_id, 128);
}

// k3D: D's map is 3-D (columns, rows, group) and every box also takes the group coordinate.
// Columns: where each strip's first column goes in D (IdentityColumns or HeadColumns).
template <typename OutT, uint32_t kWgM, uint32_t kBlockN, bool kReduceAdd, uint32_t kBufs_ = 0, bool k3D = false,
          class Columns = IdentityColumns>
struct WarpgroupStore {
  static constexpr uint32_t kBytes = OutTraits<OutT>::kBytes;
  static constexpr uint32_t kStrip = strip_elems<OutT>(kBlockN, Columns::kStripDivisor);
  static constexpr uint32_t kStripBytes = kStrip * kBytes;
  static constexpr uint32_t kSwizzle = kStripBytes >= 32 ? kStripBytes : 0;
  static constexpr uint32_t kNumStrips = kBlockN / kStrip;
  static constexpr bool kRotate = kBufs_ != 0 && kBufs_ < kNumStrips;
  static constexpr uint32_t kBufs = kRotate ? kBufs_ : kNumStrips;
  static constexpr uint32_t kBufBytes = kWgM * kStripBytes;
  // kWgM 32: a 32-row tile's (sm90_gemm.cuh, kHalfM), whose fragment rows 32-63 (warps 2-3) are not stored.
  static constexpr uint32_t kMIters = kWgM == 32 ? 1 : kWgM / 64;
  static constexpr uint32_t kSmemBytes = kBufs * kBufBytes;
  static_assert(kBlockN % 8 == 0 && (kWgM % 64 == 0 || kWgM == 32), "");
  static_assert(kBufBytes % 1024 == 0, "buffers stay 1024-byte aligned for the swizzle");
  static_assert(!(sizeof(OutT) == 2) || kBlockN % 16 == 0, "BF16 output needs BLOCK_N % 16 == 0 (stmatrix x4)");
  static_assert(kStrip % (kBytes == 2 ? 16 : 8) == 0, "a strip holds whole stmatrix x4 / 8-column fragment groups");

  // Writes strip `s` of acc (scaled by alpha) into the buffer at byte address `buf`.
  template <uint32_t s, typename AccArray, typename Scale>
  DG_DEVICE static void write_strip(const AccArray& acc, Scale alpha, uint32_t buf) {
    const uint32_t tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
    if (kWgM == 32 && warp >= 2) return;  // rows 32-63: past a 32-row tile
#pragma unroll
    for (uint32_t i = 0; i < kMIters; ++i) {
      if constexpr (kBytes == 2) {
        const uint32_t row = i * 64 + warp * 16 + (lane % 8) + ((lane / 8) & 1) * 8;
#pragma unroll
        for (uint32_t j = s * kStrip / 16; j < (s + 1) * kStrip / 16; ++j) {
          const uint32_t col = j * 16 + (lane / 16) * 8 - s * kStrip;
          const uint32_t off = row * kStripBytes + col * 2;
          const float* a = &acc[i][j * 8];
          ptx::stmatrix_x4(buf + swizzle<kSwizzle>(off), float2_to_bf16x2(a[0] * alpha, a[1] * alpha).bits,
                           float2_to_bf16x2(a[2] * alpha, a[3] * alpha).bits,
                           float2_to_bf16x2(a[4] * alpha, a[5] * alpha).bits,
                           float2_to_bf16x2(a[6] * alpha, a[7] * alpha).bits);
        }
      } else if constexpr (kBytes == 1) {
        // FP8: acc holds the values times their inverse scales (alpha is already applied). A strip
        // row is at most 128 bytes, so the swizzle's XOR term is the same for all of a row's columns
        // and for rows r and r + 8: per two 8-column groups one address serves four 2-byte stores.
        const uint32_t row = i * 64 + warp * 16 + lane / 4;
        const uint32_t xor_term = swizzle<kSwizzle>(row * kStripBytes) - row * kStripBytes;
        const uint32_t base = buf + row * kStripBytes + (lane % 4) * 2;
#pragma unroll
        for (uint32_t g = s * kStrip / 8; g < (s + 1) * kStrip / 8; g += 2) {
          const uint32_t pair = (g - s * kStrip / 8) * 8;  // byte column of groups g, g + 1
          const uint32_t addr = base + (pair ^ xor_term);
#pragma unroll
          for (uint32_t e = 0; e < 2; ++e) {  // FP8 strips are 16 to 128 columns: whole pairs
            const float* a = &acc[i][(g + e) * 4];
            ptx::st_shared_u16(addr + e * 8, quant::e4m3x2(a[0], a[1]));
            ptx::st_shared_u16(addr + e * 8 + 8 * kStripBytes, quant::e4m3x2(a[2], a[3]));
          }
        }
      } else {
        const uint32_t row = i * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (uint32_t g = s * kStrip / 8; g < (s + 1) * kStrip / 8; ++g) {
          const uint32_t col = g * 8 + (lane % 4) * 2 - s * kStrip;
          const uint32_t off = row * kStripBytes + col * 4;
          ptx::st_shared_v2(buf + swizzle<kSwizzle>(off), acc[i][g * 4 + 0] * alpha, acc[i][g * 4 + 1] * alpha);
          ptx::st_shared_v2(buf + swizzle<kSwizzle>(off + 8 * kStripBytes), acc[i][g * 4 + 2] * alpha,
                            acc[i][g * 4 + 3] * alpha);
        }
      }
    }
  }

  DG_DEVICE static void store(const TmaDescriptor* desc, const uint8_t* src, int32_t gemm_col, int32_t row, int32_t z) {
    const int32_t col = Columns::map(gemm_col);
    if constexpr (k3D) {
      if constexpr (kReduceAdd) ptx::tma_reduce_add_3d(desc, src, col, row, z);
      else ptx::tma_store_3d(desc, src, col, row, z);
    } else {
      if constexpr (kReduceAdd) ptx::tma_reduce_add_2d(desc, src, col, row);
      else ptx::tma_store_2d(desc, src, col, row);
    }
    ptx::tma_store_commit();
  }

  template <uint32_t s = 0, typename AccArray, typename Scale>
  DG_DEVICE static void rotate(const AccArray& acc, Scale alpha, uint8_t* smem, const TmaDescriptor* desc,
                               int32_t col0, int32_t row0, uint32_t bar_id, int32_t z) {
    if constexpr (s < kNumStrips) {
      const uint32_t tid = threadIdx.x % 128;
      uint8_t* buf = smem + (s % kBufs) * kBufBytes;
      if constexpr (s >= kBufs) {
        // Thread 0 issued every store of this tile: it waits until strip s - kBufs's has read.
        if (tid == 0) ptx::tma_store_wait_read<kBufs - 1>();
        ptx::named_barrier_sync(bar_id, 128);
      }
      write_strip<s>(acc, alpha, ptx::smem_addr(buf));
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(bar_id, 128);
      if (tid == 0) store(desc, buf, col0 + static_cast<int32_t>(s * kStrip), row0, z);
      rotate<s + 1>(acc, alpha, smem, desc, col0, row0, bar_id, z);
    }
  }

  template <uint32_t s = 0, typename AccArray, typename Scale>
  DG_DEVICE static void write_all(const AccArray& acc, Scale alpha, uint8_t* smem) {
    if constexpr (s < kNumStrips) {
      write_strip<s>(acc, alpha, ptx::smem_addr(smem + s * kBufBytes));
      write_all<s + 1>(acc, alpha, smem);
    }
  }

  // acc[i][.] is the WGMMA m64nN fragment of rows i*64.. of this warp-group's block.
  // smem: this warp-group's 1024-byte aligned staging buffers. bar_id: named barrier of the warp-group.
  // z: the group coordinate of a 3-D D (k3D), else unused.
  // alpha: a float, or UnitScale where the kernel applied it before.
  template <typename AccArray, typename Scale>
  DG_DEVICE static void run(const AccArray& acc, Scale alpha, uint8_t* smem, const TmaDescriptor* desc, int32_t col0,
                            int32_t row0, uint32_t bar_id, int32_t z = 0) {
    const uint32_t tid = threadIdx.x % 128;
    await_staging<kNumStrips>(bar_id);
    if constexpr (kRotate) {
      rotate(acc, alpha, smem, desc, col0, row0, bar_id, z);
    } else {
      write_all(acc, alpha, smem);
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(bar_id, 128);
      // One thread per strip issues its box (spread over the warp-group's lanes).
      if (tid < kNumStrips) store(desc, smem + tid * kBufBytes, col0 + static_cast<int32_t>(tid * kStrip), row0, z);
    }
  }

  // Before the kernel exits: the stores must have read shared memory. Their writes need not have
  // landed (the grid's completion covers them, and no GEMM triggers its dependents early): waiting
  // for them kept each CTA a global-write round trip longer.
  DG_DEVICE static void drain() {
    if (threadIdx.x % 128 < kNumStrips) ptx::tma_store_wait_read<0>();
  }
};

// The store of a GEMM run with its operands swapped (sm90_gemm.cuh, kTransposeD): the tile's rows are
// D's columns and its columns D's rows. Each warp-group's kWgM x kBlockN block goes to shared memory
// transposed (stmatrix .trans: per 8x8 fragment matrix, the 8 values of one tile column land as 16
// contiguous bytes), as strips of 64 tile rows, each a [kBlockN rows, 128 bytes] box of D with the
// 128-byte swizzle, and is sent with TMA into D's 3-D map (columns, rows, batch). BF16 D only.
// Same interface as WarpgroupStore: run's col0 is the tile's first column, row0 its first row.
template <uint32_t kWgM, uint32_t kBlockN>
struct TransposedStore {
  static constexpr uint32_t kStrip = 64;            // tile rows (D columns) per strip: 128 bytes
  static constexpr uint32_t kStripBytes = kStrip * 2;
  static constexpr uint32_t kNumStrips = kWgM / kStrip;
  static constexpr uint32_t kBufBytes = kBlockN * kStripBytes;
  static constexpr uint32_t kSmemBytes = kNumStrips * kBufBytes;
  static_assert(kWgM % 64 == 0 && kBlockN % 8 == 0, "64-row strips of 8-column fragment groups");
  static_assert(kBufBytes % 1024 == 0, "buffers stay 1024-byte aligned for the swizzle");

  // Fragment group g (tile columns 8g..8g+7) of rows h*8.. of this warp's 16: the stored matrix's
  // row j (lane % 8) is tile column 8g + j, at byte column (warp * 16 + h * 8) * 2 of its strip.
  DG_DEVICE static uint32_t address(uint32_t buf, uint32_t g, uint32_t h, uint32_t warp, uint32_t lane) {
    const uint32_t off = (g * 8 + lane % 8) * kStripBytes + (warp * 16 + h * 8) * 2;
    return buf + swizzle<128>(off);
  }

  template <typename AccArray, typename Scale>
  DG_DEVICE static void write_all(const AccArray& acc, Scale alpha, uint8_t* smem) {
    const uint32_t tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
    const uint32_t q = lane / 8;  // the x4 matrix this lane addresses: group g + q / 2, rows (q % 2) * 8..
#pragma unroll
    for (uint32_t i = 0; i < kNumStrips; ++i) {
      const uint32_t buf = ptx::smem_addr(smem + i * kBufBytes);
#pragma unroll
      for (uint32_t g = 0; g + 1 < kBlockN / 8; g += 2) {
        const float* a = &acc[i][g * 4];
        ptx::stmatrix_x4_trans(address(buf, g + q / 2, q % 2, warp, lane),
                               float2_to_bf16x2(a[0] * alpha, a[1] * alpha).bits,
                               float2_to_bf16x2(a[2] * alpha, a[3] * alpha).bits,
                               float2_to_bf16x2(a[4] * alpha, a[5] * alpha).bits,
                               float2_to_bf16x2(a[6] * alpha, a[7] * alpha).bits);
      }
      if constexpr ((kBlockN / 8) % 2 == 1) {
        constexpr uint32_t g = kBlockN / 8 - 1;
        const float* a = &acc[i][g * 4];
        ptx::stmatrix_x2_trans(address(buf, g, q % 2, warp, lane), float2_to_bf16x2(a[0] * alpha, a[1] * alpha).bits,
                               float2_to_bf16x2(a[2] * alpha, a[3] * alpha).bits);
      }
    }
  }

  template <typename AccArray, typename Scale>
  DG_DEVICE static void run(const AccArray& acc, Scale alpha, uint8_t* smem, const TmaDescriptor* desc, int32_t col0,
                            int32_t row0, uint32_t bar_id, int32_t z = 0) {
    const uint32_t tid = threadIdx.x % 128;
    await_staging<kNumStrips>(bar_id);
    write_all(acc, alpha, smem);
    ptx::fence_proxy_async_shared();
    ptx::named_barrier_sync(bar_id, 128);
    if (tid < kNumStrips) {
      ptx::tma_store_3d(desc, smem + tid * kBufBytes, row0 + static_cast<int32_t>(tid * kStrip), col0, z);
      ptx::tma_store_commit();
    }
  }

  DG_DEVICE static void drain() {
    if (threadIdx.x % 128 < kNumStrips) ptx::tma_store_wait_read<0>();
  }
};

}  // namespace dg::epilogue
