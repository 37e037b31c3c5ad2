// dg-bench's harness logic, without a GPU: statistics, JSON/CSV output, argument and shape
// parsing, calc_diff and the number formats the checks decode, the M-grouped suites' group sizes.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cli.h"
#include "grouped.h"
#include "json.h"
#include "numerics.h"
#include "stats.h"

using namespace dgb;

TEST_CASE("bench stats: percentiles interpolate between order statistics") {
  const std::vector<double> v = {5, 1, 4, 2, 3};
  CHECK(percentile(v, 0) == 1.0);
  CHECK(percentile(v, 100) == 5.0);
  CHECK(median(v) == 3.0);
  CHECK(percentile(v, 25) == doctest::Approx(2.0));
  CHECK(percentile(v, 10) == doctest::Approx(1.4));
  CHECK(median({1, 2, 3, 4}) == doctest::Approx(2.5));
  CHECK(std::isnan(median({})));
  CHECK(percentile({7}, 90) == 7.0);
}

TEST_CASE("bench stats: summary and spread") {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  const Summary s = summarize(v);
  CHECK(s.count == 100);
  CHECK(s.median == doctest::Approx(50.5));
  CHECK(s.p10 == doctest::Approx(10.9));
  CHECK(s.p90 == doctest::Approx(90.1));
  CHECK(s.min == 1.0);
  CHECK(s.max == 100.0);
  CHECK(s.mean == doctest::Approx(50.5));
  CHECK(s.stddev == doctest::Approx(29.011491975882016));
  CHECK(s.spread() == doctest::Approx((90.1 - 10.9) / 50.5));
  CHECK(std::isnan(summarize({}).spread()));
}

TEST_CASE("bench stats: geometric mean ignores non-positive and non-finite values") {
  CHECK(geomean({2, 8}) == doctest::Approx(4.0));
  CHECK(geomean({1, 10, 100}) == doctest::Approx(10.0));
  CHECK(geomean({4, 0, -1, NAN, INFINITY}) == doctest::Approx(4.0));
  CHECK(std::isnan(geomean({})));
  CHECK(std::isnan(geomean({0, -2})));
}

