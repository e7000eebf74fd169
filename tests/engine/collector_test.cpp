// `shardscope listen` collects a launched job's events live (`worker --collector`): the ranks'
// files it writes are the job; strangers (garbage, no token, a wrong token, silence) are refused
// and logged without disturbing it; a rank that cannot reach it, or loses it, writes its own file.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "engine/recording/unconfirmed_bytes.h"
#include "tests/support/run_cli.h"
#include "trace/collector_hello.h"
#include "trace/rank_event_files.h"
#include "trace/wire.h"

namespace shardscope::engine {
namespace {

// A stranger on the collector's port: connects, sends `bytes` (maybe nothing), and holds on.
std::thread stranger(int port, std::string bytes, int holdMs) {
  return std::thread([port, bytes, holdMs] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && !bytes.empty()) {
      (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(holdMs));
    ::close(fd);
  });
}

// Whether a rank's stream file holds a step's end (its events are binary frames: trace/wire.h).
bool holdsAStepEnd(const std::string& path) {
  const std::string bytes = testing::fileContents(path);
  bool found = false;
  trace::StreamSplitter items;
  items.feed(bytes.data(), bytes.size(), [&](std::string_view item) {
    const auto e = trace::decodeStreamItem(item);
    found = found || (e && e->kind == trace::EventKind::StepEnd);
  });
  return found;
}

// Sends the collector listening on `port` a signal once it has some of the run (rank 1's file
// holds a step): SIGKILL, a collector gone; SIGSTOP, one that stops reading and confirming.
std::thread signalCollectorMidRun(const std::string& dir, const std::string& port, const std::string& signal) {
  return std::thread([dir, port, signal] {
    for (int i = 0; i < 200 && !holdsAStepEnd(trace::rankEventFileName(dir, 1)); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    (void)testing::runCommand({"pkill", "-" + signal, "-f", "listen --port " + port});
  });
}

// The job in `dir` as `view` merges it: no rank failed, and each has every one of `steps` steps,
// once (what was in flight when the collector went was written again by the rank itself).
void expectEveryStepOnce(const std::string& dir, int steps) {
  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  EXPECT_FALSE(job.ranksFailed) << job.note;
  for (int r = 0; r < job.recording.ranks(); ++r) {
    const auto& kept = job.recording.rank(r).steps;
    ASSERT_EQ(kept.size(), static_cast<size_t>(steps)) << "rank " << r;
    for (int s = 0; s < steps; ++s) EXPECT_EQ(kept[static_cast<size_t>(s)].step, s) << "rank " << r;
  }
}

TEST(Collector, AJobStreamsToItLiveAndStrangersAreRefused) {
  config::RunConfig config = testing::tinyGptConfig();
  config.strategy = config::StrategyKind::FullShard;
  config.steps = 3;
  const std::string dir = testing::freshTempDir("collector_job");
  const int port = testing::freeLoopbackPort();
  const std::vector<std::string> token = {"SHARDSCOPE_COLLECTOR_TOKEN=s3cret-job-token"};
  testing::CliResult collector;
  std::thread listen([&] {
    collector = testing::runShardscope({"listen", "--port", std::to_string(port), "--trace-dir", dir}, token, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  trace::CollectorHello wrong{0, 2, "guess", ""};
  trace::CollectorHello none{1, 2, "", ""};
  std::vector<std::thread> strangers;
  strangers.push_back(stranger(port, "GET / HTTP/1.0\r\n\r\n", 200));
  strangers.push_back(stranger(port, "{\"hello\": 1}\n", 200));  // a hello of the wrong type
  strangers.push_back(stranger(port, trace::encodeCollectorHello(wrong), 200));
  strangers.push_back(stranger(port, trace::encodeCollectorHello(none), 200));
  strangers.push_back(stranger(port, "", 6500));                          // silence past the 5 s a hello may take
  strangers.push_back(stranger(port, std::string(70 * 1024, 'x'), 200));  // no line at all
  const auto ranks = testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + std::to_string(port)}, {}, token);
  for (auto& s : strangers) s.join();
  listen.join();
  for (const auto& r : ranks) EXPECT_EQ(r.exitCode, 0) << r.output;

  EXPECT_EQ(collector.exitCode, 0) << collector.output;
  for (const char* said :
       {"rank 0 of 2 connected from 127.0.0.1", "step 3  loss", "rank 0 finished (3 steps)",
        "rank 1 finished (3 steps)", "its first line is not a shardscope rank's hello", "it presented a wrong token",
        "it presented no token", "it said nothing for 5 s", "its first 64 KiB hold no line"}) {
    EXPECT_NE(collector.output.find(said), std::string::npos) << said << " in:\n" << collector.output;
  }
  EXPECT_EQ(collector.output.find("guess"), std::string::npos) << "a refused token is not echoed";

  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  EXPECT_TRUE(job.note.empty()) << job.note;
  EXPECT_EQ(job.config.strategy, config::StrategyKind::FullShard) << "rank 0's options, from its hello";
  ASSERT_EQ(job.recording.ranks(), 2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(job.recording.rank(r).steps.size(), 3u) << "rank " << r;
    EXPECT_GT(job.recording.rank(r).collectives.size(), 10u) << "rank " << r;
  }
}

// 500 connections that say nothing, held open: the ranks still get in at once (64 idle ones kept
// every rank out until they timed out 5 s later), the oldest silent ones making room.
TEST(Collector, IdleConnectionsDoNotKeepTheRanksOut) {
  config::RunConfig config = testing::tinyGptConfig();
  config.steps = 2;
  const std::string dir = testing::freshTempDir("collector_idle");
  const int port = testing::freeLoopbackPort();
  testing::CliResult collector;
  std::thread listen([&] {
    collector = testing::runShardscope({"listen", "--port", std::to_string(port), "--trace-dir", dir}, {}, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  std::vector<int> idle;
  for (int i = 0; i < 500; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
      idle.push_back(fd);
    else
      ::close(fd);
  }
  EXPECT_EQ(idle.size(), 500u);
  const auto started = std::chrono::steady_clock::now();
  const auto ranks = testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + std::to_string(port)});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  listen.join();
  for (int fd : idle) ::close(fd);
  for (const auto& r : ranks) {
    EXPECT_EQ(r.exitCode, 0) << r.output;
    EXPECT_EQ(r.output.find("refused"), std::string::npos) << "no rank was refused: " << r.output;
  }
  EXPECT_EQ(collector.exitCode, 0) << collector.output;
  EXPECT_NE(collector.output.find("rank 1 finished (2 steps)"), std::string::npos) << collector.output;
  EXPECT_NE(collector.output.find("the oldest silent one makes room"), std::string::npos) << collector.output;
  EXPECT_LT(seconds, 60.0);
  expectEveryStepOnce(dir, 2);
}

// Ranks with the wrong token are told why (the collector answers every hello), and keep their
// files; the collector, which no rank joined, stops at SIGTERM keeping what it has (nothing).
TEST(Collector, ARefusedRankIsToldWhyAndKeepsItsFile) {
  config::RunConfig config = testing::tinyGptConfig();
  const std::string dir = testing::freshTempDir("collector_refused");
  const std::string port = std::to_string(testing::freeLoopbackPort());
  testing::CliResult collector;
  std::thread listen([&] {
    collector = testing::runShardscope({"listen", "--port", port, "--trace-dir", dir + "/collected"},
                                       {"SHARDSCOPE_COLLECTOR_TOKEN=right"}, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(std::stoi(port)));
  const auto ranks = testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + port, "--trace-dir", dir + "/own"},
                                           {}, {"SHARDSCOPE_COLLECTOR_TOKEN=wrong"});
  (void)testing::runCommand({"pkill", "-TERM", "-f", "listen --port " + port});
  listen.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].exitCode, 0) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("cannot reach the collector at 127.0.0.1:" + port +
                                   " (it refused this rank: it presented a wrong token); writing"),
              std::string::npos)
        << ranks[r].output;
  }
  EXPECT_EQ(collector.exitCode, 1) << collector.output;
  EXPECT_NE(collector.output.find("stopped: what the ranks sent so far is in"), std::string::npos) << collector.output;
  const auto job = trace::loadRankEventFiles(dir + "/own");
  ASSERT_TRUE(job.error.empty()) << job.error;
  for (int r = 0; r < 2; ++r) EXPECT_EQ(job.recording.rank(r).steps.size(), 2u);
}

