// Where each rank process runs, as the summary reports it per rank: with --bind-cores rank, on its
// own slice of the cores the run may use, read back from the OS inside the rank.
#include <gtest/gtest.h>
#include <sched.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

// The cores this test process may run on, which the rank processes it starts inherit.
std::vector<int> allowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

// The cores a placement such as "cpu / gloo / cores 0-1,4" names; empty when it names none.
std::set<int> coresNamed(const std::string& placement) {
  std::smatch m;
  std::set<int> cores;
  if (!std::regex_search(placement, m, std::regex("cores ([0-9,-]+)$"))) return cores;
  std::stringstream list(m[1].str());
  std::string range;
  while (std::getline(list, range, ',')) {
    const auto dash = range.find('-');
    const int first = std::stoi(range.substr(0, dash));
    const int last = dash == std::string::npos ? first : std::stoi(range.substr(dash + 1));
    for (int c = first; c <= last; ++c) cores.insert(c);
  }
  return cores;
}

std::vector<std::string> boundRunArgs(const std::string& summaryPath) {
  config::RunConfig config = testing::tinyGptConfig();
  config.bindCores = config::BindCores::Rank;
  return testing::runArgsOf(config, {"--summary", summaryPath});
}

std::vector<std::string> placementsOf(const std::string& summaryPath) {
  auto summary = nlohmann::json::parse(std::ifstream(summaryPath));
  std::vector<std::string> placements;
  for (const auto& r : summary["ranks"]) placements.push_back(r["placement"].get<std::string>());
  return placements;
}

TEST(RankPlacement, BoundRanksRunOnDisjointSlicesOfTheAllowedCores) {
  const auto dir = testing::freshTempDir("bind_cores");
  auto r = testing::runShardscope(boundRunArgs(dir + "/summary.json"), {}, 120);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto placements = placementsOf(dir + "/summary.json");
  ASSERT_EQ(placements.size(), 2u);
  const auto allowed = allowedCores();
  const std::set<int> allowedSet(allowed.begin(), allowed.end());
  const auto first = coresNamed(placements[0]), second = coresNamed(placements[1]);
  ASSERT_FALSE(first.empty()) << placements[0];
  ASSERT_FALSE(second.empty()) << placements[1];
  for (int c : first) EXPECT_TRUE(allowedSet.count(c)) << c << " in " << placements[0];
  for (int c : second) EXPECT_TRUE(allowedSet.count(c)) << c << " in " << placements[1];
  if (allowed.size() >= 2) {
    for (int c : first) EXPECT_FALSE(second.count(c)) << "core " << c << " in both ranks' slices";
    // The run's one-line placement names each rank's slice, not rank 0's alone.
    const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
    const std::string device = summary["device"];
    EXPECT_NE(device.find("rank 0: cores "), std::string::npos) << device;
    EXPECT_NE(device.find("rank 1: cores "), std::string::npos) << device;
    EXPECT_NE(r.output.find(device), std::string::npos) << "the run output says it too";
  }
}

// Pins the calling thread (and so the processes it starts) to `cores`; returns whether it could.
bool pinThisThread(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

TEST(RankPlacement, SlicesComeFromTheCoresTheRunWasGiven) {
  // Started on one core (as `taskset -c N shardscope run` would be), both ranks can only share
  // it, whatever the machine has.
  const auto allowed = allowedCores();
  ASSERT_FALSE(allowed.empty());
  const auto dir = testing::freshTempDir("bind_cores_one_core");
  ASSERT_TRUE(pinThisThread({allowed.back()}));
  auto r = testing::runShardscope(boundRunArgs(dir + "/summary.json"), {}, 120);
  ASSERT_TRUE(pinThisThread(allowed));  // the tests after this one get every core back
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const auto& p : placementsOf(dir + "/summary.json")) {
    EXPECT_EQ(coresNamed(p), std::set<int>{allowed.back()}) << p;
  }
}

TEST(RankPlacement, UnboundRanksNameNoCores) {
  const auto dir = testing::freshTempDir("bind_cores_off");
  auto r = testing::runShardscope(testing::runArgsOf(testing::tinyGptConfig(), {"--summary", dir + "/summary.json"}),
                                  {}, 120);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const auto& p : placementsOf(dir + "/summary.json")) {
    EXPECT_TRUE(coresNamed(p).empty()) << p;
    EXPECT_EQ(p.rfind("cpu / gloo", 0), 0u) << "each rank reports its own device and backend: " << p;
  }
}

}  // namespace
}  // namespace shardscope
