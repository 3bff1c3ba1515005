// A small reader of the Prometheus text format (0.0.4) for tests, strict
// enough to catch what a scraper would reject: every problem is a GoogleTest
// failure at the line that has it.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace strata {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;
};

struct Exposition {
  std::map<std::string, std::string> help;
  std::map<std::string, std::string> type;
  std::vector<Sample> samples;
};

bool ValidName(const std::string& n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0])) != 0) return false;
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != ':') return false;
  }
  return true;
}

// The family a sample belongs to: histograms own _bucket/_sum/_count.
std::string FamilyOf(const Exposition& e, const std::string& name) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto it = e.type.find(base);
      if (it != e.type.end() && it->second == "histogram") return base;
    }
  }
  return name;
}

Exposition Parse(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  EXPECT_EQ(text.back(), '\n');
  while (std::getline(in, line)) {
    EXPECT_FALSE(line.empty());
    if (line.rfind("# ", 0) == 0) {
      std::istringstream l(line.substr(2));
      std::string kw;
      std::string name;
      l >> kw >> name;
      std::string rest;
      std::getline(l, rest);
      EXPECT_TRUE(ValidName(name)) << line;
      if (kw == "HELP") {
        EXPECT_TRUE(e.help.emplace(name, rest).second) << "duplicate HELP " << name;
      } else if (kw == "TYPE") {
        rest.erase(0, 1);
        EXPECT_TRUE(rest == "counter" || rest == "gauge" || rest == "histogram") << line;
        EXPECT_TRUE(e.type.emplace(name, rest).second) << "duplicate TYPE " << name;
      } else {
        ADD_FAILURE() << "unknown comment " << line;
      }
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    EXPECT_TRUE(ValidName(s.name)) << line;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        size_t eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        EXPECT_TRUE(ValidName(key)) << line;
        EXPECT_EQ(line[eq + 1], '"') << line;
        std::string value;
        size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        EXPECT_TRUE(s.labels.emplace(key, value).second) << line;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    EXPECT_EQ(line[i], ' ') << line;
    s.value = line.substr(i + 1);
    EXPECT_FALSE(s.value.empty()) << line;
    EXPECT_EQ(s.value.find(' '), std::string::npos) << line;
    EXPECT_TRUE(e.type.count(FamilyOf(e, s.name)) == 1) << "no TYPE before " << line;
    e.samples.push_back(std::move(s));
  }
  return e;
}

// The value of the one sample with `name` and exactly `labels`.
std::string ValueOf(const Exposition& e, const std::string& name,
                    const std::map<std::string, std::string>& labels = {}) {
  std::string found;
  int n = 0;
  for (const Sample& s : e.samples) {
    if (s.name == name && s.labels == labels) {
      found = s.value;
      ++n;
    }
  }
  EXPECT_EQ(n, 1) << name;
  return found;
}

}  // namespace
}  // namespace strata
