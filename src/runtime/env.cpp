#include "runtime/env.h"

#include <strings.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

#include "runtime/log.h"

namespace dg::env {

const char* get(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

std::optional<bool> parse_bool(const char* text) {
  for (const char* yes : {"1", "true", "on", "yes"})
    if (strcasecmp(text, yes) == 0) return true;
  for (const char* no : {"0", "false", "off", "no"})
    if (strcasecmp(text, no) == 0) return false;
  return std::nullopt;
}

bool first_warning(const char* name) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  return warned.insert(name).second;
}

bool flag(const char* name, bool fallback) {
  const char* v = get(name);
  if (v == nullptr) return fallback;
  if (const std::optional<bool> b = parse_bool(v)) return *b;
  if (first_warning(name))
    log::warn("ignoring {}={}: expected 1/0, true/false, on/off or yes/no; using {}", name, v, fallback ? 1 : 0);
  return fallback;
}

int integer(const char* name, int fallback, int lo, int hi) {
  const char* v = get(name);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (*end != '\0' || errno == ERANGE || x < lo || x > hi) {
    if (first_warning(name))
      log::warn("ignoring {}={}: expected an integer in [{}, {}]; using {}", name, v, lo, hi, fallback);
    return fallback;
  }
  return static_cast<int>(x);
}

}  // namespace dg::env
