// The multi-process form (ranks in separate processes, seed 2.14) over a
// Python runtime's planes, with the rendezvous through the runtime's own
// key-value store (PyKeyValueStore + KvRendezvous*): rank zero's coordinator
// is a store (StoreHandle) for every rank; a peer runs a RankAgent whose
// copies rank zero's jobs drive. Every rank keeps its records on disk.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "python/src/py_planes.h"
#include "python/src/py_store.h"
#include "store/record/record_file.h"

namespace strata::python {

struct MultiProcessOptions {
  uint32_t world_size = 0;
  std::string directory;  // base of this rank's record directory
  uint64_t disk_bytes = 0;
  std::string model_identity;
  std::string prefix = "strata/";         // keys in the rendezvous store
  std::string record_host = "127.0.0.1";  // rank zero: where peers dial its record listener
  std::chrono::milliseconds join_timeout{60'000};  // the whole join, rendezvous included
  Durability durability = Durability::kSync;
  ThreadedTransfersOptions threads;  // copy rates, as LocalStoreOptions::threads
};

// Rank zero: blocks (GIL released) until every peer joined or the join
// timeout, then returns the store for every rank.
std::unique_ptr<StoreOwner> OpenCoordinator(std::unique_ptr<RuntimePlanes> planes,
                                            pybind11::object kv, const MultiProcessOptions& o);

void RegisterMultiProcess(pybind11::module_& m);

}  // namespace strata::python
