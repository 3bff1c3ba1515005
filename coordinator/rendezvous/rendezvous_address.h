// Rank zero's rendezvous address as text, "host:port" ("[v6]:port" for an
// IPv6 literal): how the attach channel and the runtime's own key-value
// store carry it (cluster.rendezvous = "attach", docs/python.md). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "store/base/status.h"

namespace strata {

struct RendezvousAddress {
  std::string host;  // without brackets
  uint16_t port = 0;
};

// "host:port", bracketing a host that contains ':'.
std::string FormatRendezvousAddress(const RendezvousAddress& address);

// The inverse. kInvalidArgument, naming the text, for an empty host, a
// missing or non-numeric port, or a port outside 1..65535.
Result<RendezvousAddress> ParseRendezvousAddress(std::string_view text);

}  // namespace strata
