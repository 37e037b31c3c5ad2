#include "runtime/env.h"

#include <strings.h>

#include <cctype>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include "runtime/log.h"

namespace dg::env {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

std::string trim(const char* text) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  std::string s(text);
  size_t begin = 0, end = s.size();
  while (begin < end && space(s[begin])) ++begin;
  while (end > begin && space(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

std::optional<long long> parse_integer(const char* text) {
  const std::string s = trim(text);
  size_t i = s.empty() || (s[0] != '+' && s[0] != '-') ? 0 : 1;
  if (i == s.size()) return std::nullopt;
  const bool negative = s[0] == '-';
  long long value = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    const int digit = s[i] - '0';
    // Accumulated negatively, so that the most negative long long is representable.
    if (__builtin_mul_overflow(value, 10, &value) || __builtin_sub_overflow(value, digit, &value))
      return std::nullopt;
  }
  if (negative) return value;
  if (value == std::numeric_limits<long long>::min()) return std::nullopt;
  return -value;
}

std::optional<bool> parse_bool(const char* text) {
  const std::string s = trim(text);
  for (const char* yes : {"1", "true", "on", "yes"})
    if (strcasecmp(s.c_str(), yes) == 0) return true;
  for (const char* no : {"0", "false", "off", "no"})
    if (strcasecmp(s.c_str(), no) == 0) return false;
  return std::nullopt;
}

bool first_warning(const char* name) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  return warned.insert(name).second;
}

std::optional<std::string> get_trimmed(const char* name) {
  const char* v = get(name);
  if (v == nullptr) return std::nullopt;
  std::string s = trim(v);
  if (s.empty()) return std::nullopt;
  return s;
}

bool flag(const char* name, bool fallback) {
  const std::optional<std::string> v = get_trimmed(name);
  if (!v) return fallback;
  if (const std::optional<bool> b = parse_bool(v->c_str())) return *b;
  if (first_warning(name))
    log::warn("ignoring {}={}: expected 1/0, true/false, on/off or yes/no; using {}", name, *v, fallback ? 1 : 0);
  return fallback;
}

int integer(const char* name, int fallback, int lo, int hi) {
  const std::optional<std::string> v = get_trimmed(name);
  if (!v) return fallback;
  const std::optional<long long> x = parse_integer(v->c_str());
  if (!x || *x < lo || *x > hi) {
    if (first_warning(name))
      log::warn("ignoring {}={}: expected an integer in [{}, {}] (decimal digits, optionally signed); using {}", name,
                *v, lo, hi, fallback);
    return fallback;
  }
  return static_cast<int>(*x);
}

}  // namespace dg::env
