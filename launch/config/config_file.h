// The `strata rank` TOML configuration file: [prefix_cache], [cluster],
// [metrics], [log] and [runtime] tables whose keys are ConfigKeys().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launch/config/config.h"
#include "store/base/status.h"

namespace strata {

// Config files larger than this are refused unread.
inline constexpr size_t kConfigFileBytesMax = 1 << 20;

// Parses `text` as TOML and sets every key it holds on `config`; keys it does
// not hold keep their value. Appends the names of the keys it set to
// `keys_set` when given. Fails, naming `origin` and the line, on a TOML
// syntax error, an unknown table or key (listing the known ones), or a bad
// value (`prefix_cache.memory: "64 gigs" is not a size (...)`); `config` may
// then be partly updated.
Status ApplyConfigToml(std::string_view text, std::string_view origin, RankConfig* config,
                       std::vector<std::string>* keys_set = nullptr);

// Reads the file at `path` (at most kConfigFileBytesMax bytes).
Result<std::string> ReadConfigFile(const std::string& path);

}  // namespace strata
