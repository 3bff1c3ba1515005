// The arena's registration (docs/pool.md, "Registration"): a PoolLink of an
// instance with device planes, against a real manager, registering through
// CudaHostRegistrar over the fake CUDA driver. The budget comes first: a plan
// that does not fit registers nothing and leaves the instance local; one that
// fits is registered once per session, and reconnects to the same manager
// reuse that mapping and its registration.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "coordinator/pool/pool_link.h"
#include "coordinator/pool/pool_server.h"
#include "cuda/cuda_registrar.h"
#include "launch/presets.h"
#include "tests/unit/cuda/fake_cuda.h"

namespace strata::pool {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kSlotBytes = 64 * 1024;
constexpr uint32_t kSlots = 512;  // a 32 MiB arena: 64 KiB charged to each GPU

// Plenty of host memory and two GPUs with room.
BudgetSupply Roomy() {
  return BudgetSupply{.available_bytes = 64 * kGiB,
                      .total_ram_bytes = 128 * kGiB,
                      .future_local_bytes = 0,
                      .device_remaining_bytes = {8 * kGiB, 8 * kGiB},
                      .gpu_memory = GpuMemoryKind::kDiscrete};
}

class PoolRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/strata-poolreg-XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    StartManager(5);
    steady_ = std::make_shared<std::chrono::steady_clock::time_point>();
  }
  void TearDown() override {
    server_.reset();
    ::rmdir(dir_.c_str());
  }
  void StartManager(uint64_t generation) {
    server_.reset();
    PoolServerOptions o;
    o.name = "shared";
    o.socket_path = dir_ + "/pool.sock";
    o.slot_bytes = kSlotBytes;
    o.slot_count = kSlots;
    o.huge_pages = HugePages::kNever;
    auto server = PoolServer::Start(o, generation);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  PoolLinkOptions Options(HostRegistrar* registrar, std::function<BudgetSupply()> supply) {
    const CacheGeometry geometry = *PresetGeometry("tiny", 1, 512, 16);
    PoolLinkOptions o;
    o.client.socket_path = dir_ + "/pool.sock";
    o.client.hello = InstanceHello(geometry, NamespaceIdentity{3}, {"gpu-instance"});
    o.registration = ArenaRegistration::kRegistered;
    o.registrar = registrar;
    o.budget_supply = std::move(supply);
    o.startup_retry_interval = 10ms;
    o.clock.steady = [now = steady_] { return *now; };
    return o;
  }

  std::string dir_;
  std::unique_ptr<PoolServer> server_;
  std::shared_ptr<std::chrono::steady_clock::time_point> steady_;
};

TEST_F(PoolRegistrationTest, AFittingPlanRegistersTheArenaOnceAndReconnectsReuseIt) {
  STRATA_USE_FAKE_CUDA(fake);
  auto registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  {
    std::unique_ptr<PoolLink> link = PoolLink::AttachAtStartup(Options(registrar.get(), Roomy));
    ASSERT_TRUE(link->sharing());
    ASSERT_NE(link->client(), nullptr);
    EXPECT_EQ(fake.Calls("cuMemHostRegister"), 1u);
    EXPECT_EQ(fake.Calls("cuMemHostGetDevicePointer"), 1u) << "its device address was checked";
    EXPECT_EQ(registrar->registered_bytes(), kSlotBytes * kSlots);
    const std::byte* base = link->registered_base();
    ASSERT_NE(base, nullptr);
    EXPECT_EQ(link->client()->arena().base(), base);

    // The connection is lost; the reconnect to the same manager (same
    // generation and sizes) reuses the registered mapping.
    link->Lost(Status::Unavailable("cut by the test"));
    *steady_ += 1'000ms;
    ASSERT_NE(link->client(), nullptr);
    EXPECT_EQ(link->reconnects(), 1u);
    EXPECT_TRUE(link->sharing());
    EXPECT_EQ(link->client()->arena().base(), base);
    EXPECT_EQ(fake.Calls("cuMemHostRegister"), 1u);
  }
  // The registration ends with the link.
  EXPECT_EQ(fake.Calls("cuMemHostUnregister"), 1u);
  EXPECT_EQ(registrar->registered_bytes(), 0u);
}

