// Test helper: loads the fake CUDA driver built with the tests
// (tests/fake_cuda) through CudaDriver::Load, and reaches its controls.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <memory>

#include "cuda/driver_api.h"

namespace strata {

class FakeCuda {
 public:
  // Whether the fake was built (needs the CUDA headers at build time).
  static bool built() {
#ifdef STRATA_FAKE_CUDA_LIBRARY
    return true;
#else
    return false;
#endif
  }
  static const char* path() {
#ifdef STRATA_FAKE_CUDA_LIBRARY
    return STRATA_FAKE_CUDA_LIBRARY;
#else
    return "";
#endif
  }

  // Loads the fake with counters, injections and settings cleared.
  FakeCuda() {
    handle_ = dlopen(path(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    Reset();
    auto d = CudaDriver::Load(path());
    if (d.ok()) driver_ = *d;
  }
  ~FakeCuda() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  FakeCuda(const FakeCuda&) = delete;
  FakeCuda& operator=(const FakeCuda&) = delete;

  const std::shared_ptr<const CudaDriver>& driver() const { return driver_; }
  bool ok() const { return driver_ != nullptr; }

  // The next call of `function` (a base name such as "cuMemAlloc") returns `result`.
  void Inject(const char* function, int result) const {
    Fn<void (*)(const char*, int)>("strata_fake_cuda_inject")(function, result);
  }
  unsigned long long Calls(const char* function) const {
    return Fn<unsigned long long (*)(const char*)>("strata_fake_cuda_calls")(function);
  }
  long long Value(const char* key) const {
    return Fn<long long (*)(const char*)>("strata_fake_cuda_value")(key);
  }
  void Reset() const { Fn<void (*)()>("strata_fake_cuda_reset")(); }
  // Sets a setting the fake reads (e.g. "device_pointer_offset").
  void SetValue(const char* key, long long value) const {
    Fn<void (*)(const char*, long long)>("strata_fake_cuda_set_value")(key, value);
  }
  void SetDeviceCount(int n) const { Fn<void (*)(int)>("strata_fake_cuda_set_device_count")(n); }
  void SetInitResult(int r) const { Fn<void (*)(int)>("strata_fake_cuda_set_init_result")(r); }

 private:
  template <typename F>
  F Fn(const char* name) const {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }
  void* handle_ = nullptr;
  std::shared_ptr<const CudaDriver> driver_;
};

// Declares `fake` (a FakeCuda with a loaded driver) or skips the test.
#define STRATA_USE_FAKE_CUDA(fake)                                                        \
  if (!FakeCuda::built()) GTEST_SKIP() << "fake CUDA driver not built (no CUDA headers)"; \
  FakeCuda fake;                                                                          \
  ASSERT_TRUE(fake.ok()) << "fake CUDA driver did not load from " << FakeCuda::path()

}  // namespace strata
