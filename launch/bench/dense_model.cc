#include "launch/bench/dense_model.h"

#include <random>

namespace strata {

Status FillRandomBf16(const CudaDriver& d, uint64_t device, uint64_t elements) {
  std::vector<uint16_t> host(elements);
  std::mt19937 rng(11);
  for (uint16_t& v : host) v = static_cast<uint16_t>((rng() & 0x807f) | 0x3c00);
  return d.CopySync(TransferDirection::kHostToDevice, device, host.data(), elements * 2);
}

}  // namespace strata
