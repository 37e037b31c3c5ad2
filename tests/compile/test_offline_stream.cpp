// Offline streams compile kernels into the disk cache without a GPU, and refuse to launch.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "dg.h"

namespace fs = std::filesystem;

TEST_CASE("an offline stream fills the disk cache and cannot launch") {
  char tmpl[] = "/tmp/dg-offline-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path root = tmpl;
  dg_config* config = nullptr;
  REQUIRE(dg_config_create(&config) == DG_SUCCESS);
  REQUIRE(dg_config_set_string(config, DG_CONFIG_CACHE_DIR, root.c_str()) == DG_SUCCESS);

  dg_stream* stream = nullptr;
  REQUIRE(dg_stream_create_offline(&stream, 9, 0, 132, config) == DG_SUCCESS);
  int32_t device = 0;
  REQUIRE(dg_stream_get_device(stream, &device) == DG_SUCCESS);
  CHECK(device == -1);

  int64_t compiled_before = 0, compiled_after = 0;
  REQUIRE(dg_jit_get_stats(&compiled_before, nullptr, nullptr) == DG_SUCCESS);
  REQUIRE_MESSAGE(dg_gemm_prepare(stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 512, 768, 1024, DG_DTYPE_BFLOAT16, 0,
                                  nullptr) == DG_SUCCESS,
                  dg_last_error());
  REQUIRE(dg_jit_get_stats(&compiled_after, nullptr, nullptr) == DG_SUCCESS);
  CHECK(compiled_after > compiled_before);
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(root / "libdg"))
    entries += e.path().extension() == ".cubin" && e.path().filename().string().rfind("sm90_gemm-", 0) == 0;
  CHECK(entries == 1);

  // Preparing again is a memory hit: nothing new is compiled.
  REQUIRE(dg_gemm_prepare(stream, DG_DTYPE_BFLOAT16, DG_GEMM_LAYOUT_NT, 512, 768, 1024, DG_DTYPE_BFLOAT16, 0, nullptr) ==
          DG_SUCCESS);
  int64_t compiled_again = 0;
  REQUIRE(dg_jit_get_stats(&compiled_again, nullptr, nullptr) == DG_SUCCESS);
  CHECK(compiled_again == compiled_after);

  CHECK(dg_stream_synchronize(stream) == DG_ERROR_NO_DEVICE);
  CHECK(std::string(dg_last_error()).find("offline") != std::string::npos);

  dg_stream* bad = nullptr;
  CHECK(dg_stream_create_offline(&bad, 8, 0, 132, nullptr) == DG_ERROR_UNSUPPORTED);
  CHECK(dg_stream_create_offline(&bad, 9, 0, 0, nullptr) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(bad == nullptr);

  dg_stream_destroy(stream);
  dg_config_destroy(config);
  fs::remove_all(root);
}
