// A TCP endpoint as text: a numeric IPv4 or IPv6 address and a port.
#pragma once

#include <cstdint>
#include <string>

namespace strata::wire {

// `address` is numeric ("10.0.0.7", "::1"); an IPv4 peer reached through a
// dual-stack socket is reported as plain IPv4, so addresses compare equal to
// what the rendezvous saw.
struct Endpoint {
  std::string address;
  uint16_t port = 0;

  // "10.0.0.7:5000" or "[::1]:5000".
  std::string ToString() const {
    const bool v6 = address.find(':') != std::string::npos;
    return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
  }
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

}  // namespace strata::wire
