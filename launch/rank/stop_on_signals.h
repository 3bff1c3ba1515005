// StopOnSignals: routes SIGTERM and SIGINT to a StopRequest. The first
// signal requests a clean stop; another one at least kSameSignalWindow later
// exits the process at once with status 130. Signals closer together than
// that are one request delivered twice (a wrapper such as timeout(1) signals
// the child and then its process group).
//
// The handler only writes a byte to a pipe (async-signal-safe); a watcher
// thread reads it and calls StopRequest::Request, which wakes every waiter.
//
// One instance per process (only the process's first signal is routed);
// `stop` must outlive it. Once it is
// destroyed the handlers stay installed (a second signal still exits at
// once) but no longer reach `stop`.
#pragma once

#include <chrono>
#include <memory>
#include <thread>

#include "launch/rank/stop_request.h"
#include "store/base/status.h"

namespace strata {

class StopOnSignals {
 public:
  static constexpr std::chrono::seconds kSameSignalWindow{1};

  // Errors: the pipe or the handlers could not be set up.
  static Result<std::unique_ptr<StopOnSignals>> Install(StopRequest& stop);
  // Ends and joins the watcher thread.
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  StopOnSignals() = default;

  std::thread watcher_;
};

}  // namespace strata
