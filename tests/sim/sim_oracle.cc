#include "tests/sim/sim_oracle.h"

#include <map>

namespace strata::sim {
namespace {

// Memoized: is `key` kept?
bool Kept(const PrefixKey& key, const std::vector<const SimFiles*>& ranks,
          std::map<PrefixKey, bool>& memo) {
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  bool kept = true;
  const SimRecord* first = nullptr;
  for (const SimFiles* files : ranks) {
    auto f = files->find(key);
    if (f == files->end()) {
      kept = false;
      break;
    }
    if (first == nullptr) {
      first = &f->second;
    } else if (f->second.digest != first->digest) {
      kept = false;
      break;
    }
  }
  if (kept && first->parent) kept = Kept(*first->parent, ranks, memo);
  memo[key] = kept;
  return kept;
}

}  // namespace

ExpectedAgreement IntersectionRule(const std::vector<const SimFiles*>& ranks) {
  ExpectedAgreement out;
  out.deletes.resize(ranks.size());
  out.truncates.resize(ranks.size());
  std::map<PrefixKey, bool> memo;
  for (const SimFiles* files : ranks) {
    for (const auto& [key, record] : *files) {
      if (Kept(key, ranks, memo)) out.kept.insert(key);
    }
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    for (const auto& [key, record] : *ranks[r]) {
      if (out.kept.count(key) == 0) {
        out.deletes[r].insert(key);
        continue;
      }
      bool row_everywhere = true;
      for (const SimFiles* files : ranks) row_everywhere &= files->at(key).row;
      if (record.row && !row_everywhere) out.truncates[r].insert(key);
    }
  }
  return out;
}

}  // namespace strata::sim
