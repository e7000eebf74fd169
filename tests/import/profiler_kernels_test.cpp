// Users' traces that hold less, or other, than torch.profiler's usual records: a trace written
// without metadata, schemaVersion or steps; NCCL kernels launched before the trace's window began;
// communication by kernels of their own (an expert-parallel library's). Each read from a small
// layout written by hand in tests/data/profiler_layouts (its README says what each follows).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "import/profiler_trace.h"
#include "stats/comparison_figures.h"
#include "stats/summary_reader.h"
#include "trace/chrome_trace.h"
#include "trace/perfetto_reader.h"
#include "trace/perfetto_trace.h"
#include "trace/trace_reader.h"
#include "tests/support/run_cli.h"
#include "trace/events.h"

namespace shardscope::import {
using namespace trace;
namespace {

std::string layout(const std::string& file) { return std::string(SHARDSCOPE_TEST_DATA) + "/profiler_layouts/" + file; }

// A layout rewritten by `change` into a fresh file: its path.
std::string rewritten(const std::string& file, const std::function<void(nlohmann::json&)>& change) {
  auto trace = nlohmann::json::parse(std::ifstream(layout(file)));
  change(trace);
  const std::string path = testing::freshTempDir("profiler_kernels") + "/" + file;
  std::ofstream(path) << trace.dump();
  return path;
}

struct Seen {
  CollectiveOp op;
  int64_t bytes, beginNs;
  int step;
  bool operator==(const Seen& o) const {
    return op == o.op && bytes == o.bytes && beginNs == o.beginNs && step == o.step;
  }
};

std::vector<Seen> collectivesOf(const LoadedTrace& loaded, int rank = 0) {
  std::vector<Seen> out;
  for (const auto& c : loaded.recording.rank(rank).collectives)
    out.push_back({static_cast<CollectiveOp>(c.op), c.bytes, c.beginNs, c.step});
  return out;
}

// The 8-GPU inference job's layout (no metadata events, no schemaVersion, no step marked): every
// collective is counted, as the same trace with its metadata, schemaVersion and step gives them;
// with its events' categories removed as well, each is told from its args. Before, the file was
// refused (no schemaVersion) and, with one, its c10d all-gather counted 0 (outside every step).
TEST(ProfilerKernels, ATraceWithoutMetadataOrStepsCountsEveryCollective) {
  const auto bare = loadProfilerTraceFiles({layout("no_metadata_inference.json")});
  ASSERT_EQ(bare.error, "");
  const auto seen = collectivesOf(bare);
  ASSERT_EQ(seen.size(), 4u) << "the c10d all-gather and 3 symm_mem all-reduces";
  const auto totals = bare.recording.collectiveTotals(0, static_cast<int>(bare.recording.rank(0).steps.size()));
  EXPECT_EQ(totals[static_cast<int>(CollectiveOp::AllGather)].count, 1) << "counted in the summary's step";
  EXPECT_EQ(totals[static_cast<int>(CollectiveOp::AllReduce)].count, 3);
  EXPECT_NE(bare.note.find("marks no steps"), std::string::npos) << bare.note;
  EXPECT_NE(bare.note.find("without process or thread metadata and without schemaVersion"), std::string::npos)
      << bare.note;
  EXPECT_NE(bare.title.find("inference"), std::string::npos) << bare.title;
  EXPECT_NE(bare.title.find("3 all_reduce outside c10d"), std::string::npos) << bare.title;
  EXPECT_EQ(bare.title.find("-like"), std::string::npos) << bare.title;

  const auto dressed = loadProfilerTraceFiles({rewritten("no_metadata_inference.json", [](nlohmann::json& t) {
    t["schemaVersion"] = 1;
    auto& events = t["traceEvents"];
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", 4321}, {"tid", 0}, {"args", {{"name", "python"}}}});
    events.push_back({{"ph", "X"},
                      {"cat", "user_annotation"},
                      {"name", "ProfilerStep#0"},
                      {"pid", 4321},
                      {"tid", 4321},
                      {"ts", 999},
                      {"dur", 2000},
                      {"args", {{"External id", 0}}}});
  })});
  ASSERT_EQ(dressed.error, "");
  const auto withMetadata = collectivesOf(dressed);
  ASSERT_EQ(withMetadata.size(), seen.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(withMetadata[i].op, seen[i].op) << i;
    EXPECT_EQ(withMetadata[i].bytes, seen[i].bytes) << i;
    EXPECT_EQ(withMetadata[i].beginNs, seen[i].beginNs) << i;
  }
  const auto uncategorised = loadProfilerTraceFiles({rewritten("no_metadata_inference.json", [](nlohmann::json& t) {
    for (auto& e : t["traceEvents"]) e.erase("cat");
  })});
  ASSERT_EQ(uncategorised.error, "");
  EXPECT_TRUE(collectivesOf(uncategorised) == seen) << "every kind told from its args";
  EXPECT_NE(uncategorised.note.find("events with no category from their args"), std::string::npos)
      << uncategorised.note;
}

// symm_mem's all-reduce ran when the kernel its op launched ran, not when the host called it; the
// kernel is the collective's, not compute.
TEST(ProfilerKernels, AnOpOutsideC10dIsTimedByItsKernel) {
  const auto loaded = loadProfilerTraceFiles({layout("no_metadata_inference.json")});
  ASSERT_EQ(loaded.error, "");
  const int64_t us = 1000;
  std::vector<int64_t> begins;
  for (const auto& c : loaded.recording.rank(0).collectives) {
    if (collectiveImplementation(c) == "symm_mem::multimem_all_reduce_") begins.push_back(c.beginNs);
  }
  EXPECT_EQ(begins, (std::vector<int64_t>{1230 * us + 1, 1330 * us + 1, 1430 * us + 1})) << "the kernels' begins";
  for (const auto& s : loaded.recording.rank(0).compute) {
    for (int64_t b : begins) EXPECT_FALSE(s.beginNs <= b && b < s.endNs) << "a communication kernel is not compute";
  }
}

// The step before the first recorded one left a reduce-scatter running on the GPU, launched before
// the trace began: drawn at its kernel, in no recorded step, said in the notes, not counted.
// Before, it was not drawn at all. The real FSDP2 trace on an H200 has 8 such kernels on rank 0.
TEST(ProfilerKernels, KernelsLaunchedBeforeTheWindowAreDrawnAndSaidNotCounted) {
  const auto loaded = loadProfilerTraceFiles({layout("launches_before_window.json")});
  ASSERT_EQ(loaded.error, "");
  const auto seen = collectivesOf(loaded);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].op, CollectiveOp::ReduceScatter);
  EXPECT_EQ(seen[0].step, kIssuedBeforeRecording) << "the step it belongs to was not recorded";
  EXPECT_EQ(seen[0].beginNs, 1020 * 1000 + 1) << "where its kernel ran";
  EXPECT_EQ(seen[0].bytes, 8192 * 4) << "sized by the kernel's arguments";
  const auto totals = loaded.recording.collectiveTotals(0, 1);
  EXPECT_EQ(totals[static_cast<int>(CollectiveOp::ReduceScatter)].count, 1) << "only the recorded step's";
  EXPECT_NE(loaded.note.find("1 collective kernels ran inside the trace's window but were launched before it"),
            std::string::npos)
      << loaded.note;

