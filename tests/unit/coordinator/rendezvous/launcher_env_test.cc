#include "coordinator/rendezvous/launcher_env.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(LauncherEnvTest, NoLauncher) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"HOME", "/root"}, {"SLURM_NTASKS", "4"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->launcher, Launcher::kNone);
  EXPECT_FALSE(e->rank.has_value());
  EXPECT_FALSE(e->world_size.has_value());
  EXPECT_FALSE(e->master_addr.has_value());
}

TEST(LauncherEnvTest, Torchrun) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"RANK", "3"},
                                             {"WORLD_SIZE", "8"},
                                             {"LOCAL_RANK", "1"},
                                             {"MASTER_ADDR", "10.0.0.7"},
                                             {"MASTER_PORT", "29500"}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->launcher, Launcher::kTorchrun);
  EXPECT_EQ(e->rank, 3u);
  EXPECT_EQ(e->world_size, 8u);
  EXPECT_EQ(e->local_rank, 1u);
  EXPECT_EQ(e->master_addr, "10.0.0.7");
  EXPECT_EQ(e->master_port, 29500);
  EXPECT_EQ(e->origin.at("cluster.rank"), "RANK");
  EXPECT_EQ(e->origin.at("cluster.master_port"), "MASTER_PORT");
}

TEST(LauncherEnvTest, TorchrunAgentStoreOwnsMasterPort) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"RANK", "0"},
                                             {"WORLD_SIZE", "2"},
                                             {"MASTER_ADDR", "h0"},
                                             {"MASTER_PORT", "29500"},
                                             {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->master_port.has_value());
  ASSERT_EQ(e->notes.size(), 1u);
  EXPECT_NE(e->notes[0].find("MASTER_PORT=29500 not used"), std::string::npos);
}

TEST(LauncherEnvTest, Slurm) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"SLURM_PROCID", "5"},
                                             {"SLURM_NTASKS", "6"},
                                             {"SLURM_LOCALID", "1"},
                                             {"SLURM_LAUNCH_NODE_IPADDR", "192.168.1.10"}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->launcher, Launcher::kSlurm);
  EXPECT_EQ(e->rank, 5u);
  EXPECT_EQ(e->world_size, 6u);
  EXPECT_EQ(e->local_rank, 1u);
  EXPECT_EQ(e->master_addr, "192.168.1.10");
  EXPECT_EQ(e->origin.at("cluster.master_addr"), "SLURM_LAUNCH_NODE_IPADDR");
}

TEST(LauncherEnvTest, SlurmPrefersAnExplicitMasterAddr) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"SLURM_PROCID", "0"},
                                             {"SLURM_NTASKS", "2"},
                                             {"SLURM_LAUNCH_NODE_IPADDR", "192.168.1.10"},
                                             {"MASTER_ADDR", "node0"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->master_addr, "node0");
}

TEST(LauncherEnvTest, SlurmWithoutLaunchNodeHasNoMaster) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->master_addr.has_value());
}

TEST(LauncherEnvTest, OpenMpi) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"OMPI_COMM_WORLD_RANK", "2"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->launcher, Launcher::kOpenMpi);
  EXPECT_EQ(e->rank, 2u);
  EXPECT_EQ(e->world_size, 4u);
  EXPECT_EQ(e->local_rank, 0u);
  EXPECT_EQ(e->origin.at("cluster.world_size"), "OMPI_COMM_WORLD_SIZE");
}

TEST(LauncherEnvTest, TorchrunInsideSlurmWins) {
  // srun torchrun: Slurm numbers the torchrun agents, torchrun the workers.
  Result<LauncherEnv> e = DetectLauncherEnv({{"SLURM_PROCID", "1"},
                                             {"SLURM_NTASKS", "2"},
                                             {"RANK", "5"},
                                             {"WORLD_SIZE", "8"},
                                             {"MASTER_ADDR", "h0"}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->launcher, Launcher::kTorchrun);
  EXPECT_EQ(e->rank, 5u);
  EXPECT_EQ(e->outer, std::vector<Launcher>{Launcher::kSlurm});
}

TEST(LauncherEnvTest, OpenMpiInsideSlurmWins) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"SLURM_PROCID", "0"},
                                             {"SLURM_NTASKS", "1"},
                                             {"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->launcher, Launcher::kOpenMpi);
  EXPECT_EQ(e->rank, 3u);
}

TEST(LauncherEnvTest, TorchrunAndOpenMpiThatDisagreeAreAnError) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"RANK", "1"},
                                             {"WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_RANK", "2"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("torchrun and Open MPI variables disagree: RANK=1 "
                                      "WORLD_SIZE=4 but OMPI_COMM_WORLD_RANK=2"),
            std::string::npos)
      << e.status().message();
  e = DetectLauncherEnv({{"RANK", "2"},
                         {"WORLD_SIZE", "4"},
                         {"OMPI_COMM_WORLD_RANK", "2"},
                         {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_TRUE(e.ok());
}

TEST(LauncherEnvTest, PartialVariablesAreErrors) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"RANK", "1"}});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(),
            "the torchrun environment is partial: RANK set but WORLD_SIZE, LOCAL_RANK not (RANK "
            "and WORLD_SIZE must both be set)");
  e = DetectLauncherEnv({{"LOCAL_RANK", "0"}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("LOCAL_RANK set but RANK, WORLD_SIZE not"),
            std::string::npos);
  e = DetectLauncherEnv({{"SLURM_PROCID", "0"}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("slurm environment is partial"), std::string::npos);
  e = DetectLauncherEnv({{"OMPI_COMM_WORLD_SIZE", "2"}});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("OMPI_COMM_WORLD_RANK"), std::string::npos);
}

TEST(LauncherEnvTest, BadValuesNameTheVariable) {
  Result<LauncherEnv> e = DetectLauncherEnv({{"RANK", "one"}, {"WORLD_SIZE", "2"}});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "RANK=\"one\" is not a whole number in 0..4294967295");
  e = DetectLauncherEnv({{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(e.status().message(), "RANK=2 is not below WORLD_SIZE=2");
  e = DetectLauncherEnv({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
  EXPECT_EQ(e.status().message(), "WORLD_SIZE=0: no ranks");
  e = DetectLauncherEnv({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "5"}});
  EXPECT_EQ(e.status().message(), "LOCAL_RANK=5 is not below WORLD_SIZE=2");
  e = DetectLauncherEnv({{"MASTER_PORT", "99999"}});
  EXPECT_EQ(e.status().message(), "MASTER_PORT=\"99999\" is not a whole number in 0..65535");
  e = DetectLauncherEnv({{"MASTER_PORT", "0"}});
  EXPECT_FALSE(e.ok());
}

TEST(LauncherEnvTest, EmptyVariablesCountAsUnset) {
  Result<LauncherEnv> e =
      DetectLauncherEnv({{"RANK", ""}, {"WORLD_SIZE", ""}, {"MASTER_ADDR", ""}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->launcher, Launcher::kNone);
}

TEST(LauncherEnvTest, CurrentEnvironmentSeesThisProcess) {
  setenv("STRATA_LAUNCHER_ENV_TEST", "x=y", 1);
  EnvMap env = CurrentEnvironment();
  EXPECT_EQ(env.at("STRATA_LAUNCHER_ENV_TEST"), "x=y");
  unsetenv("STRATA_LAUNCHER_ENV_TEST");
}

}  // namespace
}  // namespace strata