TEST_CASE("bench json: escaping") {
  CHECK(json_escape("plain") == "plain");
  CHECK(json_escape("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(json_escape("l1\nl2\tx\r") == "l1\\nl2\\tx\\r");
  CHECK(json_escape(std::string("\x01\x1f", 2)) == "\\u0001\\u001f");
  CHECK(json_escape("\xc3\xa9") == "\xc3\xa9");  // UTF-8 passes through
}

TEST_CASE("bench json: numbers round-trip and non-finite values become null") {
  CHECK(json_number(3) == "3");
  CHECK(json_number(-42) == "-42");
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(1e-7) == "1e-07");
  CHECK(std::strtod(json_number(1.0 / 3).c_str(), nullptr) == 1.0 / 3);
  CHECK(json_number(NAN) == "null");
  CHECK(json_number(INFINITY) == "null");
}

TEST_CASE("bench json: document structure keeps insertion order") {
  Json root = Json::object();
  root["tool"] = "dg-bench";
  root["n"] = 3;
  root["ok"] = true;
  root["none"] = nullptr;
  Json arr = Json::array();
  arr.push(1.5);
  arr.push("x\"y");
  root["list"] = arr;
  root["nested"]["a"] = 1;
  root["n"] = 4;  // replaces in place
  CHECK(root.dump() ==
        "{\"tool\":\"dg-bench\",\"n\":4,\"ok\":true,\"none\":null,\"list\":[1.5,\"x\\\"y\"],\"nested\":{\"a\":1}}");
  CHECK(Json::array().dump() == "[]");
  CHECK(Json::object().dump(2) == "{}");
  CHECK(root.find("missing") == nullptr);
  REQUIRE(root.find("list") != nullptr);
  CHECK(root.find("list")->size() == 2);
  const std::string pretty = root.dump(1);
  CHECK(pretty.find("\n \"tool\": \"dg-bench\"") != std::string::npos);
}

TEST_CASE("bench csv: fields are quoted only when needed") {
  CHECK(csv_field("abc") == "abc");
  CHECK(csv_field("a,b") == "\"a,b\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("l1\nl2") == "\"l1\nl2\"");
}

TEST_CASE("bench cli: --shape parsing") {
  Shape s;
  std::string err;
  REQUIRE(parse_shape("128,2112,7168", &s, &err));
  CHECK(s == Shape{128, 2112, 7168, 1});
  REQUIRE(parse_shape("4096,7168,2048,8", &s, &err));
  CHECK(s == Shape{4096, 7168, 2048, 8});
  CHECK_FALSE(parse_shape("1,2", &s, &err));
  CHECK(err.find("expected m,n,k") != std::string::npos);
  CHECK_FALSE(parse_shape("1,2,3,4,5", &s, &err));
  CHECK_FALSE(parse_shape("1,x,3", &s, &err));
  CHECK(err.find("'x'") != std::string::npos);
  CHECK_FALSE(parse_shape("1,-2,3", &s, &err));
  CHECK_FALSE(parse_shape("1,2,3,0", &s, &err));
  CHECK(err.find("g must be") != std::string::npos);
  CHECK_FALSE(parse_shape("1,2,", &s, &err));
  CHECK_FALSE(parse_shape("1,2,3 ", &s, &err));
}

TEST_CASE("bench cli: suites, options and errors") {
  Options o;
  std::string err;
  const char* argv[] = {"dg-bench", "--suite", "dense-fp8,copy", "--suite", "copy", "--shape", "1,2,3",
                        "--shape",  "4,5,6,2", "--reps", "40", "--json", "out.json", "--csv", "out.csv",
                        "--no-peers", "--device", "1", "--seed", "7", "--warmup", "3", "--host-calls", "10"};
  REQUIRE(parse_args(static_cast<int>(sizeof(argv) / sizeof(argv[0])), argv, &o, &err));
  CHECK(o.suites == std::vector<std::string>{"dense-fp8", "copy"});
  REQUIRE(o.shapes.size() == 2);
  CHECK(o.shapes[1] == Shape{4, 5, 6, 2});
  CHECK(o.reps == 40);
  CHECK(o.json_path == "out.json");
  CHECK(o.csv_path == "out.csv");
  CHECK_FALSE(o.peers);
  CHECK(o.device == 1);
  CHECK(o.seed == 7);
  CHECK(o.warmup == 3);
  CHECK(o.host_calls == 10);

  auto fails = [](std::vector<const char*> args, const char* needle) {
    Options x;
    std::string e;
    args.insert(args.begin(), "dg-bench");
    const bool ok = parse_args(static_cast<int>(args.size()), args.data(), &x, &e);
    CHECK_FALSE(ok);
    CHECK_MESSAGE(e.find(needle) != std::string::npos, e);
  };
  fails({"--suite", "dense-int4"}, "unknown suite 'dense-int4'");
  fails({"--reps", "10"}, ">= 30");  // the issue asks for >= 30 repetitions
  fails({"--reps"}, "missing value");
  fails({"--shape", "1,2"}, "expected m,n,k");
  fails({"--frobnicate"}, "unknown argument");
  fails({"--device", "-1"}, ">= 0");
  fails({"--gemm-config", "bm=128,tile=3"}, "unknown key 'tile'");
  fails({"--gemm-config", "bm=128,bn"}, "'bn' is not key=integer");
  fails({"--gemm-config", "bm=x"}, "'bm=x' is not key=integer");
}

TEST_CASE("bench cli: --gemm-config sets only the keys it names") {
  Options o;
  std::string err;
  const char* argv[] = {"dg-bench", "--gemm-config", "bm=128,bn=256,stages=4,cluster=2,mca=0,promo=2,slices=2",
                        "--gemm-config", "wg=1,sms=66"};
  REQUIRE(parse_args(5, argv, &o, &err));
  REQUIRE(o.gemm_configs.size() == 2);
  const GemmConfigArg& a = o.gemm_configs[0];
  CHECK(a.text == "bm=128,bn=256,stages=4,cluster=2,mca=0,promo=2,slices=2");
  CHECK(a.block_m == 128);
  CHECK(a.block_n == 256);
  CHECK(a.stages == 4);
  CHECK(a.cluster == 2);
  CHECK(a.multicast_a == 0);
  CHECK(a.promotion == 2);
  CHECK(a.slices == 2);
  CHECK(a.math_wg == 0);
  const GemmConfigArg& b = o.gemm_configs[1];
  CHECK(b.math_wg == 1);
  CHECK(b.num_sms == 66);
  CHECK(b.multicast_a == -1);
  CHECK(b.block_m == 0);
}

TEST_CASE("bench cli: --gemv-config sets only the keys it names") {
  Options o;
  std::string err;
  const char* argv[] = {"dg-bench", "--gemv-config", "kt=32,nc=4,rows=2,grid=264", "--gemv-config", "vec=8,hint=2,prefetch=-1"};
  REQUIRE(parse_args(5, argv, &o, &err));
  REQUIRE(o.gemv_configs.size() == 2);
  const GemvConfigArg& a = o.gemv_configs[0];
  CHECK(a.text == "kt=32,nc=4,rows=2,grid=264");
  CHECK(a.threads_per_row == 32);
  CHECK(a.chunks == 4);
  CHECK(a.rows == 2);
  CHECK(a.grid == 264);
  CHECK(a.row_groups == 0);
  CHECK(a.vec == 0);
  const GemvConfigArg& b = o.gemv_configs[1];
  CHECK(b.vec == 8);
  CHECK(b.hint == 2);
  CHECK(b.prefetch == -1);
  CHECK(b.threads_per_row == 0);
  const char* bad[] = {"dg-bench", "--gemv-config", "kt=32,bm=128"};
  CHECK_FALSE(parse_args(3, bad, &o, &err));
  CHECK(err.find("unknown key 'bm'") != std::string::npos);
  CHECK(err.find("known: kt, rg, nc, rows, vec, grid, hint, prefetch") != std::string::npos);
}

TEST_CASE("bench shapes: the DeepSeek-V3 dense set of DeepGEMM's tests") {
  const auto shapes = dense_shapes();
  REQUIRE(shapes.size() == 21);
  CHECK(shapes.front() == Shape{1, 2112, 7168, 1});
  CHECK(shapes.back() == Shape{4096, 7168, 2048, 1});
  int m128 = 0;
  for (const auto& s : shapes) m128 += s.m == 128;
  CHECK(m128 == 7);
  CHECK(to_string(Shape{128, 576, 7168, 1}) == "m=128 n=576 k=7168");
  CHECK(to_string(Shape{128, 576, 7168, 4}) == "g=4 m=128 n=576 k=7168");
  CHECK(nvfp4_gemv_shapes().size() == 3);
  for (const auto& s : layout_shapes()) CHECK(s.m > 0);
}

TEST_CASE("bench cli: m-grouped names the four M-grouped suites") {
  Options o;
  std::string err;
  const char* argv[] = {"dg-bench", "--suite", "masked-bf16,m-grouped,copy"};
  REQUIRE(parse_args(3, argv, &o, &err));
  CHECK(o.suites == std::vector<std::string>{"masked-bf16", "contiguous-fp8", "contiguous-bf16", "masked-fp8", "copy"});
  for (const auto& s : suite_alias("m-grouped")) CHECK(is_known_suite(s));
  CHECK_FALSE(is_known_suite("m-grouped"));  // an alias, not a suite of its own
  CHECK(suite_alias("dense-fp8").empty());
  Options x;
  const char* bad[] = {"dg-bench", "--suite", "grouped"};
  CHECK_FALSE(parse_args(3, bad, &x, &err));
  CHECK(err.find("unknown suite 'grouped'") != std::string::npos);
  CHECK(err.find("masked-bf16, quant, hc-prenorm, m-grouped") != std::string::npos);
  CHECK(is_known_suite("quant"));
  CHECK(is_known_suite("hc-prenorm"));
}

TEST_CASE("bench shapes: the M-grouped sets of DeepGEMM's tests") {
  const auto cont = contiguous_shapes();
  REQUIRE(cont.size() == 9);
  CHECK(cont.front() == Shape{8192, 4096, 7168, 4});
  CHECK(cont[2] == Shape{256, 4096, 7168, 32});
  CHECK(cont.back() == Shape{256, 6144, 7168, 32});
  const auto mask = masked_shapes();
  REQUIRE(mask.size() == 18);
  CHECK(mask.front() == Shape{1024, 4096, 7168, 1});
  CHECK(mask[5] == Shape{20, 4096, 7168, 32});
  CHECK(mask[6] == Shape{1024, 7168, 2048, 1});
  CHECK(mask.back() == Shape{20, 6144, 7168, 32});
}

TEST_CASE("bench grouped: contiguous group sizes, alignment and m_indices") {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    for (auto gm : std::vector<std::pair<int64_t, int64_t>>{{4, 8192}, {8, 4096}, {32, 256}, {1, 300}, {3, 1}}) {
      const int64_t G = gm.first, E = gm.second;
      const GroupPlan p = contiguous_plan(G, E, 128, seed);
      REQUIRE(p.groups() == G);
      CHECK_FALSE(p.masked);
      CHECK(p.expected_m == 0);
      int empty = 0;
      for (int64_t g = 0; g < G; ++g) {
        const int64_t r = p.rows[g];
        empty += r == 0;
        if (r != 0 || G == 1) {
          CHECK(r >= static_cast<int64_t>(0.7 * E));
          CHECK(r <= static_cast<int64_t>(1.3 * E));
        }
        CHECK(p.start[g] % 128 == 0);
        const int64_t end = g + 1 < G ? p.start[g + 1] : p.total_rows;
        CHECK(end - p.start[g] == (r + 127) / 128 * 128);  // padded to the alignment, no more
        CHECK(p.rest_rows(g) == end - p.start[g] - r);
        CHECK(p.rest_rows(g) < 128);
      }
      if (G > 1 && E >= 2) CHECK(empty == 1);  // exactly the emptied group
      if (G == 1) CHECK(empty == 0);
      CHECK(p.start[0] == 0);
      CHECK(p.total_rows % 128 == 0);
      CHECK(p.used_groups() == G - empty);

      const std::vector<int32_t> idx = contiguous_indices(p);
      REQUIRE(static_cast<int64_t>(idx.size()) == p.total_rows);
      std::vector<int64_t> count(G, 0);
      int64_t padding = 0, misplaced = 0;  // counted, then checked once: 10^5 rows per plan
      for (int64_t i = 0; i < p.total_rows; ++i) {
        const int64_t g = idx[i];
        if (g < 0) {
          padding += 1;
          misplaced += g != -1;
        } else if (g >= G || i < p.start[g] || i >= p.start[g] + p.rows[g]) {
          ++misplaced;
        } else {
          ++count[g];
        }
      }
      CHECK(misplaced == 0);
      CHECK(count == p.rows);
      CHECK(padding == p.total_rows - p.valid_rows());
    }
  }
  // Deterministic in the seed, and the seed matters.
  CHECK(contiguous_plan(32, 256, 128, 7).rows == contiguous_plan(32, 256, 128, 7).rows);
  CHECK(contiguous_plan(32, 256, 128, 7).rows != contiguous_plan(32, 256, 128, 8).rows);
}

