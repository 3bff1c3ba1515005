// RuntimePlanes: one rank's planes as a Python runtime allocated them — page
// planes and the state-row allocation at addresses the runtime owns (torch
// tensors, raw pointers), in host memory or on one CUDA device — plus the
// Transfers and host registration a store needs over them. Strata never
// frees this memory; the Python side keeps the owning objects alive for as
// long as a store may copy (python/strata/__init__.py).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/record/geometry.h"
#include "store/transfer/copy_engine.h"
#include "store/transfer/slab_pool.h"
#include "store/transfer/threaded_transfers.h"
#include "store/transfer/transfers.h"

namespace strata::python {

// One allocation as Python described it.
struct AllocationIn {
  std::string name;
  AllocationGroup group = AllocationGroup::kKvPages;
  MemoryOwner owner = MemoryOwner::kLocal;
  uint64_t unit_bytes = 0;
  uint64_t count = 0;
  uint64_t address = 0;   // ignored for a peer's allocation
  uint64_t capacity = 0;  // bytes the memory really has (>= unit_bytes * count)
};

// Where the planes live: host memory, or CUDA device `ordinal`.
struct PlaneDevice {
  int cuda_ordinal = -1;  // -1: host memory
  bool is_cuda() const { return cuda_ordinal >= 0; }
};

// Everything Create needs, as the Python layer passes it.
struct PlanesIn {
  uint32_t page_tokens = 0;
  std::vector<AllocationIn> allocations;
  PlaneDevice device;
};

class RuntimePlanes {
 public:
  static Result<std::unique_ptr<RuntimePlanes>> Create(const PlanesIn& in) {
    return Create(in.page_tokens, in.allocations, in.device);
  }
  // Checks every allocation (sizes nonzero, capacity covers unit * count,
  // one state-row allocation, addresses nonzero) and builds the one-rank
  // geometry. kInvalidArgument naming the allocation at fault.
  static Result<std::unique_ptr<RuntimePlanes>> Create(uint32_t page_tokens,
                                                       const std::vector<AllocationIn>& allocations,
                                                       PlaneDevice device);
  virtual ~RuntimePlanes() = default;

  const CacheGeometry& geometry() const { return geometry_; }
  PlaneDevice device() const { return device_; }
  // New transfer threads over the planes, with the options set last; each
  // store takes its own.
  virtual Result<std::unique_ptr<Transfers>> MakeTransfers() = 0;
  // The options (queue depth, copy rates) of every MakeTransfers from now on.
  void set_transfer_threads(const ThreadedTransfersOptions& threads) { threads_ = threads; }
  // Pins slab pools for DMA (CUDA), or null (host memory).
  virtual HostRegistrar* registrar() = 0;

 protected:
  RuntimePlanes(CacheGeometry geometry, RankPlanes addresses, PlaneDevice device)
      : geometry_(std::move(geometry)), addresses_(std::move(addresses)), device_(device) {}
  CacheGeometry geometry_;
  RankPlanes addresses_;  // page planes in geometry order (sorted by name)
  PlaneDevice device_;
  ThreadedTransfersOptions threads_;
};

}  // namespace strata::python
