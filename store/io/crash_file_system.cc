#include "store/io/crash_file_system.h"

#include <algorithm>
#include <unordered_map>

namespace strata {

namespace {

constexpr uint64_t kZeroChunkBytes = uint64_t{1} << 20;

std::string Join(const std::string& dir, std::string_view name) {
  return dir + "/" + std::string(name);
}

bool Creates(OpenFor how) { return how == OpenFor::kDirectWriteNew || how == OpenFor::kWriteNew; }

// Tracks BlockIo writes at submission and syncs at their (successful)
// completion.
class CrashBlockIo final : public BlockIo {
 public:
  CrashBlockIo(std::unique_ptr<BlockIo> inner, CrashFileSystem& fs)
      : inner_(std::move(inner)), fs_(fs) {}
  uint32_t capacity() const override { return inner_->capacity(); }
  Status Submit(std::span<const BlockRequest> requests) override {
    for (const BlockRequest& r : requests) {
      if (r.op == BlockOp::kWrite) {
        uint64_t bytes = 0;
        for (uint32_t i = 0; i < r.iov_count; ++i) bytes += r.iov[i].iov_len;
        fs_.NoteWrite(r.fd, r.offset, bytes);
      } else if (r.op == BlockOp::kSyncData || r.op == BlockOp::kSync) {
        syncs_[r.tag] = r.fd;
      }
    }
    return inner_->Submit(requests);
  }
  Result<size_t> Reap(std::span<BlockCompletion> out, std::chrono::nanoseconds max_wait) override {
    Result<size_t> n = inner_->Reap(out, max_wait);
    if (!n.ok()) return n;
    for (size_t i = 0; i < *n; ++i) {
      auto it = syncs_.find(out[i].tag);
      if (it == syncs_.end()) continue;
      if (out[i].result >= 0) fs_.NoteSync(it->second);
      syncs_.erase(it);
    }
    return n;
  }
  void Wake() override { inner_->Wake(); }

 private:
  std::unique_ptr<BlockIo> inner_;
  CrashFileSystem& fs_;
  std::unordered_map<uint64_t, int> syncs_;  // tag -> fd of a sync in flight
};

}  // namespace

std::unique_ptr<BlockIo> CrashFileSystem::WrapBlockIo(std::unique_ptr<BlockIo> io) {
  return std::make_unique<CrashBlockIo>(std::move(io), *this);
}

CrashFileSystem::Inode CrashFileSystem::InodeOf(int fd) {
  Result<FileInfo> info = inner_.Stat(fd);
  if (!info.ok()) return {0, 0};
  return {info->device, info->inode};
}

Result<int> CrashFileSystem::OpenDirectory(const std::string& path, DirectoryMissing missing) {
  STRATA_ASSIGN_OR_RETURN(int fd, inner_.OpenDirectory(path, missing));
  const Inode inode = InodeOf(fd);
  MutexLock lock(mu_);
  open_[fd] = inode;
  if (!dirs_.contains(inode)) dirs_[inode].path = path;
  return fd;
}

Result<int> CrashFileSystem::OpenAt(int dir_fd, std::string_view name, OpenFor how) {
  STRATA_ASSIGN_OR_RETURN(int fd, inner_.OpenAt(dir_fd, name, how));
  const Inode inode = InodeOf(fd);
  MutexLock lock(mu_);
  open_[fd] = inode;
  auto dir = open_.find(dir_fd);
  if (Creates(how) && dir != open_.end() && dirs_.contains(dir->second)) {
    DirState& d = dirs_[dir->second];
    files_[inode] = FileState{Join(d.path, name), 0, {}};
    d.unsynced.push_back({NameOp::kCreate, "", std::string(name)});
  }
  return fd;
}

void CrashFileSystem::Close(int fd) {
  {
    MutexLock lock(mu_);
    open_.erase(fd);
  }
  inner_.Close(fd);
}

Status CrashFileSystem::Allocate(int fd, uint64_t bytes) { return inner_.Allocate(fd, bytes); }

Status CrashFileSystem::Truncate(int fd, uint64_t bytes) { return inner_.Truncate(fd, bytes); }

Status CrashFileSystem::WriteAt(int fd, std::span<const std::byte> bytes, uint64_t offset) {
  NoteWrite(fd, offset, bytes.size());
  return inner_.WriteAt(fd, bytes, offset);
}

void CrashFileSystem::NoteWrite(int fd, uint64_t offset, uint64_t bytes) {
  MutexLock lock(mu_);
  auto it = open_.find(fd);
  if (it == open_.end()) return;
  auto file = files_.find(it->second);
  if (file != files_.end()) file->second.dirty.emplace_back(offset, bytes);
}

void CrashFileSystem::NoteSync(int fd) {
  const Result<FileInfo> info = inner_.Stat(fd);
  MutexLock lock(mu_);
  auto it = open_.find(fd);
  if (it == open_.end()) return;
  if (auto dir = dirs_.find(it->second); dir != dirs_.end()) {
    for (const NameChange& c : dir->second.unsynced) {
      if (c.op != NameOp::kUnlink) continue;
      (void)inner_.Unlink(fd, c.from);  // the unlink is durable now
      const std::string gone = Join(dir->second.path, c.from);
      std::erase_if(files_, [&](const auto& entry) { return entry.second.path == gone; });
    }
    dir->second.unsynced.clear();
    return;
  }
  if (auto file = files_.find(it->second); file != files_.end()) {
    file->second.dirty.clear();
    if (info.ok()) file->second.synced_bytes = info->bytes;
  }
}

Status CrashFileSystem::Rename(int dir_fd, std::string_view from, std::string_view to) {
  STRATA_RETURN_IF_ERROR(inner_.Rename(dir_fd, from, to));
  MutexLock lock(mu_);
  auto dir = open_.find(dir_fd);
  if (dir == open_.end() || !dirs_.contains(dir->second)) return Status::Ok();
  DirState& d = dirs_[dir->second];
  for (auto& [inode, f] : files_) {
    if (f.path == Join(d.path, from)) f.path = Join(d.path, to);
  }
  d.unsynced.push_back({NameOp::kRename, std::string(from), std::string(to)});
  return Status::Ok();
}

Status CrashFileSystem::Unlink(int dir_fd, std::string_view name) {
  MutexLock lock(mu_);
  auto dir = open_.find(dir_fd);
  if (dir == open_.end() || !dirs_.contains(dir->second)) return inner_.Unlink(dir_fd, name);
  DirState& d = dirs_[dir->second];
  const std::string hidden = std::string(kCrashHiddenPrefix) + std::to_string(next_hidden_++);
  STRATA_RETURN_IF_ERROR(inner_.Rename(dir_fd, name, hidden));
  for (auto& [inode, f] : files_) {
    if (f.path == Join(d.path, name)) f.path = Join(d.path, hidden);
  }
  d.unsynced.push_back({NameOp::kUnlink, hidden, std::string(name)});
  return Status::Ok();
}

Status CrashFileSystem::SyncData(int fd) {
  STRATA_RETURN_IF_ERROR(inner_.SyncData(fd));
  NoteSync(fd);
  return Status::Ok();
}

Status CrashFileSystem::Sync(int fd) {
  STRATA_RETURN_IF_ERROR(inner_.Sync(fd));
  NoteSync(fd);
  return Status::Ok();
}

Status CrashFileSystem::SyncFilesystem(int fd) {
  STRATA_RETURN_IF_ERROR(inner_.SyncFilesystem(fd));
  std::vector<int> open_fds;
  {
    MutexLock lock(mu_);
    for (const auto& [open_fd, inode] : open_) open_fds.push_back(open_fd);
  }
  for (int open_fd : open_fds) NoteSync(open_fd);
  return Status::Ok();
}

Result<std::vector<std::string>> CrashFileSystem::List(int dir_fd) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, inner_.List(dir_fd));
  std::erase_if(names, [](const std::string& n) { return n.starts_with(kCrashHiddenPrefix); });
  return names;
}

