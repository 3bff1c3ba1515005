// A test double of libcufile.so.0 (GPUDirect Storage) for the CPU tests of
// CuFileDirectIo (cuda/cufile_io.h), loaded through CuFileLibrary::Load like
// the real one, with the ABI of cuda/cufile_table.h.
//
// What it models of the real driver:
//  - buffer registrations: a pointer whose range overlaps a registered one is
//    refused with error 5023 ("device pointer already registered"), as
//    cuFileBufRegister refuses it; deregistering an unknown pointer fails;
//  - batch I/O: every submitted entry completes with its full size (no bytes
//    move: the tests check registration lifetimes, not data).
// Controls (extern "C", reached with dlsym): reset; fail the Nth next
// registration; hold every cuFileBatchIOGetStatus until released, so a test
// can keep a job in flight without timing; bounded waits for a held call and
// for the registration count.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/cufile_table.h"

namespace {

constexpr StrataCuFileOpError kAlreadyRegistered = 5023;  // CU_FILE_MEMORY_ALREADY_REGISTERED
constexpr StrataCuFileOpError kNotRegistered = 5024;      // CU_FILE_MEMORY_NOT_REGISTERED
constexpr StrataCuFileOpError kInjected = 5011;           // CU_FILE_INTERNAL_ERROR, injected
// A held status call gives up after this, so a broken test cannot hang.
constexpr auto kHoldBound = std::chrono::seconds(30);

struct Batch {
  std::vector<StrataCuFileIoParams> ios;
  size_t reported = 0;
};

struct State {
  std::mutex mu;
  std::condition_variable changed;
  std::map<uintptr_t, size_t> registered;  // base -> bytes
  uint64_t fail_register_in = 0;           // 0: none; else the Nth next registration fails
  uint64_t handles_registered = 0;         // cuFileHandleRegister calls that succeeded
  bool hold = false;
  uint64_t held_calls = 0;  // status calls waiting on `hold` now
};

State& S() {
  static State s;
  return s;
}

StrataCuFileError Ok() { return {kStrataCuFileSuccess, 0}; }
StrataCuFileError Err(StrataCuFileOpError e) { return {e, 0}; }

}  // namespace

extern "C" {

#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT StrataCuFileError cuFileDriverOpen() { return Ok(); }
FAKE_EXPORT StrataCuFileError cuFileDriverClose_v2() { return Ok(); }

FAKE_EXPORT StrataCuFileError cuFileDriverGetProperties(StrataCuFileDrvProps* props) {
  *props = {};
  props->nvfs.max_direct_io_size = 16384;
  props->nvfs.dstatusflags = 1U << kStrataCuFileNvme;
  props->fflags = 1U << kStrataCuFileBatchIo;
  props->max_batch_io_size = 128;
  return Ok();
}

FAKE_EXPORT StrataCuFileError cuFileBufRegister(const void* device, size_t bytes, int /*flags*/) {
  State& s = S();
  std::lock_guard lock(s.mu);
  if (s.fail_register_in > 0 && --s.fail_register_in == 0) return Err(kInjected);
  const auto base = reinterpret_cast<uintptr_t>(device);
  for (const auto& [b, n] : s.registered) {
    if (base < b + n && b < base + bytes) return Err(kAlreadyRegistered);
  }
  s.registered[base] = bytes;
  s.changed.notify_all();
  return Ok();
}

FAKE_EXPORT StrataCuFileError cuFileBufDeregister(const void* device) {
  State& s = S();
  std::lock_guard lock(s.mu);
  if (s.registered.erase(reinterpret_cast<uintptr_t>(device)) == 0) return Err(kNotRegistered);
  s.changed.notify_all();
  return Ok();
}

FAKE_EXPORT StrataCuFileError cuFileHandleRegister(StrataCuFileHandle* handle,
                                                   StrataCuFileDescr* descr) {
  *handle = new int(descr->handle.fd);
  std::lock_guard lock(S().mu);
  ++S().handles_registered;
  return Ok();
}

FAKE_EXPORT void cuFileHandleDeregister(StrataCuFileHandle handle) {
  delete static_cast<int*>(handle);
}

FAKE_EXPORT StrataCuFileError cuFileBatchIOSetUp(StrataCuFileBatchHandle* batch,
                                                 unsigned /*max_entries*/) {
  *batch = new Batch();
  return Ok();
}

FAKE_EXPORT StrataCuFileError cuFileBatchIOSubmit(StrataCuFileBatchHandle batch, unsigned n,
                                                  StrataCuFileIoParams* ios, unsigned /*flags*/) {
  auto* b = static_cast<Batch*>(batch);
  b->ios.insert(b->ios.end(), ios, ios + n);
  return Ok();
}

FAKE_EXPORT StrataCuFileError cuFileBatchIOGetStatus(StrataCuFileBatchHandle batch,
                                                     unsigned /*min_nr*/, unsigned* nr,
                                                     StrataCuFileIoEvents* events,
                                                     struct timespec* /*timeout*/) {
  State& s = S();
  {
    std::unique_lock lock(s.mu);
    ++s.held_calls;
    s.changed.notify_all();
    s.changed.wait_for(lock, kHoldBound, [&] { return !s.hold; });
    --s.held_calls;
  }
  auto* b = static_cast<Batch*>(batch);
  const size_t n = std::min<size_t>(*nr, b->ios.size() - b->reported);
  for (size_t i = 0; i < n; ++i) {
    const StrataCuFileIoParams& io = b->ios[b->reported + i];
    events[i] = {.cookie = io.cookie, .status = kStrataCuFileComplete, .ret = io.u.batch.size};
  }
  b->reported += n;
  *nr = static_cast<unsigned>(n);
  return Ok();
}

FAKE_EXPORT void cuFileBatchIODestroy(StrataCuFileBatchHandle batch) {
  delete static_cast<Batch*>(batch);
}

// --- controls ---

FAKE_EXPORT void strata_fake_cufile_reset() {
  State& s = S();
  std::lock_guard lock(s.mu);
  s.registered.clear();
  s.fail_register_in = 0;
  s.handles_registered = 0;
  s.hold = false;
  s.changed.notify_all();
}

// The `nth` next cuFileBufRegister (1: the next) fails with error 5011.
FAKE_EXPORT void strata_fake_cufile_fail_register(uint64_t nth) {
  std::lock_guard lock(S().mu);
  S().fail_register_in = nth;
}

FAKE_EXPORT uint64_t strata_fake_cufile_registered() {
  std::lock_guard lock(S().mu);
  return S().registered.size();
}

FAKE_EXPORT uint64_t strata_fake_cufile_handles_registered() {
  std::lock_guard lock(S().mu);
  return S().handles_registered;
}

// While held, cuFileBatchIOGetStatus waits (up to kHoldBound) for release.
FAKE_EXPORT void strata_fake_cufile_hold(int on) {
  std::lock_guard lock(S().mu);
  S().hold = on != 0;
  S().changed.notify_all();
}

// Whether a status call is held within `timeout_ms`.
FAKE_EXPORT int strata_fake_cufile_wait_held(uint32_t timeout_ms) {
  State& s = S();
  std::unique_lock lock(s.mu);
  return s.changed.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return s.held_calls > 0; })
             ? 1
             : 0;
}

// Whether the registrations fall to `count` within `timeout_ms`.
FAKE_EXPORT int strata_fake_cufile_wait_registered(uint64_t count, uint32_t timeout_ms) {
  State& s = S();
  std::unique_lock lock(s.mu);
  return s.changed.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                            [&] { return s.registered.size() == count; })
             ? 1
             : 0;
}

}  // extern "C"