  const auto real = loadJobDirectory(std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/fsdp_w2");
  ASSERT_EQ(real.error, "");
  int before = 0, counted = 0;
  for (const auto& c : real.recording.rank(0).collectives) ++(c.step < 0 ? before : counted);
  EXPECT_EQ(before, 8);
  EXPECT_EQ(counted, 27) << "one per c10d op";
  EXPECT_NE(real.note.find("rank 0: 8 collective kernels ran inside"), std::string::npos) << real.note;
}

// An expert-parallel job's tokens moved by its library's own kernels: an all-to-all kernel launched
// outside every collective's record is a collective outside c10d, in the unit and phase of the
// compute kernels before it; DeepEP's dispatch, whose name says no collective, is said in the
// notes as seen and not recognised.
TEST(ProfilerKernels, ExpertParallelKernelsAreCollectivesWhenTheirNamesSaySo) {
  const auto loaded = loadProfilerTraceFiles({layout("expert_parallel_kernels.json")});
  ASSERT_EQ(loaded.error, "");
  const auto& collectives = loaded.recording.rank(0).collectives;
  ASSERT_EQ(collectives.size(), 2u);
  EXPECT_EQ(collectiveImplementation(collectives[0]), "ep_kernels::all_to_all_dispatch_kernel");
  EXPECT_EQ(collectiveImplementation(collectives[1]), "ep_kernels::all_to_all_combine_kernel");
  for (const auto& c : collectives) {
    EXPECT_EQ(static_cast<CollectiveOp>(c.op), CollectiveOp::AllToAll);
    EXPECT_EQ(collectiveUnit(c), "layers.0") << "the unit of the gemm before it";
  }
  EXPECT_EQ(collectives[0].phase, static_cast<uint8_t>(Phase::Forward));
  EXPECT_EQ(collectives[1].phase, static_cast<uint8_t>(Phase::Backward));
  EXPECT_NE(loaded.note.find("seen but not recognised as a collective (not counted, drawn as nothing): "
                             "deep_ep::intranode::dispatch (1)"),
            std::string::npos)
      << loaded.note;
  EXPECT_NE(loaded.title.find("2 all_to_all outside c10d"), std::string::npos) << loaded.title;
  // The summary keeps them apart, their size null (the trace holds none), not a measured 0.
  const std::string summary = testing::freshTempDir("profiler_kernels_summary") + "/s.json";
  const auto viewed = testing::runShardscope({"view", layout("expert_parallel_kernels.json"), "--summary", summary});
  ASSERT_EQ(viewed.exitCode, 0) << viewed.output;
  const auto rank0 = nlohmann::json::parse(std::ifstream(summary))["ranks"][0];
  const auto& outside = rank0["collectives_outside_c10d"];
  ASSERT_TRUE(outside.contains("ep_kernels::all_to_all_dispatch_kernel")) << outside.dump();
  EXPECT_EQ(outside["ep_kernels::all_to_all_dispatch_kernel"]["count"], 1);
  EXPECT_TRUE(outside["ep_kernels::all_to_all_dispatch_kernel"]["size_bytes"].is_null()) << outside.dump();
  // So are the op's figures
  // (left out, so an older reader takes 0 rather than stopping at a null), and the step's traffic
  // says how many it leaves out.
  const auto& allToAll = rank0["collectives"]["all_to_all"];
  EXPECT_EQ(allToAll["count"], 2);
  EXPECT_EQ(allToAll["unsized_count"], 2);
  for (const char* key : {"bytes", "size_bytes", "sent_bytes", "received_bytes"})
    EXPECT_FALSE(allToAll.contains(key)) << key << ": " << allToAll.dump();
  const auto& traffic = rank0["traffic_per_step"];
  EXPECT_EQ(traffic["unsized_count"], 2) << traffic.dump();
  EXPECT_TRUE(traffic["sent_bytes"].is_null()) << traffic.dump();
  EXPECT_FALSE(traffic.contains("sent_bytes_by_group")) << traffic.dump();
  // Read back, the op is known unsized, and its table cell says so rather than "0 B".
  const auto back = stats::loadSummary(summary);
  ASSERT_TRUE(back.error.empty()) << back.error;
  ASSERT_EQ(back.runs.size(), 1u);
  const auto& readRank = back.runs[0].ranks.at(0);
  const auto& totals = readRank.collectives[static_cast<int>(CollectiveOp::AllToAll)];
  EXPECT_EQ(totals.unsized, 2);
  EXPECT_EQ(formatCollectiveBytes(totals, totals.sizeBytes, 1), "size not recorded");
  EXPECT_EQ(readRank.outsideC10d.at("ep_kernels::all_to_all_dispatch_kernel").unsized, 1);
}

// Written as shardscope writes any recording (.pftrace, Chrome JSON) and read back, such a
// collective is still known to have no size.
TEST(ProfilerKernels, ACollectiveWithoutASizeStaysSoThroughAnExportedTrace) {
  const auto loaded = loadProfilerTraceFiles({layout("expert_parallel_kernels.json")});
  ASSERT_EQ(loaded.error, "");
  const std::string dir = testing::freshTempDir("profiler_kernels_export");
  const int ranks = loaded.recording.ranks();
  {
    std::ofstream out(dir + "/t.pftrace", std::ios::binary);
    PerfettoTraceWriter writer(out, nlohmann::json::object(), ranks);
    for (int r = 0; r < ranks; ++r) writer.write(r, loaded.recording.rank(r), loaded.recording.originNs());
    writer.finish(RunFacts{});
  }
  {
    std::ofstream out(dir + "/t.json");
    writeChromeTrace(out, loaded.recording, nlohmann::json::object());
  }
  // The JSON gives no figure that would follow from a size (a tool reading it alone sees none).
  for (const auto& e : nlohmann::json::parse(std::ifstream(dir + "/t.json"))["traceEvents"]) {
    if (!e.contains("args") || !e["args"].contains("size_unknown")) continue;
    for (const char* key : {"size_bytes", "ring_sent_bytes", "algbw_GBps"})
      EXPECT_FALSE(e["args"].contains(key)) << key;
  }
  for (const auto& back : {loadPerfettoTrace(dir + "/t.pftrace"), loadChromeTrace(dir + "/t.json")}) {
    ASSERT_TRUE(back.error.empty()) << back.error;
    const auto& collectives = back.recording.rank(0).collectives;
    ASSERT_EQ(collectives.size(), 2u);
    for (const auto& c : collectives) EXPECT_EQ(c.sizeUnknown, 1) << collectiveImplementation(c);
    EXPECT_EQ(back.recording.collectiveTotals(0)[static_cast<int>(CollectiveOp::AllToAll)].unsized, 2);
  }
}

// A trace recorded with record_shapes=False: an op with no shapes and no record of NCCL's (symm_mem's,
// a c10d all-reduce without its record_param_comms) has no size; the c10d all-gather beside them
// is still sized by its record_param_comms.
TEST(ProfilerKernels, AnOpRecordedWithoutShapesHasNoSizeNotAZero) {
  const auto path = rewritten("collectives_outside_c10d.json", [](nlohmann::json& t) {
    for (auto& e : t["traceEvents"]) {
      if (!e.contains("args")) continue;
      for (const char* key : {"Input Dims", "Input type", "Input Strides", "Concrete Inputs"}) e["args"].erase(key);
    }
  });
  const auto loaded = loadProfilerTraceFiles({path});
  ASSERT_EQ(loaded.error, "");
  int unsized = 0, sized = 0;
  for (const auto& c : loaded.recording.rank(0).collectives) {
    const bool symmMem = collectiveImplementation(c).find("symm_mem::") != std::string::npos;
    if (symmMem) EXPECT_EQ(c.sizeUnknown, 1) << collectiveImplementation(c);
    unsized += c.sizeUnknown;
    if (static_cast<CollectiveOp>(c.op) == CollectiveOp::AllGather) {
      EXPECT_EQ(c.sizeUnknown, 0);
      EXPECT_GT(collectiveSizeBytes(c), 0) << "from its record_param_comms";
      ++sized;
    }
  }
  EXPECT_EQ(unsized, 4) << "the three symm_mem all-reduces, and the c10d all-reduce no record of NCCL's sizes";
  EXPECT_EQ(sized, 1);
}

// Some of an op's collectives with a recorded size and some without: the figures are the sized
// ones', and say how many they leave out.
TEST(ProfilerKernels, AnOpWithSomeSizesUnrecordedSaysHowManyItsFiguresLeaveOut) {
  CollectiveTotals t;
  t.count = 3;
  t.unsized = 1;
  t.sizeBytes = 2048;
  EXPECT_EQ(formatCollectiveBytes(t, t.sizeBytes, 2), "1.0 KiB (+1 unsized)");
  t.unsized = 0;
  EXPECT_EQ(formatCollectiveBytes(t, t.sizeBytes, 2), "1.0 KiB");
  t.unsized = 3;
  EXPECT_EQ(formatCollectiveBytes(t, 0, 2), "size not recorded");
  // The comparison's bytes sent per step likewise, and no ratio to a baseline from a part.
  stats::ComparisonFigures f;
  f.collectives = t;
  EXPECT_EQ(stats::sentPerStepText(f), "size not recorded");
  f.collectives.unsized = 1;
  f.sentBytesPerStep = 4096;
  EXPECT_EQ(stats::sentPerStepText(f), "4.0 KiB (+1 unsized)");
}

}  // namespace
}  // namespace shardscope::import
