#include "runtime/log.h"

#include <spdlog/sinks/base_sink.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <strings.h>

#include <cstring>
#include <mutex>

namespace dg::log {
namespace {

// One sink for both destinations: the user's callback when set, else stderr. Guarded by the
// base_sink mutex, so a callback swap never races a message.
class Sink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_callback(dg_log_callback cb, void* user) {
    std::lock_guard<std::mutex> lock(this->mutex_);
    callback_ = cb;
    user_ = user;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string text(msg.payload.data(), msg.payload.size());
    if (callback_ != nullptr) {
      callback_(to_dg(msg.level), text.c_str(), user_);
    } else {
      std::fprintf(stderr, "[libdg] %s: %s\n", spdlog::level::to_string_view(msg.level).data(), text.c_str());
    }
  }
  void flush_() override { std::fflush(stderr); }

 private:
  static int to_dg(spdlog::level::level_enum l) {
    switch (l) {
      case spdlog::level::trace: return DG_LOG_TRACE;
      case spdlog::level::debug: return DG_LOG_DEBUG;
      case spdlog::level::info: return DG_LOG_INFO;
      case spdlog::level::warn: return DG_LOG_WARN;
      default: return DG_LOG_ERROR;
    }
  }
  dg_log_callback callback_ = nullptr;
  void* user_ = nullptr;
};

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

struct State {
  std::shared_ptr<Sink> sink = std::make_shared<Sink>();
  spdlog::logger logger{"libdg", sink};  // never registered: invisible to the host's spdlog
  std::atomic<int> level{DG_LOG_WARN};
  State() {
    // DG_JIT_DEBUG asks for the JIT's debug messages, unless DG_LOG_LEVEL says otherwise.
    const char* jit_debug = std::getenv("DG_JIT_DEBUG");
    if (jit_debug != nullptr && std::strcmp(jit_debug, "0") != 0 && jit_debug[0] != '\0') level = DG_LOG_DEBUG;
    if (const char* env = std::getenv("DG_LOG_LEVEL")) {
      int parsed = parse_level(env);
      if (parsed >= 0) level = parsed;
    }
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

int parse_level(const char* text) {
  static const char* const names[] = {"trace", "debug", "info", "warn", "error", "off"};
  for (int i = 0; i <= DG_LOG_OFF; ++i)
    if (strcasecmp(text, names[i]) == 0) return i;
  if (strcasecmp(text, "warning") == 0) return DG_LOG_WARN;
  if (text[0] >= '0' && text[0] <= '5' && text[1] == '\0') return text[0] - '0';
  return -1;
}

}  // namespace dg::log
