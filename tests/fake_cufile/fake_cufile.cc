// A test double of libcufile.so.0 (GPUDirect Storage) for the CPU tests of
// CuFileDirectIo (cuda/cufile_io.h), loaded through CuFileLibrary::Load like
// the real one, with the ABI of cuda/cufile_table.h.
//
// What it models of the real driver:
//  - buffer registrations: a pointer whose range overlaps a registered one is
//    refused with error 5023 ("device pointer already registered"), as
//    cuFileBufRegister refuses it; deregistering an unknown pointer fails;
//  - batch I/O: every submitted entry completes with its full size (no bytes
//    move: the tests check registration lifetimes, not data);
//  - cuFileRead / cuFileWrite: "device" addresses are host addresses; the
//    bytes move with pread / pwrite on the registered descriptor (O_DIRECT)
//    through a 4 KiB-aligned bounce buffer, a write padded with zeros to its
//    4 KiB boundary (as the record file's padding is). A bufPtr_base inside a
//    registered buffer but not its base, or a range past the buffer's end,
//    is refused with -5022 (CU_FILE_INVALID_VALUE): cuFile wants the
//    registered base and the offset within it. A failed pread / pwrite
//    returns -1 with errno set, as cuFile does.
// Controls (extern "C", reached with dlsym): reset; fail the Nth next
// registration; make every synchronous call at one file offset return a
// given value (a negative error or a short count); count synchronous calls;
// hold every cuFileBatchIOGetStatus until released, so a test can keep a job
// in flight without timing; leave every batch entry pending (status calls
// report none) until the batch is canceled (cuFileBatchIOCancel: its entries
// then end canceled), counting cancels and batches destroyed with entries
// that never ended; bounded waits for a held call and for the registration
// count.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cuda/cufile_table.h"

