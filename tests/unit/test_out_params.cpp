// Out-parameters are untouched when a call fails: every entry point that returns values through
// pointers, called with inputs it refuses (sizes whose arithmetic overflows, bad enums, no device
// here), must leave the caller's poisoned values as they were. dg_config_get_string's `*required`
// is the documented exception (set so that a too-small buffer can be resized).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>

#include "dg.h"

namespace {

constexpr int64_t kPoison = 0x5a5a5a5a5a5a5a5a;
const size_t kPoisonSize = static_cast<size_t>(kPoison);

// Poisoned out-arrays of every size an entry point writes.
struct Outs {
  int64_t sizes[DG_MAX_RANK], strides[DG_MAX_RANK];
  size_t bytes = kPoisonSize;
  Outs() {
    for (int i = 0; i < DG_MAX_RANK; ++i) sizes[i] = strides[i] = kPoison;
  }
  bool untouched() const {
    for (int i = 0; i < DG_MAX_RANK; ++i)
      if (sizes[i] != kPoison || strides[i] != kPoison) return false;
    return bytes == kPoisonSize;
  }
};

void expect_failure(dg_status s, const std::string& what) {
  CHECK_MESSAGE(s != DG_SUCCESS, what, " succeeded");
  CHECK_MESSAGE(dg_last_error()[0] != '\0', what, " gave no message");
}

}  // namespace

TEST_CASE("dg_get_tma_aligned_size leaves its output untouched when the rounding overflows") {
  int64_t aligned = kPoison;
  expect_failure(dg_get_tma_aligned_size(INT64_MAX - 14, 1, &aligned), "INT64_MAX - 14");
  CHECK(aligned == kPoison);  // once INT64_MIN
  expect_failure(dg_get_tma_aligned_size(INT64_MAX, 2, &aligned), "INT64_MAX");
  expect_failure(dg_get_tma_aligned_size(-1, 1, &aligned), "-1");
  expect_failure(dg_get_tma_aligned_size(5, 3, &aligned), "element_size 3");
  CHECK(aligned == kPoison);
  REQUIRE(dg_get_tma_aligned_size(INT64_MAX - 15, 1, &aligned) == DG_SUCCESS);
  CHECK(aligned == INT64_MAX - 15);
}

TEST_CASE("layout and size queries write nothing when they fail") {
  const int64_t huge = INT64_MAX / 2;
  for (const bool packed : {false, true}) {
    auto query =
        packed ? dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout : dg_get_mn_major_tma_aligned_tensor_layout;
    const int64_t refused[][3] = {{huge, huge, 4}, {3, huge, huge}, {1, INT64_MAX - 1, 1}, {-1, 8, 8}};
    for (const auto& sizes : refused) {
      Outs o;
      expect_failure(query(3, sizes, o.sizes, o.strides, &o.bytes), "mn-major layout");
      CHECK(o.untouched());
    }
    const int64_t five[5] = {1, 1, 1, 1, 1};
    Outs o;
    expect_failure(query(5, five, o.sizes, o.strides, &o.bytes), "rank 5");
    CHECK(o.untouched());
  }
  {
    const int64_t ks[3] = {128, huge / 1024 * 128, huge / 1024 * 128};
    Outs o;
    expect_failure(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(huge, ks, 3, o.sizes, o.strides,
                                                                                     &o.bytes),
                   "k-grouped layout");
    CHECK(o.untouched());
    const int64_t bad_ks[2] = {128, 100};
    expect_failure(dg_get_k_grouped_mn_major_tma_aligned_packed_ue8m0_tensor_layout(256, bad_ks, 2, o.sizes, o.strides,
                                                                                     &o.bytes),
                   "k-grouped layout, K not a multiple of 128");
    CHECK(o.untouched());
  }
  for (const auto& [seq, kv, dtype] : {std::tuple<int64_t, int64_t, dg_dtype>{huge, huge, DG_DTYPE_FLOAT32},
                                       std::tuple<int64_t, int64_t, dg_dtype>{4, INT64_MAX - 3, DG_DTYPE_FLOAT32},
                                       std::tuple<int64_t, int64_t, dg_dtype>{4, 4, DG_DTYPE_INT32}}) {
    Outs o;
    expect_failure(dg_get_mqa_logits_layout(seq, kv, dtype, o.sizes, o.strides, &o.bytes), "mqa logits layout");
    CHECK(o.untouched());
  }
  using Problem = std::tuple<int32_t, int64_t, int64_t, int64_t>;
  for (const auto& [layout, m, n, k] : {Problem{DG_GEMM_LAYOUT_TT, huge, huge, huge},
                                        Problem{DG_GEMM_LAYOUT_TN, INT64_MAX, 128, 128}, Problem{77, 128, 128, 128}}) {
    size_t bytes = kPoisonSize;
    expect_failure(dg_fp8_gemm_workspace_size(layout, m, n, k, &bytes), "workspace size");
    CHECK(bytes == kPoisonSize);
  }
}