TEST_CASE("bench grouped: masked group sizes, max_m and the hint") {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    for (auto gm : std::vector<std::pair<int64_t, int64_t>>{{1, 1024}, {32, 192}, {32, 20}, {2, 4000}}) {
      const int64_t G = gm.first, E = gm.second;
      const GroupPlan p = masked_plan(G, E, seed);
      REQUIRE(p.groups() == G);
      CHECK(p.masked);
      CHECK(p.max_m % 64 == 0);
      CHECK(p.max_m >= 4096);
      int64_t largest = 0;
      for (int64_t g = 0; g < G; ++g) {
        CHECK(p.rows[g] >= static_cast<int64_t>(0.7 * E));
        CHECK(p.rows[g] <= static_cast<int64_t>(1.3 * E));
        CHECK(p.rows[g] <= p.max_m);
        CHECK(p.start[g] == g * p.max_m);
        CHECK(p.rest_rows(g) == p.max_m - p.rows[g]);
        largest = std::max(largest, p.rows[g]);
      }
      // max_m is 4096 unless a group needs more, then the largest group rounded up to 64.
      CHECK(p.max_m == std::max<int64_t>(4096, (largest + 63) / 64 * 64));
      CHECK(p.total_rows == G * p.max_m);
      CHECK(p.expected_m == static_cast<int64_t>(1.2 * E));
    }
  }
  CHECK(masked_plan(4, 0, 1).expected_m == 1);  // the masked calls need a hint > 0
}

