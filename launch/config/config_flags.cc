#include "launch/config/config_flags.h"

#include <CLI/CLI.hpp>

#include "launch/config/config_file.h"

namespace strata {

void AddConfigFlags(CLI::App* app, ConfigFlags* flags) {
  app->add_option("--config", flags->config_path,
                  "TOML configuration file (docs/operations.md); flags override it");
  for (const ConfigKey& key : ConfigKeys()) {
    ConfigFlags::Slot& slot = flags->slots.emplace_back();
    slot.key = &key;
    const std::string help = std::string(key.forms) + "; [" +
                             std::string(key.name.substr(0, key.name.find('.'))) + "] " +
                             std::string(key.name.substr(key.name.find('.') + 1)) + ", default " +
                             std::string(key.default_text);
    const std::string flag(key.flag);
    CLI::Option* option = nullptr;
    switch (key.arity) {
      case ConfigKey::FlagArity::kValue: option = app->add_option(flag, slot.text, help); break;
      case ConfigKey::FlagArity::kSwitch: option = app->add_flag(flag, slot.on, help); break;
      case ConfigKey::FlagArity::kOptionalValue:
        // `--flag` alone means "on"; a value needs `--flag=VALUE`.
        option = app->add_flag(flag + "{on}", slot.text, help);
        break;
    }
    option->each([&slot](const std::string&) { slot.given = true; });
  }
}

namespace {

void ApplyEnvironment(const LauncherEnv& env, LoadedConfig* out) {
  ClusterConfig& c = out->config.cluster;
  const std::string who(LauncherName(env.launcher));
  auto note = [&](const std::string& key) {
    auto it = env.origin.find(key);
    const std::string var = it == env.origin.end() ? "?" : it->second;
    out->source[key] =
        "environment " + var + (env.launcher == Launcher::kNone ? "" : " (" + who + ")");
  };
  if (env.rank.has_value()) {
    c.rank = *env.rank;
    note("cluster.rank");
  }
  if (env.world_size.has_value()) {
    c.world_size = *env.world_size;
    note("cluster.world_size");
  }
  if (env.local_rank.has_value()) {
    c.local_rank = *env.local_rank;
    note("cluster.local_rank");
  }
  if (env.master_addr.has_value()) {
    c.master_addr = *env.master_addr;
    note("cluster.master_addr");
  }
  if (env.master_port.has_value()) {
    c.master_port = *env.master_port;
    note("cluster.master_port");
  }
}

Status ApplyFlags(const ConfigFlags& flags, LoadedConfig* out) {
  for (const ConfigFlags::Slot& slot : flags.slots) {
    if (!slot.given) continue;
    const ConfigValue value = slot.key->arity == ConfigKey::FlagArity::kSwitch
                                  ? ConfigValue(slot.on)
                                  : ConfigValue(slot.text);
    STRATA_RETURN_IF_ERROR(SetConfigValue(*slot.key, value, slot.key->flag, &out->config));
    out->source[std::string(slot.key->name)] = "flag " + std::string(slot.key->flag);
  }
  return Status::Ok();
}

Status RequireMasterAddress(const LoadedConfig& loaded) {
  const ClusterConfig& c = loaded.config.cluster;
  const Launcher launcher = loaded.launcher.launcher;
  if (launcher == Launcher::kNone || c.world_size <= 1 || c.single_process) return Status::Ok();
  if (loaded.source.at("cluster.master_addr") != "default") return Status::Ok();
  return Status::InvalidArgument(
      "cluster.master_addr: required under " + std::string(LauncherName(launcher)) +
      " with world_size " + std::to_string(c.world_size) +
      ": the launcher names no rank zero address; set --master-addr, [cluster] master_addr "
      "or MASTER_ADDR to rank zero's host");
}

}  // namespace

Result<LoadedConfig> MergeConfig(const ConfigFlags& flags, const LauncherEnv& env,
                                 const std::optional<ConfigText>& file) {
  LoadedConfig out;
  out.launcher = env;
  for (const ConfigKey& k : ConfigKeys()) out.source[std::string(k.name)] = "default";
  ApplyEnvironment(env, &out);
  if (file.has_value()) {
    std::vector<std::string> keys_set;
    STRATA_RETURN_IF_ERROR(ApplyConfigToml(file->text, file->origin, &out.config, &keys_set));
    for (const std::string& key : keys_set) out.source[key] = "file " + file->origin;
  }
  STRATA_RETURN_IF_ERROR(ApplyFlags(flags, &out));
  STRATA_RETURN_IF_ERROR(ValidateConfig(out.config));
  STRATA_RETURN_IF_ERROR(RequireMasterAddress(out));
  return out;
}

Result<LoadedConfig> LoadConfig(const ConfigFlags& flags, const EnvMap& env) {
  STRATA_ASSIGN_OR_RETURN(LauncherEnv launcher, DetectLauncherEnv(env));
  std::optional<ConfigText> file;
  if (!flags.config_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(flags.config_path));
    file = ConfigText{flags.config_path, std::move(text)};
  }
  return MergeConfig(flags, launcher, file);
}

}  // namespace strata