TEST_F(PoolRegistrationTest, APlanThatDoesNotFitRegistersNothingAndStaysLocal) {
  STRATA_USE_FAKE_CUDA(fake);
  auto registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  struct Case {
    const char* name;
    BudgetSupply supply;
  };
  BudgetSupply host_short = Roomy();
  host_short.available_bytes = 2 * kGiB;  // all of it is the server allowance
  BudgetSupply gpu_short = Roomy();
  gpu_short.device_remaining_bytes = {8 * kGiB, 1024};  // the second GPU lacks 64 KiB
  BudgetSupply unknown = Roomy();
  unknown.available_bytes.reset();
  const Case cases[] = {{"host short", host_short}, {"gpu short", gpu_short}, {"unknown", unknown}};
  for (const Case& c : cases) {
    std::unique_ptr<PoolLink> link =
        PoolLink::AttachAtStartup(Options(registrar.get(), [s = c.supply] { return s; }));
    EXPECT_FALSE(link->sharing()) << c.name;
    EXPECT_EQ(link->phase(), AttachPhase::kLocalForever) << c.name;
    EXPECT_EQ(link->client(), nullptr) << c.name;
    EXPECT_EQ(link->registered_base(), nullptr) << c.name;
    EXPECT_EQ(fake.Calls("cuMemHostRegister"), 0u) << c.name;
  }
  EXPECT_EQ(registrar->registered_bytes(), 0u);
}

TEST_F(PoolRegistrationTest, NoSupplyFunctionRefusesTheRegistration) {
  STRATA_USE_FAKE_CUDA(fake);
  auto registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  std::unique_ptr<PoolLink> link = PoolLink::AttachAtStartup(Options(registrar.get(), nullptr));
  EXPECT_FALSE(link->sharing());
  EXPECT_EQ(fake.Calls("cuMemHostRegister"), 0u);
}

TEST_F(PoolRegistrationTest, ADriverRefusalLeavesTheInstanceLocal) {
  STRATA_USE_FAKE_CUDA(fake);
  auto registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  fake.Inject("cuMemHostRegister", 2);  // CUDA_ERROR_OUT_OF_MEMORY
  std::unique_ptr<PoolLink> link = PoolLink::AttachAtStartup(Options(registrar.get(), Roomy));
  EXPECT_FALSE(link->sharing());
  EXPECT_EQ(link->phase(), AttachPhase::kLocalForever);
  EXPECT_EQ(link->registered_base(), nullptr);
  EXPECT_EQ(registrar->registered_bytes(), 0u);
}

TEST_F(PoolRegistrationTest, AnArenaTheDeviceAddressesElsewhereIsUnregisteredAndStaysLocal) {
  STRATA_USE_FAKE_CUDA(fake);
  auto registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  fake.SetValue("device_pointer_offset", 4096);  // the device maps it at another address
  std::unique_ptr<PoolLink> link = PoolLink::AttachAtStartup(Options(registrar.get(), Roomy));
  EXPECT_FALSE(link->sharing());
  EXPECT_EQ(link->phase(), AttachPhase::kLocalForever);
  EXPECT_EQ(link->registered_base(), nullptr);
  EXPECT_EQ(fake.Calls("cuMemHostGetDevicePointer"), 1u);
  EXPECT_EQ(fake.Calls("cuMemHostUnregister"), 1u) << "the registration is undone";
  EXPECT_EQ(registrar->registered_bytes(), 0u);
}

TEST_F(PoolRegistrationTest, ARestartedManagerDisablesSharingAndKeepsTheRegistration) {
  STRATA_USE_FAKE_CUDA(fake);
  auto registrar = *CudaHostRegistrar::Create(fake.driver(), 0);
  std::unique_ptr<PoolLink> link = PoolLink::AttachAtStartup(Options(registrar.get(), Roomy));
  ASSERT_TRUE(link->sharing());
  StartManager(6);
  link->Lost(Status::Unavailable("the manager restarted"));
  *steady_ += 1'000ms;
  EXPECT_EQ(link->client(), nullptr);
  EXPECT_FALSE(link->sharing());
  EXPECT_EQ(fake.Calls("cuMemHostRegister"), 1u) << "nothing registered again";
  EXPECT_NE(link->registered_base(), nullptr);
}

}  // namespace
}  // namespace strata::pool
