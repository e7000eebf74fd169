// A collective the backend failed (its timeout passed, a peer went away) is recorded as failed,
// where the rank saw it fail, and never as a span: one ending at the failure would read as a
// completed collective as long as the timeout. A collective that completed is a span.
#include "engine/recording/recording_communicator.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <future>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "engine/comm/backend_factories.h"
#include "engine/recording/recorder.h"
#include "trace/wire.h"

namespace shardscope::engine {
namespace {

// Every event `recorder` wrote into the pipe `fds` (its write end closed here).
std::vector<trace::Event> eventsWritten(RankRecorder& recorder, int fds[2]) {
  recorder.stop();
  ::close(fds[1]);
  std::vector<trace::Event> out;
  trace::StreamSplitter items;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;) {
    items.feed(buffer, static_cast<size_t>(n), [&](std::string_view item) {
      if (auto e = trace::decodeStreamItem(item)) out.push_back(*e);
    });
  }
  ::close(fds[0]);
  return out;
}

TEST(RecordingCommunicator, ACollectiveThatTimedOutIsRecordedAsFailedNotAsASpan) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::promise<void> rank0Done;
  std::thread peer([&] {  // rank 1: joins the first all-reduce, never the second
    RendezvousInfo info;
    info.rank = 1;
    info.worldSize = 2;
    info.collectiveTimeoutS = 0.5;
    auto comm = makeGlooCommunicator(store, info);
    at::Tensor t = at::ones({16});
    comm->allReduceSumAsync(t, "first")->wait();
    rank0Done.get_future().wait();  // alive until rank 0's second all-reduce has timed out
  });
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  RankRecorder recorder;
  recorder.start(0, fds[1], 1 << 12);
  recorder.setEnabled(true);
  std::string failure;
  {
    RendezvousInfo info;
    info.worldSize = 2;
    info.collectiveTimeoutS = 0.5;
    RecordingCommunicator comm(recorder, makeGlooCommunicator(store, info));
    at::Tensor t = at::ones({16});
    comm.allReduceSumAsync(t, "first")->wait();
    try {
      comm.allReduceSumAsync(t, "second")->wait();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    rank0Done.set_value();
    peer.join();
  }
  EXPECT_FALSE(failure.empty()) << "the second all-reduce had no peer and should have timed out";
  const auto events = eventsWritten(recorder, fds);
  int spans = 0, failed = 0;
  for (const auto& e : events) {
    if (e.kind == trace::EventKind::Collective) {
      ++spans;
      EXPECT_EQ(e.text, "first") << "only the completed all-reduce is a span";
    }
    if (e.kind != trace::EventKind::CollectiveFailed) continue;
    ++failed;
    EXPECT_EQ(e.text, "second");
    EXPECT_EQ(e.op, static_cast<uint8_t>(trace::CollectiveOp::AllReduce));
    EXPECT_EQ(e.bytes, 64);
    EXPECT_EQ(e.endNs, 0) << "it never ended";
    EXPECT_GE(e.beginNs - e.issueNs, 400'000'000) << "seen failing once its 0.5 s timeout had passed";
  }
  EXPECT_EQ(spans, 1);
  EXPECT_EQ(failed, 1) << failure;
}

}  // namespace
}  // namespace shardscope::engine
