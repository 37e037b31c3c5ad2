// The C API's handles, settings and argument validation, without a GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "dg.h"

namespace {

bool has_device() {
  int32_t n = 0;
  return dg_device_count(&n) == DG_SUCCESS && n > 0;
}

// Asserts `status` and that the thread's message mentions `needle`.
void expect_error(dg_status status, dg_status expected, const char* needle) {
  CHECK_MESSAGE(status == expected, dg_status_string(status), " ", dg_last_error());
  CHECK_MESSAGE(std::strstr(dg_last_error(), needle) != nullptr, "message: ", dg_last_error(), " lacks: ", needle);
}

struct Tensor {
  dg_tensor* t = nullptr;
  Tensor(void* data, dg_dtype dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {}) {
    REQUIRE(dg_tensor_create(&t, data, dtype, static_cast<int32_t>(sizes.size()), sizes.data(),
                             strides.empty() ? nullptr : strides.data()) == DG_SUCCESS);
  }
  ~Tensor() { dg_tensor_destroy(t); }
};

}  // namespace

TEST_CASE("status names, version and dtypes") {
  CHECK(std::string(dg_status_string(DG_SUCCESS)) == "DG_SUCCESS");
  CHECK(std::string(dg_status_string(DG_ERROR_COMPILE)) == "DG_ERROR_COMPILE");
  CHECK(std::string(dg_status_string(12345)) == "DG_UNKNOWN_STATUS");
  CHECK(dg_version_number() == DG_VERSION_NUMBER);
  const std::string expected = std::to_string(DG_VERSION_MAJOR) + "." + std::to_string(DG_VERSION_MINOR) + "." +
                               std::to_string(DG_VERSION_PATCH);
  CHECK(std::string(dg_version()) == expected);
  CHECK(dg_dtype_size(DG_DTYPE_BFLOAT16) == 2);
  CHECK(dg_dtype_size(DG_DTYPE_FLOAT8_E4M3) == 1);
  CHECK(dg_dtype_size(DG_DTYPE_UE8M0X4) == 4);
  CHECK(dg_dtype_size(DG_DTYPE_FLOAT4_E2M1X2) == 1);
  CHECK(dg_dtype_size(999) == 0);
  CHECK(std::string(dg_dtype_name(DG_DTYPE_FLOAT8_E4M3)) == "float8_e4m3");
}

TEST_CASE("last error is per thread") {
  int64_t out = 0;
  expect_error(dg_get_tma_aligned_size(5, 3, &out), DG_ERROR_INVALID_ARGUMENT, "element_size");
  std::string other;
  std::thread([&] { other = dg_last_error(); }).join();
  CHECK(other.empty());
  CHECK(std::strstr(dg_last_error(), "element_size") != nullptr);
}

TEST_CASE("log callback and level") {
  struct Sink {
    std::mutex m;
    std::vector<std::pair<int, std::string>> got;
  } sink;
  auto cb = [](int32_t level, const char* msg, void* user) {
    auto* s = static_cast<Sink*>(user);
    std::lock_guard<std::mutex> lock(s->m);
    s->got.emplace_back(level, msg);
  };
  const int32_t before = dg_get_log_level();
  REQUIRE(dg_set_log_callback(cb, &sink) == DG_SUCCESS);
  REQUIRE(dg_set_log_level(DG_LOG_DEBUG) == DG_SUCCESS);
  CHECK(dg_get_log_level() == DG_LOG_DEBUG);
  int64_t out = 0;
  dg_get_tma_aligned_size(1, 0, &out);  // failures are logged at debug level
  REQUIRE(dg_set_log_callback(nullptr, nullptr) == DG_SUCCESS);
  REQUIRE(dg_set_log_level(before) == DG_SUCCESS);
  REQUIRE(!sink.got.empty());
  CHECK(sink.got.back().first == DG_LOG_DEBUG);
  CHECK(sink.got.back().second.find("element_size") != std::string::npos);
  expect_error(dg_set_log_level(6), DG_ERROR_INVALID_ARGUMENT, "level");
  expect_error(dg_set_log_level(-1), DG_ERROR_INVALID_ARGUMENT, "level");
}

