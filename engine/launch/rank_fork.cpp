#include "engine/launch/rank_fork.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "engine/launch/rank_worker.h"

extern char** environ;

namespace shardscope::engine {

namespace {

int threadCount() {
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return -1;  // unknown: not forked
  int count = 0;
  while (const dirent* entry = ::readdir(tasks)) count += entry->d_name[0] != '.';
  ::closedir(tasks);
  return count;
}

// Caught signals back to their defaults, as exec leaves them; ignored ones stay ignored, and the
// mask is kept, as exec keeps them.
void resetCaughtSignals() {
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction before = {};
    if (::sigaction(s, nullptr, &before) != 0) continue;
    if (before.sa_handler == SIG_IGN || before.sa_handler == SIG_DFL) continue;
    struct sigaction fresh = {};
    fresh.sa_handler = SIG_DFL;
    ::sigaction(s, &fresh, nullptr);
  }
}

// Every descriptor but 0 to 2 and `kept`: another rank's pipe left open here would keep the
// controller from seeing that rank's end.
void closeDescriptorsBut(const std::vector<int>& kept) {
  std::vector<int> open;
  if (DIR* fds = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(fds);
    while (const dirent* entry = ::readdir(fds)) {
      if (entry->d_name[0] == '.') continue;
      const int fd = std::atoi(entry->d_name);
      if (fd > 2 && fd != own && std::find(kept.begin(), kept.end(), fd) == kept.end()) open.push_back(fd);
    }
    ::closedir(fds);
  }
  for (int fd : open) ::close(fd);
}

}  // namespace

bool mayForkRanks(const config::RunConfig& config) {
  const char* exec = std::getenv("SHARDSCOPE_EXEC_RANKS");
  if (exec && std::strcmp(exec, "1") == 0) return false;
  return config.device == config::DeviceKind::Cpu && threadCount() == 1;
}

void runForkedRank(const config::RunConfig& config, char** envp, const std::vector<int>& kept) {
  resetCaughtSignals();
  closeDescriptorsBut(kept);
  environ = envp;
  int status = 1;
  try {
    status = runRankWorker(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardscope: error: %s\n", e.what());
  }
  std::cout.flush();
  std::fflush(nullptr);
  ::_exit(status);
}

}  // namespace shardscope::engine
