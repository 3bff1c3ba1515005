#include "launch/runtime/record_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace strata {

Result<std::vector<std::string>> ListRecordFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".ckpt") continue;
    out.push_back(e.path().filename().string() + " " + std::to_string(e.file_size(ec)));
  }
  if (ec) return Status::IoError("listing " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strata
