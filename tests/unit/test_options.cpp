// Option structs across versions: older (smaller) structs keep defaults for the fields they lack;
// newer (larger) ones are accepted only when the unknown fields are zero.
#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "runtime/options.h"

namespace {
struct OptionsV2 {  // "version 2" of a struct whose version 1 ended after `alpha`
  size_t struct_size;
  int32_t mode;
  float alpha;
  int32_t added_in_v2;
};
constexpr size_t kV1Size = offsetof(OptionsV2, added_in_v2);
const OptionsV2 kDefaults{sizeof(OptionsV2), 1, 1.0f, 7};

struct OptionsV3 {  // what a caller built against a newer header passes
  OptionsV2 known;
  int32_t added_in_v3;
};
}  // namespace

TEST_CASE("read_options across struct versions") {
  OptionsV2 out{};
  SUBCASE("NULL gives the defaults") {
    REQUIRE(dg::read_options<OptionsV2>(nullptr, kDefaults, kV1Size, "options", "INIT", &out) == DG_SUCCESS);
    CHECK(out.added_in_v2 == 7);
  }
  SUBCASE("an older struct keeps the defaults of newer fields") {
    OptionsV2 old{kV1Size, 3, 2.5f, 12345};  // added_in_v2 is beyond its size: must be ignored
    REQUIRE(dg::read_options(&old, kDefaults, kV1Size, "options", "INIT", &out) == DG_SUCCESS);
    CHECK(out.mode == 3);
    CHECK(out.alpha == 2.5f);
    CHECK(out.added_in_v2 == 7);
    CHECK(out.struct_size == sizeof(OptionsV2));
  }
  SUBCASE("a newer struct with its new fields zero is accepted") {
    OptionsV3 newer{};
    newer.known = {sizeof(OptionsV3), 4, 0.5f, 9};
    REQUIRE(dg::read_options(&newer.known, kDefaults, kV1Size, "options", "INIT", &out) == DG_SUCCESS);
    CHECK(out.mode == 4);
    CHECK(out.added_in_v2 == 9);
  }
  SUBCASE("a newer struct asking for something unknown is refused") {
    OptionsV3 newer{};
    newer.known = {sizeof(OptionsV3), 4, 0.5f, 9};
    newer.added_in_v3 = 1;
    CHECK(dg::read_options(&newer.known, kDefaults, kV1Size, "options", "INIT", &out) == DG_ERROR_UNSUPPORTED);
    CHECK(std::string(dg_last_error()).find("does not know") != std::string::npos);
  }
  SUBCASE("an uninitialised struct is refused with the macro's name") {
    OptionsV2 junk{3, 0, 0, 0};
    CHECK(dg::read_options(&junk, kDefaults, kV1Size, "opts", "DG_X_INIT", &out) == DG_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(dg_last_error()).find("DG_X_INIT") != std::string::npos);
  }
}
