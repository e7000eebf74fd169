// The one door: every kind of recording is told by its content (a folder by its files' names), and
// what it reads is what the kind's own reader reads; several files of one job are one recording.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "recordings/open_recording.h"
#include "stats/first_mismatch.h"
#include "tests/support/run_cli.h"
#include "trace/trace_files.h"

namespace shardscope::recordings {
namespace {

namespace fs = std::filesystem;

const std::string kData = SHARDSCOPE_TEST_DATA;

// shardscope's own trace of one rank and one step, in `format`.
void writeOwnTrace(const std::string& path, trace::TraceFormat format) {
  trace::RunRecording rec(1);
  trace::Event step;
  step.kind = trace::EventKind::Compute;
  step.op = static_cast<uint8_t>(trace::ComputeKind::Step);
  step.beginNs = 10;
  step.endNs = 20;
  rec.add(step);
  std::ofstream out(path, std::ios::binary);
  trace::writeTrace(format, out, rec, {{"strategy", "full_shard"}}, {});
}

std::string copied(const std::string& from, const std::string& to) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  return to;
}

TEST(OpenRecording, EachKindIsToldByItsContentNotItsName) {
  const auto dir = testing::freshTempDir("door_kinds");
  writeOwnTrace(dir + "/run.data", trace::TraceFormat::Perfetto);
  writeOwnTrace(dir + "/run.txt", trace::TraceFormat::ChromeJson);
  std::ofstream(dir + "/figures.out") << R"({"runs": [], "schema": "shardscope.compare/1"})";
  const auto profiler = copied(kData + "/pytorch_nccl_h200/fsdp_slow_w2/rank-0.pt.trace.json.gz", dir + "/job.gz");
  const auto dump = copied(kData + "/flight_recorder_gloo/reorder_pickle/fr-0", dir + "/dump-0");
  EXPECT_EQ(recognise(dir + "/run.data"), RecordingKind::PerfettoTrace);
  EXPECT_EQ(recognise(dir + "/run.txt"), RecordingKind::ChromeTrace);
  EXPECT_EQ(recognise(dir + "/figures.out"), RecordingKind::Summary);
  EXPECT_EQ(recognise(profiler), RecordingKind::ProfilerJob);
  EXPECT_EQ(recognise(dump), RecordingKind::FlightRecorder);
  EXPECT_EQ(recognise(kData + "/pytorch_nccl_h200/fsdp_slow_w2"), RecordingKind::ProfilerJob);
  EXPECT_EQ(recognise(kData + "/flight_recorder_gloo/reorder_pickle"), RecordingKind::FlightRecorder);
  const auto snapshots = testing::freshTempDir("door_snapshots");
  copied(kData + "/pytorch_cuda_h200/ddp_w2/rank-0.memory.pickle.gz", snapshots + "/rank-0.memory.pickle.gz");
  EXPECT_EQ(recognise(snapshots), RecordingKind::CudaSnapshots);
  std::ofstream(dir + "/noise.bin") << "not a recording";
  EXPECT_EQ(recognise(dir + "/noise.bin"), std::nullopt);
  // A listing names them as the Open panel shows them; JSON text is looked for in .json and .gz only.
  EXPECT_EQ(describePath(dir + "/run.data"), "Perfetto trace");
  EXPECT_EQ(describePath(dir + "/run.txt"), "");
  EXPECT_EQ(describePath(profiler), "torch.profiler trace");
  EXPECT_EQ(describePath(kData + "/pytorch_nccl_h200/fsdp_slow_w2"), "torch.profiler traces");
  EXPECT_EQ(describePath(dir), "Flight Recorder dumps") << "a dump makes its folder a folder of dumps";
  EXPECT_EQ(describePath(testing::freshTempDir("door_empty")), "") << "an empty folder is no recording";
}

TEST(OpenRecording, EachKindIsReadByItsOwnReader) {
  const auto dir = testing::freshTempDir("door_read");
  writeOwnTrace(dir + "/run.pftrace", trace::TraceFormat::Perfetto);
  writeOwnTrace(dir + "/run.json", trace::TraceFormat::ChromeJson);
  for (const std::string name : {"/run.pftrace", "/run.json"}) {
    const auto opened = openRecording({dir + name});
    ASSERT_TRUE(opened.error.empty()) << opened.error;
    ASSERT_EQ(opened.parts.size(), 1u);
    EXPECT_EQ(opened.parts[0].where, dir + name);
    EXPECT_EQ(opened.parts[0].trace.recording.rank(0).steps.size(), 1u) << name;
    EXPECT_EQ(opened.parts[0].trace.config.strategy, config::StrategyKind::FullShard) << name;
  }
  const auto job = openRecording({kData + "/pytorch_nccl_h200/fsdp_slow_w2"});
  ASSERT_TRUE(job.error.empty()) << job.error;
  EXPECT_EQ(job.parts[0].kind, RecordingKind::ProfilerJob);
  EXPECT_EQ(job.parts[0].trace.recording.ranks(), 2);
  const auto dumps = openRecording({kData + "/flight_recorder_gloo/reorder_pickle"});
  ASSERT_TRUE(dumps.error.empty()) << dumps.error;
  EXPECT_EQ(dumps.parts[0].dumps.logs.ranks.size(), 3u);  // fr-0, fr-1, fr-2
}

// A job's per-rank files named one by one are one recording: its traces with its snapshots beside
// them, or its dumps. Recordings of different kinds are read side by side, a part each.
TEST(OpenRecording, OneJobsFilesAreOneRecordingAndOthersSideBySide) {
  const std::string job = kData + "/pytorch_cuda_h200/ddp_w2";
  const auto together = openRecording({job + "/rank-0.pt.trace.json.gz", job + "/rank-1.pt.trace.json.gz",
                                       job + "/rank-0.memory.pickle.gz", job + "/rank-1.memory.pickle.gz"});
  ASSERT_TRUE(together.error.empty()) << together.error;
  ASSERT_EQ(together.parts.size(), 1u);
  EXPECT_EQ(together.parts[0].trace.recording.ranks(), 2);
  EXPECT_EQ(together.parts[0].where, job + "/rank-0.pt.trace.json.gz and 3 more");
  // Snapshots alone, named one by one: one job's memory, a rank each.
  const auto memory = openRecording({job + "/rank-0.memory.pickle.gz", job + "/rank-1.memory.pickle.gz"});
  ASSERT_TRUE(memory.error.empty()) << memory.error;
  ASSERT_EQ(memory.parts.size(), 1u);
  EXPECT_EQ(memory.parts[0].trace.recording.ranks(), 2);
  const auto dumps = kData + "/flight_recorder_gloo/reorder_pickle";
  const auto fr = openRecording({dumps + "/fr-0", dumps + "/fr-1"});
  ASSERT_TRUE(fr.error.empty()) << fr.error;
  ASSERT_EQ(fr.parts.size(), 1u);
  EXPECT_EQ(fr.parts[0].kind, RecordingKind::FlightRecorder);

  const auto dir = testing::freshTempDir("door_beside");
  writeOwnTrace(dir + "/ours.json", trace::TraceFormat::ChromeJson);
  const auto beside = openRecording({dir + "/ours.json", kData + "/pytorch_nccl_h200/fsdp_slow_w2"});
  ASSERT_TRUE(beside.error.empty()) << beside.error;
  ASSERT_EQ(beside.parts.size(), 2u);
  EXPECT_EQ(beside.parts[0].kind, RecordingKind::ChromeTrace);
  EXPECT_EQ(beside.parts[1].kind, RecordingKind::ProfilerJob);
  const auto alone = openRecording({dir + "/ours.json", job + "/rank-0.pt.trace.json.gz"});
  EXPECT_NE(alone.error.find("is one rank's torch.profiler trace: beside other recordings"), std::string::npos)
      << alone.error;
  EXPECT_TRUE(alone.parts.empty());
  const auto snapshotAlone = openRecording({dir + "/ours.json", job + "/rank-0.memory.pickle.gz"});
  EXPECT_NE(snapshotAlone.error.find("is one rank's CUDA memory snapshot: beside other recordings"), std::string::npos)
      << snapshotAlone.error;
}

// What cannot be read is said by name before any reader opens it, and a reader's refusal is the
// door's: nothing is half read.
TEST(OpenRecording, WhatCannotBeReadIsNamed) {
  const auto dir = testing::freshTempDir("door_errors");
  EXPECT_NE(openRecording({}).error.find("nothing to open"), std::string::npos);
  EXPECT_NE(openRecording({dir + "/gone.json"}).error.find("'" + dir + "/gone.json' does not exist"),
            std::string::npos);
  std::ofstream(dir + "/noise.bin") << "not a recording";
  writeOwnTrace(dir + "/ours.json", trace::TraceFormat::ChromeJson);
  const auto noise = openRecording({dir + "/ours.json", dir + "/noise.bin"});
  EXPECT_NE(noise.error.find("noise.bin"), std::string::npos) << noise.error;
  EXPECT_TRUE(noise.parts.empty());
}

}  // namespace
}  // namespace shardscope::recordings

