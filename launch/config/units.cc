#include "launch/config/units.h"

#include <array>
#include <cctype>
#include <limits>

namespace strata {

namespace {

struct Unit {
  std::string_view name;  // lower case
  uint64_t factor;
};

constexpr uint64_t kKi = 1024;
constexpr std::array<Unit, 9> kSizeUnits = {{
    {"b", 1},
    {"kb", 1000},
    {"mb", 1000 * 1000},
    {"gb", 1000ULL * 1000 * 1000},
    {"tb", 1000ULL * 1000 * 1000 * 1000},
    {"kib", kKi},
    {"mib", kKi* kKi},
    {"gib", kKi* kKi* kKi},
    {"tib", kKi* kKi* kKi* kKi},
}};

constexpr std::array<Unit, 4> kDurationUnits = {{
    {"ms", 1},
    {"s", 1000},
    {"m", 60 * 1000},
    {"h", 60 * 60 * 1000},
}};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits `<digits>[ ]<unit>`; the unit may be empty. False when there are no
// leading digits, the number overflows uint64, or the unit is not letters.
bool SplitNumberUnit(std::string_view text, uint64_t* number, std::string* unit) {
  text = Trim(text);
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (n > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    n = n * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  std::string_view rest = text.substr(i);
  if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  for (char c : rest) {
    if (std::isalpha(static_cast<unsigned char>(c)) == 0) return false;
  }
  *number = n;
  *unit = Lower(rest);
  return true;
}

template <size_t N>
const Unit* FindUnit(const std::array<Unit, N>& units, const std::string& name) {
  for (const Unit& u : units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

Status NotASize(std::string_view text) {
  return Status::InvalidArgument("\"" + std::string(text) + "\" is not a size (" +
                                 std::string(kSizeExamples) + ")");
}

Status NotADuration(std::string_view text) {
  return Status::InvalidArgument("\"" + std::string(text) + "\" is not a duration (" +
                                 std::string(kDurationExamples) + ")");
}

}  // namespace

Result<uint64_t> ParseSize(std::string_view text) {
  uint64_t number = 0;
  std::string unit;
  if (!SplitNumberUnit(text, &number, &unit)) return NotASize(text);
  uint64_t factor = 1;
  if (!unit.empty()) {
    const Unit* u = FindUnit(kSizeUnits, unit);
    if (u == nullptr) return NotASize(text);
    factor = u->factor;
  }
  if (number > std::numeric_limits<uint64_t>::max() / factor) {
    return Status::InvalidArgument("\"" + std::string(text) + "\" is larger than 2^64-1 bytes");
  }
  return number * factor;
}

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  uint64_t number = 0;
  std::string unit;
  if (!SplitNumberUnit(text, &number, &unit)) return NotADuration(text);
  uint64_t factor = 1000;  // bare numbers are seconds
  if (!unit.empty()) {
    const Unit* u = FindUnit(kDurationUnits, unit);
    if (u == nullptr) return NotADuration(text);
    factor = u->factor;
  }
  if (number == 0) {
    return Status::InvalidArgument("\"" + std::string(text) + "\" is not a positive duration (" +
                                   std::string(kDurationExamples) + ")");
  }
  constexpr auto kMaxMs = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (number > kMaxMs / factor) {
    return Status::InvalidArgument("\"" + std::string(text) + "\" is too long a duration");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(number * factor));
}

std::string FormatSize(uint64_t bytes) {
  if (bytes == 0) return "0";
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 8> kForms = {{
      {"TiB", kKi * kKi * kKi * kKi},
      {"GiB", kKi * kKi * kKi},
      {"MiB", kKi * kKi},
      {"KiB", kKi},
      {"TB", 1000ULL * 1000 * 1000 * 1000},
      {"GB", 1000ULL * 1000 * 1000},
      {"MB", 1000 * 1000},
      {"KB", 1000},
  }};
  // The unit that gives the smallest whole number.
  std::string best = std::to_string(bytes);
  uint64_t best_number = bytes;
  for (const auto& [name, factor] : kForms) {
    if (bytes % factor == 0 && bytes / factor < best_number) {
      best_number = bytes / factor;
      best = std::to_string(best_number) + std::string(name);
    }
  }
  return best;
  return std::to_string(bytes);
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  const int64_t ms = duration.count();
  if (ms != 0 && ms % (60 * 60 * 1000) == 0) return std::to_string(ms / (60 * 60 * 1000)) + "h";
  if (ms != 0 && ms % (60 * 1000) == 0) return std::to_string(ms / (60 * 1000)) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace strata
