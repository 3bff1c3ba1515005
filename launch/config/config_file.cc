#include "launch/config/config_file.h"

#include <toml++/toml.h>
#include <cerrno>
#include <fstream>
#include <sstream>

namespace strata {

namespace {

std::string Where(std::string_view origin, const toml::node& node) {
  const toml::source_position at = node.source().begin;
  return std::string(origin) + ":" + std::to_string(at.line);
}

std::string KeysOf(std::string_view table) {
  std::string names;
  for (const ConfigKey& k : ConfigKeys()) {
    if (k.name.substr(0, k.name.find('.')) != table) continue;
    names += (names.empty() ? "" : ", ") + std::string(k.name.substr(table.size() + 1));
  }
  return names;
}

std::string TableNames() {
  std::string names;
  for (std::string_view t : ConfigTables()) names += (names.empty() ? "" : ", ") + std::string(t);
  return names;
}

bool KnownTable(std::string_view name) {
  for (std::string_view t : ConfigTables()) {
    if (t == name) return true;
  }
  return false;
}

// The value a TOML node carries, or an error naming its TOML type.
Result<ConfigValue> ValueOf(const toml::node& node) {
  if (const auto* s = node.as_string()) return ConfigValue(std::string(s->get()));
  if (const auto* i = node.as_integer()) return ConfigValue(static_cast<int64_t>(i->get()));
  if (const auto* b = node.as_boolean()) return ConfigValue(b->get());
  std::ostringstream type;
  type << node.type();
  return Status::InvalidArgument("a TOML " + type.str() + " is not allowed here");
}

Status ApplyTable(std::string_view table, const toml::table& entries, std::string_view origin,
                  RankConfig* config, std::vector<std::string>* keys_set) {
  for (const auto& [key, node] : entries) {
    const std::string name = std::string(table) + "." + std::string(key.str());
    const ConfigKey* k = FindConfigKey(name);
    if (k == nullptr) {
      return Status::InvalidArgument(Where(origin, node) + ": " + name +
                                     ": unknown key (keys in [" + std::string(table) +
                                     "]: " + KeysOf(table) + ")");
    }
    Result<ConfigValue> value = ValueOf(node);
    if (!value.ok()) {
      return Status::InvalidArgument(Where(origin, node) + ": " + name + ": " +
                                     value.status().message() +
                                     " (allowed: " + std::string(k->forms) + ")");
    }
    Status s = SetConfigValue(*k, *value, name, config);
    if (!s.ok()) return s.WithContext(Where(origin, node));
    if (keys_set != nullptr) keys_set->push_back(name);
  }
  return Status::Ok();
}

}  // namespace

Status ApplyConfigToml(std::string_view text, std::string_view origin, RankConfig* config,
                       std::vector<std::string>* keys_set) {
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(std::string(origin) + ":" +
                                   std::to_string(e.source().begin.line) +
                                   ": not valid TOML: " + std::string(e.description()));
  }
  for (const auto& [name, node] : doc) {
    const std::string table(name.str());
    const toml::table* entries = node.as_table();
    if (entries == nullptr) {
      return Status::InvalidArgument(Where(origin, node) + ": " + table +
                                     ": a key outside any table (tables: " + TableNames() + ")");
    }
    if (!KnownTable(table)) {
      return Status::InvalidArgument(Where(origin, node) + ": unknown table [" + table +
                                     "] (tables: " + TableNames() + ")");
    }
    STRATA_RETURN_IF_ERROR(ApplyTable(table, *entries, origin, config, keys_set));
  }
  return Status::Ok();
}

Result<std::string> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::FromErrno(errno, "config file " + path);
  std::string text(kConfigFileBytesMax + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Status::IoError("config file " + path + ": read failed");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kConfigFileBytesMax) {
    return Status::InvalidArgument("config file " + path + ": larger than " +
                                   std::to_string(kConfigFileBytesMax) + " bytes");
  }
  return text;
}

}  // namespace strata
