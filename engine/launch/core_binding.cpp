#include "engine/launch/core_binding.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace shardscope::engine {

std::vector<int> allowedCores(pid_t thread) {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(thread, sizeof(set), &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

std::vector<int> coreSlice(const std::vector<int>& allowed, int localRank, int localWorld) {
  if (allowed.empty() || localRank < 0 || localRank >= localWorld) return {};
  const int n = static_cast<int>(allowed.size());
  if (n < localWorld) return {allowed[localRank % n]};
  const int per = n / localWorld, extra = n % localWorld;
  // Ranks below `extra` take per + 1 cores, the rest per.
  const int begin = localRank * per + std::min(localRank, extra);
  const int size = per + (localRank < extra ? 1 : 0);
  return std::vector<int>(allowed.begin() + begin, allowed.begin() + begin + size);
}

std::string describeCores(const std::vector<int>& cores) {
  std::string text;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(cores[i]);
    if (j > i) text += "-" + std::to_string(cores[j]);
    i = j + 1;
  }
  return text;
}

std::vector<int> bindProcessToCores(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) CPU_SET(c, &set);
  // sched_setaffinity pins one thread; the recorder's streaming thread (and any other) already
  // runs, so each thread of the process is pinned by its id.
  // (readdir, not std::filesystem: libtorch.so exports an older libstdc++'s copy of the latter,
  // see tests/support/run_cli.cpp.)
  if (cores.empty()) {
    throw std::runtime_error(
        "--bind-cores rank: this process's CPU affinity could not be read, so "
        "there is no slice to pin to; run with --bind-cores off.");
  }
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) {
    throw std::runtime_error(std::string("--bind-cores rank: cannot list this process's threads "
                                         "(/proc/self/task: ") +
                             std::strerror(errno) + "); run with --bind-cores off.");
  }
  int refused = 0;
  while (const dirent* task = ::readdir(tasks)) {
    char* end = nullptr;
    const long tid = std::strtol(task->d_name, &end, 10);
    if (end == task->d_name || *end != '\0') continue;  // "." and ".."
    if (sched_setaffinity(static_cast<pid_t>(tid), sizeof(set), &set) != 0 && errno != ESRCH) {
      refused = errno;  // ESRCH: the thread has ended since the listing
      break;
    }
  }
  ::closedir(tasks);
  if (refused != 0) {
    throw std::runtime_error("--bind-cores rank: the OS refused cores " + describeCores(cores) + " (" +
                             std::strerror(refused) + "); run with --bind-cores off.");
  }
  return allowedCores();
}

}  // namespace shardscope::engine
