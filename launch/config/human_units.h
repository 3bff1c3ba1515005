// Human-readable sizes and durations for command output.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

// "512 B", "4.0 KiB", "1.5 MiB", "12.3 GiB", "2.0 TiB".
std::string HumanBytes(uint64_t bytes);
// "45s", "3m12s", "5h04m", "2d03h" (negative ages print as "0s").
std::string HumanAge(int64_t seconds);

}  // namespace strata
