#include "coordinator/rendezvous/rendezvous_address.h"

#include <charconv>

namespace strata {

std::string FormatRendezvousAddress(const RendezvousAddress& address) {
  const bool v6 = address.host.find(':') != std::string::npos;
  return (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
}

Result<RendezvousAddress> ParseRendezvousAddress(std::string_view text) {
  const auto invalid = [text](std::string_view why) {
    return Status::InvalidArgument("rendezvous address \"" + std::string(text) +
                                   "\": " + std::string(why) + " (expected host:port)");
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return invalid("no port");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return invalid("an IPv6 host must be in brackets");
  }
  if (host.empty()) return invalid("no host");
  uint32_t port = 0;
  const auto [end, err] = std::from_chars(port_text.begin(), port_text.end(), port);
  if (port_text.empty() || err != std::errc() || end != port_text.end() || port == 0 ||
      port > 65535) {
    return invalid("the port is not 1..65535");
  }
  return RendezvousAddress{.host = std::string(host), .port = static_cast<uint16_t>(port)};
}

}  // namespace strata
