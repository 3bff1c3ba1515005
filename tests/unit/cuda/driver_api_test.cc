#include "cuda/driver_api.h"

#include <gtest/gtest.h>

#include "tests/unit/cuda/fake_cuda.h"

namespace strata {
namespace {

constexpr int kCudaErrorOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY
constexpr int kCudaErrorNoDevice = 100;   // CUDA_ERROR_NO_DEVICE

TEST(CudaDriverTest, MissingLibraryIsUnavailableWithAClearMessage) {
  auto d = CudaDriver::Load("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.status().message().rfind("no CUDA driver: ", 0), 0u) << d.status().ToString();
  if (FakeCuda::built()) {  // with headers the loader got as far as dlopen
    EXPECT_NE(d.status().message().find("/nonexistent/libcuda.so.1"), std::string::npos);
  } else {
    EXPECT_NE(d.status().message().find("built without CUDA headers"), std::string::npos);
  }
}

TEST(CudaDriverTest, DefaultLibraryOnAHostWithoutADriverIsUnavailable) {
  auto d = CudaDriver::Load();
  if (d.ok()) GTEST_SKIP() << "a CUDA driver is installed here (" << (*d)->library() << ")";
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.status().message().rfind("no CUDA driver", 0), 0u) << d.status().ToString();
}

TEST(CudaDriverTest, ALibraryThatIsNotADriverIsRefused) {
  if (!FakeCuda::built()) GTEST_SKIP() << "built without CUDA headers";
  auto d = CudaDriver::Load("libc.so.6");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("does not export cuGetProcAddress_v2"), std::string::npos)
      << d.status().ToString();
}

TEST(CudaDriverTest, LoadsThroughGetProcAddressAndReportsDevices) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  EXPECT_EQ(d.version(), 13000);
  EXPECT_TRUE(d.has_batch_copy());
  EXPECT_TRUE(d.has_batch_copy_3d());
  EXPECT_FALSE(d.has_vmm());  // the fake has no VMM entry points
  EXPECT_EQ(*d.DeviceCount(), 1);
  EXPECT_EQ(*d.DeviceName(0), "Strata fake CUDA device");
  EXPECT_EQ(*d.DeviceUuid(0), "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_EQ(*d.DeviceAttribute(0, CudaDeviceAttribute::kIntegrated), 0);
  EXPECT_EQ(*d.DeviceAttribute(0, CudaDeviceAttribute::kHostNumaId), 0);
  EXPECT_EQ(fake.Calls("cuInit"), 1u);
}

TEST(CudaDriverTest, NoDeviceAtInitIsUnavailable) {
  STRATA_USE_FAKE_CUDA(fake);
  fake.SetInitResult(kCudaErrorNoDevice);
  auto d = CudaDriver::Load(FakeCuda::path());
  fake.Reset();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(d.status().message(),
            "no usable CUDA device: cuInit: CUDA_ERROR_NO_DEVICE (fake driver error)");
}

TEST(CudaDriverTest, ErrorsNameTheCallAndTheDriverError) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  auto ctx = d.RetainPrimaryContext(0);
  ASSERT_TRUE(ctx.ok());
  ContextGuard guard(d, *ctx);
  ASSERT_TRUE(guard.status().ok());
  fake.Inject("cuMemAlloc", kCudaErrorOutOfMemory);
  auto p = d.MemAlloc(1 << 20);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kIoError);
  EXPECT_NE(p.status().message().find("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos)
      << p.status().ToString();
  EXPECT_EQ(d.DeviceName(7).status().code(), StatusCode::kInvalidArgument);  // no device 7
  EXPECT_TRUE(d.ReleasePrimaryContext(0).ok());
}

TEST(CudaDriverTest, ContextGuardRestoresTheCallersContext) {
  STRATA_USE_FAKE_CUDA(fake);
  const CudaDriver& d = *fake.driver();
  CudaContext ctx = *d.RetainPrimaryContext(0);
  {
    ContextGuard guard(d, ctx);
    ASSERT_TRUE(guard.status().ok());
    Result<uint64_t> device = d.MemAlloc(4096);  // a context is current inside
    ASSERT_TRUE(device.ok());
    EXPECT_TRUE(d.MemFree(*device).ok());
  }
  // Popped again: nothing is current on this thread, so allocation fails.
  EXPECT_EQ(d.MemAlloc(4096).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(d.ReleasePrimaryContext(0).ok());
}

}  // namespace
}  // namespace strata
