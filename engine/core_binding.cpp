#include "engine/core_binding.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace shardscope {

namespace {

std::vector<int> coresOf(const cpu_set_t& set) {
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

}  // namespace

std::vector<int> allowedCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  return coresOf(set);
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
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    if (sched_setaffinity(tid, sizeof(set), &set) != 0 && errno != ESRCH) {  // ESRCH: it has ended
      throw std::runtime_error("--bind-cores rank: the OS refused cores " + describeCores(cores) +
                               " (" + std::strerror(errno) + "); run with --bind-cores off.");
    }
  }
  return allowedCores();
}

}  // namespace shardscope
