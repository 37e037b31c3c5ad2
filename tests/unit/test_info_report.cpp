// dg_info_report: the size query, the report, and its two errors with the outputs untouched.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "dg.h"

TEST_CASE("dg_info_report: size query, report, and errors that leave the outputs untouched") {
  size_t required = 0;
  REQUIRE(dg_info_report(nullptr, 0, &required) == DG_SUCCESS);
  REQUIRE(required > 1);

  // Room for growth between the calls (a cache entry may appear).
  std::vector<char> buffer(required + 4096, 'x');
  size_t written = 0;
  REQUIRE(dg_info_report(buffer.data(), buffer.size(), &written) == DG_SUCCESS);
  const std::string report(buffer.data());
  CHECK(report.size() + 1 == written);
  CHECK(report.rfind("libdg: ", 0) == 0);
  CHECK(report.find("\njit cache: ") != std::string::npos);

  size_t untouched = 12345;
  CHECK(dg_info_report(nullptr, 16, &untouched) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::strstr(dg_last_error(), "buffer") != nullptr);
  CHECK(untouched == 12345);

  std::vector<char> small(8, 'y');
  CHECK(dg_info_report(small.data(), small.size(), &untouched) == DG_ERROR_INVALID_ARGUMENT);
  CHECK(std::strstr(dg_last_error(), "capacity") != nullptr);
  CHECK(untouched == 12345);
  CHECK(std::string(small.begin(), small.end()) == std::string(8, 'y'));
}
