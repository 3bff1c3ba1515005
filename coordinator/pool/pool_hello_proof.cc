#include "coordinator/pool/pool_hello_proof.h"

#include <string_view>

#include "store/base/byte_writer.h"

namespace strata::pool {
namespace {

constexpr std::string_view kPoolProofLabel = "strata-pool-hello-v1";
constexpr std::string_view kPoolAcceptLabel = "strata-pool-accept-v1";
constexpr std::string_view kPoolDataLabel = "strata-pool-data-v1";

std::span<const uint8_t> BytesOf(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

ByteWriter ProvenFields(const Nonce& challenge, const PoolHello& hello) {
  ByteWriter message;
  message.Bytes(BytesOf(kPoolProofLabel));
  message.Bytes(challenge.bytes);
  message.Bytes(hello.model_identity);
  message.Bytes(hello.layout);
  message.U32(hello.page_tokens);
  message.U8(hello.data_channel ? 1 : 0);
  return message;
}

ByteWriter AcceptFields(const Nonce& client_nonce, const Nonce& challenge,
                        const PoolHelloAccept& accept) {
  ByteWriter message;
  message.Bytes(BytesOf(kPoolAcceptLabel));
  message.Bytes(client_nonce.bytes);
  message.Bytes(challenge.bytes);
  message.U64(accept.generation);
  message.U64(accept.slot_bytes);
  message.U32(accept.slot_count);
  message.Bytes(accept.scope);
  message.Bytes(accept.instance);
  message.U32(static_cast<uint32_t>(accept.arena_path.size()));
  message.Bytes(BytesOf(accept.arena_path));
  message.U8(accept.data_token ? 1 : 0);
  if (accept.data_token) message.Bytes(*accept.data_token);
  message.U64(accept.window_bytes);
  message.U32(accept.window_credits);
  return message;
}

ByteWriter DataFields(const Nonce& challenge, const InstanceId& instance, const DataToken& token) {
  ByteWriter message;
  message.Bytes(BytesOf(kPoolDataLabel));
  message.Bytes(challenge.bytes);
  message.Bytes(instance);
  message.Bytes(token);
  return message;
}

}  // namespace

HelloProof ProvePoolAccept(const JobSecret& secret, const Nonce& client_nonce,
                           const Nonce& challenge, const PoolHelloAccept& accept) {
  return ProveMessage(secret, AcceptFields(client_nonce, challenge, accept).bytes());
}

bool PoolAcceptProven(const JobSecret& secret, const Nonce& client_nonce, const Nonce& challenge,
                      const PoolHelloAccept& accept) {
  return accept.proof.has_value() &&
         MessageProven(secret, AcceptFields(client_nonce, challenge, accept).bytes(),
                       *accept.proof);
}

HelloProof ProvePoolHello(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello) {
  return ProveMessage(secret, ProvenFields(challenge, hello).bytes());
}

bool PoolHelloProven(const JobSecret& secret, const Nonce& challenge, const PoolHello& hello) {
  return hello.proof.has_value() &&
         MessageProven(secret, ProvenFields(challenge, hello).bytes(), *hello.proof);
}

HelloProof ProvePoolData(const JobSecret& secret, const Nonce& challenge,
                         const InstanceId& instance, const DataToken& token) {
  return ProveMessage(secret, DataFields(challenge, instance, token).bytes());
}

bool PoolDataProven(const JobSecret& secret, const Nonce& challenge, const PoolDataHello& hello) {
  return MessageProven(secret, DataFields(challenge, hello.instance, hello.token).bytes(),
                       hello.proof);
}

}  // namespace strata::pool