TEST_CASE("tensor descriptors") {
  int64_t sizes[2] = {3, 5};
  dg_tensor* t = nullptr;
  REQUIRE(dg_tensor_create(&t, reinterpret_cast<void*>(0x1000), DG_DTYPE_BFLOAT16, 2, sizes, nullptr) == DG_SUCCESS);
  int64_t got_sizes[DG_MAX_RANK] = {}, got_strides[DG_MAX_RANK] = {};
  int32_t rank = 0;
  dg_dtype dtype = 0;
  void* data = nullptr;
  REQUIRE(dg_tensor_get(t, &data, &dtype, &rank, got_sizes, got_strides) == DG_SUCCESS);
  CHECK(rank == 2);
  CHECK(dtype == DG_DTYPE_BFLOAT16);
  CHECK(data == reinterpret_cast<void*>(0x1000));
  CHECK(got_strides[0] == 5);
  CHECK(got_strides[1] == 1);
  REQUIRE(dg_tensor_set_data(t, reinterpret_cast<void*>(0x2000)) == DG_SUCCESS);
  REQUIRE(dg_tensor_get(t, &data, nullptr, nullptr, nullptr, nullptr) == DG_SUCCESS);
  CHECK(data == reinterpret_cast<void*>(0x2000));
  dg_tensor_destroy(t);
  t = nullptr;  // failures below leave it as it is
  dg_tensor_destroy(nullptr);

  expect_error(dg_tensor_create(nullptr, nullptr, DG_DTYPE_FLOAT32, 2, sizes, nullptr), DG_ERROR_INVALID_ARGUMENT, "tensor");
  expect_error(dg_tensor_create(&t, nullptr, 77, 2, sizes, nullptr), DG_ERROR_INVALID_ARGUMENT, "dtype");
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 0, sizes, nullptr), DG_ERROR_INVALID_ARGUMENT, "rank");
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 5, sizes, nullptr), DG_ERROR_INVALID_ARGUMENT, "rank");
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 2, nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "sizes");
  int64_t negative[2] = {3, -1};
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 2, negative, nullptr), DG_ERROR_INVALID_ARGUMENT, "sizes[1]");
  int64_t bad_strides[2] = {-5, 1};
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 2, sizes, bad_strides), DG_ERROR_INVALID_ARGUMENT, "strides[0]");
  CHECK(t == nullptr);
  // Empty tensors: no elements, but the other sizes still multiply within int64 (zeros count as 1),
  // with or without strides.
  const int64_t huge = (int64_t(1) << 62) + (int64_t(1) << 61);
  int64_t empty_ok[2] = {huge, 0}, empty_wraps[3] = {4, huge, 0}, zero_strides[3] = {0, 0, 0};
  REQUIRE(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 2, empty_ok, nullptr) == DG_SUCCESS);
  dg_tensor_destroy(t);
  t = nullptr;  // failures below leave it as it is
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 3, empty_wraps, nullptr), DG_ERROR_INVALID_ARGUMENT,
               "sizes: the product of the sizes overflows");
  expect_error(dg_tensor_create(&t, nullptr, DG_DTYPE_FLOAT32, 3, empty_wraps, zero_strides), DG_ERROR_INVALID_ARGUMENT,
               "at sizes[0] = 4");
  CHECK(t == nullptr);
  expect_error(dg_tensor_set_data(nullptr, nullptr), DG_ERROR_INVALID_ARGUMENT, "tensor");
}

