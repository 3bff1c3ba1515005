// Codec: host-data jobs (wire protocol 3) round-trip; a host-data job that
// names device ids or moves nothing, and JobData past its total or above the
// chunk limit, are rejected on both sides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/wire/codec_test_util.h"
#include "tests/unit/wire/wire_test_util.h"
#include "wire/codec.h"
#include "wire/strata.capnp.h"

namespace strata::wire {
namespace {

using codec_testing::DecodeMutated;
using codec_testing::Encode;
using codec_testing::ExpectRejected;
using testing::SampleJob;
namespace s = schema;

// A host-data fetch (RecordJob::host_data): no page ids, no slot.
Job SampleHostFetch() {
  Job job = SampleJob();
  job.record.page_ids.clear();
  job.record.row_slot.reset();
  job.record.host_data = true;
  job.record.host_row = true;
  return job;
}

TEST(WireCodec, AHostDataJobRoundTrips) {
  const Job job = SampleHostFetch();
  Result<Message> decoded = DecodeFrame(Encode(job).words);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(*decoded == Message(job));
}

TEST(WireCodec, RejectsAHostDataJobThatNamesDeviceIds) {
  ExpectRejected(DecodeMutated(SampleHostFetch(),
                               [](s::Envelope::Builder env) { env.getJob().initPageIds(4); }),
                 StatusCode::kInvalidArgument, "a host-data job names page ids or a state slot");
  ExpectRejected(
      DecodeMutated(SampleHostFetch(),
                    [](s::Envelope::Builder env) { env.getJob().setKind(s::JobKind::UNLINK); }),
      StatusCode::kInvalidArgument, "Job.host_data: set on a unlink job");
}

TEST(WireCodec, RejectsHostRowWithoutHostData) {
  ExpectRejected(
      DecodeMutated(SampleJob(), [](s::Envelope::Builder env) { env.getJob().setHostRow(true); }),
      StatusCode::kInvalidArgument, "Job.host_row: set on a job without host data");
}

TEST(WireCodec, RejectsAHostDataJobThatMovesNothing) {
  ExpectRejected(DecodeMutated(SampleHostFetch(),
                               [](s::Envelope::Builder env) {
                                 env.getJob().setFirstPage(6);
                                 env.getJob().setHostRow(false);
                               }),
                 StatusCode::kInvalidArgument, "a host-data job moves no page and no row");
}

TEST(WireCodec, RejectsJobDataPastItsTotalOrOfNoTotal) {
  ExpectRejected(DecodeMutated(testing::SampleJobData(),
                               [](s::Envelope::Builder env) { env.getJobData().setOffset(20000); }),
                 StatusCode::kInvalidArgument, "JobData.offset: 20000 + 4096 bytes runs past");
  ExpectRejected(DecodeMutated(testing::SampleJobData(),
                               [](s::Envelope::Builder env) { env.getJobData().setTotal(0); }),
                 StatusCode::kInvalidArgument, "JobData.total: 0 is outside");
  ExpectRejected(DecodeMutated(testing::SampleJobData(),
                               [](s::Envelope::Builder env) { env.getJobData().initData(0); }),
                 StatusCode::kInvalidArgument, "JobData.data: 0 bytes");
}

TEST(WireCodec, RejectsAJobDataChunkAboveTheChunkLimit) {
  ExpectRejected(DecodeMutated(testing::SampleJobData(),
                               [](s::Envelope::Builder env) {
                                 env.getJobData().setTotal(kJobDataBytesMax);
                                 env.getJobData().initData(kJobDataChunkBytesMax + 1);
                               }),
                 StatusCode::kInvalidArgument, "JobData.data: 4194305 bytes");
  // Encoding refuses it too.
  JobData big = testing::SampleJobData();
  big.total = kJobDataBytesMax;
  big.offset = 0;
  big.data.resize(kJobDataChunkBytesMax + 1);
  EXPECT_EQ(EncodeFrame(big).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::wire
