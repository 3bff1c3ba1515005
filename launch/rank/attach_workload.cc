#include "launch/rank/attach_workload.h"

#include <spdlog/spdlog.h>

#include "attach/attach_server.h"

namespace strata {
namespace {

// How long one turn waits for socket activity, and how often the ops
// snapshot is refreshed.
constexpr auto kAttachTurn = std::chrono::milliseconds(20);
constexpr auto kPublishInterval = std::chrono::seconds(1);

uint64_t UnixNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

int ServeAttach(RuntimeDriver& driver, const RankConfig& config, const StopRequest& stop,
                const PublishSnapshot& publish) {
  attach::ImportedPlanes* planes = driver.attach_planes();
  if (driver.store() == nullptr || planes == nullptr) {
    spdlog::error("attach.socket: no store to serve (configure prefix_cache.memory or .disk)");
    return 1;
  }
  attach::AttachServerOptions options;
  options.socket_path = *config.attach.socket;
  options.expected = {.model_identity = RankModelIdentity(config),
                      .state_mode = StateMode::kOrdinary,
                      .geometry = planes->geometry()};
  Result<std::unique_ptr<attach::AttachServer>> server =
      attach::AttachServer::Listen(options, *driver.store(), *planes);
  if (!server.ok()) {
    spdlog::error("attach.socket: {}", server.status().ToString());
    return 1;
  }
  spdlog::info("serving runtimes at {} (model \"{}\")", options.socket_path,
               options.expected.model_identity);
  auto published = std::chrono::steady_clock::now();
  while (!stop.requested()) {
    (*server)->Step(UnixNowMs(), kAttachTurn);
    if (std::chrono::steady_clock::now() - published >= kPublishInterval) {
      publish();
      published = std::chrono::steady_clock::now();
    }
  }
  return 0;
}

}  // namespace strata
