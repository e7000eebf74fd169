// The run's rendezvous store listens on the loopback address only, and a stranger who reaches it
// and writes the keys ranks meet through (c10d's Gloo rendezvous: <prefix>/0/rank_R) changes
// nothing: the run's keys sit under a prefix only its ranks are told. A worker whose rank 0 hosts
// the store of a single-host job listens on the loopback address too.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "engine/launch/run_controller.h"
#include "tests/support/run_cli.h"

extern char** environ;

namespace shardscope::engine {
namespace {

struct Listener {
  std::string address;  // hex as in /proc/net/tcp: 0100007F is 127.0.0.1, 00000000 any
  int port = 0;
  bool ipv6 = false;
};

// The socket inodes a process ("self" or a pid) holds.
std::set<std::string> socketInodes(const std::string& process) {
  std::set<std::string> inodes;
  DIR* dir = ::opendir(("/proc/" + process + "/fd").c_str());
  if (!dir) return inodes;
  while (dirent* e = ::readdir(dir)) {
    char target[256] = {};
    const std::string link = "/proc/" + process + "/fd/" + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    const std::string t(target, n > 0 ? static_cast<size_t>(n) : 0);
    if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
  }
  ::closedir(dir);
  return inodes;
}

// TCP sockets of a process in the LISTEN state (0A), from its /proc/net/tcp and tcp6.
std::vector<Listener> listenersOf(const std::string& process) {
  const auto inodes = socketInodes(process);
  std::vector<Listener> found;
  for (const bool v6 : {false, true}) {
    std::ifstream table("/proc/" + process + (v6 ? "/net/tcp6" : "/net/tcp"));
    std::string line;
    std::getline(table, line);  // header
    while (std::getline(table, line)) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state != "0A" || !inodes.count(inode)) continue;
      const auto colon = local.find(':');
      found.push_back({local.substr(0, colon), std::stoi(local.substr(colon + 1), nullptr, 16), v6});
    }
  }
  return found;
}

std::vector<Listener> ownListeners() { return listenersOf("self"); }

TEST(RendezvousStore, ListensOnLoopbackOnlyAndAStrangersKeysChangeNothing) {
  const auto before = ownListeners();
  ASSERT_TRUE(before.empty()) << "this test process listens on nothing of its own";
  config::RunConfig config;
  config.model = config::ModelKind::Mlp;
  config.world = 2;
  config.steps = 20;
  std::atomic<bool> done{false};
  RunResult result;
  std::thread run([&] {
    result = runTraining(config, SHARDSCOPE_BINARY, {});
    done = true;
  });
  std::vector<Listener> listeners;
  for (int i = 0; i < 200 && listeners.empty() && !done; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    listeners = ownListeners();
  }
  if (listeners.size() != 1u) {
    run.join();  // never leave the run's thread running past a failed assertion
    FAIL() << "the store's one listening socket, not " << listeners.size();
  }
  EXPECT_FALSE(listeners[0].ipv6) << "not the dual-stack wildcard";
  EXPECT_EQ(listeners[0].address, "0100007F") << "127.0.0.1, not every interface";

  // The stranger: as fast as it can, the keys where the ranks' Gloo rendezvous would look without
  // the run's prefix, filled with garbage.
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(listeners[0].port);
  options.isServer = false;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(5);
  int writes = 0;
  {
    c10d::TCPStore stranger("127.0.0.1", options);
    const std::vector<uint8_t> garbage(64, 0xff);
    while (!done) {
      for (const char* key : {"shardscope/default_pg/0/rank_0", "shardscope/default_pg/0/rank_1",
                              "shardscope/default_pg/0/0", "shardscope/default_pg/0/1"}) {
        try {
          stranger.set(key, garbage);
          ++writes;
        } catch (const std::exception&) {
          break;  // the run ended and its store closed
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  run.join();
  EXPECT_GT(writes, 0);
  EXPECT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.losses.size(), 20u);
}

// Under a launcher that leaves the store to rank 0 (srun, mpirun), a single-host job's rank 0 hosts
// it on the loopback address MASTER_ADDR names; c10d's own socket listened on every interface.
TEST(RendezvousStore, Rank0HostingTheStoreOfALoopbackJobListensOnLoopbackOnly) {
  const int port = testing::freeLoopbackPort();
  // Rank 0 of 2 with no rank 1: it hosts the store and waits there for its peer.
  std::vector<std::string> env = {"RANK=0",
                                  "WORLD_SIZE=2",
                                  "LOCAL_RANK=0",
                                  "LOCAL_WORLD_SIZE=2",
                                  "MASTER_ADDR=127.0.0.1",
                                  "MASTER_PORT=" + std::to_string(port),
                                  "SHARDSCOPE_RENDEZVOUS_TIMEOUT_S=60"};
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "TORCHELASTIC_", 13) != 0) env.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (auto& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  std::string binary = SHARDSCOPE_BINARY, worker = "worker", steps = "--steps", one = "1";
  char* argv[] = {binary.data(), worker.data(), steps.data(), one.data(), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execve(binary.c_str(), argv, envp.data());
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  std::vector<Listener> listeners;
  for (int i = 0; i < 600 && listeners.empty(); ++i) {  // LibTorch loads first: up to 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    listeners = listenersOf(std::to_string(pid));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ASSERT_EQ(listeners.size(), 1u) << "rank 0's store, listening";
  EXPECT_EQ(listeners[0].port, port);
  EXPECT_FALSE(listeners[0].ipv6) << "not the dual-stack wildcard";
  EXPECT_EQ(listeners[0].address, "0100007F") << "127.0.0.1, not every interface";
}

}  // namespace
}  // namespace shardscope::engine
