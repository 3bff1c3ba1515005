#include "launch/config/config_values.h"

#include <algorithm>
#include <string>

#include "launch/config/units.h"

namespace strata::config_values {

using std::chrono::milliseconds;

std::string ValueText(const ConfigValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return "\"" + *s + "\"";
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return std::get<bool>(value) ? "true" : "false";
}

Result<uint64_t> AsSize(const ConfigValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return ParseSize(*s);
  if (const auto* i = std::get_if<int64_t>(&value); i != nullptr && *i >= 0) {
    return static_cast<uint64_t>(*i);
  }
  return Status::InvalidArgument(ValueText(value) + " is not a size (" +
                                 std::string(kSizeExamples) + ")");
}

Result<milliseconds> AsDuration(const ConfigValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return ParseDuration(*s);
  if (const auto* i = std::get_if<int64_t>(&value)) return ParseDuration(std::to_string(*i));
  return Status::InvalidArgument(ValueText(value) + " is not a duration (" +
                                 std::string(kDurationExamples) + ")");
}

Result<milliseconds> AsDurationOrOff(const ConfigValue& value) {
  const auto* s = std::get_if<std::string>(&value);
  const auto* i = std::get_if<int64_t>(&value);
  if ((s != nullptr && (*s == "0" || *s == "off")) || (i != nullptr && *i == 0)) {
    return milliseconds(0);
  }
  return AsDuration(value);
}

Result<uint64_t> AsWhole(const ConfigValue& value, uint64_t min, uint64_t max) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  std::optional<uint64_t> n;
  if (const auto* i = std::get_if<int64_t>(&value); i != nullptr && *i >= 0) {
    n = static_cast<uint64_t>(*i);
  } else if (const auto* s = std::get_if<std::string>(&value);
             s != nullptr && !s->empty() && s->size() <= 19 &&
             std::all_of(s->begin(), s->end(), [](char c) { return c >= '0' && c <= '9'; })) {
    n = std::stoull(*s);
  }
  if (!n.has_value()) {
    return Status::InvalidArgument(ValueText(value) + " is not a whole number in " + range);
  }
  if (*n < min || *n > max) {
    return Status::InvalidArgument(std::to_string(*n) + " is out of range (" + range + ")");
  }
  return *n;
}

Result<std::string> AsText(const ConfigValue& value, std::string_view what) {
  const auto* s = std::get_if<std::string>(&value);
  if (s == nullptr || s->empty()) {
    return Status::InvalidArgument(ValueText(value) + " is not " + std::string(what));
  }
  return *s;
}

Result<bool> AsBool(const ConfigValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  if (const auto* s = std::get_if<std::string>(&value)) {
    if (*s == "true") return true;
    if (*s == "false") return false;
  }
  return Status::InvalidArgument(ValueText(value) + " is not true or false");
}

}  // namespace strata::config_values
