// log::Deferred without the logger's headers, for status.h's DG_API_GUARD (every entry point).
#pragma once
#include <cstddef>

namespace dg::log {

// While one is alive on a thread, messages that thread logs for a callback are held (the first
// kMaxHeld of them; a count of the rest follows) and delivered in order when the outermost one on
// the thread ends. Without a callback, stderr gets them at once. Scopes nest.
class Deferred {
 public:
  static constexpr size_t kMaxHeld = 256;
  Deferred();
  ~Deferred();
  Deferred(const Deferred&) = delete;
  Deferred& operator=(const Deferred&) = delete;
};

}  // namespace dg::log