TEST_CASE("config keys, bounds and strings") {
  dg_config* c = nullptr;
  REQUIRE(dg_config_create(&c) == DG_SUCCESS);
  int64_t lo = 0, hi = 0, v = 0;
  REQUIRE(dg_config_get_bounds(DG_CONFIG_TC_UTIL, &lo, &hi) == DG_SUCCESS);
  CHECK(lo == 1);
  CHECK(hi == 100);
  REQUIRE(dg_config_set_int(c, DG_CONFIG_NUM_SMS, 66) == DG_SUCCESS);
  REQUIRE(dg_config_get_int(c, DG_CONFIG_NUM_SMS, &v) == DG_SUCCESS);
  CHECK(v == 66);
  expect_error(dg_config_set_int(c, DG_CONFIG_NUM_SMS, -1), DG_ERROR_INVALID_ARGUMENT, "out of range");
  expect_error(dg_config_set_int(c, DG_CONFIG_TC_UTIL, 101), DG_ERROR_INVALID_ARGUMENT, "1..100");
  expect_error(dg_config_set_int(c, DG_CONFIG_PDL, 2), DG_ERROR_INVALID_ARGUMENT, "0..1");
  expect_error(dg_config_set_int(c, DG_CONFIG_COMPILER, 7), DG_ERROR_INVALID_ARGUMENT, "value");
  expect_error(dg_config_set_int(c, 999, 1), DG_ERROR_INVALID_ARGUMENT, "key");
  expect_error(dg_config_set_int(c, DG_CONFIG_CACHE_DIR, 1), DG_ERROR_INVALID_ARGUMENT, "key");
  expect_error(dg_config_set_int(nullptr, DG_CONFIG_PDL, 1), DG_ERROR_INVALID_ARGUMENT, "config");
  expect_error(dg_config_get_int(c, DG_CONFIG_PDL, nullptr), DG_ERROR_INVALID_ARGUMENT, "value");

  REQUIRE(dg_config_set_string(c, DG_CONFIG_CACHE_DIR, "/tmp/dg-test-cache") == DG_SUCCESS);
  size_t need = 0;
  REQUIRE(dg_config_get_string(c, DG_CONFIG_CACHE_DIR, nullptr, 0, &need) == DG_SUCCESS);
  CHECK(need == std::strlen("/tmp/dg-test-cache") + 1);
  char small[4];
  expect_error(dg_config_get_string(c, DG_CONFIG_CACHE_DIR, small, sizeof(small), &need), DG_ERROR_INVALID_ARGUMENT,
               "capacity");
  std::string buf(need, '\0');
  REQUIRE(dg_config_get_string(c, DG_CONFIG_CACHE_DIR, buf.data(), buf.size(), nullptr) == DG_SUCCESS);
  CHECK(std::string(buf.c_str()) == "/tmp/dg-test-cache");
  expect_error(dg_config_set_string(c, DG_CONFIG_NUM_SMS, "x"), DG_ERROR_INVALID_ARGUMENT, "string");
  expect_error(dg_config_set_string(c, DG_CONFIG_CACHE_DIR, nullptr), DG_ERROR_INVALID_ARGUMENT, "value");

  dg_config* copy = nullptr;
  REQUIRE(dg_config_clone(c, &copy) == DG_SUCCESS);
  REQUIRE(dg_config_get_int(copy, DG_CONFIG_NUM_SMS, &v) == DG_SUCCESS);
  CHECK(v == 66);
  dg_config_destroy(copy);
  dg_config_destroy(c);
  dg_config_destroy(nullptr);
}

TEST_CASE("process-wide settings") {
  expect_error(dg_set_num_sms(-2), DG_ERROR_INVALID_ARGUMENT, "num_sms");
  expect_error(dg_set_num_sms(5000), DG_ERROR_INVALID_ARGUMENT, "num_sms");
  REQUIRE(dg_set_tc_util(0.5) == DG_SUCCESS);
  CHECK(dg_get_tc_util() == doctest::Approx(0.5));
  REQUIRE(dg_set_tc_util(0.0) == DG_SUCCESS);
  CHECK(dg_get_tc_util() == doctest::Approx(1.0));
  expect_error(dg_set_tc_util(1.5), DG_ERROR_INVALID_ARGUMENT, "ratio");
  CHECK(dg_get_mk_alignment_for_contiguous_layout() == 128);
  int64_t a = 0;
  REQUIRE(dg_get_tma_aligned_size(7296 / 128, 4, &a) == DG_SUCCESS);
  CHECK(a == 60);
  REQUIRE(dg_get_tma_aligned_size(17, 1, &a) == DG_SUCCESS);
  CHECK(a == 32);
  REQUIRE(dg_get_tma_aligned_size(9, 2, &a) == DG_SUCCESS);
  CHECK(a == 16);
  expect_error(dg_get_tma_aligned_size(-1, 4, &a), DG_ERROR_INVALID_ARGUMENT, "x");
}

TEST_CASE("devices and streams without a device say so") {
  if (has_device()) return;  // covered by tests/gpu on a GPU machine
  int32_t n = -1;
  expect_error(dg_device_count(&n), DG_ERROR_NO_DEVICE, "libcuda.so.1");
  CHECK(n == -1);  // untouched on error
  dg_stream* s = nullptr;
  expect_error(dg_stream_create(&s, 0, nullptr, DG_STREAM_CREATE, nullptr), DG_ERROR_NO_DEVICE, "CUDA driver");
  CHECK(s == nullptr);
  CHECK(dg_get_num_sms() == 0);
  int32_t major = 0, minor = 0;
  expect_error(dg_device_get_capability(0, &major, &minor), DG_ERROR_NO_DEVICE, "driver");
  dg_stream_destroy(nullptr);
}

