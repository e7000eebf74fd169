// The CPU allocator hook records what a rank allocates on the host, each block with its role, and
// its free; told to stop (a GPU rank, whose lanes are its device's memory), it records neither the
// allocations made from then on nor their frees and retags, while a block recorded before keeps
// its free recorded, so the host lanes never go out of balance.
#include "engine/recording_allocator.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include <ATen/ATen.h>

#include "engine/recorder.h"
#include "trace/wire.h"

namespace shardscope {
namespace {

// In a child process (EXPECT_EXIT): the hook replaces the process's CPU allocator.
void recordAroundTheSwitch() {
  int fds[2];
  if (::pipe(fds) != 0) std::exit(2);
  installRecordingCpuAllocator();
  auto& recorder = RankRecorder::instance();
  recorder.start(0, fds[1], 1 << 12);
  recorder.setEnabled(true);
  at::Tensor before = at::empty({1000}, at::kFloat);  // 4000 bytes, recorded
  setHostMemoryRecorded(false);
  at::Tensor after = at::empty({2000}, at::kFloat);  // 8000 bytes, not
  retagStorage(after, trace::MemoryRole::Activation);
  after = at::Tensor();
  before = at::Tensor();
  recorder.stop();
  ::close(fds[1]);
  std::map<int64_t, int> seen;  // bytes -> memory events of that size (4000 and 8000 only)
  trace::LineSplitter lines;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    lines.feed(buffer, static_cast<size_t>(n), [&](std::string_view line) {
      const auto e = trace::decodeEventLine(line);
      if (e && e->kind == trace::EventKind::Memory && (std::llabs(e->bytes) == 4000 || std::llabs(e->bytes) == 8000)) {
        ++seen[e->bytes];
      }
    });
  }
  const std::map<int64_t, int> want = {{4000, 1}, {-4000, 1}};
  if (seen != want) {
    for (const auto& [bytes, count] : seen) std::fprintf(stderr, "%lld B: %d events\n", static_cast<long long>(bytes), count);
    std::exit(1);
  }
  std::exit(0);
}

TEST(RecordingAllocator, HostMemoryStopsBeingRecordedWhenAGpuRankSaysSo) {
  EXPECT_EXIT(recordAroundTheSwitch(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace shardscope
