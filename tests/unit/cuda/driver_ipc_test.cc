// Legacy CUDA IPC through the fake driver (tests/fake_cuda/fake_cuda_ipc.cc):
// the entry points resolve at load time like every other, a handle of a
// cuMemAlloc base opens at another address to memory holding the same bytes, and misuse is an
// error naming the call.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/driver_api.h"
#include "tests/unit/cuda/fake_cuda.h"

namespace strata {
namespace {

constexpr int kCudaErrorInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE

TEST(CudaDriverIpcTest, ResolvesTheThreeEntryPoints) {
  STRATA_USE_FAKE_CUDA(fake);
  EXPECT_TRUE(fake.driver()->has_legacy_ipc());
}

TEST(CudaDriverIpcTest, AHandleOpensToTheSameBytesAndCloses) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  ContextGuard guard(d, *d.RetainPrimaryContext(0));
  ASSERT_TRUE(guard.status().ok());
  const uint64_t device = *d.MemAlloc(4096);
  std::vector<uint8_t> bytes(4096);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(d.CopySync(TransferDirection::kHostToDevice, device, bytes.data(), 4096).ok());

  Result<CudaIpcHandle> handle = d.IpcHandleOf(device);
  ASSERT_TRUE(handle.ok()) << handle.status().ToString();
  Result<uint64_t> opened = d.IpcOpen(*handle);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  EXPECT_NE(*opened, device) << "the importer's mapping lands where the driver picks";
  std::vector<uint8_t> back(4096);
  ASSERT_TRUE(d.CopySync(TransferDirection::kDeviceToHost, *opened, back.data(), 4096).ok());
  EXPECT_EQ(back, bytes);
  EXPECT_TRUE(d.IpcClose(*opened).ok());
  EXPECT_EQ(fake.Calls("cuIpcOpenMemHandle"), 1u);
  EXPECT_TRUE(d.MemFree(device).ok());
}

TEST(CudaDriverIpcTest, AnAddressThatIsNotAnAllocationBaseHasNoHandle) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  ContextGuard guard(d, *d.RetainPrimaryContext(0));
  const uint64_t device = *d.MemAlloc(4096);
  Result<CudaIpcHandle> handle = d.IpcHandleOf(device + 256);
  ASSERT_FALSE(handle.ok());
  EXPECT_NE(handle.status().message().find("cuIpcGetMemHandle"), std::string::npos);
  EXPECT_TRUE(d.MemFree(device).ok());
}

TEST(CudaDriverIpcTest, AHandleOfFreedMemoryDoesNotOpen) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  ContextGuard guard(d, *d.RetainPrimaryContext(0));
  const uint64_t device = *d.MemAlloc(4096);
  const CudaIpcHandle handle = *d.IpcHandleOf(device);
  ASSERT_TRUE(d.MemFree(device).ok());
  Result<uint64_t> opened = d.IpcOpen(handle);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("cuIpcOpenMemHandle"), std::string::npos);
}

TEST(CudaDriverIpcTest, ClosingWhatWasNotOpenedIsAnError) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  ContextGuard guard(d, *d.RetainPrimaryContext(0));
  const uint64_t device = *d.MemAlloc(4096);
  EXPECT_FALSE(d.IpcClose(device).ok());
  fake.Inject("cuIpcGetMemHandle", kCudaErrorInvalidValue);
  EXPECT_FALSE(d.IpcHandleOf(device).ok());  // an injected failure reaches the caller
  EXPECT_TRUE(d.MemFree(device).ok());
}

}  // namespace
}  // namespace strata
