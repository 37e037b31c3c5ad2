// The DG_* environment variables: one parser per kind of value, shared by the config defaults and
// the logger, so that every variable accepts the same spellings and a value that is not understood
// is reported (once per variable, naming it) instead of silently read as something else.
#pragma once
#include <optional>

namespace dg::env {

// The variable's value, or nullptr when it is unset or empty.
const char* get(const char* name);

// 1/0, true/false, on/off, yes/no in any case; nullopt for anything else.
std::optional<bool> parse_bool(const char* text);

// True the first time it is called for `name` (the caller then warns about its value).
bool first_warning(const char* name);

// A boolean variable; `fallback` when unset or not understood (with one warning).
bool flag(const char* name, bool fallback = false);

// An integer variable in [lo, hi]; `fallback` when unset or not understood (with one warning).
int integer(const char* name, int fallback, int lo, int hi);

}  // namespace dg::env