TEST_CASE("dg_transform_sf_layout writes nothing when it fails") {
  dg_tensor* sf = nullptr;
  const int64_t sizes[2] = {256, 2};
  REQUIRE(dg_tensor_create(&sf, reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, 2, sizes, nullptr) == DG_SUCCESS);
  for (const int64_t mn : {int64_t(255), INT64_MAX}) {
    dg_sf_recipe recipe = DG_SF_RECIPE_INIT;
    recipe.arch_major = 9;
    recipe.gran_mn = 1;
    Outs o;
    int32_t is_input = int32_t(kPoison);
    dg_dtype dtype = dg_dtype(kPoison);
    expect_failure(
        dg_transform_sf_layout(nullptr, sf, mn, 256, &recipe, &is_input, &dtype, o.sizes, o.strides, &o.bytes),
        "transform_sf_layout");
    CHECK(o.untouched());
    CHECK(is_input == int32_t(kPoison));
    CHECK(dtype == dg_dtype(kPoison));
  }
  dg_tensor_destroy(sf);
}

TEST_CASE("constructors and getters leave their out-parameters as the caller set them when they fail") {
  // No driver in the unit tests: device queries and streams fail.
  int32_t count = 77, major = 77, minor = 77;
  expect_failure(dg_device_count(&count), "dg_device_count");
  CHECK(count == 77);  // was set to 0 before the failure
  expect_failure(dg_device_get_capability(0, &major, &minor), "dg_device_get_capability");
  CHECK((major == 77 && minor == 77));
  auto* const sentinel = reinterpret_cast<dg_stream*>(uintptr_t(0xdead0));
  dg_stream* stream = sentinel;
  expect_failure(dg_stream_create(&stream, 0, nullptr, DG_STREAM_BORROW, nullptr), "dg_stream_create");
  CHECK(stream == sentinel);
  expect_failure(dg_stream_create(&stream, 0, nullptr, 7, nullptr), "dg_stream_create flags");
  CHECK(stream == sentinel);
  expect_failure(dg_stream_create_offline(&stream, 8, 0, 132, nullptr), "dg_stream_create_offline");
  CHECK(stream == sentinel);
  auto* const tensor_sentinel = reinterpret_cast<dg_tensor*>(uintptr_t(0xdead0));
  dg_tensor* tensor = tensor_sentinel;
  const int64_t sizes[2] = {4, -1};
  expect_failure(dg_tensor_create(&tensor, nullptr, DG_DTYPE_FLOAT32, 2, sizes, nullptr), "dg_tensor_create");
  CHECK(tensor == tensor_sentinel);
  void* cu = reinterpret_cast<void*>(uintptr_t(0xdead0));
  int32_t device = 77;
  expect_failure(dg_stream_get_cu_stream(nullptr, &cu), "dg_stream_get_cu_stream");
  expect_failure(dg_stream_get_device(nullptr, &device), "dg_stream_get_device");
  CHECK(cu == reinterpret_cast<void*>(uintptr_t(0xdead0)));
  CHECK(device == 77);

  dg_config* config = nullptr;
  REQUIRE(dg_config_create(&config) == DG_SUCCESS);
  int64_t value = kPoison, lo = kPoison, hi = kPoison;
  expect_failure(dg_config_get_int(config, 99, &value), "dg_config_get_int");
  CHECK(value == kPoison);
  expect_failure(dg_config_get_bounds(99, &lo, &hi), "dg_config_get_bounds");
  CHECK((lo == kPoison && hi == kPoison));
  dg_config* clone = reinterpret_cast<dg_config*>(uintptr_t(0xdead0));
  expect_failure(dg_config_clone(nullptr, &clone), "dg_config_clone");
  CHECK(clone == reinterpret_cast<dg_config*>(uintptr_t(0xdead0)));
  REQUIRE(dg_config_set_string(config, DG_CONFIG_CACHE_DIR, "/some/dir") == DG_SUCCESS);
  char buffer[4] = {'p', 'p', 'p', 'p'};
  size_t required = 0;
  expect_failure(dg_config_get_string(config, DG_CONFIG_CACHE_DIR, buffer, sizeof(buffer), &required), "small buffer");
  CHECK(std::memcmp(buffer, "pppp", 4) == 0);
  CHECK(required == std::strlen("/some/dir") + 1);  // the documented exception
  dg_config_destroy(config);

  dg_tensor* t = nullptr;
  const int64_t ok_sizes[2] = {4, 4};
  REQUIRE(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 2, ok_sizes, nullptr) == DG_SUCCESS);
  Outs o;
  int32_t rank = 77;
  expect_failure(dg_tensor_get(nullptr, nullptr, nullptr, &rank, o.sizes, o.strides), "dg_tensor_get");
  CHECK(rank == 77);
  CHECK(o.untouched());
  dg_tensor_destroy(t);
}
