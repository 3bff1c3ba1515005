// Layout fingerprint and namespace identity (docs/formats.md). Together they
// name a record directory; a record is only ever restored into a layout and a
// state mode with the same fingerprint and identity.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/base/digest.h"
#include "store/record/geometry.h"

namespace strata {

using LayoutFingerprint = Digest128;
using NamespaceIdentity = Digest256;

// The continuation-state mode a model runs in. Ordinary execution omits draft
// state, so its records never load into speculative execution.
enum class StateMode : unsigned char {
  kOrdinary = 0,
  kLearnedSpeculation = 1,
  kCopySpeculation = 2,
};
std::string_view StateModeName(StateMode mode);

// Canonical little-endian encoding of a whole (single-process) geometry.
std::vector<uint8_t> EncodeLayout(const CacheGeometry& geometry);
// Canonical encoding of one rank of a model whose ranks run on separate hosts.
std::vector<uint8_t> EncodeRankLayout(const RankGeometry& rank_geometry, uint32_t page_tokens,
                                      uint32_t rank, uint32_t world_size);

// BLAKE2b-128 of EncodeLayout.
LayoutFingerprint ComputeLayoutFingerprint(const CacheGeometry& geometry);
// BLAKE2b-128 of EncodeRankLayout: a host never restores another rank's records.
LayoutFingerprint ComputeRankLayoutFingerprint(const RankGeometry& rank_geometry,
                                               uint32_t page_tokens, uint32_t rank,
                                               uint32_t world_size);

// BLAKE2b-256 over the domain "strata-prefix-state-v1", the model identity and
// the state mode.
NamespaceIdentity ComputeNamespaceIdentity(std::string_view model_identity, StateMode mode);

// "<first 8 identity bytes as hex>-<fingerprint hex>": the record directory
// name under the configured base directory.
std::string NamespaceDirName(const NamespaceIdentity& identity,
                             const LayoutFingerprint& fingerprint);

}  // namespace strata