namespace {

constexpr StrataCuFileOpError kAlreadyRegistered = 5023;  // CU_FILE_MEMORY_ALREADY_REGISTERED
constexpr StrataCuFileOpError kNotRegistered = 5024;      // CU_FILE_MEMORY_NOT_REGISTERED
constexpr StrataCuFileOpError kInjected = 5011;           // CU_FILE_INTERNAL_ERROR, injected
constexpr StrataCuFileOpError kInvalidValue = 5022;       // CU_FILE_INVALID_VALUE
constexpr size_t kAlign = 4096;
// A held status call gives up after this, so a broken test cannot hang.
constexpr auto kHoldBound = std::chrono::seconds(30);

struct Batch {
  std::vector<StrataCuFileIoParams> ios;
  size_t reported = 0;
  bool canceled = false;
};

struct State {
  std::mutex mu;
  std::condition_variable changed;
  std::map<uintptr_t, size_t> registered;  // base -> bytes
  uint64_t fail_register_in = 0;           // 0: none; else the Nth next registration fails
  uint64_t handles_registered = 0;         // cuFileHandleRegister calls that succeeded
  bool hold = false;
  uint64_t held_calls = 0;                // status calls waiting on `hold` now
  std::map<uint64_t, int64_t> io_faults;  // file offset -> what cuFileRead/Write returns
  uint64_t sync_calls = 0;                // cuFileRead and cuFileWrite calls
  bool pend = false;                      // batch entries end only when canceled
  uint64_t cancels = 0;
  uint64_t destroyed_in_flight = 0;  // batches destroyed with entries not ended
};

State& S() {
  static State s;
  return s;
}

StrataCuFileError Ok() { return {kStrataCuFileSuccess, 0}; }
StrataCuFileError Err(StrataCuFileOpError e) { return {e, 0}; }

// An injected result for `file_offset`, or -kInvalidValue when `base` is not
// how cuFile wants a registered buffer named, or nothing: the call proceeds.
std::optional<ssize_t> Refusal(uintptr_t base, size_t size, off_t file_offset, off_t offset) {
  State& s = S();
  std::lock_guard lock(s.mu);
  ++s.sync_calls;
  if (auto f = s.io_faults.find(static_cast<uint64_t>(file_offset)); f != s.io_faults.end()) {
    if (f->second == -1) errno = EIO;
    return static_cast<ssize_t>(f->second);
  }
  for (const auto& [b, n] : s.registered) {
    if (base > b && base < b + n) return -kInvalidValue;  // inside, not the base
    if (base == b && static_cast<size_t>(offset) + size > n) return -kInvalidValue;
  }
  return std::nullopt;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Bounce = std::unique_ptr<unsigned char, FreeDeleter>;

size_t Padded(size_t size) { return (size + kAlign - 1) / kAlign * kAlign; }

ssize_t Read(int fd, unsigned char* to, size_t size, off_t file_offset) {
  const size_t padded = Padded(size);
  Bounce bounce(static_cast<unsigned char*>(std::aligned_alloc(kAlign, padded)));
  if (bounce == nullptr) return -ENOMEM;
  const ssize_t got = ::pread(fd, bounce.get(), padded, file_offset);
  if (got < 0) return -1;  // errno set
  const size_t moved = std::min(static_cast<size_t>(got), size);
  std::memcpy(to, bounce.get(), moved);
  return static_cast<ssize_t>(moved);
}

ssize_t Write(int fd, const unsigned char* from, size_t size, off_t file_offset) {
  const size_t padded = Padded(size);
  Bounce bounce(static_cast<unsigned char*>(std::aligned_alloc(kAlign, padded)));
  if (bounce == nullptr) return -ENOMEM;
  std::memcpy(bounce.get(), from, size);
  std::memset(bounce.get() + size, 0, padded - size);
  const ssize_t put = ::pwrite(fd, bounce.get(), padded, file_offset);
  if (put < 0) return -1;  // errno set
  return static_cast<ssize_t>(std::min(static_cast<size_t>(put), size));
}

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
  bool pend = false;
  {
    std::lock_guard lock(s.mu);
    pend = s.pend && !b->canceled;
  }
  if (pend) {  // nothing ends: a short wait stands for the timeout
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    *nr = 0;
    return Ok();
  }
  const size_t n = std::min<size_t>(*nr, b->ios.size() - b->reported);
  for (size_t i = 0; i < n; ++i) {
    const StrataCuFileIoParams& io = b->ios[b->reported + i];
    events[i] =
        b->canceled
            ? StrataCuFileIoEvents{.cookie = io.cookie, .status = kStrataCuFileCanceled, .ret = 0}
            : StrataCuFileIoEvents{
                  .cookie = io.cookie, .status = kStrataCuFileComplete, .ret = io.u.batch.size};
  }
  b->reported += n;
  *nr = static_cast<unsigned>(n);
  return Ok();
}

FAKE_EXPORT StrataCuFileError cuFileBatchIOCancel(StrataCuFileBatchHandle batch) {
  std::lock_guard lock(S().mu);
  static_cast<Batch*>(batch)->canceled = true;
  ++S().cancels;
  return Ok();
}

FAKE_EXPORT void cuFileBatchIODestroy(StrataCuFileBatchHandle batch) {
  auto* b = static_cast<Batch*>(batch);
  {
    std::lock_guard lock(S().mu);
    if (b->reported < b->ios.size()) ++S().destroyed_in_flight;
  }
  delete b;
}

FAKE_EXPORT ssize_t cuFileRead(StrataCuFileHandle fh, void* base, size_t size, off_t file_offset,
                               off_t offset) {
  const auto b = reinterpret_cast<uintptr_t>(base);
  if (std::optional<ssize_t> r = Refusal(b, size, file_offset, offset)) return *r;
  return Read(*static_cast<int*>(fh), static_cast<unsigned char*>(base) + offset, size,
              file_offset);
}

FAKE_EXPORT ssize_t cuFileWrite(StrataCuFileHandle fh, const void* base, size_t size,
                                off_t file_offset, off_t offset) {
  const auto b = reinterpret_cast<uintptr_t>(base);
  if (std::optional<ssize_t> r = Refusal(b, size, file_offset, offset)) return *r;
  return Write(*static_cast<int*>(fh), static_cast<const unsigned char*>(base) + offset, size,
               file_offset);
}

// --- controls ---

FAKE_EXPORT void strata_fake_cufile_reset() {
  State& s = S();
  std::lock_guard lock(s.mu);
  s.registered.clear();
  s.fail_register_in = 0;
  s.handles_registered = 0;
  s.hold = false;
  s.io_faults.clear();
  s.sync_calls = 0;
  s.pend = false;
  s.cancels = 0;
  s.destroyed_in_flight = 0;
  s.changed.notify_all();
}

// While on, batch entries stay pending until their batch is canceled.
FAKE_EXPORT void strata_fake_cufile_pend(int on) {
  std::lock_guard lock(S().mu);
  S().pend = on != 0;
}

FAKE_EXPORT uint64_t strata_fake_cufile_cancels() {
  std::lock_guard lock(S().mu);
  return S().cancels;
}

// Batches destroyed while some entry had not ended.
FAKE_EXPORT uint64_t strata_fake_cufile_destroyed_in_flight() {
  std::lock_guard lock(S().mu);
  return S().destroyed_in_flight;
}

// Every later cuFileRead / cuFileWrite at `file_offset` returns `result`
// without moving bytes (-1 also sets errno to EIO), until reset.
FAKE_EXPORT void strata_fake_cufile_fail_io_at(uint64_t file_offset, int64_t result) {
  std::lock_guard lock(S().mu);
  S().io_faults[file_offset] = result;
}

FAKE_EXPORT uint64_t strata_fake_cufile_sync_calls() {
  std::lock_guard lock(S().mu);
  return S().sync_calls;
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
