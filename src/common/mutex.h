// mutex.h: the library's locks, annotated for clang's thread-safety
// analysis (common/thread_annotations.h). Each is a thin inline wrapper of
// the std type with nothing added in a release build (NDEBUG): no virtual,
// no extra member, the same calls.
//
//   Mutex        std::mutex           MutexLock   scoped (std::lock_guard)
//                                     UniqueLock  std::unique_lock: can unlock
//                                                 early, relock, and wait on
//                                                 a CondVar
//   CondVar      std::condition_variable, waits on a UniqueLock
//   SharedMutex  std::shared_mutex    ReaderLock / WriterLock  scoped
//
// A debug build also records which thread holds each Mutex, and aborts when
// that thread takes it again: taking a std::mutex one already holds hangs
// silently (the analysis cannot see through callbacks, which is where such
// a re-entry would come from).
#pragma once

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "common/thread_annotations.h"

namespace hixl {

class UniqueLock;

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex &) = delete;
  Mutex &operator=(const Mutex &) = delete;

  void Lock() ACQUIRE() {
    AssertNotHeld();
    mu_.lock();
    SetOwner();
  }
  void Unlock() RELEASE() {
    ClearOwner();
    mu_.unlock();
  }
  bool TryLock() TRY_ACQUIRE(true) {
    const bool taken = mu_.try_lock();
    if (taken) SetOwner();
    return taken;
  }
  // Debug builds: aborts unless the calling thread holds the lock. Tells the
  // analysis that it is held, where it cannot follow (a fork handler).
  void AssertHeld() const ASSERT_CAPABILITY(this) {
#ifndef NDEBUG
    assert(owner_.load(std::memory_order_relaxed) == std::this_thread::get_id() && "Mutex not held by this thread");
#endif
  }
  // Debug builds: aborts if the calling thread holds the lock (taking it
  // again would hang).
  void AssertNotHeld() const {
#ifndef NDEBUG
    assert(owner_.load(std::memory_order_relaxed) != std::this_thread::get_id() && "Mutex taken again by its holder");
#endif
  }

 private:
  friend class UniqueLock;
#ifndef NDEBUG
  void SetOwner() { owner_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
  void ClearOwner() { owner_.store(std::thread::id(), std::memory_order_relaxed); }
#else
  void SetOwner() {}
  void ClearOwner() {}
#endif

  std::mutex mu_;
#ifndef NDEBUG
  // The holder, for the checks above; only its own thread compares equal,
  // so relaxed loads suffice.
  std::atomic<std::thread::id> owner_{};
#endif
};

// Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex *mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  // Takes over a lock the caller already holds (after a TryLock).
  MutexLock(Mutex *mu, std::adopt_lock_t) REQUIRES(mu) : mu_(mu) {}
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock &) = delete;
  MutexLock &operator=(const MutexLock &) = delete;

 private:
  Mutex *const mu_;
};

// Holds a Mutex from construction, except between Unlock and Lock; lets go
// of it at the end of its scope if held. A CondVar waits on it. Movable (a
// std::unique_lock inside), but the analysis does not follow a lock moved
// out of its scope: move one only into a function that lets go of it.
class SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex *mu) ACQUIRE(mu) : lock_(Native(mu)) {
#ifndef NDEBUG
    mu_ = mu;
#endif
    mu->SetOwner();
  }
  ~UniqueLock() RELEASE() {
    if (lock_.owns_lock()) ClearOwner();  // lock_ lets go of it
  }
  UniqueLock(UniqueLock &&other) noexcept = default;
  UniqueLock(const UniqueLock &) = delete;
  UniqueLock &operator=(const UniqueLock &) = delete;
  UniqueLock &operator=(UniqueLock &&) = delete;

  void Lock() ACQUIRE() {
    AssertNotHeld();
    lock_.lock();
    SetOwner();
  }
  void Unlock() RELEASE() {
    ClearOwner();
    lock_.unlock();
  }

 private:
  friend class CondVar;
  static std::mutex &Native(Mutex *mu) {
    mu->AssertNotHeld();
    return mu->mu_;
  }
#ifndef NDEBUG
  void AssertNotHeld() const { mu_->AssertNotHeld(); }
  void SetOwner() { mu_->SetOwner(); }
  void ClearOwner() { mu_->ClearOwner(); }
  Mutex *mu_ = nullptr;
#else
  void AssertNotHeld() const {}
  void SetOwner() {}
  void ClearOwner() {}
#endif
  std::unique_lock<std::mutex> lock_;
};

// std::condition_variable over a UniqueLock: the same calls. A predicate
// reads data the lock guards, so declare it with that lock required:
// [this]() REQUIRES(mu_) { return done_; }. (The predicate forms are the
// std ones, which the analysis does not look into: it checks the
// predicate's own REQUIRES.) A debug build clears the Mutex's owner while
// a wait has let go of it, and so does not check a predicate for re-entry.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar &) = delete;
  CondVar &operator=(const CondVar &) = delete;

  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

  void Wait(UniqueLock &lock) {
    lock.ClearOwner();
    cv_.wait(lock.lock_);
    lock.SetOwner();
  }
  template <class Pred>
  void Wait(UniqueLock &lock, Pred pred) {
    lock.ClearOwner();
    cv_.wait(lock.lock_, std::move(pred));
    lock.SetOwner();
  }
  template <class Clock, class Duration>
  std::cv_status WaitUntil(UniqueLock &lock, const std::chrono::time_point<Clock, Duration> &at) {
    lock.ClearOwner();
    const std::cv_status s = cv_.wait_until(lock.lock_, at);
    lock.SetOwner();
    return s;
  }
  // False when `at` passed with the predicate still false.
  template <class Clock, class Duration, class Pred>
  bool WaitUntil(UniqueLock &lock, const std::chrono::time_point<Clock, Duration> &at, Pred pred) {
    lock.ClearOwner();
    const bool ok = cv_.wait_until(lock.lock_, at, std::move(pred));
    lock.SetOwner();
    return ok;
  }
  template <class Rep, class Period>
  std::cv_status WaitFor(UniqueLock &lock, const std::chrono::duration<Rep, Period> &d) {
    lock.ClearOwner();
    const std::cv_status s = cv_.wait_for(lock.lock_, d);
    lock.SetOwner();
    return s;
  }
  template <class Rep, class Period, class Pred>
  bool WaitFor(UniqueLock &lock, const std::chrono::duration<Rep, Period> &d, Pred pred) {
    lock.ClearOwner();
    const bool ok = cv_.wait_for(lock.lock_, d, std::move(pred));
    lock.SetOwner();
    return ok;
  }

 private:
  std::condition_variable cv_;
};

class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex &) = delete;
  SharedMutex &operator=(const SharedMutex &) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex shared (for reading) for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex *mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() RELEASE() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock &) = delete;
  ReaderLock &operator=(const ReaderLock &) = delete;

 private:
  SharedMutex *const mu_;
};

// Holds a SharedMutex exclusively (for writing) for its scope.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex *mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock &) = delete;
  WriterLock &operator=(const WriterLock &) = delete;

 private:
  SharedMutex *const mu_;
};

}  // namespace hixl