TEST_CASE("stream arguments are validated before the device") {
  dg_stream* s = nullptr;
  expect_error(dg_stream_create(nullptr, 0, nullptr, 0, nullptr), DG_ERROR_INVALID_ARGUMENT, "stream");
  expect_error(dg_stream_create(&s, 0, nullptr, 9, nullptr), DG_ERROR_INVALID_ARGUMENT, "flags");
  expect_error(dg_stream_create(&s, 0, reinterpret_cast<void*>(0x10), DG_STREAM_CREATE, nullptr),
               DG_ERROR_INVALID_ARGUMENT, "cu_stream");
  void* cu = nullptr;
  expect_error(dg_stream_get_cu_stream(nullptr, &cu), DG_ERROR_INVALID_ARGUMENT, "stream");
  expect_error(dg_stream_synchronize(nullptr), DG_ERROR_INVALID_ARGUMENT, "stream");
  int32_t dev = 0;
  expect_error(dg_stream_get_device(nullptr, &dev), DG_ERROR_INVALID_ARGUMENT, "stream");
}

TEST_CASE("scaling-factor layout queries") {
  int64_t sizes[3] = {4, 4097, 57};
  int64_t out_sizes[3], out_strides[3];
  size_t bytes = 0;
  REQUIRE(dg_get_mn_major_tma_aligned_tensor_layout(3, sizes, out_sizes, out_strides, &bytes) == DG_SUCCESS);
  CHECK(out_sizes[0] == 4);
  CHECK(out_sizes[1] == 4097);
  CHECK(out_sizes[2] == 57);
  CHECK(out_strides[1] == 1);
  CHECK(out_strides[2] == 4100);
  CHECK(out_strides[0] == 4100 * 57);
  CHECK(bytes == size_t(4) * 4100 * 57 * 4);

  REQUIRE(dg_get_mn_major_tma_aligned_packed_ue8m0_tensor_layout(2, sizes + 1, out_sizes, out_strides, &bytes) ==
          DG_SUCCESS);
  CHECK(out_sizes[0] == 4097);
  CHECK(out_sizes[1] == 15);  // ceil(57 / 4)
  CHECK(out_strides[0] == 1);
  CHECK(out_strides[1] == 4100);
  CHECK(bytes == size_t(4100) * 15 * 4);

  expect_error(dg_get_mn_major_tma_aligned_tensor_layout(1, sizes, out_sizes, out_strides, &bytes),
               DG_ERROR_INVALID_ARGUMENT, "rank");
  expect_error(dg_get_mn_major_tma_aligned_tensor_layout(2, nullptr, out_sizes, out_strides, &bytes),
               DG_ERROR_INVALID_ARGUMENT, "sizes");
}

// DeepGEMM's get_mn_major_tma_aligned_tensor strides, whatever the sizes: (.., 1, align(MN, 4)),
// batch stride align(MN, 4) * SF_K.
std::vector<int64_t> deepgemm_strides(const std::vector<int64_t>& sizes) {
  const int64_t mn = sizes[sizes.size() - 2], sf_k = sizes.back(), am = (mn + 3) / 4 * 4;
  std::vector<int64_t> s = {1, am};
  if (sizes.size() == 3) s.insert(s.begin(), am * sf_k);
  return s;
}

TEST_CASE("scaling-factor layouts have DeepGEMM's strides for every shape class") {
  const std::vector<std::vector<int64_t>> shapes = {
      {4096, 1}, {4097, 1}, {3, 1}, {1, 1}, {1, 56}, {4097, 56}, {0, 56}, {4096, 0},
      {2, 4096, 1}, {2, 4097, 1}, {1, 4096, 1}, {1, 4097, 56}, {3, 1, 56}, {2, 1, 1}};
  for (const auto& sizes : shapes) {
    CAPTURE(sizes.size());
    CAPTURE(sizes[0]);
    CAPTURE(sizes[1]);
    const int32_t rank = static_cast<int32_t>(sizes.size());
    const std::vector<int64_t> want = deepgemm_strides(sizes);
    int64_t out_sizes[3], out_strides[3];
    size_t bytes = 0;
    REQUIRE(dg_get_mn_major_tma_aligned_tensor_layout(rank, sizes.data(), out_sizes, out_strides, &bytes) == DG_SUCCESS);
    CHECK(std::vector<int64_t>(out_strides, out_strides + rank) == want);
    CHECK(std::vector<int64_t>(out_sizes, out_sizes + rank) == sizes);
    // The transform plan answers the same strides for a row-major input (a copy) and for inputs
    // that already have the layout in memory: DeepGEMM's strides, or ones that differ only along
    // dimensions of size 1 (no copy).
    dg_sf_recipe recipe = DG_SF_RECIPE_INIT;
    recipe.arch_major = 9;
    recipe.num_groups = rank == 3 ? static_cast<int32_t>(sizes[0]) : 0;
    const int64_t mn = sizes[rank - 2], k = sizes[rank - 1] * 128;
    std::vector<int64_t> loose = want;
    for (int i = 0; i < rank; ++i)
      if (sizes[i] == 1) loose[i] = 1;
    const bool empty = std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
    for (const std::vector<int64_t>& strides : {std::vector<int64_t>{}, want, loose}) {
      Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, sizes, strides);
      int32_t is_input = -1;
      dg_dtype dtype = 0;
      int64_t s[3], st[3];
      REQUIRE(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, s, st, &bytes) == DG_SUCCESS);
      CHECK(std::vector<int64_t>(st, st + rank) == want);
      if (!strides.empty()) CHECK(is_input == 1);
      if (strides.empty() && !empty && sizes[rank - 1] > 1) CHECK(is_input == 0);  // row-major: a copy
    }
  }
}

