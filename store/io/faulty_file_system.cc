#include "store/io/faulty_file_system.h"

#include <string>

namespace strata {

FaultDecision FaultyFileSystem::Decide(FaultOp op) {
  const FaultDecision d = plan_.Decide(op, counters_.Next(op));
  if (d.effect != FaultEffect::kNone) counters_.Fired(op);
  return d;
}

Status FaultyFileSystem::Fail(FaultOp op) {
  const FaultDecision d = plan_.Decide(op, counters_.Next(op));
  // A short transfer means nothing for calls that move no bytes.
  if (d.effect != FaultEffect::kError) return Status::Ok();
  counters_.Fired(op);
  return Status::FromErrno(d.error, std::string(FaultOpName(op)) + " (injected fault)");
}

Result<int> FaultyFileSystem::OpenDirectory(const std::string& path, DirectoryMissing missing) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kOpen));
  return inner_.OpenDirectory(path, missing);
}

Result<int> FaultyFileSystem::OpenAt(int dir_fd, std::string_view name, OpenFor how) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kOpen));
  return inner_.OpenAt(dir_fd, name, how);
}

Status FaultyFileSystem::Allocate(int fd, uint64_t bytes) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kAllocate));
  return inner_.Allocate(fd, bytes);
}

Status FaultyFileSystem::Truncate(int fd, uint64_t bytes) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kTruncate));
  return inner_.Truncate(fd, bytes);
}

Result<uint64_t> FaultyFileSystem::ReadAt(int fd, std::span<std::byte> out, uint64_t offset) {
  const FaultDecision d = Decide(FaultOp::kReadAt);
  if (d.effect == FaultEffect::kError) {
    return Status::FromErrno(d.error, "pread (injected fault)");
  }
  if (d.effect == FaultEffect::kShort) return inner_.ReadAt(fd, out.first(out.size() / 2), offset);
  return inner_.ReadAt(fd, out, offset);
}

Status FaultyFileSystem::WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) {
  const FaultDecision d = Decide(FaultOp::kWriteAt);
  if (d.effect == FaultEffect::kError) return Status::FromErrno(d.error, "pwrite (injected fault)");
  if (d.effect == FaultEffect::kShort) {
    STRATA_RETURN_IF_ERROR(inner_.WriteAt(fd, bytes.first(bytes.size() / 2), offset));
    return Status::IoError("pwrite stopped after " + std::to_string(bytes.size() / 2) + " of " +
                           std::to_string(bytes.size()) + " bytes (injected fault)");
  }
  return inner_.WriteAt(fd, bytes, offset);
}

Status FaultyFileSystem::Rename(int dir_fd, std::string_view from, std::string_view to) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kRename));
  return inner_.Rename(dir_fd, from, to);
}

Status FaultyFileSystem::Unlink(int dir_fd, std::string_view name) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kUnlink));
  return inner_.Unlink(dir_fd, name);
}

Status FaultyFileSystem::RemoveDirectory(int dir_fd, std::string_view name) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kUnlink));
  return inner_.RemoveDirectory(dir_fd, name);
}

Status FaultyFileSystem::SyncData(int fd) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kSync));
  return inner_.SyncData(fd);
}

Status FaultyFileSystem::Sync(int fd) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kSync));
  return inner_.Sync(fd);
}

Status FaultyFileSystem::SyncFilesystem(int fd) {
  STRATA_RETURN_IF_ERROR(Fail(FaultOp::kSync));
  return inner_.SyncFilesystem(fd);
}

}  // namespace strata