namespace shardscope::recordings {
namespace {

// A hung run's trace opens with its last collectives, rebuilt from its spans and the collectives
// the backend failed, as a job's rank files give them: the same first mismatch the run printed
// (the Last collectives tab, and the hang lesson's claim replayed from a recording, read it).
TEST(OpenRecording, AHungRunsTraceGivesItsLastCollectives) {
  const std::string dir = testing::freshTempDir("hung_trace");
  for (const char* format : {".pftrace", ".json"}) {
    SCOPED_TRACE(format);
    const std::string path = dir + "/hung" + format;
    const auto run = testing::runShardscope({"run", "--model", "gpt", "--layers", "2", "--hidden", "64", "--world", "3",
                                             "--batch", "6", "--steps", "3", "--hang-rank", "1:2",
                                             "--collective-timeout", "3", "--trace", path});
    ASSERT_NE(run.exitCode, 0) << "a hung run fails: " << run.output;
    ASSERT_NE(run.output.find("rank 1 never entered"), std::string::npos) << run.output;
    const auto opened = openRecording({path});
    ASSERT_TRUE(opened.error.empty()) << opened.error;
    ASSERT_EQ(opened.parts.size(), 1u);
    const auto& logs = opened.parts[0].trace.lastCollectives;
    ASSERT_TRUE(logs) << "no last collectives rebuilt from the trace";
    const auto mismatch = stats::firstMismatch(*logs);
    ASSERT_TRUE(mismatch.has_value());
    EXPECT_EQ(mismatch->kind, stats::MismatchKind::MissingRank);
    EXPECT_EQ(mismatch->ranks, std::vector<int>{1});
    EXPECT_EQ(mismatch->agreed, (std::vector<int>{0, 2}));
    // The number the run itself gave the collective rank 1 never entered.
    const auto at = run.output.find("rank 1 never entered ");
    const std::string said = run.output.substr(at, run.output.find(" of group", at) - at);
    EXPECT_NE(said.find("#" + std::to_string(mismatch->seq)), std::string::npos) << said << " vs #" << mismatch->seq;
  }
  // A run that ended well has none to give.
  const std::string done = dir + "/done.pftrace";
  ASSERT_EQ(testing::runShardscope({"run", "--world", "2", "--steps", "2", "--trace", done}).exitCode, 0);
  EXPECT_FALSE(openRecording({done}).parts.at(0).trace.lastCollectives);
}

}  // namespace
}  // namespace shardscope::recordings
