// A map whose values are built once per key, even when many threads ask at the same time: the
// first caller builds while the others wait for its result. A failed build is not kept, so a
// later call tries again; the callers that waited on it get its status and message.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/status.h"

namespace dg::jit {

template <typename Key, typename Value, typename Hash>
class OnceMap {
 public:
  // `build(Value*)` returns a dg_status; it runs without the lock held. `*hit` tells whether the
  // value already existed (or was being built by another thread).
  template <typename Build>
  dg_status get(const Key& key, Build&& build, const Value** value, bool* hit) {
    Slot* slot = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      auto it = slots_.find(key);
      if (it != slots_.end()) {
        slot = it->second.get();
        ready_.wait(lock, [slot] { return slot->done; });
        *hit = true;
        if (slot->status != DG_SUCCESS) return fail(slot->status, "{}", slot->error);
        *value = &slot->value;
        return DG_SUCCESS;
      }
      slot = slots_.emplace(key, std::make_unique<Slot>()).first->second.get();
    }
    *hit = false;
    const dg_status status = build(&slot->value);
    std::lock_guard<std::mutex> lock(mutex_);
    slot->status = status;
    slot->done = true;
    if (status != DG_SUCCESS) {
      slot->error = last_error();
      // Waiters hold the slot pointer, so it stays alive; the key is free for a retry.
      auto node = slots_.extract(key);
      failed_.push_back(std::move(node.mapped()));
    } else {
      *value = &slot->value;
    }
    ready_.notify_all();
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
    Value value;
  };
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::unordered_map<Key, std::unique_ptr<Slot>, Hash> slots_;
  std::vector<std::unique_ptr<Slot>> failed_;
};

}  // namespace dg::jit
