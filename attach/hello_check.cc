#include "attach/hello_check.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata::attach {
namespace {

Status Differs(std::string_view what, const auto& declared, const auto& served) {
  return Status::InvalidArgument(
      fmt::format("{}: the runtime declares {}, this rank serves {}", what, declared, served));
}

Status CheckRank(uint32_t rank, const RankGeometry& declared, const RankGeometry& served) {
  const std::string where = fmt::format("rank {}", rank);
  if (declared.row.name != served.row.name) {
    return Differs(where + " state-row allocation", declared.row.name, served.row.name);
  }
  if (declared.row.unit_bytes != served.row.unit_bytes) {
    return Differs(where + " row " + served.row.name + " unit bytes", declared.row.unit_bytes,
                   served.row.unit_bytes);
  }
  if (declared.row_count != served.row_count) {
    return Differs(where + " row count", declared.row_count, served.row_count);
  }
  if (declared.page_planes.size() != served.page_planes.size()) {
    return Differs(where + " page plane count", declared.page_planes.size(),
                   served.page_planes.size());
  }
  for (size_t i = 0; i < served.page_planes.size(); ++i) {
    const PlaneSpec& d = declared.page_planes[i];
    const PlaneSpec& s = served.page_planes[i];
    if (d.name != s.name)
      return Differs(where + " page plane " + std::to_string(i), d.name, s.name);
    if (d.unit_bytes != s.unit_bytes) {
      return Differs(where + " page plane " + s.name + " unit bytes", d.unit_bytes, s.unit_bytes);
    }
  }
  if (declared.page_count != served.page_count) {
    return Differs(where + " page count", declared.page_count, served.page_count);
  }
  return Status::Ok();
}

}  // namespace

Status CheckHello(const AttachHello& hello, size_t fd_count, const AttachExpectation& expected) {
  if (hello.protocol_version != kAttachProtocolVersion) {
    return Differs("protocol version", hello.protocol_version, kAttachProtocolVersion);
  }
  if (hello.model_identity != expected.model_identity) {
    return Differs("model identity", "\"" + hello.model_identity + "\"",
                   "\"" + expected.model_identity + "\"");
  }
  if (hello.state_mode != expected.state_mode) {
    return Differs("state mode", StateModeName(hello.state_mode),
                   StateModeName(expected.state_mode));
  }
  const CacheGeometry& g = expected.geometry;
  if (hello.page_tokens != g.page_tokens) {
    return Differs("page tokens", hello.page_tokens, g.page_tokens);
  }
  if (hello.ranks.size() != g.ranks.size()) {
    return Differs("rank count", hello.ranks.size(), g.ranks.size());
  }
  for (uint32_t r = 0; r < g.rank_count(); ++r) {
    for (const SizedAllocation& a : hello.ranks[r]) {
      if (a.owner != MemoryOwner::kLocal) {
        return Status::InvalidArgument("rank " + std::to_string(r) + " allocation " + a.name +
                                       ": a peer's memory cannot be attached");
      }
    }
    Result<RankGeometry> declared = RankGeometryFromAllocations(hello.ranks[r]);
    if (!declared.ok()) return declared.status().WithContext("rank " + std::to_string(r));
    STRATA_RETURN_IF_ERROR(CheckRank(r, *declared, g.ranks[r]));
  }
  if (std::find(expected.plane_handles.begin(), expected.plane_handles.end(), hello.plane_handle) ==
      expected.plane_handles.end()) {
    return Differs("plane memory", PlaneHandleKindName(hello.plane_handle),
                   PlaneHandleKindsName(expected.plane_handles));
  }
  if (hello.plane_handle == PlaneHandleKind::kCudaIpc) {
    if (fd_count != 0) return Differs("shared-memory fds", fd_count, "none (IPC handles)");
    if (hello.ipc_planes.size() != AllocationCount(hello)) {
      return Differs("IPC handles", hello.ipc_planes.size(),
                     fmt::format("{} (one per allocation)", AllocationCount(hello)));
    }
    return Status::Ok();
  }
  if (!hello.ipc_planes.empty()) {
    return Differs("IPC handles", hello.ipc_planes.size(), "none (planes shared by fd)");
  }
  if (fd_count != AllocationCount(hello)) {
    return Differs("shared-memory fds", fd_count,
                   fmt::format("{} (one per allocation)", AllocationCount(hello)));
  }
  return Status::Ok();
}

std::vector<PlaneFd> PlaneFdsOf(const AttachHello& hello, std::span<const UniqueFd> fds,
                                const CacheGeometry& geometry) {
  std::vector<PlaneFd> out;
  size_t next = 0;
  for (uint32_t r = 0; r < hello.ranks.size(); ++r) {
    const RankGeometry& g = geometry.ranks[r];
    for (const SizedAllocation& a : hello.ranks[r]) {
      PlaneFd p{.rank = r, .page_plane = std::nullopt, .fd = -1, .ipc = std::nullopt};
      if (hello.plane_handle == PlaneHandleKind::kCudaIpc) {
        p.ipc = hello.ipc_planes[next++];
      } else {
        p.fd = fds[next++].get();
      }
      if (a.group == AllocationGroup::kKvPages) {
        for (uint32_t i = 0; i < g.page_planes.size(); ++i) {
          if (g.page_planes[i].name == a.name) p.page_plane = i;
        }
      }
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace strata::attach