TEST_CASE("bench grouped: reference offsets and group size factors") {
  GroupPlan p;
  p.rows = {5, 0, 7, 1};
  CHECK(reference_offsets(p) == std::vector<int64_t>{0, 5, 5, 12});
  CHECK(p.valid_rows() == 13);
  CHECK(p.used_groups() == 3);
  std::mt19937_64 rng(3);
  double lo = 2, hi = 0;
  for (int i = 0; i < 100000; ++i) {
    const double f = group_size_factor(rng);
    lo = std::min(lo, f), hi = std::max(hi, f);
  }
  CHECK(lo >= 0.7);
  CHECK(lo < 0.701);
  CHECK(hi < 1.3);
  CHECK(hi > 1.299);
}

TEST_CASE("bench numerics: calc_diff") {
  const std::vector<double> x = {1, 2, 3, -4};
  CHECK(calc_diff(x.data(), x.data(), 4) == doctest::Approx(0.0));
  std::vector<double> neg = x;
  for (auto& v : neg) v = -v;
  CHECK(calc_diff(x.data(), neg.data(), 4) == doctest::Approx(2.0));
  const std::vector<double> zero(4, 0.0);
  CHECK(calc_diff(zero.data(), zero.data(), 4) == 0.0);
  CHECK(calc_diff(x.data(), zero.data(), 4) == doctest::Approx(1.0));
  // A 1% relative error in every element gives about (0.01)^2 / 2.
  std::vector<double> y = x;
  for (auto& v : y) v *= 1.01;
  CHECK(calc_diff(y.data(), x.data(), 4) == doctest::Approx(0.01 * 0.01 / (1 + 1.01 * 1.01)).epsilon(1e-6));
  DiffSums s;
  s.xy = 5, s.xx = 5, s.yy = 5;
  CHECK(calc_diff(s) == doctest::Approx(0.0));
}

