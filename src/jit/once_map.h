// A map whose values are built once per key, even when many threads ask at the same time: the
// first caller builds while the others wait for its result.
//
// Every way out of a build publishes its result: success, a failed status, or an exception
// (turned into DG_ERROR_OUT_OF_MEMORY or DG_ERROR_INTERNAL), so no waiter is left waiting.
//
// A failed build is not remembered: its slot leaves the map when the build ends, and the callers
// that were waiting on it get its status and message and share the slot until the last of them
// returns. The next call for that key builds again, so a failure that the environment fixes (a
// full disk, a missing compiler) ends without a restart, and failing keys hold no memory.
//
// The build runs inside a log::Deferred scope: the user's log callback, which may call libdg and
// ask for this very key, never runs on the building thread while it holds the slot. A build that
// asks for its own key (a libdg bug) gets DG_ERROR_INTERNAL instead of waiting for itself.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "runtime/log_deferred.h"
#include "runtime/status.h"

namespace dg::jit {

template <typename Key, typename Value, typename Hash>
class OnceMap {
 public:
  // `build(Value*)` returns a dg_status; it runs without the lock held. `*hit` tells whether the
  // value already existed (or was being built by another thread).
  template <typename Build>
  dg_status get(const Key& key, Build&& build, const Value** value, bool* hit) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto it = slots_.find(key);
      if (it != slots_.end()) {
        slot = it->second;
        *hit = true;
        if (!slot->done && slot->builder == std::this_thread::get_id())
          return fail(DG_ERROR_INTERNAL, "a kernel build asked for the kernel it is building (a bug in libdg)");
        ready_.wait(lock, [&slot] { return slot->done; });
        if (slot->status != DG_SUCCESS) return fail(slot->status, "{}", slot->error);
        *value = &slot->value;
        return DG_SUCCESS;
      }
      slot = std::make_shared<Slot>();
      slot->builder = std::this_thread::get_id();
      slots_.emplace(key, slot);
    }
    *hit = false;
    const log::Deferred deferred;  // ends after publish(): the callback runs with no slot held
    dg_status status = DG_ERROR_INTERNAL;
    try {
      status = build(&slot->value);
    } catch (...) {
      status = fail_current_exception("building a kernel");
    }
    publish(key, *slot, status);
    if (status == DG_SUCCESS) *value = &slot->value;
    return status;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return slots_.size();
  }

 private:
  struct Slot {
    bool done = false;
    dg_status status = DG_SUCCESS;
    std::string error;
    std::thread::id builder;
    Value value;
  };

  // Records the result, drops a failed slot from the map (its waiters keep it alive) and wakes
  // the waiters. Does not throw: a message that cannot be copied is left empty.
  void publish(const Key& key, Slot& slot, dg_status status) noexcept {
    std::string error;
    if (status != DG_SUCCESS) {
      try {
        error = last_error();
      } catch (...) {
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    slot.status = status;
    slot.error.swap(error);
    slot.done = true;
    if (status != DG_SUCCESS) slots_.erase(key);
    ready_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::unordered_map<Key, std::shared_ptr<Slot>, Hash> slots_;
};

}  // namespace dg::jit
