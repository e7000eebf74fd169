// Ctrl-C, SIGTERM or SIGHUP to a headless run's controller: the ranks are stopped, what they
// recorded is written (summary "interrupted", trace, memory CSV), the message says so, the exit
// status is 128 + the signal, and no temporary file is left behind. A second one ends it at once.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "trace/trace_reader.h"

namespace shardscope {
namespace {

struct Interrupted {
  int exitCode = -1;  // -1 when it was ended by a signal (termSignal) or did not end
  int termSignal = 0;
  std::string output;
};

// Starts `shardscope args` with TMPDIR=tmp (and `ignored` set to SIG_IGN, as nohup does), waits
// until it prints `after`, sends `signals` one second apart, and collects the rest of its output
// and its exit status (-1 if it did not end within 60 s).
Interrupted interruptAfter(const std::vector<std::string>& args, const std::string& after, std::vector<int> signals,
                           const std::string& tmp, int ignored = 0, const std::vector<std::string>& env = {}) {
  int out[2];
  if (::pipe(out) != 0) return {};
  std::vector<std::string> argv = {SHARDSCOPE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const std::string tmpdir = "TMPDIR=" + tmp;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    ::putenv(const_cast<char*>(tmpdir.c_str()));
    for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
    if (ignored) ::signal(ignored, SIG_IGN);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  Interrupted result;
  size_t sent = 0;
  auto nextSignal = std::chrono::steady_clock::time_point::max();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      const ssize_t n = ::read(out[0], buffer, sizeof buffer);
      if (n <= 0) break;
      result.output.append(buffer, static_cast<size_t>(n));
    }
    if (sent == 0 && nextSignal == std::chrono::steady_clock::time_point::max() &&
        result.output.find(after) != std::string::npos) {
      nextSignal = std::chrono::steady_clock::now();
    }
    if (sent < signals.size() && std::chrono::steady_clock::now() >= nextSignal) {
      ::kill(pid, signals[sent++]);
      nextSignal = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
  }
  ::close(out[0]);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 100 && (done = ::waitpid(pid, &status, WNOHANG)) == 0; ++i) ::usleep(100000);
  if (done != pid) {  // still running 10 s after its output ended: a hang
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return result;
  }
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.termSignal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

class Interrupt : public ::testing::TestWithParam<int> {};

TEST_P(Interrupt, KeepsWhatWasRecordedAndSaysSo) {
  const int signal = GetParam();
  const auto dir = testing::freshTempDir("interrupt_" + std::to_string(signal));
  const auto tmp = testing::freshTempDir("interrupt_tmp_" + std::to_string(signal));
  const auto r =
      interruptAfter({"run", "--model", "mlp", "--world", "2", "--strategy", "full_shard", "--steps", "2000",
                      "--summary", dir + "/s.json", "--trace", dir + "/t.json", "--memory-csv", dir + "/m.csv"},
                     "step 3/", {signal}, tmp);
  EXPECT_EQ(r.exitCode, 128 + signal) << r.output;
  EXPECT_NE(r.output.find("shardscope: interrupted by SIG"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Kept what was recorded: summary " + dir + "/s.json, trace " + dir + "/t.json"),
            std::string::npos)
      << r.output;

  std::ifstream summaryFile(dir + "/s.json");
  ASSERT_TRUE(summaryFile.good()) << "the summary is written";
  const auto summary = nlohmann::json::parse(summaryFile);
  EXPECT_EQ(summary["status"], "interrupted");
  EXPECT_GE(summary["steps"].size(), 3u) << "every step all ranks finished is kept";
  EXPECT_LT(summary["steps"].size(), 2000u);
  const auto trace = trace::loadChromeTrace(dir + "/t.json");
  EXPECT_TRUE(trace.error.empty()) << trace.error;
  EXPECT_GE(trace.recording.rank(0).steps.size(), 3u);
  EXPECT_TRUE(std::ifstream(dir + "/m.csv").good());
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the temporary config file is removed";
}

// nohup's SIGHUP (or a shell's SIGINT for a background job) was ignored when the run started: it
// stays ignored, and the run goes on until something else stops it.
TEST(Interrupt, SignalsIgnoredAtStartStayIgnored) {
  const auto dir = testing::freshTempDir("interrupt_nohup");
  const auto tmp = testing::freshTempDir("interrupt_nohup_tmp");
  const auto r =
      interruptAfter({"run", "--model", "mlp", "--world", "2", "--steps", "2000", "--summary", dir + "/s.json"},
                     "step 3/", {SIGHUP, SIGTERM}, tmp, /*ignored=*/SIGHUP);
  EXPECT_EQ(r.exitCode, 128 + SIGTERM) << r.output;
  EXPECT_NE(r.output.find("interrupted by SIGTERM"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("SIGHUP"), std::string::npos) << r.output;
}

// A controller killed by SIGKILL cannot clean up: it leaves no file under TMPDIR (the ranks' config
// was a shardscope-run-* file there), and the hidden partial trace it left beside --trace is
// removed by the next run that writes that path, its owner being gone.
TEST(Interrupt, AKilledControllerLeavesNothingTheNextRunKeeps) {
  const auto dir = testing::freshTempDir("interrupt_kill");
  const auto tmp = testing::freshTempDir("interrupt_kill_tmp");
  const std::vector<std::string> args = {"run",     "--model", "mlp",     "--world",      "2",
                                         "--steps", "2000",    "--trace", dir + "/t.json"};
  const auto r = interruptAfter(args, "step 3/", {SIGKILL}, tmp);
  EXPECT_EQ(r.exitCode, -1) << "killed: " << r.output;
  ::usleep(500000);  // the ranks die with their controller (PR_SET_PDEATHSIG)
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "nothing of the run is left in TMPDIR";
  size_t partial = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    partial += e.path().filename().string().rfind(".t.json.", 0) == 0;
  EXPECT_EQ(partial, 1u) << "the killed run's partial trace is there";
  const auto again =
      testing::runShardscope({"run", "--model", "mlp", "--world", "2", "--steps", "2", "--trace", dir + "/t.json"});
  EXPECT_EQ(again.exitCode, 0) << again.output;
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"t.json"}) << "the stale partial trace is removed";
}

// A second Ctrl-C ends the run at once, while the first still waits for the ranks: here rank 1 is
// stopped (SIGSTOP) at step 3, so the first Ctrl-C's stop waits out its grace (3 s) before it is
// killed, and the second lands in that wait. The run dies by SIGINT as any process Ctrl-C ends, but
// first says in one line what it kept and what it did not, and leaves no partial file.
TEST(Interrupt, ASecondCtrlCSaysWhatWasKeptAndLeavesNoPartialFile) {
  const auto dir = testing::freshTempDir("interrupt_twice");
  const auto tmp = testing::freshTempDir("interrupt_twice_tmp");
  // Signal 0 sends nothing: the first Ctrl-C comes a second after "step 2/", once rank 1 has stopped.
  const auto r =
      interruptAfter({"run", "--model", "mlp", "--world", "3", "--batch", "6", "--steps", "2000", "--stall-timeout",
                      "60", "--summary", dir + "/s.json", "--trace", dir + "/t.json", "--memory-csv", dir + "/m.csv"},
                     "step 2/", {0, SIGINT, SIGINT}, tmp, 0, {"SHARDSCOPE_FAULT=rank=1,step=2,mode=stop"});
  EXPECT_EQ(r.termSignal, SIGINT) << r.output;
  const std::string line =
      "shardscope: interrupted again by SIGINT (Ctrl-C): ended at once, without waiting for "
      "the ranks (they end with it). Kept: nothing. Not written (no partial file is left; a "
      "file already at such a path is as it was): summary " +
      dir + "/s.json, trace " + dir + "/t.json, memory CSV " + dir + "/m.csv.\n";
  EXPECT_NE(r.output.find(line), std::string::npos) << r.output;
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << "left: " << ::testing::PrintToString(left);
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
}

INSTANTIATE_TEST_SUITE_P(Signals, Interrupt, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == SIGINT ? "SIGINT" : info.param == SIGTERM ? "SIGTERM" : "SIGHUP";
                         });

}  // namespace
}  // namespace shardscope
