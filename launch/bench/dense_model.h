// The GEMM shapes of one tensor-parallel rank of a dense GQA transformer
// layer, the model stand-in of `strata bench prefill` and `strata bench
// interference` (Megatron-style split: column-split QKV and gate/up,
// row-split output and down projections).
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/driver_api.h"

namespace strata {

struct DenseModel {
  uint32_t layers;
  uint64_t hidden, q_heads, kv_heads, head_dim, intermediate;
  uint64_t tp;
};
inline constexpr DenseModel kLlama70bTp8 = {80, 8192, 64, 8, 128, 28672, 8};

struct Gemm {
  uint64_t n;  // output features of this rank
  uint64_t k;  // input features of this rank
};

// One layer's GEMMs on one rank: QKV, output, gate/up, down.
inline std::vector<Gemm> LayerGemms(const DenseModel& m) {
  return {{(m.q_heads + 2 * m.kv_heads) * m.head_dim / m.tp, m.hidden},
          {m.hidden, m.q_heads * m.head_dim / m.tp},
          {2 * m.intermediate / m.tp, m.hidden},
          {m.hidden, m.intermediate / m.tp}};
}

// Fills `elements` bf16 values at `device` with magnitudes 2^-7 .. 2^-6 and
// random signs (a fixed seed): no zeros, no overflow in the products.
Status FillRandomBf16(const CudaDriver& d, uint64_t device, uint64_t elements);

}  // namespace strata
