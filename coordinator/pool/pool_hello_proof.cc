#include "coordinator/pool/pool_hello_proof.h"

#include <string_view>

#include "store/base/byte_writer.h"

namespace strata::pool {
namespace {

constexpr std::string_view kPoolProofLabel = "strata-pool-hello-v1";

ByteWriter ProvenFields(const Nonce& challenge, const PoolHello& hello) {
  ByteWriter message;
  message.Bytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kPoolProofLabel.data()),
                                         kPoolProofLabel.size()));
  message.Bytes(challenge.bytes);
  message.Bytes(hello.model_identity);
  message.Bytes(hello.layout);
  message.U32(hello.page_tokens);
  return message;
}

}  // namespace

HelloProof ProvePoolHello(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello) {
  return ProveMessage(secret, ProvenFields(challenge, hello).bytes());
}

bool PoolHelloProven(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello) {
  return hello.proof.has_value() &&
         MessageProven(secret, ProvenFields(challenge, hello).bytes(), *hello.proof);
}

}  // namespace strata::pool
