// PyKeyValueStore: Strata's KeyValueStore over any Python object with
// set(key, value) and get(key) — a torch.distributed.Store (TCPStore,
// FileStore, HashStore) as it is. When the object also has
// wait(keys, timedelta) (torch's stores do), Get waits through it with the
// time left to the deadline, so a missing key ends in Strata's bounded
// kUnavailable rather than the store's own (often 5-minute) timeout.
//
// Thread: called from Strata's threads without the GIL; each call takes the
// GIL only for the Python call itself.
#pragma once

#include <pybind11/pybind11.h>

#include "coordinator/rendezvous/kv_rendezvous.h"

namespace strata::python {

class PyKeyValueStore final : public KeyValueStore {
 public:
  // Requires the GIL. kInvalidArgument unless `store` has set and get.
  static Result<std::unique_ptr<PyKeyValueStore>> Wrap(pybind11::object store);
  ~PyKeyValueStore() override;  // takes the GIL to drop the reference

  Status Set(const std::string& key, const std::string& value) override;
  Result<std::string> Get(const std::string& key, RendezvousDeadline deadline) override;

 private:
  explicit PyKeyValueStore(pybind11::object store) : store_(std::move(store)) {}
  pybind11::object store_;
};

}  // namespace strata::python
