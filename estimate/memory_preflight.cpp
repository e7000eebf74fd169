#include "estimate/memory_preflight.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "estimate/run_prediction.h"
#include "trace/format.h"

namespace shardscope::estimate {

namespace {

// A whole number of bytes read from a cgroup file, or -1 ("max", missing, unreadable).
int64_t cgroupBytes(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return -1;
  }
}

// The page cache a cgroup holds that is not in active use ("inactive_file" in memory.stat).
int64_t inactiveFileBytes(const std::string& cgroup) {
  std::ifstream in(cgroup + "/memory.stat");
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "inactive_file") return value;
  }
  return 0;
}

// This process's cgroup v2 directory ("0::/some/path" in /proc/self/cgroup).
std::string ownCgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return "";
}

}  // namespace

HostMemory hostMemoryAvailable() {
  HostMemory host;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      host.availableBytes = kib * 1024;
      host.source = "MemAvailable in /proc/meminfo";
      break;
    }
  }
  const std::string cgroup = ownCgroup();
  if (!cgroup.empty()) {
    const int64_t limit = cgroupBytes(cgroup + "/memory.max");
    // memory.current counts page cache too; its inactive part is reclaimed before anything is
    // refused, so it is free for the ranks.
    const int64_t current = cgroupBytes(cgroup + "/memory.current");
    const int64_t used = current < 0 ? -1 : std::max<int64_t>(0, current - inactiveFileBytes(cgroup));
    if (limit > 0 && used >= 0 && (host.availableBytes < 0 || limit - used < host.availableBytes)) {
      host.availableBytes = std::max<int64_t>(0, limit - used);
      host.source = "the memory limit of this cgroup (" + cgroup + "/memory.max) less what it uses";
    }
  }
  return host;
}

std::optional<std::string> memoryShortfall(const RunConfig& config, const HostMemory& host) {
  if (config.memoryCheck == MemoryCheck::Off || config.device != DeviceKind::Cpu || host.availableBytes < 0)
    return std::nullopt;
  const RunPrediction p = predictRun(config);
  const int64_t perRank = p.modelStateBytes() + p.activationSavedBytes;
  const int64_t all = perRank * config.world;
  if (all <= host.availableBytes) return std::nullopt;
  std::ostringstream why;
  why << "this run needs at least " << trace::formatBytes(static_cast<double>(perRank)) << " per rank by shardscope's "
      << "estimate (model states " << trace::formatBytes(static_cast<double>(p.modelStateBytes()))
      << (p.activationSavedBytes > 0
              ? " + saved activations " + trace::formatBytes(static_cast<double>(p.activationSavedBytes))
              : std::string())
      << "), " << trace::formatBytes(static_cast<double>(all)) << " for " << config.world << " ranks on this host, and "
      << trace::formatBytes(static_cast<double>(host.availableBytes)) << " is free (" << host.source
      << "). Make the model smaller (--layers " << config.layers << ", --hidden " << config.hidden
      << "), shard it (--strategy full_shard), or, if the estimate is wrong for this run, pass --memory-check off.";
  return why.str();
}

std::optional<std::string> checkMemoryAvailable(const RunConfig& config) {
  return memoryShortfall(config, hostMemoryAvailable());
}

}  // namespace shardscope::estimate
