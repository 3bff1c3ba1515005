#include "cuda/cuda_registrar.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include "tests/unit/cuda/fake_cuda.h"

namespace strata {
namespace {

TEST(RegistrationCostTest, OneFiveHundredTwelfthPlusTransferStreams) {
  EXPECT_EQ(RegistrationDeviceCostBytes(0), 16ull << 20);
  EXPECT_EQ(RegistrationDeviceCostBytes(1ull << 30),
            (2ull << 20) + (16ull << 20));  // 2 MiB per GiB
  EXPECT_EQ(RegistrationDeviceCostBytes(64ull << 30), (128ull << 20) + (16ull << 20));
  EXPECT_EQ(RegistrationDeviceCostBytes(1), 1 + (16ull << 20));  // rounds up
  EXPECT_EQ(RegistrationDeviceCostBytes(513), 2 + (16ull << 20));
}

TEST(CudaHostRegistrarTest, RegistersASlabPoolOncePortableAndMapped) {
  STRATA_USE_FAKE_CUDA(fake);
  auto reg = CudaHostRegistrar::Create(fake.driver(), 0);
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  {
    auto pool = SlabPool::Create(64 << 10, 8, 8, reg->get());
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    EXPECT_TRUE((*pool)->registered());
    EXPECT_EQ((*reg)->registered_bytes(), 16u * (64 << 10));
    EXPECT_EQ((*reg)->device_cost_bytes(), RegistrationDeviceCostBytes(16u * (64 << 10)));
    EXPECT_EQ(fake.Calls("cuMemHostRegister"), 1u);
    // CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP
    EXPECT_EQ(fake.Value("register_flags"), 0x01 | 0x02);
  }
  EXPECT_EQ(fake.Calls("cuMemHostUnregister"), 1u);
  EXPECT_EQ((*reg)->registered_bytes(), 0u);
}

TEST(CudaHostRegistrarTest, DriverRefusalFailsPoolCreationWithTheErrorName) {
  STRATA_USE_FAKE_CUDA(fake);
  auto reg = *CudaHostRegistrar::Create(fake.driver(), 0);
  fake.Inject("cuMemHostRegister", 2);  // CUDA_ERROR_OUT_OF_MEMORY
  auto pool = SlabPool::Create(4096, 4, 0, reg.get());
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("registering the slab pool"), std::string::npos);
  EXPECT_NE(pool.status().message().find("cuMemHostRegister_v2: CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << pool.status().ToString();
  EXPECT_EQ(reg->registered_bytes(), 0u);
}

TEST(CudaHostRegistrarTest, DoubleRegistrationAndUnknownRegionsAreRefused) {
  STRATA_USE_FAKE_CUDA(fake);
  auto reg = *CudaHostRegistrar::Create(fake.driver(), 0);
  void* p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_TRUE(reg->Register(p, 1 << 20).ok());
  EXPECT_EQ(reg->Register(p, 1 << 20).code(), StatusCode::kAlreadyExists);
  int other = 0;
  EXPECT_EQ(reg->Unregister(&other).code(), StatusCode::kNotFound);
  EXPECT_TRUE(reg->Unregister(p).ok());
  munmap(p, 1 << 20);
}

}  // namespace
}  // namespace strata
