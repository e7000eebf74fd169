#include "files/host_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace shardscope::files {

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

TraceLimit traceLimit(double recordingPerFileByte, const HostMemory& host) {
  TraceLimit limit;
  if (host.availableBytes < 0 || recordingPerFileByte <= 0) return limit;
  const double bytes = static_cast<double>(host.availableBytes) / recordingPerFileByte;
  limit.maxBytes = bytes >= static_cast<double>(SIZE_MAX) ? SIZE_MAX : static_cast<size_t>(bytes);
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.2f", recordingPerFileByte);
  limit.why = "what this host's free memory (" + std::to_string(host.availableBytes >> 20) + " MiB, " + host.source +
              ") holds of its recording, at about " + ratio +
              " bytes of it a byte of the file: free some memory, or record fewer steps";
  return limit;
}

}  // namespace shardscope::files