TEST_CASE("bench numerics: BF16 and E4M3 decoding") {
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0xc000) == -2.0f);
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(1.00390625f) == 0x3f80);  // tie rounds to even
  CHECK(float_to_bf16(1.01171875f) == 0x3f82);  // tie rounds to even (up)
  CHECK(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  CHECK(e4m3_to_float(0x7e) == 448.0f);
  CHECK(e4m3_to_float(0xfe) == -448.0f);
  CHECK(e4m3_to_float(0x38) == 1.0f);
  CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(e4m3_to_float(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(std::isnan(e4m3_to_float(0x7f)));
  CHECK(std::isnan(e4m3_to_float(0xff)));
}

TEST_CASE("bench numerics: FLOPs, bytes and the H100 peaks") {
  CHECK(gemm_flops(4096, 7168, 2048) == 2.0 * 4096 * 7168 * 2048);
  GemmBytes bf;
  CHECK(gemm_bytes(128, 256, 512, bf) == 128.0 * 512 * 2 + 256.0 * 512 * 2 + 128.0 * 256 * 2);
  GemmBytes f8;
  f8.a_elem = f8.b_elem = 1;
  f8.sfa_per_token = f8.sfb_per_block = true;
  // K = 300 -> 3 K blocks; N = 200 -> 2 N blocks.
  CHECK(gemm_bytes(10, 200, 300, f8) == 10.0 * 300 + 200.0 * 300 + 10.0 * 200 * 2 + 4.0 * 10 * 3 + 4.0 * 2 * 3);
  f8.with_c = true;
  CHECK(gemm_bytes(10, 200, 300, f8) == 10.0 * 300 + 200.0 * 300 + 2 * 10.0 * 200 * 2 + 4.0 * 10 * 3 + 4.0 * 2 * 3);
  // H100 SXM: 132 SMs at 1830 MHz: 989 BF16 and 1979 FP8 dense TFLOPS.
  CHECK(peak_tflops(9, 132, datasheet_clock_mhz(9), false) == doctest::Approx(989.4).epsilon(0.001));
  CHECK(peak_tflops(9, 132, datasheet_clock_mhz(9), true) == doctest::Approx(1978.9).epsilon(0.001));
  CHECK(peak_tflops(8, 108, 1410, false) == 0.0);
}

TEST_CASE("bench numerics: M-grouped bytes count valid rows and used groups") {
  GemmBytes bf;
  // 300 valid rows, 3 groups with rows, N = 256, K = 512, BF16.
  CHECK(grouped_gemm_bytes(300, 3, 256, 512, bf) == 300.0 * 512 * 2 + 3.0 * 256 * 512 * 2 + 300.0 * 256 * 2);
  GemmBytes f8;
  f8.a_elem = f8.b_elem = 1;
  f8.sfa_per_token = f8.sfb_per_block = true;
  // K = 300 -> 3 K blocks; N = 200 -> 2 N blocks per group.
  CHECK(grouped_gemm_bytes(10, 4, 200, 300, f8) ==
        10.0 * 300 + 4.0 * 200 * 300 + 10.0 * 200 * 2 + 4.0 * 10 * 3 + 4.0 * 4 * 2 * 3);
  // One group is a dense GEMM.
  CHECK(grouped_gemm_bytes(10, 1, 200, 300, f8) == gemm_bytes(10, 200, 300, f8));
}
