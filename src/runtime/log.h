// The library's private logger: an unregistered spdlog logger (header-only, so libdg.so needs no
// spdlog or fmt at run time) whose sink is either stderr or the user's dg_log_callback. The
// callback may call into libdg; what libdg logs on that thread meanwhile is dropped.
//   dg::log::warn("cache dir {} is not writable: {}", dir, reason);
//
// The callback never runs while libdg holds a lock or a kernel's build slot on that thread: every
// public call that may take one (DG_API_GUARD, the device queries) and every kernel build runs
// inside a Deferred scope, and what is logged within one reaches the callback only when the
// outermost scope on the thread ends.
#pragma once
#include <spdlog/spdlog.h>

#include "dg.h"
#include "runtime/log_deferred.h"

namespace dg::log {

spdlog::logger& get();
// Safe to call from inside a callback. From elsewhere it returns once no thread runs a replaced
// callback.
void set_callback(dg_log_callback callback, void* user_data);
void set_level(int level);  // a DG_LOG_* value
int level();
// The level DG_LOG_LEVEL (or DG_JIT_DEBUG) asked for when the logger started; DG_LOG_WARN if none.
int environment_level();
// Parses DG_LOG_LEVEL style names ("warn", "3", ...); returns -1 when not recognised.
int parse_level(const char* text);

template <typename... A> void trace(fmt::format_string<A...> f, A&&... a) { get().trace(f, std::forward<A>(a)...); }
template <typename... A> void debug(fmt::format_string<A...> f, A&&... a) { get().debug(f, std::forward<A>(a)...); }
template <typename... A> void info(fmt::format_string<A...> f, A&&... a) { get().info(f, std::forward<A>(a)...); }
template <typename... A> void warn(fmt::format_string<A...> f, A&&... a) { get().warn(f, std::forward<A>(a)...); }
template <typename... A> void error(fmt::format_string<A...> f, A&&... a) { get().error(f, std::forward<A>(a)...); }

}  // namespace dg::log
