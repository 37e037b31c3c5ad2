// The DG_* environment variables: one parser per kind of value, shared by the config defaults and
// the logger, so that every variable accepts the same spellings and a value that is not understood
// is reported (once per variable, naming it) instead of silently read as something else.
//
// The rule for numbers, switches and level names (dg.h and the README state it for users):
// leading and trailing whitespace is ignored, and a value that is empty or only whitespace counts
// as unset; an integer is an optional '+' or '-' and decimal digits, nothing else ("012" is 12;
// hex, exponents and separators are refused). Paths (DG_JIT_CACHE_DIR, ...) are taken verbatim.
#pragma once
#include <optional>
#include <string>

namespace dg::env {

// The variable's value, or nullptr when it is unset or empty.
const char* get(const char* name);

// `text` without leading and trailing whitespace.
std::string trim(const char* text);

// An integer by the rule above; nullopt when `text` is not one or does not fit in a long long.
std::optional<long long> parse_integer(const char* text);

// 1/0, true/false, on/off, yes/no in any case, whitespace around ignored; nullopt for anything else.
std::optional<bool> parse_bool(const char* text);

// True the first time it is called for `name` (the caller then warns about its value).
bool first_warning(const char* name);

// The variable's value trimmed, or nullopt when unset, empty or only whitespace.
std::optional<std::string> get_trimmed(const char* name);

// A boolean variable; `fallback` when unset or not understood (with one warning).
bool flag(const char* name, bool fallback = false);

// An integer variable in [lo, hi]; `fallback` when unset or not understood (with one warning).
int integer(const char* name, int fallback, int lo, int hi);

}  // namespace dg::env
