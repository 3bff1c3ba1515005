// Mutex, MutexLock and CondVar: std::mutex and std::condition_variable_any
// with clang's thread-safety annotations, so the compiler checks that every
// GUARDED_BY member is touched only under its mutex (libstdc++'s own types
// carry no annotations). Use these in every class that holds a lock.
//
//   class Queue {
//     Mutex mu_;
//     std::deque<int> items_ GUARDED_BY(mu_);
//     void PushLocked(int v) REQUIRES(mu_);
//   };
//   { MutexLock lock(mu_); items_.push_back(1); }
//   { MutexLock lock(mu_); while (items_.empty()) cv_.Wait(lock); }
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "store/base/thread_annotations.h"

namespace strata {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // For std::condition_variable_any (BasicLockable).
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope; Unlock/Lock let a holder drop it around a call.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void Unlock() RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }
  Mutex& mutex() const { return mu_; }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable over Mutex. Wait* release the mutex while blocked and
// hold it again when they return. Callers loop on their condition in their
// own (annotated) code, so the analysis sees every guarded read:
//   while (!ready_) cv_.Wait(lock);
//   while (!ready_) if (!cv_.WaitUntil(lock, deadline)) break;
// Spurious wake-ups are allowed.
class CondVar {
 public:
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }
  void Wait(MutexLock& lock) { cv_.wait(lock.mutex()); }
  // False once `deadline` has passed.
  template <typename Clock, typename Duration>
  bool WaitUntil(MutexLock& lock, std::chrono::time_point<Clock, Duration> deadline) {
    return cv_.wait_until(lock.mutex(), deadline) == std::cv_status::no_timeout;
  }

 private:
  std::condition_variable_any cv_;
};

}  // namespace strata
