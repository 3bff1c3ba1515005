// The synthetic runtime's per-rank service, for ranks in separate processes.
//
// A real tensor-parallel runtime computes every rank's pages on that rank and
// keeps ranks in lockstep through its own execution protocol. The synthetic
// runtime stands in for that with this small HTTP service: each peer serves
// its planes and its record listing, and rank zero's runtime writes "computed"
// pages into, and verifies restored bytes in, every rank's planes through it
// (RemotePlanes). It is a qualification tool, never on the byte path of the
// store: records move only through the record links.
//
//   PUT/GET /page/<plane>/<page id>   one page of one plane (unit bytes)
//   PUT/GET /row/<state slot>         one state row
//   GET     /records                  "<file name> <bytes>\n" per record file
//
// Every request carries the job's token (service_guard.h): without one it is
// answered 401, with another 403, before its body is read and before any
// handler runs. A PUT body above RuntimeServiceBodyMax (the largest unit of
// the rank's geometry) is answered 413 from its Content-Length, unread (a
// chunked body is cut off at that bound). Such refusals close the connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/transfer/device_planes.h"

namespace strata {

// Rank r's runtime service listens on metrics.port + kRuntimeServicePortOffset
// + r (the rank, not the local rank, so rank zero can compute every peer's
// port on any host layout).
inline constexpr uint16_t kRuntimeServicePortOffset = 1000;

// Lists "<name> <bytes>" of every *.ckpt file in `dir`, sorted by name.
Result<std::vector<std::string>> ListRecordFiles(const std::string& dir);

struct RuntimeServiceOptions {
  // The numeric address to listen on (runtime.service_bind; loopback by default).
  std::string bind;
  uint16_t port = 0;  // 0: an ephemeral port (port() says which)
  // RuntimeServiceToken of the job's secret; must not be empty.
  std::string token;
  // How long a request may stall reading or writing before it is dropped.
  std::chrono::seconds io_timeout{10};
};

class RuntimeService {
 public:
  // Serves `planes` (one rank) and the record files in `record_dir` until
  // destroyed. Both must outlive it.
  static Result<std::unique_ptr<RuntimeService>> Start(DevicePlanes& planes,
                                                       const std::string& record_dir,
                                                       const RuntimeServiceOptions& options);
  ~RuntimeService();
  uint16_t port() const;

 private:
  struct Impl;
  explicit RuntimeService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Rank zero's view of every rank's planes: rank 0 is local, ranks 1..N-1 are
// reached through their RuntimeService. geometry() has every rank.
class RemotePlanes final : public DevicePlanes {
 public:
  // `endpoints[r-1]` is "host:port" of rank r's service; every request
  // carries `token` (RuntimeServiceToken of the job's secret).
  RemotePlanes(const CacheGeometry& geometry, DevicePlanes& local,
               const std::vector<std::string>& endpoints, const std::string& token);
  ~RemotePlanes() override;

  const CacheGeometry& geometry() const override { return geometry_; }
  RankPlanes planes(uint32_t rank) const override;
  Status WritePage(uint32_t rank, uint32_t plane, PageId page,
                   std::span<const uint8_t> bytes) override;
  Status ReadPage(uint32_t rank, uint32_t plane, PageId page, std::span<uint8_t> bytes) override;
  Status WriteRow(uint32_t rank, StateSlot slot, std::span<const uint8_t> bytes) override;
  Status ReadRow(uint32_t rank, StateSlot slot, std::span<uint8_t> bytes) override;

  // Rank r's record listing (r >= 1).
  Result<std::vector<std::string>> Records(uint32_t rank);

 private:
  struct Peer;
  Status Put(uint32_t rank, const std::string& path, std::span<const uint8_t> bytes);
  Status Get(uint32_t rank, const std::string& path, std::span<uint8_t> bytes);
  CacheGeometry geometry_;
  DevicePlanes& local_;
  std::vector<std::unique_ptr<Peer>> peers_;
};

}  // namespace strata
