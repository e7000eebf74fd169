#include "engine/rank_reporter.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "trace/wire.h"

namespace shardscope {

RankReporter::RankReporter(int rank) : rank_(rank) {
  if (const char* fd = std::getenv("SHARDSCOPE_EVENT_FD")) fd_ = std::atoi(fd);
}

void RankReporter::send(const trace::Event& event) {
  if (fd_ < 0) {
    if (rank_ != 0) return;
    if (event.kind == trace::EventKind::StepEnd) {
      std::printf("step %d  loss %.6f  step %.1f ms\n", event.step + 1, event.loss,
                  (event.endNs - event.beginNs) / 1e6);
    } else if (event.kind == trace::EventKind::RankError) {
      std::fprintf(stderr, "rank %d: %s\n", event.rank, event.text.c_str());
    }
    std::fflush(stdout);
    return;
  }
  const std::string line = trace::encodeEventLine(event);
  // One write per line: writes up to PIPE_BUF bytes are atomic, and a longer one still arrives
  // whole because only this rank writes to its pipe.
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the controller is gone; nothing left to tell
    done += static_cast<size_t>(n);
  }
}

}  // namespace shardscope
