// Warp-level tensor-core MMA (mma.sync): D += A . B with FP32 accumulators, every operand in
// registers in the fragment layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16 / m16n8k32").
// For both shapes, with g = lane / 4 and q = lane % 4:
//   a[0]: row g,     K group q      a[1]: row g + 8, K group q
//   a[2]: row g,     K group q + 4  a[3]: row g + 8, K group q + 4
//   b[0]: column g,  K group q      b[1]: column g,  K group q + 4
//   d[0], d[1]: row g, columns 2q, 2q + 1     d[2], d[3]: row g + 8, the same columns
// where a K group is the 4 bytes one 32-bit register holds (2 BF16 or 4 E4M3 values).
#pragma once
#include <dg/types.cuh>

namespace dg::ptx {

// m16n8k16, BF16 inputs (SM80+).
DG_DEVICE void mma_bf16_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// m16n8k32, E4M3 inputs (SM89+).
DG_DEVICE void mma_e4m3_m16n8k32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

}  // namespace dg::ptx
