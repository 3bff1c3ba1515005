// Sizes and durations as operators write them in config files and flags
// (seed 2.11): sizes like `64GiB`, `512MiB`, `10GB`, `4096` (bytes); durations
// like `90s`, `500ms`, `2m`, `1h`, or bare seconds. Pure parsing, no locale.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/base/status.h"

namespace strata {

// What a size error lists as allowed (the grammar is in docs/operations.md).
inline constexpr std::string_view kSizeExamples = "examples: 64GiB, 512MiB, 10GB, 4096";
inline constexpr std::string_view kDurationExamples =
    "a positive whole number with ms, s, m or h, or bare seconds: 500ms, 90s, 2m, 1h, 30";

// `<digits>[ ]<unit>` with unit one of B, KB, MB, GB, TB (powers of 1000),
// KiB, MiB, GiB, TiB (powers of 1024), case-insensitive, or bare digits
// (bytes). Leading/trailing spaces are ignored. Fails (kInvalidArgument,
// message `"<text>" is not a size (examples: ...)`) on anything else and on
// values above 2^64-1.
Result<uint64_t> ParseSize(std::string_view text);

// `<digits>[ ]<unit>` with unit ms, s, m or h, or bare digits (seconds).
// Zero and values that overflow milliseconds in int64 are errors.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// The shortest exact form ParseSize reads back: `64GiB`, `10GB`, `4097`.
std::string FormatSize(uint64_t bytes);
// The largest exact unit ParseDuration reads back: `1h`, `90s`, `1500ms`.
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace strata