TEST_CASE("scaling-factor transform plans") {
  const int64_t mn = 4097, k = 7296;  // SF_K = 57
  dg_sf_recipe recipe = DG_SF_RECIPE_INIT;
  recipe.arch_major = 9;
  int32_t is_input = -1;
  dg_dtype dtype = 0;
  int64_t sizes[3], strides[3];
  size_t bytes = 0;

  SUBCASE("SM90 per-token scales, row-major: transposed into an MN-major buffer") {
    Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {mn, 57});
    REQUIRE(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) == DG_SUCCESS);
    CHECK(is_input == 0);
    CHECK(dtype == DG_DTYPE_FLOAT32);
    CHECK(strides[0] == 1);
    CHECK(strides[1] == 4100);
    CHECK(bytes == size_t(4100) * 57 * 4);
  }
  SUBCASE("SM90 per-token scales already MN-major TMA-aligned: used as they are") {
    Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {mn, 57}, {1, 4100});
    REQUIRE(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) == DG_SUCCESS);
    CHECK(is_input == 1);
    CHECK(dg_transform_sf_into_required_layout(nullptr, sf.t, mn, k, &recipe, nullptr) == DG_SUCCESS);
  }
  SUBCASE("SM90 per-block scales: checked, never copied") {
    recipe.gran_mn = 128;
    Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {33, 57});
    REQUIRE(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) == DG_SUCCESS);
    CHECK(is_input == 1);
    Tensor strided(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {33, 57}, {64, 1});
    expect_error(dg_transform_sf_layout(nullptr, strided.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "contiguous");
  }
  SUBCASE("SM100 FP32 per-block scales: broadcast per row and packed to UE8M0") {
    recipe.arch_major = 10;
    recipe.gran_mn = 128;
    Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {2, 33, 57});
    recipe.num_groups = 2;
    REQUIRE(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) == DG_SUCCESS);
    CHECK(is_input == 0);
    CHECK(dtype == DG_DTYPE_INT32);
    CHECK(sizes[1] == mn);
    CHECK(sizes[2] == 15);
    CHECK(strides[0] == 4100 * 15);
  }
  SUBCASE("SM100 packed scales: checked, their own strides answered (DeepGEMM returns them as they are)") {
    recipe.arch_major = 10;
    Tensor one_row(reinterpret_cast<void*>(0x1000), DG_DTYPE_INT32, {1, 15}, {7, 4});  // MN = 1: any row stride
    REQUIRE(dg_transform_sf_layout(nullptr, one_row.t, 1, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) ==
            DG_SUCCESS);
    CHECK(is_input == 1);
    CHECK(strides[0] == 7);
    CHECK(strides[1] == 4);
    Tensor packed(reinterpret_cast<void*>(0x1000), DG_DTYPE_INT32, {mn, 15}, {1, 4100});
    REQUIRE(dg_transform_sf_layout(nullptr, packed.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes) ==
            DG_SUCCESS);
    CHECK(is_input == 1);
    CHECK(strides[0] == 1);
    CHECK(strides[1] == 4100);
  }
  SUBCASE("bad shapes and recipes name the argument") {
    Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {mn, 56});
    expect_error(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "ceil(k / gran_k)");
    recipe.gran_k = 64;
    expect_error(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "gran_k");
    recipe.gran_k = 128;
    recipe.num_groups = 3;
    expect_error(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "rank");
    recipe.num_groups = 0;
    recipe.arch_major = 0;
    expect_error(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "stream");
    recipe.arch_major = 8;
    expect_error(dg_transform_sf_layout(nullptr, sf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_UNSUPPORTED, "arch_major");
    dg_sf_recipe old = recipe;
    old.struct_size = 8;
    expect_error(dg_transform_sf_layout(nullptr, sf.t, mn, k, &old, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "struct_size");
    Tensor bf(reinterpret_cast<void*>(0x1000), DG_DTYPE_BFLOAT16, {mn, 57});
    recipe.arch_major = 9;
    expect_error(dg_transform_sf_layout(nullptr, bf.t, mn, k, &recipe, &is_input, &dtype, sizes, strides, &bytes),
                 DG_ERROR_INVALID_ARGUMENT, "dtype");
  }
}

