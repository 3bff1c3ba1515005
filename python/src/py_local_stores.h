// Building one process's store over a Python runtime's planes: memory only
// (no directory), disk only (no memory), or both (CompositeStore), and any
// of these, or none, joined to a pool manager on this host (docs/pool.md:
// coordinator/pool/instance_pool.h, as a rank joins it).
#pragma once

#include <optional>
#include <string>

#include "python/src/py_planes.h"
#include "python/src/py_store.h"
#include "store/record/record_file.h"

namespace strata::python {

struct LocalStoreOptions {
  uint64_t memory_bytes = 0;             // 0: no memory tier
  std::optional<std::string> directory;  // unset: no disk tier
  uint64_t disk_bytes = 0;               // record bytes on disk (> 0 with a directory)
  std::string model_identity;            // names the record directory with the layout
  Durability durability = Durability::kSync;
  bool drain_on_close = true;  // composite: write memory-only records at close
  // A pool manager's Unix socket or tcp://HOST:PORT: the local chain (or
  // none) joins it.
  std::optional<std::string> pool;
  // The instance's id at the pool; unset: the host name and process id.
  std::optional<std::string> pool_instance;
  // Over tcp://: "auto", "arena" or "tcp" (pool_data_path.h).
  std::string pool_data = "auto";
  // Copy rates of every tier's transfer threads (copy_out_bytes_per_s,
  // restore_bytes_per_s; 0: unbounded), as [runtime] copy_out_rate and
  // restore_rate set them for `strata rank`.
  ThreadedTransfersOptions threads;
};

Result<std::unique_ptr<StoreOwner>> OpenLocalStore(std::unique_ptr<RuntimePlanes> planes,
                                                   const LocalStoreOptions& options);

}  // namespace strata::python
