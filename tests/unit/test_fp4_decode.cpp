// The SM90 NVFP4 decode of dg/fp4.cuh, emulated on the host: PRMT (generic mode) and dp4a.s32.s32
// as the PTX ISA defines them, with the table constants and selector tweaks read from the header
// the JIT compiles (the embedded bundle), checked exhaustively against exact arithmetic. Also the
// FP32 scale product sfa * sfb / 4 over every pair of finite E4M3 codes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <regex>
#include <string>

#include "jit/source_bundle.h"

namespace {

// prmt.b32 d, a, b, c (no mode): byte i of d is byte (c >> 4i) & 7 of {b, a}; when bit 3 of that
// control nibble is set, the selected byte's msb is replicated over the 8 bits instead.
uint32_t prmt(uint32_t a, uint32_t b, uint32_t c) {
  const uint64_t src = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t ctl = (c >> (4 * i)) & 0xf;
    uint32_t byte = static_cast<uint32_t>(src >> (8 * (ctl & 7))) & 0xff;
    if (ctl & 8) byte = (byte & 0x80) ? 0xff : 0x00;
    d |= byte << (8 * i);
  }
  return d;
}

// dp4a.s32.s32 d, a, b, c: c + the four products of the signed bytes of a and b.
int32_t dp4a(uint32_t a, uint32_t b, int32_t c) {
  int32_t s = c;
  for (int i = 0; i < 4; ++i)
    s += static_cast<int8_t>(static_cast<uint8_t>(a >> (8 * i))) * static_cast<int8_t>(static_cast<uint8_t>(b >> (8 * i)));
  return s;
}

