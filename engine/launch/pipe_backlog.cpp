#include "engine/launch/pipe_backlog.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

namespace shardscope::engine {

PipeBacklog::PipeBacklog(const std::vector<int>& pipeFds) {
  for (int fd : pipeFds) {
    const int copy = fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (copy < 0) continue;  // nothing to watch there; the loop still reads it
    const int size = ::fcntl(copy, F_GETPIPE_SZ);
    watched_.push_back(copy);
    capacities_.push_back(size > 0 ? size : 65536);
  }
}

PipeBacklog::~PipeBacklog() {
  for (int fd : watched_) ::close(fd);
}

double PipeBacklog::fullest() const {
  double most = 0;
  for (size_t i = 0; i < watched_.size(); ++i) {
    int waiting = 0;
    if (::ioctl(watched_[i], FIONREAD, &waiting) != 0) continue;
    most = std::max(most, static_cast<double>(waiting) / static_cast<double>(capacities_[i]));
  }
  return most;
}

}  // namespace shardscope::engine
