// Test helper: loads the fake cuFile library built with the tests
// (tests/fake_cufile) as a CuFileLibrary with its driver open, and reaches
// its controls. Reset on load: no registrations, faults or held calls.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <memory>

#include "cuda/cufile_api.h"

namespace strata {

class FakeCuFile {
 public:
  static constexpr uint32_t kBoundMs = 30'000;

  FakeCuFile() {
    handle_ = dlopen(STRATA_FAKE_CUFILE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    Fn<void (*)()>("strata_fake_cufile_reset")();
    Result<std::shared_ptr<CuFileLibrary>> lib = CuFileLibrary::Load(STRATA_FAKE_CUFILE_LIBRARY);
    if (lib.ok() && (*lib)->DriverOpen().ok()) library_ = *lib;
  }
  ~FakeCuFile() {
    if (handle_ != nullptr) {
      Hold(false);
      dlclose(handle_);
    }
  }
  FakeCuFile(const FakeCuFile&) = delete;
  FakeCuFile& operator=(const FakeCuFile&) = delete;

  // Null when the fake did not load.
  const std::shared_ptr<CuFileLibrary>& library() const { return library_; }
  void FailRegister(uint64_t nth) const {
    Fn<void (*)(uint64_t)>("strata_fake_cufile_fail_register")(nth);
  }
  uint64_t Registered() const { return Fn<uint64_t (*)()>("strata_fake_cufile_registered")(); }
  uint64_t HandlesRegistered() const {
    return Fn<uint64_t (*)()>("strata_fake_cufile_handles_registered")();
  }
  // Every later cuFileRead / cuFileWrite at `file_offset` returns `result`.
  void FailIoAt(uint64_t file_offset, int64_t result) const {
    Fn<void (*)(uint64_t, int64_t)>("strata_fake_cufile_fail_io_at")(file_offset, result);
  }
  uint64_t SyncCalls() const { return Fn<uint64_t (*)()>("strata_fake_cufile_sync_calls")(); }
  void Hold(bool on) const { Fn<void (*)(int)>("strata_fake_cufile_hold")(on ? 1 : 0); }
  // While on, batch entries stay pending until their batch is canceled.
  void Pend(bool on) const { Fn<void (*)(int)>("strata_fake_cufile_pend")(on ? 1 : 0); }
  uint64_t Cancels() const { return Fn<uint64_t (*)()>("strata_fake_cufile_cancels")(); }
  // Batches destroyed while an entry had not ended.
  uint64_t DestroyedInFlight() const {
    return Fn<uint64_t (*)()>("strata_fake_cufile_destroyed_in_flight")();
  }
  bool WaitHeld() const { return Fn<int (*)(uint32_t)>("strata_fake_cufile_wait_held")(kBoundMs); }
  bool WaitRegistered(uint64_t count) const {
    return Fn<int (*)(uint64_t, uint32_t)>("strata_fake_cufile_wait_registered")(count, kBoundMs);
  }

  // A symbol of the fake itself (an entry point or a control).
  template <typename F>
  F Fn(const char* name) const {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }

 private:
  void* handle_ = nullptr;
  std::shared_ptr<CuFileLibrary> library_;
};

}  // namespace strata
