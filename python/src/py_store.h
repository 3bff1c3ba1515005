// StoreHandle: a HostStore (memory, disk, composite, or rank zero's
// coordinator) as Python sees it: lookup / fetch / store / poll / close /
// stats, each taking the handle's lock with the GIL released, so a Python
// thread may call from anywhere and others run while one call waits. The
// handle owns what the store needs (planes, transfers, directory) through
// StoreOwner and keeps the Python objects that own the runtime's memory.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "coordinator/pool/pooled_store.h"
#include "python/src/py_planes.h"
#include "store/tier/host_store.h"

namespace strata::python {

// What a built store consists of; Close() closes the store and frees it all
// unless the close failed (then copies may still run and everything stays).
class StoreOwner {
 public:
  virtual ~StoreOwner() = default;
  virtual HostStore& store() = 0;
  virtual Status Close() = 0;
  // The record directory ("" for a memory store).
  virtual std::string record_dir() const { return ""; }
  // The pool's counters when the store is joined to one.
  virtual std::optional<pool::PoolInstanceStats> pool_stats() const { return std::nullopt; }
};

// One event of Poll, or of an attached client's Poll, as a plain value.
struct PyEvent {
  // stored, store_failed, fetched, fetch_failed, stopped, lookup,
  // store_answer, ticket_status
  std::string kind;
  uint64_t checkpoint_id = 0;
  uint64_t ticket = 0;
  uint64_t consumed = 0;  // the key's tokens
  std::string digest;     // the key's digest, hex
  bool ok = true;
  std::string error_kind;  // when !ok
  std::string message;     // when !ok
  uint64_t bytes = 0;
  uint64_t request_id = 0;                          // lookup
  std::optional<HostHit> hit;                       // lookup
  std::string outcome;                              // store_answer
  std::optional<LookupTicketStatus> ticket_status;  // ticket_status
  uint64_t export_id = 0;                           // export_requested / export_ended
  uint64_t generation = 0;                          // export_requested
  uint64_t start_page = 0;                          // export_requested
};
PyEvent ToPyEvent(const StoreEvent& e);
// {"state": "none" | "pending" | "ready", "pool_consumed",
// "admitted_consumed", "admissions", "answered_late", "retry_used"}.
pybind11::dict TicketStatusDict(const LookupTicketStatus& status);

// A checkpoint as the runtime describes it from Python.
struct CheckpointIn {
  uint64_t checkpoint_id = 0;
  std::vector<Token> tokens;
  uint64_t consumed = 0;
  std::optional<uint64_t> parent_consumed;
  std::vector<uint32_t> chain;
  std::optional<uint32_t> tail_pages;  // default: all of chain (no parent)
  uint32_t row_slot = 0;
  uint64_t generation = 0;  // PublishedCheckpoint::generation
};
// Checks and converts; kInvalidArgument naming the field at fault.
Result<PublishedCheckpoint> ToCheckpoint(const CheckpointIn& in);
// A checkpoint the runtime retired, as Python passes it: (token_ids,
// consumed, generation), its key being the first `consumed` tokens.
using EvictionIn = std::tuple<std::vector<Token>, uint64_t, uint64_t>;
// A refusal's name (ExportRefusalName: "not_found", ...); kInvalidArgument
// for another.
Result<ExportRefusal> ToRefusal(const std::string& reason);
// The description ExportPinned passes.
ExportDescription ToDescription(uint64_t start_page, const std::vector<uint32_t>& pages,
                                uint32_t row_slot);
// Checks and converts; kInvalidArgument naming the notice at fault.
Result<std::vector<EvictionNotice>> ToNotices(const std::vector<EvictionIn>& in);
// The ticket of a Fetch.
InboundTicket ToTicket(uint64_t ticket, const std::vector<uint32_t>& page_ids, uint32_t row_slot);

class StoreHandle {
 public:
  // `keep_alive`: the Python objects owning the planes' memory.
  StoreHandle(std::unique_ptr<StoreOwner> owner, std::string description,
              pybind11::object keep_alive);
  ~StoreHandle();

  std::optional<HostHit> Lookup(const std::vector<Token>& tokens, uint64_t resident_tokens,
                                std::optional<uint64_t> before);
  // Two-step lookups (HostStore::BeginLookup; docs/embedding.md section 3):
  // tickets as integers (0: none).
  uint64_t BeginLookup(const std::vector<Token>& tokens, uint64_t resident_tokens,
                       std::optional<uint64_t> before);
  std::optional<HostHit> LookupFor(uint64_t ticket, const std::vector<Token>& tokens,
                                   uint64_t resident_tokens, std::optional<uint64_t> before);
  pybind11::dict TicketStatus(uint64_t ticket);
  void EndLookup(uint64_t ticket);
  std::string Store(const CheckpointIn& checkpoint);
  // The runtime's eviction notices (HostStore::Evicted, EvictionsLost).
  void Evicted(const std::vector<EvictionIn>& notices);
  void EvictionsLost();
  // The runtime's answers to an export_requested event (HostStore::ExportPinned,
  // ExportRefused; `reason` as ExportRefusalName spells it).
  void ExportPinned(uint64_t export_id, uint64_t start_page, const std::vector<uint32_t>& pages,
                    uint32_t row_slot);
  void ExportRefused(uint64_t export_id, const std::string& reason);
  void Fetch(const HostHit& hit, uint64_t ticket, const std::vector<uint32_t>& page_ids,
             uint32_t row_slot);
  std::vector<PyEvent> Poll(std::optional<uint64_t> now_ms);
  pybind11::dict Stats();
  void Close();
  std::string record_dir();
  const std::string& description() const { return description_; }

 private:
  // The open owner, or throws kFailedPrecondition ("closed"). Requires mu_.
  StoreOwner& Open();

  std::mutex mu_;
  std::unique_ptr<StoreOwner> owner_;  // null once closed
  std::string description_;
  pybind11::object keep_alive_;
};

// Milliseconds since the Unix epoch (HostStore::Poll's clock).
uint64_t WallClockMs();

void RegisterStore(pybind11::module_& m);

}  // namespace strata::python
