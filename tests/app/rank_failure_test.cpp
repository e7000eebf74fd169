// A rank that fails or dies ends the whole run with an error naming the rank; never a hang.
// Faults are injected with SHARDSCOPE_FAULT (see engine/launch/rank_worker.cpp).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

std::vector<std::string> argsWithSummary(const std::string& summary) {
  return {"run",     "--model", "mlp",     "--strategy", "full_shard", "--world", "3",
          "--batch", "6",       "--steps", "4",          "--summary",  summary};
}

TEST(RankFailure, KilledRankIsNamedAndPeersAreStopped) {
  const auto dir = testing::freshTempDir("rank_killed");
  auto r =
      testing::runShardscope(argsWithSummary(dir + "/summary.json"), {"SHARDSCOPE_FAULT=rank=1,step=2,mode=kill"}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 died: killed by signal 9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("during step 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step 2/4"), std::string::npos) << "steps before the fault still print";
  EXPECT_LT(r.seconds, 60.0);
  // What was recorded before the failure is kept.
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["steps"].size(), 2u);
  EXPECT_NE(summary["error"].get<std::string>().find("rank 1"), std::string::npos);
}

// Starts `shardscope args`, and once it has printed `after` calls `act` with its pid; returns all it
// printed and its exit status (-1 if it did not end within 120 s).
testing::CliResult runAndAct(const std::vector<std::string>& args, const std::vector<std::string>& env,
                             const std::string& after, const std::function<void(pid_t)>& act) {
  int out[2];
  if (::pipe(out) != 0) return {};
  std::vector<std::string> argv = {SHARDSCOPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  testing::CliResult result;
  bool acted = false;
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) {
    result.output.append(buffer, static_cast<size_t>(n));
    if (!acted && result.output.find(after) != std::string::npos) {
      acted = true;
      act(pid);
    }
  }
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// The rank processes of controller `pid`, by rank: its children, each with RANK=r in its
// environment (exec'd ranks: a forked rank's /proc environ is its parent's, without RANK).
std::map<int, pid_t> rankPids(pid_t controller) {
  std::map<int, pid_t> ranks;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = testing::fileContents(entry.path().string() + "/stat");
    const auto close = stat.rfind(')');  // the command's name may hold spaces
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    if (parent != controller) continue;
    const std::string env = std::string(1, '\0') + testing::fileContents(entry.path().string() + "/environ");
    const auto at = env.find(std::string("\0RANK=", 6));
    if (at != std::string::npos) ranks[std::stoi(env.substr(at + 6))] = std::stoi(name);
  }
  return ranks;
}

// Two ranks killed at the same moment are two causes: each is named with its signal and step, not
// only the first the controller happened to see.
TEST(RankFailure, TwoRanksKilledAtOnceAreBothNamed) {
  const auto dir = testing::freshTempDir("two_ranks_killed");
  auto args = argsWithSummary(dir + "/summary.json");
  args[args.size() - 3] = "2000";  // --steps: still training when they are killed
  std::map<int, pid_t> ranks;
  const auto r = runAndAct(args, {"SHARDSCOPE_EXEC_RANKS=1"}, "step 3/", [&](pid_t controller) {
    ranks = rankPids(controller);
    if (ranks.size() != 3) return;
    ::kill(ranks[1], SIGKILL);
    ::kill(ranks[2], SIGKILL);
  });
  ASSERT_EQ(ranks.size(), 3u) << r.output;
  EXPECT_EQ(r.exitCode, 1) << r.output;
  const std::regex both(
      "rank 1 died: killed by signal 9 \\(Killed\\) during step ([0-9]+); rank 2 died: killed by signal 9 "
      "\\(Killed\\) during step \\1\\. The other ranks were stopped; ([0-9]+) of 2000 steps finished");
  std::smatch found;
  ASSERT_TRUE(std::regex_search(r.output, found, both)) << r.output;
  EXPECT_EQ(std::stoi(found[1]), std::stoi(found[2]) + 1) << "the step after the last every rank finished";
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_NE(summary["error"].get<std::string>().find("; rank 2 died: killed by signal 9"), std::string::npos)
      << summary["error"];
}

