// A trace opened in the window (`shardscope view FILE`, the Open panel) says how its run ended, as the
// trace's end keeps it: a recording that lost events or steps is titled so and makes view exit 3; a
// failed run's trace opens failed; a trace from before this was kept opens as it did.
#include <gtest/gtest.h>

#include <fstream>

#include "config/strategies.h"
#include "tests/support/run_cli.h"
#include "trace/trace_files.h"
#include "ui/record_files.h"

namespace shardscope::ui {
namespace {

// Two steps on one rank, written as a run's trace with `facts` at its end.
std::string writtenTrace(const std::string& name, const trace::RunFacts& facts) {
  trace::RunRecording recording(1);
  for (int step = 0; step < 2; ++step) {
    trace::Event span;
    span.kind = trace::EventKind::Compute;
    span.op = static_cast<uint8_t>(trace::ComputeKind::Step);
    span.rank = 0;
    span.step = step;
    span.beginNs = 1000 + step * 1000;
    span.endNs = span.beginNs + 900;
    recording.add(span);
  }
  const std::string path = testing::freshTempDir("record_files_run_end") + "/" + name;
  std::ofstream out(path, std::ios::binary);
  trace::writeTrace(trace::traceFormatOfName(path).value(), out, recording, {{"strategy", "ddp"}, {"steps", 3}}, facts);
  return path;
}

TEST(RecordFiles, ATraceOfAnIncompleteRecordingIsTitledSoAndAFailedRunsOpensFailed) {
  trace::RunFacts incomplete;
  incomplete.status = trace::RunStatus::Incomplete;
  incomplete.stepsTrained = 3;
  incomplete.droppedEvents = {40};
  trace::RunFacts failed;
  failed.status = trace::RunStatus::Failed;
  failed.error = "rank 0 failed during step 3: out of memory";
  failed.stepsTrained = 2;
  const std::string plainTitle = config::strategyTitle(config::StrategyKind::Ddp);
  for (const char* format : {"json", "pftrace"}) {
    SCOPED_TRACE(format);
    const auto opened = openRecord({writtenTrace(std::string("incomplete.") + format, incomplete)});
    ASSERT_TRUE(opened.error.empty()) << opened.error;
    ASSERT_EQ(opened.sessions.size(), 1u);
    EXPECT_TRUE(opened.incomplete);
    EXPECT_EQ(opened.sessions[0].title, plainTitle + " (recording incomplete)");
    EXPECT_EQ(opened.sessions[0].status, SessionStatus::Done) << "every step trained: not a failure";
    EXPECT_NE(opened.sessions[0].error.find("the run trained 3 steps, and the trace lost 1 of them"), std::string::npos)
        << opened.sessions[0].error;
    EXPECT_NE(opened.notes.find("recording incomplete: the run trained 3 steps"), std::string::npos) << opened.notes;

    const auto failedRun = openRecord({writtenTrace(std::string("failed.") + format, failed)});
    ASSERT_TRUE(failedRun.error.empty()) << failedRun.error;
    EXPECT_FALSE(failedRun.incomplete);
    EXPECT_EQ(failedRun.sessions[0].title, plainTitle);
    EXPECT_EQ(failedRun.sessions[0].status, SessionStatus::Failed);
    EXPECT_EQ(failedRun.sessions[0].error, failed.error);

    const auto old = openRecord({writtenTrace(std::string("old.") + format, trace::RunFacts{})});
    ASSERT_TRUE(old.error.empty()) << old.error;
    EXPECT_FALSE(old.incomplete);
    EXPECT_EQ(old.sessions[0].title, plainTitle);
    EXPECT_EQ(old.sessions[0].status, SessionStatus::Done);
    EXPECT_EQ(old.sessions[0].error, "");
  }
}

}  // namespace
}  // namespace shardscope::ui
