// The CPU allocator hook records what a rank allocates on the host, each block with its role, and
// its free; told to stop (a GPU rank, whose lanes are its device's memory), it records neither the
// allocations made from then on nor their frees and retags, while a block recorded before keeps
// its free recorded, so the host lanes never go out of balance. Inside a HostMemoryScope (--offload
// cpu's host-side training state on a GPU rank) it records them again, in the host's memory space.
#include "engine/recording/recording_allocator.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "engine/recording/device_clock.h"
#include "engine/recording/recorder.h"
#include "trace/wire.h"

namespace shardscope::engine {
namespace {

// In a child process (EXPECT_EXIT): the hook replaces the process's CPU allocator. Recording starts
// into a pipe; stopRecording() ends it and hands each event of `kind` written to `seen`.
struct PipeRecording {
  int fds[2] = {-1, -1};
  RankRecorder& recorder = *new RankRecorder();  // as a rank's: the hook may outlive this
  PipeRecording() {
    if (::pipe(fds) != 0) std::exit(2);
    installRecordingCpuAllocator(recorder);
    recorder.start(0, fds[1], 1 << 12);
    recorder.setEnabled(true);
  }
  template <typename Fn>
  void stopRecording(Fn&& seen, trace::EventKind kind = trace::EventKind::Memory) {
    recorder.stop();
    ::close(fds[1]);
    trace::StreamSplitter items;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
      items.feed(buffer, static_cast<size_t>(n), [&](std::string_view item) {
        const auto e = trace::decodeStreamItem(item);
        if (e && e->kind == kind) seen(*e);
      });
    }
  }
};

void recordAroundTheSwitch() {
  PipeRecording recording;
  at::Tensor before = at::empty({1000}, at::kFloat);  // 4000 bytes, recorded
  setHostMemoryRecorded(false);
  at::Tensor after = at::empty({2000}, at::kFloat);  // 8000 bytes, not
  retagStorage(after, trace::MemoryRole::Activation);
  after = at::Tensor();
  before = at::Tensor();
  std::map<int64_t, int> seen;  // bytes -> memory events of that size (4000 and 8000 only)
  recording.stopRecording([&](const trace::Event& e) {
    if (std::llabs(e.bytes) == 4000 || std::llabs(e.bytes) == 8000) ++seen[e.bytes];
  });
  const std::map<int64_t, int> want = {{4000, 1}, {-4000, 1}};
  if (seen != want) {
    for (const auto& [bytes, count] : seen)
      std::fprintf(stderr, "%lld B: %d events\n", static_cast<long long>(bytes), count);
    std::exit(1);
  }
  std::exit(0);
}

TEST(RecordingAllocator, HostMemoryStopsBeingRecordedWhenAGpuRankSaysSo) {
  EXPECT_EXIT(recordAroundTheSwitch(), ::testing::ExitedWithCode(0), "");
}

// Memory events of the sizes the test allocates (3000, 5000 and 7000 bytes), as "space role bytes"
// lines read back through the wire format.
void recordHostScopes() {
  PipeRecording recording;
  setHostMemoryRecorded(false);                       // a GPU rank
  at::Tensor outside = at::empty({750}, at::kFloat);  // 3000 bytes: not recorded
  at::Tensor state, shard;
  {
    RoleScope role(trace::MemoryRole::OptimizerState);
    HostMemoryScope host;
    state = at::zeros({1250}, at::kFloat);  // 5000 bytes: the optimizer's state on the host
  }
  {
    RoleScope role(trace::MemoryRole::ParamShard);
    shard = emptyHostTensor({1750}, at::kFloat, /*pinned=*/false, "blocks.0");  // 7000 bytes, outside any scope after
  }
  retagStorage(state, trace::MemoryRole::Other);  // outside the scope: the block remembers its space
  outside = at::Tensor();
  state = at::Tensor();
  shard = at::Tensor();
  std::multiset<std::string> seen;
  recording.stopRecording([&](const trace::Event& e) {
    const int64_t size = std::llabs(e.bytes);
    if (size != 3000 && size != 5000 && size != 7000) return;
    seen.insert(std::to_string(e.space) + " " + trace::memoryRoleName(static_cast<trace::MemoryRole>(e.role)) + " " +
                std::to_string(e.bytes));
  });
  const std::multiset<std::string> want = {"1 optimizer_state 5000", "1 other 5000", "1 other -5000",
                                           "1 param_shard 7000", "1 param_shard -7000"};
  if (seen != want) {
    for (const auto& line : seen) std::fprintf(stderr, "%s\n", line.c_str());
    std::exit(1);
  }
  std::exit(0);
}

TEST(RecordingAllocator, HostScopesAreRecordedInTheHostsSpaceOnAGpuRank) {
  EXPECT_EXIT(recordHostScopes(), ::testing::ExitedWithCode(0), "");
}

// A GPU rank's device clock, standing in: every span it times ran at 1 to 2 ms on it.
class FixedDeviceClock : public DeviceClock {
 public:
  Mark mark() override {
    ++marks;
    return this;
  }
  void whenReached(Mark, Mark, std::function<void(int64_t, int64_t)> done) override { done(1'000'000, 2'000'000); }
  int marks = 0;
};

// Pinning host memory is the host's work: its span is timed by the host's clock even where a
// device clock times the rank's compute. Only pinned memory gets one: the CPU stand-in for a GPU
// (pinned false) allocates without a span. (emptyHostTensor's pinned path needs CUDA: its span in
// a real run is GpuRun.CpuOffload...'s to check.)
void recordPinSpans() {
  PipeRecording recording;
  FixedDeviceClock clock;
  setDeviceClock(&clock);
  const int64_t before = trace::nowNs();
  { ComputeSpan pin(recording.recorder, trace::ComputeKind::PinHostMemory, "blocks.3"); }
  { ComputeSpan forward(recording.recorder, trace::ComputeKind::Forward, "blocks.3"); }
  at::Tensor unpinned = emptyHostTensor({100}, at::kFloat, /*pinned=*/false, "blocks.4");
  const int64_t after = trace::nowNs();
  setDeviceClock(nullptr);
  std::vector<trace::Event> spans;
  recording.stopRecording([&](const trace::Event& e) { spans.push_back(e); }, trace::EventKind::Compute);
  const auto fail = [](const char* why) {
    std::fprintf(stderr, "%s\n", why);
    std::exit(1);
  };
  if (spans.size() != 2) fail("want the pin and the forward, and no span for unpinned memory");
  for (const auto& e : spans) {
    const auto kind = static_cast<trace::ComputeKind>(e.op);
    if (kind == trace::ComputeKind::PinHostMemory) {
      if (e.text != "blocks.3" || e.beginNs < before || e.endNs > after) fail("the pin is timed by the host");
    } else if (e.beginNs != 1'000'000 || e.endNs != 2'000'000) {
      fail("the forward is timed by the device");
    }
  }
  if (clock.marks != 2) fail("only the forward marks the device's queue");
  std::exit(0);
}

TEST(RecordingAllocator, PinSpansAreHostTimedAndUnpinnedMemoryHasNone) {
  EXPECT_EXIT(recordPinSpans(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace shardscope::engine
