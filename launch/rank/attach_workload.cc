#include "launch/rank/attach_workload.h"

#include <spdlog/spdlog.h>

#include <algorithm>

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

// Listens on the configured socket for a runtime sharing `planes`; logs why not.
std::unique_ptr<attach::AttachServer> ListenFor(
    const RankConfig& config, const attach::AttachTargets& targets, std::string_view role,
    std::function<Status(const attach::AttachRendezvous&)> take_rendezvous = {}) {
  attach::AttachServerOptions options = AttachServerOptionsFor(config, *targets.planes);
  options.take_rendezvous = std::move(take_rendezvous);
  Result<std::unique_ptr<attach::AttachServer>> server =
      attach::AttachServer::Listen(options, targets);
  if (!server.ok()) {
    spdlog::error("attach.socket: {}", server.status().ToString());
    return nullptr;
  }
  spdlog::info("serving the runtime of rank {} at {} (model \"{}\", {}, planes as {})",
               config.cluster.rank, options.socket_path, options.expected.model_identity, role,
               PlaneHandleKindsName(options.expected.plane_handles));
  return std::move(*server);
}

}  // namespace

attach::AttachServerOptions AttachServerOptionsFor(const RankConfig& config,
                                                   const PlaneImporter& planes) {
  attach::AttachServerOptions options;
  options.socket_path = *config.attach.socket;
  options.expected = {.model_identity = RankModelIdentity(config),
                      .state_mode = StateMode::kOrdinary,
                      .geometry = planes.shared_geometry(),
                      .plane_handles = planes.handle_kinds()};
  return options;
}

Result<std::unique_ptr<attach::AttachServer>> AdmitRuntimeBeforeJoin(
    const RankConfig& config, PlaneImporter& planes, GatedTransfers& gate,
    const attach::AttachRendezvous& announce) {
  attach::AttachServerOptions options = AttachServerOptionsFor(config, planes);
  options.announce = announce;
  STRATA_ASSIGN_OR_RETURN(
      std::unique_ptr<attach::AttachServer> server,
      attach::AttachServer::Listen(options, {.planes = &planes, .gate = &gate}));
  spdlog::info(
      "serving the runtime of rank 0 at {}: waiting up to {} s for it to attach and carry the "
      "rendezvous address {} to the peers",
      options.socket_path, config.cluster.connect_timeout.count() / 1000, announce.address);
  const auto deadline = std::chrono::steady_clock::now() + config.cluster.connect_timeout;
  while (!server->attached()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable(
          "attach.socket: no runtime attached within connect_timeout, so no peer could learn "
          "the rendezvous address");
    }
    server->Step(UnixNowMs(), kAttachTurn);
  }
  return server;
}

int ServeAttach(RuntimeDriver& driver, const RankConfig& config, const StopRequest& stop,
                const PublishSnapshot& publish) {
  PlaneImporter* planes = driver.attach_planes();
  if (driver.store() == nullptr || planes == nullptr) {
    spdlog::error("attach.socket: no store to serve (configure prefix_cache.memory or .disk)");
    return 1;
  }
  // With cluster.rendezvous = "attach" the runtime attached before the join
  // (its server already holds the gate).
  std::unique_ptr<attach::AttachServer> server = driver.TakeAttachServer();
  if (server != nullptr) {
    server->SetStore(*driver.store());
  } else {
    server =
        ListenFor(config, {.store = driver.store(), .planes = planes, .gate = driver.attach_gate()},
                  "store calls and planes");
  }
  if (server == nullptr) return 1;
  auto published = std::chrono::steady_clock::now();
  while (!stop.requested()) {
    server->Step(UnixNowMs(), kAttachTurn);
    if (std::chrono::steady_clock::now() - published >= kPublishInterval) {
      publish();
      published = std::chrono::steady_clock::now();
    }
  }
  return 0;
}

int ServeAttachAsPeer(PeerRank& peer, const RankConfig& config, const StopRequest& stop,
                      const PublishSnapshot& publish) {
  if (peer.attach_planes() == nullptr || peer.attach_gate() == nullptr) {
    spdlog::error("attach.socket: this rank has no planes to share");
    return 1;
  }
  std::unique_ptr<attach::AttachServer> server =
      ListenFor(config, {.planes = peer.attach_planes(), .gate = peer.attach_gate()}, "planes only",
                peer.attach_rendezvous_sink());
  if (server == nullptr) return 1;
  // Serves the channel in short turns until `until` or the agent's end.
  PeerTurn turn = [&server, &peer](std::chrono::steady_clock::time_point until) {
    do {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      server->Step(UnixNowMs(), std::clamp(left, std::chrono::milliseconds(0), kAttachTurn));
    } while (std::chrono::steady_clock::now() < until && peer.Serving());
  };
  return ServeAsPeer(peer, stop, publish, turn);
}

}  // namespace strata
