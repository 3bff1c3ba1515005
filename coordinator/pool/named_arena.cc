#include "coordinator/pool/named_arena.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace strata::pool {

namespace {

constexpr std::string_view kStampTag = "strata-pool-arena 1 ";

// Reads `text` as one unsigned number of `base` up to `end`; advances it.
template <typename T>
bool ParseField(std::string_view& text, char end, int base, T& out) {
  const size_t at = text.find(end);
  if (at == std::string_view::npos || at == 0) return false;
  const char* first = text.data();
  const auto [ptr, ec] = std::from_chars(first, first + at, out, base);
  if (ec != std::errc() || ptr != first + at) return false;
  text.remove_prefix(at + 1);
  return true;
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (s.size() > 256) return std::nullopt;
  return s;
}

// Replaces `path` with `text` (a temporary beside it, renamed over it).
Status WriteStamp(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::FromErrno(errno, "creating " + tmp);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int write_errno = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return Status::FromErrno(n < 0 ? write_errno : EIO, "writing " + tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno(errno, "renaming " + tmp + " to " + path);
  }
  return Status::Ok();
}

}  // namespace

std::string FormatArenaStamp(const ArenaStamp& stamp) {
  char line[96];
  std::snprintf(line, sizeof line, "%.*s%016" PRIx64 " %" PRIu64 " %" PRIu32 "\n",
                static_cast<int>(kStampTag.size()), kStampTag.data(), stamp.generation,
                stamp.slot_bytes, stamp.slot_count);
  return line;
}

std::optional<ArenaStamp> ParseArenaStamp(std::string_view text) {
  if (!text.starts_with(kStampTag)) return std::nullopt;
  text.remove_prefix(kStampTag.size());
  ArenaStamp s;
  if (text.size() < 17 || text[16] != ' ') return std::nullopt;  // 16 hex digits exactly
  if (!ParseField(text, ' ', 16, s.generation) || !ParseField(text, ' ', 10, s.slot_bytes) ||
      !ParseField(text, '\n', 10, s.slot_count) || !text.empty()) {
    return std::nullopt;
  }
  return s;
}

Result<NamedArena> OpenNamedArena(const std::string& path, uint64_t slot_bytes, uint32_t slot_count,
                                  uint64_t fresh_generation) {
  if (slot_bytes == 0 || slot_bytes % 4096 != 0 || slot_count == 0) {
    return Status::InvalidArgument("arena " + path + ": slots of " + std::to_string(slot_bytes) +
                                   " bytes x " + std::to_string(slot_count));
  }
  wire::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return Status::FromErrno(errno, "opening the arena file " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno(errno, "stat of " + path);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return Status::FailedPrecondition(
        "the arena file " + path +
        " is not a regular file of this user with no group or other access: refusing to use it");
  }
  const uint64_t bytes = slot_bytes * slot_count;
  const ArenaStamp want{.generation = 0, .slot_bytes = slot_bytes, .slot_count = slot_count};
  const std::string stamp_path = path + ".generation";
  NamedArena out;
  std::optional<ArenaStamp> stamp;
  if (std::optional<std::string> text = ReadSmallFile(stamp_path)) stamp = ParseArenaStamp(*text);
  if (stamp && stamp->slot_bytes == want.slot_bytes && stamp->slot_count == want.slot_count &&
      static_cast<uint64_t>(st.st_size) == bytes) {
    out.generation = stamp->generation;
    out.reopened = true;
  } else {
    // A new arena: zeroed memory under a new generation, stamped only once
    // the file has its size (a crash in between leaves a mismatch: new again).
    if (::ftruncate(fd.get(), 0) != 0 || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
      return Status::FromErrno(errno, "sizing the arena file " + path);
    }
    ArenaStamp fresh = want;
    fresh.generation = fresh_generation;
    STRATA_RETURN_IF_ERROR(WriteStamp(stamp_path, FormatArenaStamp(fresh)));
    out.generation = fresh_generation;
  }
  STRATA_ASSIGN_OR_RETURN(out.arena, Arena::Map(std::move(fd), slot_bytes, slot_count));
  return out;
}

}  // namespace strata::pool
