#include "runtime/log.h"

#include <spdlog/sinks/sink.h>
#include <strings.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/env.h"
#include "runtime/status.h"

namespace dg::log {
namespace {

int to_dg(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace: return DG_LOG_TRACE;
    case spdlog::level::debug: return DG_LOG_DEBUG;
    case spdlog::level::info: return DG_LOG_INFO;
    case spdlog::level::warn: return DG_LOG_WARN;
    default: return DG_LOG_ERROR;
  }
}

spdlog::level::level_enum to_spdlog(int level) {
  switch (level) {
    case DG_LOG_TRACE: return spdlog::level::trace;
    case DG_LOG_DEBUG: return spdlog::level::debug;
    case DG_LOG_INFO: return spdlog::level::info;
    case DG_LOG_WARN: return spdlog::level::warn;
    case DG_LOG_ERROR: return spdlog::level::err;
    default: return spdlog::level::off;
  }
}

// Whether this thread is inside the user's callback (a message logged then is dropped).
thread_local bool t_in_callback = false;

// Deferred scopes open on this thread, the messages they hold and how many did not fit.
thread_local int t_defer_depth = 0;
thread_local std::vector<std::pair<int, std::string>> t_held;
thread_local size_t t_dropped = 0;

// One sink for both destinations: the user's callback when set, else stderr. No lock is held while
// the callback runs, so it may call back into libdg, dg_set_log_callback and dg_set_log_level
// included. Messages libdg logs on a thread that is inside the callback are dropped: delivering
// them would re-enter the callback from within itself. Inside a Deferred scope, messages for the
// callback are held until the outermost scope ends (Deferred::~Deferred delivers them).
// dg_set_log_callback (from outside a callback) returns only once no thread is still running a
// callback it replaced, so the caller may free the old user_data.
class Sink final : public spdlog::sinks::sink {
 public:
  void log(const spdlog::details::log_msg& msg) override {
    if (t_in_callback) return;
    std::string text(msg.payload.data(), msg.payload.size());
    if (t_defer_depth > 0 && has_callback()) {
      if (t_held.size() < Deferred::kMaxHeld) t_held.emplace_back(to_dg(msg.level), std::move(text));
      else ++t_dropped;
      return;
    }
    deliver(to_dg(msg.level), text);
  }

  void deliver(int level, const std::string& text) {
    dg_log_callback callback = nullptr;
    void* user = nullptr;
    uint64_t generation = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      callback = callback_;
      user = user_;
      generation = generation_;
      if (callback != nullptr) ++running_[generation];
    }
    if (callback == nullptr) {
      std::fprintf(stderr, "[libdg] %s: %s\n", spdlog::level::to_string_view(to_spdlog(level)).data(), text.c_str());
      return;
    }
    {
      // The callback may call libdg: the call that logged keeps its own dg_last_error().
      const LastErrorGuard keep_error;
      t_in_callback = true;
      callback(level, text.c_str(), user);
      t_in_callback = false;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--running_[generation] == 0) running_.erase(generation);
    }
    done_.notify_all();
  }

  bool has_callback() {
    std::lock_guard<std::mutex> lock(mutex_);
    return callback_ != nullptr;
  }

  void flush() override { std::fflush(stderr); }
  void set_pattern(const std::string&) override {}
  void set_formatter(std::unique_ptr<spdlog::formatter>) override {}

  void set_callback(dg_log_callback cb, void* user) {
    std::unique_lock<std::mutex> lock(mutex_);
    callback_ = cb;
    user_ = user;
    const uint64_t replaced = generation_++;
    // Wait for other threads' calls of the callbacks replaced. From inside a callback it does not
    // wait: two callbacks each swapping the callback would otherwise wait for each other.
    if (t_in_callback) return;
    done_.wait(lock, [&] { return running_.empty() || running_.begin()->first > replaced; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  dg_log_callback callback_ = nullptr;
  void* user_ = nullptr;
  uint64_t generation_ = 0;
  std::map<uint64_t, int> running_;  // generation -> threads inside that generation's callback
};

struct State {
  std::shared_ptr<Sink> sink = std::make_shared<Sink>();
  spdlog::logger logger{"libdg", sink};  // never registered: invisible to the host's spdlog
  std::atomic<int> level{DG_LOG_WARN};
  int environment_level = DG_LOG_WARN;
  State() {
    // Warnings about the variables go to `logger` directly: log::warn would re-enter state().
    // DG_JIT_DEBUG asks for the JIT's debug messages, unless DG_LOG_LEVEL says otherwise.
    if (const std::optional<std::string> jit_debug = env::get_trimmed("DG_JIT_DEBUG")) {
      if (const std::optional<bool> on = env::parse_bool(jit_debug->c_str())) {
        if (*on) environment_level = DG_LOG_DEBUG;
      } else if (env::first_warning("DG_JIT_DEBUG")) {
        logger.warn("ignoring DG_JIT_DEBUG={}: expected 1/0, true/false, on/off or yes/no; using 0", *jit_debug);
      }
    }
    if (const std::optional<std::string> text = env::get_trimmed("DG_LOG_LEVEL")) {
      const int parsed = parse_level(text->c_str());
      if (parsed >= 0) {
        environment_level = parsed;
      } else if (env::first_warning("DG_LOG_LEVEL")) {
        logger.warn("ignoring DG_LOG_LEVEL={}: expected trace, debug, info, warn, error, off or 0..5", *text);
      }
    }
    level = environment_level;
    logger.set_level(to_spdlog(level));
    logger.flush_on(spdlog::level::warn);
  }
};

State& state() {
  static State* s = new State();  // leaked on purpose: usable from other static destructors
  return *s;
}

}  // namespace

spdlog::logger& get() { return state().logger; }

void set_callback(dg_log_callback callback, void* user_data) { state().sink->set_callback(callback, user_data); }

void set_level(int level) {
  state().level = level;
  state().logger.set_level(to_spdlog(level));
}

int level() { return state().level; }

int environment_level() { return state().environment_level; }

Deferred::Deferred() { ++t_defer_depth; }

Deferred::~Deferred() {
  if (--t_defer_depth > 0 || (t_held.empty() && t_dropped == 0)) return;
  try {
    std::vector<std::pair<int, std::string>> held;
    held.swap(t_held);
    const size_t dropped = std::exchange(t_dropped, size_t(0));
    for (const auto& [level, text] : held) state().sink->deliver(level, text);
    if (dropped > 0)
      state().sink->deliver(DG_LOG_WARN, fmt::format("{} more messages of one libdg call were dropped", dropped));
  } catch (...) {
    // Out of memory while delivering log messages: they are lost, the call's result is not.
    t_held.clear();
    t_dropped = 0;
  }
}

int parse_level(const char* text) {
  static const char* const names[] = {"trace", "debug", "info", "warn", "error", "off"};
  const std::string name = env::trim(text);
  for (int i = 0; i <= DG_LOG_OFF; ++i)
    if (strcasecmp(name.c_str(), names[i]) == 0) return i;
  if (strcasecmp(name.c_str(), "warning") == 0) return DG_LOG_WARN;
  const std::optional<long long> number = env::parse_integer(name.c_str());
  if (number && *number >= DG_LOG_TRACE && *number <= DG_LOG_OFF) return static_cast<int>(*number);
  return -1;
}

}  // namespace dg::log