// A learning rate that sends the loss to nan stops the run at the first such step (every later one
// would be nan too), says why and what to change, exits 1, and keeps what was recorded.
TEST(RankFailure, ANonFiniteLossStopsTheRunAndSaysWhy) {
  const auto dir = testing::freshTempDir("diverged");
  // Hidden 2048: steps of about 90 ms, so the time a stop takes to reach the ranks (up to a poll,
  // 100 ms, and longer on a loaded machine) costs a step or two. At the default 64, 1-ms steps ran
  // up to 11 before the stop landed; at 512 (5 ms steps) a loaded CI run once ran 23.
  auto r = testing::runShardscope({"run", "--model", "mlp", "--world", "2", "--hidden", "2048", "--lr", "1e30",
                                   "--steps", "200", "--summary", dir + "/summary.json"},
                                  {}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("training diverged, so the run was stopped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Lower --lr (it is 1e+30)"), std::string::npos) << r.output;
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_LT(summary["steps"].size(), 10u) << "stopped at once, not after 200 nan steps";
  EXPECT_GE(summary["steps"].size(), 1u);
}

TEST(RankFailure, RankErrorMessageReachesTheUser) {
  const auto dir = testing::freshTempDir("rank_error");
  auto r = testing::runShardscope(argsWithSummary(dir + "/summary.json"), {"SHARDSCOPE_FAULT=rank=2,step=0,mode=error"},
                                  120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 2 failed during step 1: injected fault"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 60.0);
  // Nothing completed a step: the summary keeps what was recorded (memory), and every figure that
  // needs a step is null rather than a zero that reads as measured.
  const auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  for (const auto& rank : summary["ranks"]) {
    ASSERT_TRUE(rank["step_time_s"].empty()) << rank.dump();
    for (const char* key : {"steady_step_time_s", "overlap_pct", "steady_exposed_comm_s", "traffic_per_step"}) {
      EXPECT_TRUE(rank[key].is_null()) << key << ": " << rank[key].dump();
    }
    EXPECT_TRUE(rank["throughput"]["samples_per_s"].is_null()) << rank["throughput"].dump();
  }
}

// A rank that fails before its first step (here its process group refuses a setting) is said to
// have failed while setting up, not during a step it never began.
TEST(RankFailure, ARankThatFailsWhileSettingUpIsNotSaidToBeInAStep) {
  const auto dir = testing::freshTempDir("rank_setup_error");
  auto r = testing::runShardscope(argsWithSummary(dir + "/summary.json"), {"SHARDSCOPE_GLOO_ALL_GATHER=tree"}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("failed while setting up, before step 1: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("during step"), std::string::npos) << r.output;
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["steps"].size(), 0u);
}

// Counts each rank's "step N" spans in a Chrome trace: the steps the trace says it finished.
std::map<int, int> stepSpansPerRank(const std::string& tracePath) {
  auto trace = nlohmann::json::parse(std::ifstream(tracePath));
  std::map<int, int> steps;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") == "X" && e.value("name", "").rfind("step ", 0) == 0) ++steps[e["pid"].get<int>()];
  }
  return steps;
}

// A killed rank's last step ends can still sit in its queue (its writer starved of CPU): lost
// with it. Its peers' step ends prove it finished those steps (each ends in an all-reduce of the
// loss that needs every rank), so the summary counts them, and the message names the step it died
// in, not the last one it managed to send. A step a peer failed in is not drawn as finished.
TEST(RankFailure, StepsAKilledRankFinishedButNeverSentAreCounted) {
  const auto dir = testing::freshTempDir("rank_killed_unsent");
  auto args = argsWithSummary(dir + "/summary.json");
  args[args.size() - 3] = "10";  // --steps
  args.insert(args.end(), {"--trace", dir + "/trace.json"});
  // Rank 1 stops sending at step 2 (0-based) and is killed at the start of step 5.
  auto r = testing::runShardscope(args, {"SHARDSCOPE_FAULT=rank=1,step=2,mode=unsent-kill"}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 died: killed by signal 9 (Killed) during step 6."), std::string::npos) << r.output;
  // The terminal says the count the summary has, whatever "step N/10" lines came before.
  EXPECT_NE(r.output.find("5 of 10 steps finished on every rank, and what was recorded is kept"), std::string::npos)
      << r.output;
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["steps"].size(), 5u) << "steps 1-5 were finished by every rank";
  const auto spans = stepSpansPerRank(dir + "/trace.json");
  EXPECT_EQ(spans.at(0), 5) << "rank 0 failed in step 6: no span says it finished";
  EXPECT_EQ(spans.at(2), 5);
  EXPECT_LE(spans.count(1) ? spans.at(1) : 0, 2) << "rank 1 sent no more than steps 1-2";
}

// A rank that stops (SIGSTOP, a debugger) makes no progress and says nothing: within the stall
// timeout the run is stopped, the rank named with what it last did, the kill that was
// shardscope's own said to be, and what was recorded kept; never Gloo's timeout minutes later.
TEST(RankFailure, AStoppedRankIsNamedAsStalledAndTheRunEnds) {
  const auto dir = testing::freshTempDir("rank_stalled");
  auto args = argsWithSummary(dir + "/summary.json");
  args[args.size() - 3] = "10";
  args.insert(args.end(), {"--trace", dir + "/trace.json", "--stall-timeout", "3"});
  auto r = testing::runShardscope(args, {"SHARDSCOPE_FAULT=rank=1,step=3,mode=stop"}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 sent nothing for 3 s; its last event: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("its last event: step 3 ended"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("stopped after 3 of 10 steps"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("shardscope killed rank 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("raise --stall-timeout (it is 3 s)"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 30.0) << "3 s of silence plus 3 s of grace, not Gloo's 300 s";
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["steps"].size(), 3u);
  EXPECT_EQ(stepSpansPerRank(dir + "/trace.json").at(0), 3) << "the trace is kept";
  // Where the ranks' collectives stood: rank 0 issued step 4's first collective, which the stopped
  // rank 1 never did (the ranks announce each collective as they issue it).
  EXPECT_NE(r.output.find("Where the ranks' collectives stopped: first mismatch (missing_rank): rank 1 never entered"),
            std::string::npos)
      << r.output;
  const auto& first = summary["last_collectives"]["first_mismatch"];
  EXPECT_EQ(first["kind"], "missing_rank") << summary["last_collectives"].dump();
  EXPECT_EQ(first["ranks"], nlohmann::json::array({1}));
}

// A collective that timed out (a peer never came) did not complete: it is not in the trace as a
// collective as long as the timeout, with bandwidths worked out from that. Its issue still says
// where the ranks stood.
TEST(RankFailure, ACollectiveThatTimedOutIsNotRecordedAsOneThatCompleted) {
  const auto dir = testing::freshTempDir("collective_timed_out");
  auto args = argsWithSummary(dir + "/summary.json");
  args.insert(args.end(), {"--trace", dir + "/trace.json", "--hang-rank", "1:2", "--collective-timeout", "2"});
  auto r = testing::runShardscope(args, {}, 120);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  const auto trace = nlohmann::json::parse(std::ifstream(dir + "/trace.json"));
  int collectives = 0;
  std::set<int> failedOn;  // the ranks that recorded a collective as failed, where they saw it fail
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("cat", "") == "collective_failed") failedOn.insert(e["pid"].get<int>());
    if (e.value("ph", "") != "X" || !e.contains("args") || !e["args"].contains("op")) continue;
    ++collectives;
    // A completed one ended within the timeout; the one that timed out was in flight 2 s (below).
    // (Not under 1 s: the first collective after set-up waits for the slowest rank to arrive.)
    EXPECT_LT(e["dur"].get<double>(), 1.9e6) << "rank " << e["pid"] << ": " << e["name"] << " lasted the timeout";
  }
  EXPECT_GT(collectives, 0) << "step 1's collectives completed and are kept";
  EXPECT_EQ(failedOn, (std::set<int>{0, 2})) << "the ranks whose collective timed out say so; rank 1 never issued it";
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["last_collectives"]["first_mismatch"]["kind"], "missing_rank") << summary["last_collectives"];
  const auto& failed = summary["ranks"][0]["failed_collectives"];
  ASSERT_EQ(failed.size(), 1u) << summary["ranks"][0];
  EXPECT_GE(failed[0]["in_flight_s"].get<double>(), 1.9) << "in flight from its issue until its 2 s timeout";
  EXPECT_EQ(summary["ranks"][1]["failed_collectives"].size(), 0u);
}

// --hang-rank and --collective-timeout (the hang lesson's) are refused before any rank starts,
// naming the value and what is allowed. The hang itself is the lesson's test (every claim holds).
TEST(RankFailure, AHangThatNamesNoRankOrStepIsRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--hang-rank", "5:2"}, "names rank 5, but the ranks are 0 to 1"},
      {{"run", "--hang-rank", "1:9", "--steps", "3"}, "names step 9, but the run has 3"},
      {{"run", "--hang-rank", "1"}, "--hang-rank '1' is not R:STEP"},
      {{"run", "--hang-rank", "1:0"}, "is not R:STEP"},
      {{"run", "--collective-timeout", "0"}, "from 1 to 86400"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = testing::runShardscope(args);
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
}

TEST(RankFailure, AStallTimeoutThatIsNotANumberOfSecondsIsRefused) {
  for (const char* bad : {"-1", "0.5", "1e300"}) {
    auto r = testing::runShardscope({"run", "--stall-timeout", bad});
    EXPECT_EQ(r.exitCode, 2) << r.output;
    EXPECT_NE(r.output.find(std::string("--stall-timeout is ") + (bad == std::string("1e300") ? "1e+300" : bad)),
              std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("from 3 to 86400"), std::string::npos) << r.output;
  }
}

// Every output is written that can be; each that cannot is named, and the exit status says so.
TEST(RankFailure, OneFailedOutputCostsNoOtherAndIsNeverExitZero) {
  const auto dir = testing::freshTempDir("outputs_full");
  // The trace first: it used to end the run's writing, so the CSV and the summary were lost too.
  auto r = testing::runShardscope({"run", "--steps", "2", "--trace", "/dev/full", "--memory-csv", dir + "/memory.csv",
                                   "--summary", dir + "/summary.json"});
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write '/dev/full': No space left on device"), std::string::npos) << r.output;
  auto summary = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(summary["status"], "ok") << "training itself succeeded";
  EXPECT_EQ(summary["steps"].size(), 2u);
  ASSERT_EQ(summary["output_errors"].size(), 1u) << summary.dump();
  EXPECT_NE(summary["output_errors"][0].get<std::string>().find("/dev/full"), std::string::npos);
  EXPECT_GT(std::filesystem::file_size(dir + "/memory.csv"), 100u);
}

TEST(RankFailure, ACompareSummaryThatCannotBeWrittenIsAnError) {
  auto r = testing::runShardscope({"compare", "--steps", "1", "--strategies", "ddp", "--summary", "/dev/full"});
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write '/dev/full'"), std::string::npos) << r.output;
}

// Two runs writing the same trace at once: the file is one of them, whole, never a mix.
TEST(RankFailure, TwoRunsWritingOneTraceLeaveOneWholeFile) {
  const auto dir = testing::freshTempDir("outputs_race");
  const std::string trace = dir + "/trace.json";
  auto one = std::async(std::launch::async, [&] {
    return testing::runShardscope({"run", "--steps", "3", "--trace", trace});
  });
  auto two = testing::runShardscope({"run", "--steps", "5", "--world", "3", "--batch", "18", "--trace", trace});
  const auto first = one.get();
  ASSERT_EQ(first.exitCode, 0) << first.output;
  ASSERT_EQ(two.exitCode, 0) << two.output;
  const auto spans = stepSpansPerRank(trace);  // parses: a mix of the two would not
  EXPECT_TRUE((spans.size() == 2 && spans.at(0) == 3) || (spans.size() == 3 && spans.at(0) == 5));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "no temporary file left";
}

// A worker under another launcher (torchrun) says what went wrong whatever its rank, in its own
// words, within the rendezvous timeout it states.
TEST(RankFailure, AWorkerOfAnyRankSaysWhyItFailed) {
  auto r = testing::runShardscope({"worker", "--steps", "1"},
                                  {"RANK=5", "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1"}, 60);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("shardscope worker, rank 5: RANK=5 must be below WORLD_SIZE=2"), std::string::npos)
      << r.output;
}

TEST(RankFailure, AWorkerThatCannotReachTheStoreSaysSoWithinItsTimeout) {
  // Port 1 on loopback: nothing listens there, so every connection is refused.
  auto r = testing::runShardscope({"worker", "--steps", "1"},
                                  {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=1",
                                   "SHARDSCOPE_RENDEZVOUS_TIMEOUT_S=3"},
                                  60);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("shardscope worker, rank 1: could not reach the rendezvous store at 127.0.0.1:1 in "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(" s (timeout 3 s; c10d tries twice) (MASTER_ADDR, MASTER_PORT)"), std::string::npos)
      << r.output;
  EXPECT_LT(r.seconds, 30.0) << "the timeout it stated, not c10d's minutes";
}

}  // namespace
}  // namespace shardscope