// A rank's file that cannot take its stream (here a link to /dev/full): the collector says so,
// naming the file and the reason, and ends 1 as an output not written does (it ended 0, rank 1's
// events lost without a word).
TEST(Collector, ARankFileThatCannotBeWrittenFailsTheCollector) {
  config::RunConfig config = testing::tinyGptConfig();
  const std::string dir = testing::freshTempDir("collector_full");
  std::filesystem::create_symlink("/dev/full", trace::rankEventFileName(dir, 1));
  const std::string port = std::to_string(testing::freeLoopbackPort());
  testing::CliResult collector;
  std::thread listen([&] {
    collector = testing::runShardscope({"listen", "--port", port, "--trace-dir", dir}, {}, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(std::stoi(port)));
  const auto ranks = testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + port});
  listen.join();
  for (const auto& r : ranks) EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(collector.exitCode, 1) << collector.output;
  EXPECT_NE(collector.output.find("cannot write " + trace::rankEventFileName(dir, 1) +
                                  " (No space left on device): rank 1's events from here on are not in it"),
            std::string::npos)
      << collector.output;
  EXPECT_EQ(collector.output.find("rank 0's events"), std::string::npos)
      << "rank 0's file was written: " << collector.output;
}

// A rank that cannot reach its collector trains on and writes its file instead, and says so.
TEST(Collector, AnUnreachableCollectorLeavesTheRanksTheirFiles) {
  config::RunConfig config = testing::tinyGptConfig();
  const std::string dir = testing::freshTempDir("collector_unreachable");
  const std::string nobody = "127.0.0.1:" + std::to_string(testing::freeLoopbackPort());
  const auto ranks = testing::runWorkerJob(config, {"--collector", nobody, "--trace-dir", dir});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].exitCode, 0) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("cannot reach the collector at " + nobody + " (Connection refused); writing " +
                                   trace::rankEventFileName(dir, r) + " instead"),
              std::string::npos)
        << ranks[r].output;
  }
  const auto job = trace::loadRankEventFiles(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  for (int r = 0; r < 2; ++r) EXPECT_EQ(job.recording.rank(r).steps.size(), 2u);
}

