// shardscope diff on real differences, run for real (one OS process per rank): each test asserts
// the direction and the place of what changed, and the verdict and exit status CI acts on.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "stats/run_diff.h"
#include "tests/support/run_cli.h"

namespace shardscope::app {
namespace {

std::string recorded(const std::string& dir, const std::string& name, std::vector<std::string> options) {
  const std::string trace = dir + "/" + name + ".pftrace";
  std::vector<std::string> args = {"run", "--model", "gpt", "--layers", "3", "--hidden", "64", "--seq", "8", "--batch",
                                   "4",   "--world", "2",   "--steps",  "6", "--trace",  trace};
  args.insert(args.end(), options.begin(), options.end());
  const auto r = testing::runShardscope(args);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return trace;
}

nlohmann::json diffJson(const std::string& a, const std::string& b, const std::string& dir, int expectedExit,
                        std::vector<std::string> options = {}) {
  std::vector<std::string> args = {"diff", a, b, "--json", dir + "/diff.json"};
  args.insert(args.end(), options.begin(), options.end());
  const auto r = testing::runShardscope(args);
  if (expectedExit >= 0) EXPECT_EQ(r.exitCode, expectedExit) << r.output;
  EXPECT_TRUE(r.exitCode == 0 || r.exitCode == 1) << r.output;
  EXPECT_NE(r.output.find("verdict: "), std::string::npos) << r.output;
  std::ifstream in(dir + "/diff.json");
  auto d = in ? nlohmann::json::parse(in) : nlohmann::json::object();
  EXPECT_EQ(r.exitCode == 1, d.value("verdict", "") == "regression") << "exit 1 is a regression, and only that";
  return d;
}

TEST(Diff, PrefetchingTwoUnitsHoldsMoreGatheredWeightsOnEveryRank) {
  const auto dir = testing::freshTempDir("diff_prefetch");
  const auto one = recorded(dir, "p1", {"--strategy", "full_shard", "--prefetch", "1"});
  const auto two = recorded(dir, "p2", {"--strategy", "full_shard", "--prefetch", "2"});
  // The run's peak may fall where no gather is in flight, so the verdict is not the point here: the
  // gathered weights each rank holds at once are (the time on a shared 2-core machine is noise).
  const auto d = diffJson(one, two, dir, -1);
  int ranksUp = 0;
  for (const auto& c : d["changes"]) {
    if (c["figure"] == "peak param_gathered") {
      EXPECT_GT(c["b"].get<double>(), c["a"].get<double>()) << c.dump();
      ++ranksUp;
    }
  }
  EXPECT_EQ(ranksUp, 2) << d.dump(1);
  // What prefetching buys, per collective and by the order the ranks ran things in rather than by
  // how long they took (the runs are one after another on a shared machine, whose load moves the
  // overall overlap figure either way): with no prefetch, every all-gather is waited on as it is
  // issued, so no compute hides any of it; with one, a block's forward gather is issued before the
  // unit before it computes, and part of it is hidden on every rank.
  const auto none = recorded(dir, "p0", {"--strategy", "full_shard", "--prefetch", "0"});
  const auto bought = diffJson(none, one, dir, -1);
  std::set<int> ranksHidingAForwardGather;
  int gathers = 0;
  for (const auto& c : bought["changes"]) {
    const std::string figure = c["figure"], where = c["where"];
    if (figure.rfind("all_gather", 0) != 0 || c["exposed_a"].is_null()) continue;
    ++gathers;
    EXPECT_NEAR(c["exposed_a"].get<double>(), c["a"].get<double>(), 1e-12) << "nothing hid it: " << c.dump();
    const bool forwardOfABlock = where.find("forward of blocks.") != std::string::npos;
    if (forwardOfABlock && c["exposed_b"].get<double>() < c["b"].get<double>()) {
      ranksHidingAForwardGather.insert(c["rank"].get<int>());
    }
  }
  EXPECT_GE(gathers, 2 * 6) << "each rank's gathers of its three blocks, in forward and backward: " << bought.dump(1);
  EXPECT_EQ(ranksHidingAForwardGather.size(), 2u) << bought.dump(1);
}

TEST(Diff, Bf16HalvesEveryGathersBytes) {
  const auto dir = testing::freshTempDir("diff_bf16");
  const auto fp32 = recorded(dir, "fp32", {"--strategy", "full_shard"});
  const auto bf16 = recorded(dir, "bf16", {"--strategy", "full_shard", "--precision", "bf16"});
  const auto d = diffJson(fp32, bf16, dir, -1);  // the verdict weighs time and memory; the bytes are the point
  int gathers = 0;
  for (const auto& c : d["changes"]) {
    const std::string figure = c["figure"];
    if (figure.rfind("all_gather", 0) != 0 || figure.find("bytes") == std::string::npos) continue;
    EXPECT_DOUBLE_EQ(c["b"].get<double>(), c["a"].get<double>() / 2) << c.dump();
    ++gathers;
  }
  // Each rank gathers each of 4 units (3 blocks and the root) in forward and again in backward.
  EXPECT_GE(gathers, 2 * 7) << d.dump(1);
}

// A run recorded every other step (--recording alternate) moves the same bytes per step as one
// recorded every step: per step is per step recorded, not per step of the range.
TEST(Diff, EveryOtherStepRecordedMovesTheSameBytesPerStep) {
  const auto dir = testing::freshTempDir("diff_alternate");
  const auto every = recorded(dir, "every", {"--strategy", "full_shard"});
  const auto alternate = recorded(dir, "alternate", {"--strategy", "full_shard", "--recording", "alternate"});
  const auto d = diffJson(every, alternate, dir, -1);
  for (const auto& c : d["changes"]) {
    const std::string figure = c["figure"];
    EXPECT_EQ(figure.find("bytes"), std::string::npos) << "no collective's bytes per step changed: " << c.dump();
  }
}

TEST(Diff, ASlowRankIsARegressionThatNamesIt) {
  const auto dir = testing::freshTempDir("diff_slow");
  const auto plain = recorded(dir, "plain", {"--strategy", "ddp"});
  // Ten times its compute: far past the step-to-step spread of a shared machine.
  const auto slow = recorded(dir, "slow", {"--strategy", "ddp", "--slow-rank", "1:10"});
  const auto d = diffJson(plain, slow, dir, 1);
  EXPECT_EQ(d["verdict"], "regression");
  const nlohmann::json* waitedFor = nullptr;
  for (const auto& c : d["changes"]) {
    if (c["figure"] == "others waited for it" && (!waitedFor || c["change"] > (*waitedFor)["change"])) waitedFor = &c;
  }
  ASSERT_NE(waitedFor, nullptr) << d.dump(1);
  EXPECT_EQ((*waitedFor)["rank"], 1) << "the slow rank is the one the others waited for: " << d.dump(1);
  // Rank 0's all-reduces now wait for rank 1 after its own backward has ended: the time they grew
  // by is mostly exposed. Every collective's exposed part lies within its time.
  const nlohmann::json* grew = nullptr;
  for (const auto& c : d["changes"]) {
    if (c["exposed_b"].is_null()) continue;
    EXPECT_GE(c["exposed_b"].get<double>(), 0.0) << c.dump();
    EXPECT_LE(c["exposed_b"].get<double>(), c["b"].get<double>() * (1 + 1e-9)) << c.dump();
    EXPECT_LE(c["exposed_a"].get<double>(), c["a"].get<double>() * (1 + 1e-9)) << c.dump();
    if (c["rank"] == 0 && (!grew || c["change"] > (*grew)["change"])) grew = &c;
  }
  ASSERT_NE(grew, nullptr) << d.dump(1);
  const double exposedGrowth = (*grew)["exposed_b"].get<double>() - (*grew)["exposed_a"].get<double>();
  EXPECT_GT(exposedGrowth, 0.5 * (*grew)["change"].get<double>()) << grew->dump();
}

TEST(Diff, TwoRepeatsOfOneRunAreNoChange) {
  const auto dir = testing::freshTempDir("diff_repeat");
  // Two runs one after the other on this shared 2-core machine differ by 20 to 50 % now and then
  // (where the scheduler put their ranks, what else ran): a real difference, which the tool rightly
  // reports. So the two repeats run at once, both on core 0: the scheduler gives each the same
  // share of it, whatever else runs there. 30 steps, 5 left out as warm-up; the default gate.
  const auto repeat = [&](const std::string& name) {
    const std::string trace = dir + "/" + name + ".pftrace";
    const auto r =
        testing::runCommand({"taskset", "-c",       "0",  SHARDSCOPE_BINARY, "run", "--model", "gpt", "--layers",
                             "3",       "--hidden", "64", "--seq",           "8",   "--batch", "4",   "--world",
                             "2",       "--steps",  "30", "--strategy",      "ddp", "--trace", trace});
    EXPECT_EQ(r.exitCode, 0) << r.output;
    return trace;
  };
  std::string first;
  std::thread beside([&] { first = repeat("first"); });
  const auto second = repeat("second");
  beside.join();
  const auto d = diffJson(first, second, dir, 0, {"--warmup", "5"});
  EXPECT_EQ(d["verdict"], "no change") << d["reason"];
  EXPECT_EQ(d["steps_compared"], 25);
}

TEST(Diff, ADifferenceInsideTheStepsSpreadIsNeverARegression) {
  stats::RunDiff d;
  d.stepsCompared = 8;
  d.stepA = 0.100, d.stepB = 0.120;  // +20 %, past a 5 % gate...
  d.noise = 0.030;                   // ...but inside the spread
  d.peakA = d.peakB = 1000;
  std::string reason;
  EXPECT_EQ(stats::judge(d, 0.05, reason), stats::Verdict::NoChange) << reason;
  EXPECT_NE(reason.find("within noise"), std::string::npos) << reason;
  d.noise = 0.010;
  EXPECT_EQ(stats::judge(d, 0.05, reason), stats::Verdict::Regression) << reason;
  EXPECT_EQ(stats::judge(d, 0.25, reason), stats::Verdict::NoChange) << "below the gate: " << reason;
  d.stepB = 0.080;
  EXPECT_EQ(stats::judge(d, 0.05, reason), stats::Verdict::Improvement) << reason;
  d.stepsCompared = 1;  // no spread to judge a time by: memory alone
  d.peakB = 1100;
  EXPECT_EQ(stats::judge(d, 0.05, reason), stats::Verdict::Regression) << reason;
  EXPECT_NE(reason.find("not judged"), std::string::npos) << reason;
}

// Steps in a run are not independent: five consecutive steps of B slowed together (the machine
// was busy meanwhile). Their spread over sqrt(25) would call B's +7.7 % a regression; the means of
// five runs of five steps show that much comes and goes within a run.
TEST(Diff, StepsThatSlowedTogetherAreNoise) {
  stats::DiffSide a, b;
  a.ranks.resize(1);
  b.ranks.resize(1);
  for (int i = 0; i < 25; ++i) {
    a.ranks[0].stepSeconds.push_back(i % 2 ? 0.0102 : 0.0100);
    b.ranks[0].stepSeconds.push_back(i >= 10 && i < 15 ? 0.0140 : 0.0101);
  }
  const auto d = stats::diffRuns(a, b, {0.05, 0});
  EXPECT_GT(d.stepB / d.stepA, 1.05) << "past the gate";
  const double plainNoise = 2 * std::sqrt((d.spreadA * d.spreadA + d.spreadB * d.spreadB) / 25);
  EXPECT_LT(plainNoise, d.stepB - d.stepA) << "the plain standard error alone would call it a regression";
  EXPECT_GT(d.noise, d.stepB - d.stepA);
  EXPECT_EQ(d.verdict, stats::Verdict::NoChange) << d.reason;
  // Spread evenly over the run, the same slow steps are what the plain figure describes.
  for (int i = 0; i < 25; ++i) b.ranks[0].stepSeconds[i] = i % 5 == 2 ? 0.0140 : 0.0101;
  const auto even = stats::diffRuns(a, b, {0.05, 0});
  EXPECT_NEAR(even.noise, plainNoise, 1e-9);
  EXPECT_EQ(even.verdict, stats::Verdict::Regression) << even.reason;
}

// Two real FSDP2 jobs recorded with torch.profiler on an H200 (tests/data/pytorch_cuda_h200): with
// reshard_after_forward=False the backward gathers nothing again, and the diff says so, rank by rank.
TEST(Diff, TwoPyTorchJobsThatDifferInReshardAfterForward) {
  const std::string data = SHARDSCOPE_TEST_DATA "/pytorch_cuda_h200/";
  const auto dir = testing::freshTempDir("diff_pytorch");
  const auto d = diffJson(data + "fsdp_w2", data + "fsdp_no_reshard_w3", dir, -1);
  ASSERT_TRUE(d.contains("notes")) << d.dump(1);
  int backwardGathersOnlyInA = 0;
  for (const auto& note : d["notes"]) {
    const std::string text = note;
    if (text.find("no counterpart in B, e.g. all_gather") != std::string::npos &&
        text.find("backward") != std::string::npos) {
      ++backwardGathersOnlyInA;
    }
    EXPECT_EQ(text.find("no counterpart in A"), std::string::npos) << "B gathers nothing A does not: " << text;
  }
  EXPECT_EQ(backwardGathersOnlyInA, 2) << "on each of the 2 ranks both ran: " << d.dump(1);
  EXPECT_GT(d["steps_compared"].get<int>(), 0);
}

TEST(Diff, BadInputSaysWhatToDo) {
  const auto dir = testing::freshTempDir("diff_bad");
  const auto one = testing::runShardscope({"diff", dir + "/missing.pftrace"});
  EXPECT_EQ(one.exitCode, 2) << one.output;
  const auto missing = testing::runShardscope({"diff", dir + "/a.pftrace", dir + "/b.pftrace"});
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_NE(missing.output.find("a.pftrace"), std::string::npos) << missing.output;
  const auto trace = recorded(dir, "t", {});
  const auto gate = testing::runShardscope({"diff", trace, trace, "--gate", "lots"});
  EXPECT_EQ(gate.exitCode, 2) << gate.output;
  EXPECT_NE(gate.output.find("--gate 'lots'"), std::string::npos) << gate.output;
  const auto warm = testing::runShardscope({"diff", trace, trace, "--warmup", "6"});
  EXPECT_EQ(warm.exitCode, 2) << warm.output;
  EXPECT_NE(warm.output.find("smaller --warmup"), std::string::npos) << warm.output;
}

}  // namespace
}  // namespace shardscope::app
