// The run's rendezvous store listens on the loopback address only, and a stranger who reaches it
// and writes the keys ranks meet through (c10d's Gloo rendezvous: <prefix>/0/rank_R) changes
// nothing: the run's keys sit under a prefix only its ranks are told.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "engine/run_controller.h"
#include "tests/support/run_cli.h"

namespace shardscope {
namespace {

struct Listener {
  std::string address;  // hex as in /proc/net/tcp: 0100007F is 127.0.0.1, 00000000 any
  int port = 0;
  bool ipv6 = false;
};

// The socket inodes this process holds.
std::set<std::string> ownSocketInodes() {
  std::set<std::string> inodes;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return inodes;
  while (dirent* e = ::readdir(dir)) {
    char target[256] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    const std::string t(target, n > 0 ? static_cast<size_t>(n) : 0);
    if (t.rfind("socket:[", 0) == 0) inodes.insert(t.substr(8, t.size() - 9));
  }
  ::closedir(dir);
  return inodes;
}

// TCP sockets of this process in the LISTEN state (0A), from /proc/net/tcp and tcp6.
std::vector<Listener> ownListeners() {
  const auto inodes = ownSocketInodes();
  std::vector<Listener> found;
  for (const bool v6 : {false, true}) {
    std::ifstream table(v6 ? "/proc/self/net/tcp6" : "/proc/self/net/tcp");
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

TEST(RendezvousStore, ListensOnLoopbackOnlyAndAStrangersKeysChangeNothing) {
  const auto before = ownListeners();
  ASSERT_TRUE(before.empty()) << "this test process listens on nothing of its own";
  RunConfig config;
  config.model = ModelKind::Mlp;
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

}  // namespace
}  // namespace shardscope