// Twice the E2M1 value of code c (sign, 2 exponent bits, 1 mantissa bit): an integer.
int e2m1_times2(int c) {
  static const int mag[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

double e4m3(int c) {
  const int e = (c >> 3) & 15, m = c & 7;
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return (c & 0x80) ? -v : v;
}

// The header as the JIT compiles it.
const std::string& fp4_header() {
  for (const auto& [name, text] : dg::jit::source_bundle().headers)
    if (name == "dg/fp4.cuh") return text;
  FAIL("dg/fp4.cuh is not in the source bundle");
  static const std::string none;
  return none;
}

uint32_t header_constant(const std::string& name) {
  std::smatch m;
  const std::regex re("constexpr uint32_t " + name + " = (0x[0-9A-Fa-f]+)u;");
  REQUIRE_MESSAGE(std::regex_search(fp4_header(), m, re), name);
  return static_cast<uint32_t>(std::stoul(m[1].str(), nullptr, 16));
}

// The sign flip of the negative-code path, as written in e2m1x8_dot_s8.
uint32_t header_sign_flip() {
  std::smatch m;
  REQUIRE(std::regex_search(fp4_header(), m, std::regex("const uint32_t wx = w \\^ (0x[0-9A-Fa-f]+)u;")));
  return static_cast<uint32_t>(std::stoul(m[1].str(), nullptr, 16));
}

struct Tables {
  uint32_t mag_lo = header_constant("kMag2Lo"), mag_hi = header_constant("kMag2Hi");
  uint32_t neg_lo = header_constant("kNeg2Lo"), neg_hi = header_constant("kNeg2Hi");
  uint32_t flip = header_sign_flip();
};

// mag2_table_lo(): kMag2Lo plus %laneid >> 5, which is 0 for every lane (0..31).
uint32_t mag2_table_lo(uint32_t lane, const Tables& t) { return t.mag_lo + (lane >> 5); }

// e2m1x4_to_s8x4_times2 (the vector b), step for step.
uint32_t b_decode(uint32_t nibbles, const Tables& t) {
  const uint32_t mag = nibbles & 0x7777u;  // (the header's masks are checked in the test below)
  const uint32_t pos = prmt(t.mag_lo, t.mag_hi, mag);
  const uint32_t neg = prmt(t.neg_lo, t.neg_hi, mag);
  const uint32_t sel = 0x3210u | ((nibbles >> 1) & 0x4444u);
  return prmt(pos, neg, sel);
}

// e2m1x8_dot_s8 (the streamed matrix a), step for step: returns acc_pos - acc_neg.
int32_t a_dot(uint32_t w, uint32_t b_lo, uint32_t b_hi, uint32_t table_lo, const Tables& t) {
  const uint32_t wx = w ^ t.flip;
  int32_t pos = 0, neg = 0;
  pos = dp4a(prmt(table_lo, t.mag_hi, w), b_lo, pos);
  neg = dp4a(prmt(table_lo, t.mag_hi, wx), b_lo, neg);
  pos = dp4a(prmt(table_lo, t.mag_hi, w >> 16), b_hi, pos);
  neg = dp4a(prmt(table_lo, t.mag_hi, wx >> 16), b_hi, neg);
  return pos - neg;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

int32_t exact_dot(uint32_t w, uint32_t bw) {  // eight codes of a times eight codes of b, times 4
  int32_t s = 0;
  for (int i = 0; i < 8; ++i) s += e2m1_times2((w >> (4 * i)) & 15) * e2m1_times2((bw >> (4 * i)) & 15);
  return s;
}

}  // namespace

TEST_CASE("fp4 decode: the emulated PRMT and dp4a on hand-made cases") {
  CHECK(prmt(0x33221100u, 0x77665544u, 0x3210u) == 0x33221100u);  // identity
  CHECK(prmt(0x33221100u, 0x77665544u, 0x7654u) == 0x77665544u);  // the high word
  CHECK(prmt(0x000080ffu, 0u, 0x9988u) == 0xffffffffu);             // msb of byte 0 (0xff) replicated
  CHECK(prmt(0x000080ffu, 0u, 0x4449u) == 0x000000ffu);             // msb of byte 1 (0x80); zeros of b
  CHECK(prmt(0x7f7f7f7fu, 0u, 0x8888u) == 0u);                     // msb 0 replicated
  CHECK(dp4a(0xff02ff02u, 0x0303fdfdu, 10) == 10 + (2 * -3) + (-1 * -3) + (2 * 3) + (-1 * 3));
}

TEST_CASE("fp4 decode: the table register is kMag2Lo in every lane") {
  const Tables t;
  for (uint32_t lane = 0; lane < 32; ++lane) CHECK(mag2_table_lo(lane, t) == t.mag_lo);
  // The kernel's hot loop uses that register; the header must still spell the 'lane >> 5' form.
  CHECK(fp4_header().find("return kMag2Lo + (lane >> 5);") != std::string::npos);
}

TEST_CASE("fp4 decode: b -> int8 (2 x value) for every 16-bit group of four codes") {
  const Tables t;
  CHECK(fp4_header().find("const uint32_t mag = nibbles & 0x7777u;") != std::string::npos);
  CHECK(fp4_header().find("const uint32_t sel = 0x3210u | ((nibbles >> 1) & 0x4444u);") != std::string::npos);
  for (uint32_t x = 0; x < 0x10000u; ++x) {
    const uint32_t d = b_decode(x, t);
    for (int i = 0; i < 4; ++i) {
      const int got = static_cast<int8_t>(static_cast<uint8_t>(d >> (8 * i)));
      if (got != e2m1_times2((x >> (4 * i)) & 15)) {
        FAIL_CHECK("nibbles " << hex(x) << " element " << i);
        return;
      }
    }
    // Only the low 16 bits select: the kernel passes raw[j] and raw[j] >> 16 unmasked.
    if (b_decode(x | 0xabcd0000u, t) != d) {
      FAIL_CHECK("high bits leak into the decode of " << hex(x));
      return;
    }
  }
}

TEST_CASE("fp4 decode: a against b, every code at every position against every code of b") {
  const Tables t;
  const uint32_t table = mag2_table_lo(0, t);
  // The dot is a sum over positions: each position, every (a code, b code) pair, the rest of both
  // words filled with every code pattern of one other byte (so neighbours and signs interact).
  for (int pos = 0; pos < 8; ++pos)
    for (uint32_t ca = 0; ca < 16; ++ca)
      for (uint32_t cb = 0; cb < 16; ++cb)
        for (uint32_t other = 0; other < 256; ++other) {
          const int ob = (pos / 2 + 1) % 4;  // a byte other than the one holding `pos`
          const uint32_t w = (ca << (4 * pos)) | (other << (8 * ob));
          const uint32_t bw = (cb << (4 * pos)) | ((other ^ 0x5a) << (8 * ob));
          const uint32_t b_lo = b_decode(bw & 0xffffu, t), b_hi = b_decode(bw >> 16, t);
          if (a_dot(w, b_lo, b_hi, table, t) != exact_dot(w, bw)) {
            FAIL_CHECK("a " << hex(w) << " b " << hex(bw));
            return;
          }
        }
}

TEST_CASE("fp4 decode: a against b, all 256 values of every byte of a and random words") {
  const Tables t;
  const uint32_t table = mag2_table_lo(0, t);
  std::mt19937 rng(5);
  for (int byte = 0; byte < 4; ++byte)
    for (uint32_t v = 0; v < 256; ++v)
      for (int rep = 0; rep < 64; ++rep) {
        const uint32_t w = (rng() & ~(0xffu << (8 * byte))) | (v << (8 * byte)), bw = rng();
        const uint32_t b_lo = b_decode(bw & 0xffffu, t), b_hi = b_decode(bw >> 16, t);
        if (a_dot(w, b_lo, b_hi, table, t) != exact_dot(w, bw)) {
          FAIL_CHECK("a " << hex(w) << " b " << hex(bw));
          return;
        }
      }
  // A 16-element block (two words) sums to at most 16 * 12 * 12 in magnitude: an exact int32 and an
  // exact float after the conversion.
  CHECK(16 * 12 * 12 < (1 << 24));
}

TEST_CASE("fp4 decode: sfa * (sfb / 4) in FP32 is exact for every pair of finite E4M3 codes") {
  // The kernel decodes each code exactly (cvt to f16, then f32), folds 1/4 into sfb once and
  // multiplies the two scales in FP32: no rounding before the block sum's FMA.
  for (int a = 0; a < 256; ++a) {
    if ((a & 0x7f) == 0x7f) continue;  // NaN
    const float fa = static_cast<float>(e4m3(a));
    CHECK(static_cast<double>(fa) == e4m3(a));
    for (int b = 0; b < 256; ++b) {
      if ((b & 0x7f) == 0x7f) continue;
      const float fb4 = static_cast<float>(e4m3(b)) * 0.25f;
      const float prod = fa * fb4;
      if (static_cast<double>(prod) != e4m3(a) * e4m3(b) / 4) {
        FAIL_CHECK("codes " << a << " " << b);
        return;
      }
    }
  }
}