TEST_CASE("layout entry points validate before touching a device") {
  Tensor sf(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {128, 4});
  Tensor out(reinterpret_cast<void*>(0x2000), DG_DTYPE_FLOAT32, {128, 4}, {1, 128});
  Tensor bf(reinterpret_cast<void*>(0x1000), DG_DTYPE_BFLOAT16, {128, 4});
  Tensor vec(reinterpret_cast<void*>(0x1000), DG_DTYPE_FLOAT32, {128});
  Tensor misaligned(reinterpret_cast<void*>(0x2004), DG_DTYPE_FLOAT32, {128, 4}, {1, 128});
  expect_error(dg_get_mn_major_tma_aligned_tensor(nullptr, nullptr, out.t), DG_ERROR_INVALID_ARGUMENT, "sf");
  expect_error(dg_get_mn_major_tma_aligned_tensor(nullptr, bf.t, out.t), DG_ERROR_INVALID_ARGUMENT, "sf: dtype");
  expect_error(dg_get_mn_major_tma_aligned_tensor(nullptr, vec.t, out.t), DG_ERROR_INVALID_ARGUMENT, "sf: rank");
  expect_error(dg_get_mn_major_tma_aligned_tensor(nullptr, sf.t, nullptr), DG_ERROR_INVALID_ARGUMENT, "out");
  expect_error(dg_get_mn_major_tma_aligned_tensor(nullptr, sf.t, misaligned.t), DG_ERROR_INVALID_ARGUMENT, "16-byte");
  expect_error(dg_get_mn_major_tma_aligned_tensor(nullptr, sf.t, out.t), DG_ERROR_INVALID_ARGUMENT, "stream");
  expect_error(dg_get_mn_major_tma_aligned_packed_ue8m0_tensor(nullptr, sf.t, out.t), DG_ERROR_INVALID_ARGUMENT,
               "out: dtype");
}

TEST_CASE("the NVFP4 GEMV on an offline stream compiles its kernel, then refuses the launch as offline") {
  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create_offline(&stream, 9, 0, 132, nullptr) == DG_SUCCESS);
  const int64_t m = 128, k = 256, l = 2;
  void* p = reinterpret_cast<void*>(0x7f0000000000ull);
  Tensor a(p, DG_DTYPE_FLOAT4_E2M1X2, {m, k / 2, l}, {k / 2, 1, m * k / 2});
  Tensor sfa(p, DG_DTYPE_FLOAT8_E4M3, {m, k / 16, l}, {k / 16, 1, m * k / 16});
  Tensor b(p, DG_DTYPE_FLOAT4_E2M1X2, {1, k / 2, l}, {k / 2, 1, k / 2});
  Tensor sfb(p, DG_DTYPE_FLOAT8_E4M3, {1, k / 16, l}, {k / 16, 1, k / 16});
  Tensor c(p, DG_DTYPE_FLOAT16, {m, 1, l}, {1, 1, m});
  int64_t compiled = 0, from_disk = 0, hits = 0;
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  const int64_t requests = compiled + from_disk + hits;
  // The same "offline" refusal as every other family, not a driver error from a kernel that was
  // never loaded.
  expect_error(dg_nvfp4_gemv(stream, a.t, sfa.t, b.t, sfb.t, c.t, nullptr), DG_ERROR_NO_DEVICE,
               "is an offline description");
  REQUIRE(dg_jit_get_stats(&compiled, &from_disk, &hits) == DG_SUCCESS);
  CHECK(compiled + from_disk + hits == requests + 1);
  dg_stream_destroy(stream);
}