// The collector killed mid-run: the ranks train on, and what they record from then on goes to
// their files beside what the collector wrote (one directory here, as on a shared file system).
TEST(Collector, ACollectorLostMidRunLeavesTheRestInTheRanksFiles) {
  config::RunConfig config = testing::tinyGptConfig();
  // Long enough to outlast the killer's polling and its pkill: 40 steps of 4 ms could end first on a
  // busy machine, and the ranks then never lost the collector (as its SIGSTOP twin's 150 once did).
  config.steps = 500;
  const std::string dir = testing::freshTempDir("collector_lost");
  const int port = testing::freeLoopbackPort();
  const std::string listenPort = std::to_string(port);
  std::thread listen([&] {
    (void)testing::runShardscope({"listen", "--port", listenPort, "--trace-dir", dir}, {}, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  std::thread killer = signalCollectorMidRun(dir, listenPort, "KILL");
  const auto ranks = testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + listenPort, "--trace-dir", dir});
  killer.join();
  listen.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].exitCode, 0) << ranks[r].output;
    EXPECT_NE(ranks[r].output.find("lost the collector at 127.0.0.1:" + listenPort + "; writing the rest to"),
              std::string::npos)
        << ranks[r].output;
  }
  expectEveryStepOnce(dir, config.steps);
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(holdsAStepEnd(trace::rankEventFileName(dir, r, ".after-collector")));
  }
}

// A collector that confirms what it keeps: the ranks end with nothing left to write again, so
// their own files stay empty and nothing says the collector was lost.
TEST(Collector, ARankThatEndsWithEverythingConfirmedKeepsNothingItself) {
  config::RunConfig config = testing::tinyGptConfig();
  config.steps = 3;
  const std::string dir = testing::freshTempDir("collector_confirmed");
  const std::string own = testing::freshTempDir("collector_confirmed_own");
  const int port = testing::freeLoopbackPort();
  std::thread listen([&] {
    (void)testing::runShardscope({"listen", "--port", std::to_string(port), "--trace-dir", dir}, {}, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  const auto ranks =
      testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + std::to_string(port), "--trace-dir", own});
  listen.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].exitCode, 0) << ranks[r].output;
    EXPECT_EQ(ranks[r].output.find("lost the collector"), std::string::npos) << ranks[r].output;
    EXPECT_EQ(testing::fileContents(trace::rankEventFileName(own, r, ".after-collector")), "");
  }
}

// A collector that stops confirming while sends still fit its socket (its host or the link lost;
// here SIGSTOP): after SHARDSCOPE_COLLECTOR_CONFIRM_S (1 s here) each rank writes what it had not
// confirmed, and everything after, to its own file; every step is there once.
TEST(Collector, ACollectorThatStopsConfirmingIsLeftAndNothingIsLost) {
  config::RunConfig config = testing::tinyGptConfig();
  // Long enough to run on for the second after the stop: at 150 steps of 4 ms a job once ended
  // within it, and its ranks left at the stream's end instead (nothing lost, the path untested).
  config.steps = 500;
  const std::string dir = testing::freshTempDir("collector_stopped");
  const int port = testing::freeLoopbackPort();
  const std::string listenPort = std::to_string(port);
  std::thread listen([&] {
    (void)testing::runShardscope({"listen", "--port", listenPort, "--trace-dir", dir}, {}, 120);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  std::thread stopper = signalCollectorMidRun(dir, listenPort, "STOP");
  const std::vector<std::string> limit = {"SHARDSCOPE_COLLECTOR_CONFIRM_S=1"};
  const auto ranks =
      testing::runWorkerJob(config, {"--collector", "127.0.0.1:" + listenPort, "--trace-dir", dir}, {}, limit);
  stopper.join();
  (void)testing::runCommand({"pkill", "-KILL", "-f", "listen --port " + listenPort});
  listen.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].exitCode, 0) << ranks[r].output;
    // Left because it confirmed nothing, or because a send into its full buffers timed out first
    // (a busy machine fills them within the second): either way, left.
    EXPECT_TRUE(ranks[r].output.find("(it confirmed nothing for 1 s;") != std::string::npos ||
                ranks[r].output.find("(a send failed;") != std::string::npos)
        << ranks[r].output;
  }
  expectEveryStepOnce(dir, config.steps);
}

