#include "launch/rank/pool_budget_supply.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace strata {

namespace {

// "Name:   1234 kB" -> 1234 * 1024, when the line starts with `name`.
std::optional<uint64_t> FieldBytes(std::string_view line, std::string_view name) {
  if (line.substr(0, name.size()) != name) return std::nullopt;
  std::string_view rest = line.substr(name.size());
  if (rest.empty() || rest.front() != ':') return std::nullopt;
  rest.remove_prefix(1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
  if (ec != std::errc() || end == rest.data()) return std::nullopt;
  const std::string_view unit = std::string_view(end, rest.data() + rest.size() - end);
  if (unit.find("kB") == std::string_view::npos) return std::nullopt;
  if (value > UINT64_MAX / 1024) return std::nullopt;
  return value * 1024;
}

}  // namespace

HostMemory ParseMemInfo(std::string_view text) {
  HostMemory out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    if (auto v = FieldBytes(line, "MemAvailable")) out.available_bytes = *v;
    if (auto v = FieldBytes(line, "MemTotal")) out.total_bytes = *v;
    if (eol == std::string_view::npos) break;
    text.remove_prefix(eol + 1);
  }
  return out;
}

HostMemory ReadHostMemory() {
  std::ifstream in("/proc/meminfo");
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  return ParseMemInfo(text.str());
}

pool::BudgetSupply RankBudgetSupply(const HostMemory& host,
                                    std::vector<uint64_t> device_free_bytes) {
  pool::BudgetSupply s;
  s.available_bytes = host.available_bytes;
  s.total_ram_bytes = host.total_bytes;
  s.future_local_bytes = 0;
  s.device_remaining_bytes = std::move(device_free_bytes);
  return s;
}

}  // namespace strata
