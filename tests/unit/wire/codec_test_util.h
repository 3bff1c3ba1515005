// Helpers of the wire codec tests: encode a message, mutate its envelope the
// way a hostile peer would, and expect the decoder's rejection.
// wire_codec_test.cc and wire_codec_host_data_test.cc use them.
#pragma once

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "wire/codec.h"
#include "wire/strata.capnp.h"

namespace strata::wire::codec_testing {

inline Frame Encode(const Message& message) {
  Result<Frame> frame = EncodeFrame(message);
  EXPECT_TRUE(frame.ok()) << frame.status().ToString();
  return frame.ok() ? std::move(*frame) : Frame{};
}

inline Frame ToFrame(capnp::MessageBuilder& builder) {
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(builder);
  Frame frame;
  frame.words.resize(flat.size());
  std::memcpy(frame.words.data(), flat.begin(), flat.asBytes().size());
  return frame;
}

// Encodes `valid`, lets `mutate` change the envelope the way a hostile peer
// would, and decodes the result.
inline Result<Message> DecodeMutated(const Message& valid,
                                     const std::function<void(schema::Envelope::Builder)>& mutate) {
  Frame frame = Encode(valid);
  capnp::MallocMessageBuilder builder;
  capnp::initMessageBuilderFromFlatArrayCopy(
      kj::arrayPtr(reinterpret_cast<const capnp::word*>(frame.words.data()), frame.words.size()),
      builder);
  mutate(builder.getRoot<schema::Envelope>());
  return DecodeFrame(ToFrame(builder).words);
}

inline void ExpectRejected(const Result<Message>& result, StatusCode code, std::string_view names) {
  ASSERT_FALSE(result.ok()) << "decoded a message that should be rejected";
  EXPECT_EQ(result.status().code(), code) << result.status().ToString();
  EXPECT_THAT(result.status().message(), ::testing::HasSubstr(std::string(names)));
}

}  // namespace strata::wire::codec_testing