Result<CrashReport> CrashFileSystem::SimulateCrash(CrashMode mode) {
  MutexLock lock(mu_);
  CrashReport report;
  // Data first, while every file's current name is known.
  for (auto& [inode, f] : files_) {
    const size_t slash = f.path.rfind('/');
    STRATA_ASSIGN_OR_RETURN(int dir,
                            inner_.OpenDirectory(f.path.substr(0, slash), DirectoryMissing::kFail));
    Result<int> fd = inner_.OpenAt(dir, f.path.substr(slash + 1), OpenFor::kReadWrite);
    inner_.Close(dir);
    if (fd.status().code() == StatusCode::kNotFound) continue;  // removed for good
    if (!fd.ok()) return fd.status().WithContext("crash: " + f.path);
    Status s;
    Result<FileInfo> info = inner_.Stat(*fd);
    uint64_t size = info.ok() ? info->bytes : 0;
    if (mode == CrashMode::kForgetAll && size != f.synced_bytes) {
      s = inner_.Truncate(*fd, f.synced_bytes);
      size = f.synced_bytes;
      ++report.files_resized;
    }
    const std::vector<std::byte> zeros(kZeroChunkBytes);
    for (size_t i = 0; s.ok() && i < f.dirty.size(); ++i) {
      // kForgetSomeData: every other range survives (deterministic).
      if (mode == CrashMode::kForgetSomeData && i % 2 == 1) continue;
      const uint64_t begin = std::min(f.dirty[i].first, size);
      const uint64_t end = std::min(f.dirty[i].first + f.dirty[i].second, size);
      for (uint64_t at = begin; s.ok() && at < end; at += kZeroChunkBytes) {
        s = inner_.WriteAt(*fd, std::span(zeros).first(std::min(kZeroChunkBytes, end - at)), at);
      }
      ++report.ranges_zeroed;
    }
    inner_.Close(*fd);
    if (!s.ok()) return s.WithContext("crash: " + f.path);
    f.dirty.clear();
    f.synced_bytes = size;
  }
  // Then names, newest change first.
  for (auto& [inode, d] : dirs_) {
    if (d.unsynced.empty()) continue;
    STRATA_ASSIGN_OR_RETURN(int dir, inner_.OpenDirectory(d.path, DirectoryMissing::kFail));
    for (auto it = d.unsynced.rbegin(); it != d.unsynced.rend(); ++it) {
      Status s;
      if (mode != CrashMode::kForgetAll) {
        if (it->op == NameOp::kUnlink) s = inner_.Unlink(dir, it->from);
      } else if (it->op == NameOp::kCreate) {
        s = inner_.Unlink(dir, it->to);
        ++report.names_undone;
      } else if (it->op == NameOp::kRename) {
        s = inner_.Rename(dir, it->to, it->from);
        ++report.names_undone;
      } else {
        s = inner_.Rename(dir, it->from, it->to);
        ++report.names_undone;
      }
      if (!s.ok() && s.code() != StatusCode::kNotFound) {
        inner_.Close(dir);
        return s.WithContext("crash: undo in " + d.path);
      }
    }
    inner_.Close(dir);
    d.unsynced.clear();
  }
  files_.clear();  // everything left is now durable
  return report;
}

}  // namespace strata
