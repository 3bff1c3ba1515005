// docs/pool.md must name every message of wire/pool.capnp's Envelope and the
// rules' numbers, so the protocol table cannot silently fall behind.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "coordinator/pool/claim_rules.h"
#include "coordinator/pool/put_rules.h"
#include "launch/pool_metrics.h"

namespace strata::pool {
namespace {

std::string Read(const std::string& relative) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << relative;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PoolDocTest, NamesEveryEnvelopeMessage) {
  const std::string doc = Read("docs/pool.md");
  const std::string schema = Read("wire/pool.capnp");
  const std::string envelope = schema.substr(schema.find("struct Envelope"));
  // Every "<name> @<n> :" of the envelope (no std::regex: GCC 12 warns
  // inside it under the sanitizer build, and warnings are errors).
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  int members = 0;
  for (size_t at = envelope.find(" @"); at != std::string::npos; at = envelope.find(" @", at + 2)) {
    size_t digits = at + 2;
    while (digits < envelope.size() && std::isdigit(static_cast<unsigned char>(envelope[digits]))) {
      ++digits;
    }
    if (digits == at + 2 || envelope.compare(digits, 2, " :") != 0) continue;
    size_t begin = at;
    while (begin > 0 && word(envelope[begin - 1])) --begin;
    if (begin == at) continue;
    const std::string name = envelope.substr(begin, at - begin);
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos) << name;
    ++members;
  }
  EXPECT_EQ(members, 21);
}

TEST(PoolDocTest, NamesEveryDropReason) {
  const std::string doc = Read("docs/pool.md");
  for (DropReason r : {DropReason::kEndOfChain, DropReason::kExpired, DropReason::kOversize,
                       DropReason::kIoError}) {
    EXPECT_NE(doc.find("`" + std::string(DropReasonName(r)) + "`"), std::string::npos)
        << DropReasonName(r);
  }
  for (ClaimAdmission a :
       {ClaimAdmission::kNotFound, ClaimAdmission::kNotReady, ClaimAdmission::kBusy}) {
    EXPECT_NE(doc.find("`" + std::string(ClaimAdmissionName(a)) + "`"), std::string::npos)
        << ClaimAdmissionName(a);
  }
}

TEST(PoolDocTest, NamesEveryMetricFamily) {
  const std::string doc = Read("docs/pool.md");
  std::vector<MetricFamily> families = PoolManagerMetrics({});
  for (MetricFamily& f : PoolClientMetrics({})) families.push_back(std::move(f));
  EXPECT_GT(families.size(), 25u);
  for (const MetricFamily& f : families) {
    EXPECT_NE(doc.find("`" + f.name), std::string::npos) << f.name;
  }
}

}  // namespace
}  // namespace strata::pool
