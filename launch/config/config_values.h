// Readers of one config value (a TOML value or a flag's text), each failing
// with what the value is and what is allowed; the key tables in config.cc
// put the key's name in front.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "launch/config/config.h"

namespace strata::config_values {

// The value as the error messages quote it ("text", 12, true).
std::string ValueText(const ConfigValue& value);
// A size: "64GiB", "10GB", a bare byte count.
Result<uint64_t> AsSize(const ConfigValue& value);
// A positive duration: "500ms", "90s", "2m", "1h", bare seconds.
Result<std::chrono::milliseconds> AsDuration(const ConfigValue& value);
// A duration, or 0 ("0", 0 or "off"): the feature is off.
Result<std::chrono::milliseconds> AsDurationOrOff(const ConfigValue& value);
// A whole number in [min, max].
Result<uint64_t> AsWhole(const ConfigValue& value, uint64_t min, uint64_t max);
// Non-empty text; `what` names it in the error.
Result<std::string> AsText(const ConfigValue& value, std::string_view what);
// true or false (also the strings "true" and "false").
Result<bool> AsBool(const ConfigValue& value);

}  // namespace strata::config_values