// A rank that goes silent (not even its heartbeat: its host or the link gone) is cut off, and the
// ranks that never came are named rather than waited for: both after SHARDSCOPE_COLLECTOR_WAIT_S
// (30 s by default; 2 s here). The collector ends, failed, keeping what it had.
TEST(Collector, ASilentRankIsCutOffAndRanksThatNeverCameAreNamed) {
  const std::string dir = testing::freshTempDir("collector_silent");
  const int port = testing::freeLoopbackPort();
  testing::CliResult collector;
  const auto start = std::chrono::steady_clock::now();
  std::thread listen([&] {
    collector = testing::runShardscope({"listen", "--port", std::to_string(port), "--trace-dir", dir},
                                       {"SHARDSCOPE_COLLECTOR_WAIT_S=2"}, 60);
  });
  ASSERT_TRUE(testing::waitForLoopbackListener(port)) << "the collector never listened";
  // Rank 0 of 2 says hello and one step, then nothing for 6 s; rank 1 never comes.
  trace::Event step;
  step.kind = trace::EventKind::StepEnd;
  step.rank = 0;
  step.step = 0;
  std::string stepFrame;
  trace::appendEventFrame(stepFrame, step);
  stranger(port, trace::encodeCollectorHello({0, 2, "", ""}) + stepFrame + "\n", 6000).join();
  listen.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(collector.exitCode, 1) << collector.output;
  EXPECT_NE(collector.output.find("rank 0 (127.0.0.1) was cut off: it sent nothing for 2 s"), std::string::npos)
      << collector.output;
  EXPECT_NE(collector.output.find("rank 1 never connected (within 2 s of the last rank's end); ending"),
            std::string::npos)
      << collector.output;
  EXPECT_LT(seconds, 20) << "neither wait is the 30 s default";
  EXPECT_TRUE(holdsAStepEnd(trace::rankEventFileName(dir, 0))) << "what it had is kept";
}

// The collector's "ack N" lines: what they cover is forgotten, in pieces as the socket gives them;
// past the bound the oldest whole items (lines, frames) are given up.
TEST(UnconfirmedBytes, ForgetsWhatTheCollectorConfirmedAndKeepsTheRestFromALine) {
  UnconfirmedBytes u;
  u.sent("one\ntwo\nthr", 11);
  u.sent("ee\n", 3);
  u.takeConfirmations("ack", 3);
  u.takeConfirmations(" 4\nnoise\nack 8", 15);
  EXPECT_EQ(u.bytes(), "two\nthree\n") << "ack 4 taken; 'ack 8' not yet ended";
  u.takeConfirmations("\n", 1);
  EXPECT_EQ(u.bytes(), "three\n");
  u.takeConfirmations("ack 2\n", 6);
  EXPECT_EQ(u.bytes(), "three\n") << "an older confirmation changes nothing";
  EXPECT_EQ(u.sentTotal(), 14u);

  UnconfirmedBytes big;
  const std::string line(1023, 'x');
  for (size_t sent = 0; sent <= UnconfirmedBytes::kMaxBytes; sent += 1024) big.sent((line + "\n").data(), 1024);
  EXPECT_GT(big.givenUp(), 0u);
  EXPECT_LE(big.bytes().size(), UnconfirmedBytes::kMaxBytes);
  EXPECT_EQ(big.givenUp() % 1024, 0u) << "given up at a line's start";

  // Frames whose strings are full of newlines: given up at a frame's start, not at a '\n' in one.
  trace::Event e;
  e.kind = trace::EventKind::RankError;
  e.text = std::string(1000, '\n');
  std::string frame;
  trace::appendEventFrame(frame, e);
  UnconfirmedBytes frames;
  for (size_t sent = 0; sent <= UnconfirmedBytes::kMaxBytes; sent += frame.size())
    frames.sent(frame.data(), frame.size());
  EXPECT_GT(frames.givenUp(), 0u);
  EXPECT_EQ(frames.givenUp() % frame.size(), 0u) << "given up at a frame's start";
  EXPECT_EQ(static_cast<uint8_t>(frames.bytes()[0]), trace::kFrameMark);
}

}  // namespace
}  // namespace shardscope::engine
