// Real torch.distributed.pipelining jobs (tests/data/pytorch_pipelining_gloo): ScheduleDualPipeV's
// pairs, "PP:(1F1;0B0)OVERLAP_F_B", one chunk's forward then the other chunk's whole backward in one
// span; Schedule1F1B, which names no action at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/pipeline_schedule.h"
#include "import/profiler_trace.h"
#include "tests/support/pipeline_jobs.h"
#include "tests/support/run_cli.h"
#include "trace/events.h"

namespace shardscope::import {
namespace {

const std::string kJob = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/dualpipev";

struct Pair {
  std::string forward, backward;  // "1F1", "0B0"
  double backwardAfterUs = 0;     // from the span's start to autograd's first function in it
  double computeAfterUs = 0;      // from the span's start to its first op on its thread
  double forwardEndsAfterUs = 0;  // from the span's start to the end of its last op before the backward
};

// The rank's pairs as its file has them, in time order: their actions and where, in the span, the
// backward began (the first autograd::engine::evaluate_function inside it).
std::vector<Pair> pairsInFile(int rank) {
  std::ifstream in(kJob + "/rank-" + std::to_string(rank) + ".pt.trace.json");
  const auto trace = nlohmann::json::parse(in);
  std::vector<std::pair<double, double>> autograd;  // begin, µs
  std::vector<nlohmann::json> pairs, ops;           // ops: aten's, on any thread
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string name = e.value("name", "");
    if (name.rfind("autograd::engine::evaluate_function", 0) == 0) autograd.emplace_back(e["ts"], e["dur"]);
    if (name.rfind("PP:(", 0) == 0) pairs.push_back(e);
    if (name.rfind("aten::", 0) == 0) ops.push_back(e);
  }
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a["ts"] < b["ts"]; });
  std::vector<Pair> out;
  for (const auto& p : pairs) {
    const std::string name = p["name"];  // PP:(1F1;0B0)OVERLAP_F_B
    const size_t semicolon = name.find(';'), close = name.find(')');
    const double begin = p["ts"], end = begin + p["dur"].get<double>();
    double first = end;
    for (const auto& [at, length] : autograd) {
      if (at > begin && at < first) first = at;
    }
    double firstOp = end, lastEnd = begin;
    for (const auto& op : ops) {
      if (op["tid"] != p["tid"] || op["ts"] < begin || op["ts"] >= first) continue;
      firstOp = std::min(firstOp, op["ts"].get<double>());
      lastEnd = std::max(lastEnd, op["ts"].get<double>() + op["dur"].get<double>());
    }
    out.push_back({name.substr(4, semicolon - 4), name.substr(semicolon + 1, close - semicolon - 1), first - begin,
                   firstOp - begin, lastEnd - begin});
  }
  return out;
}

// The rank's action groups by their text, each text's begins in time order.
std::map<std::string, std::vector<int64_t>> actionBegins(const trace::RankTimeline& rank) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& g : rank.groups) {
    if (config::parseActionText(g.text())) out[g.text()].push_back(g.beginNs);
  }
  for (auto& [text, begins] : out) std::sort(begins.begin(), begins.end());
  return out;
}

// The begins of the rank's compute spans of each action ("1F1": stage 1's forward of micro-batch
// 1, recorded as micro-batch 2), each in time order.
std::map<std::string, std::vector<int64_t>> computeBegins(const trace::RankTimeline& rank) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& c : rank.compute) {
    if (c.text().rfind("stage ", 0) != 0) continue;
    const char kind = c.op == static_cast<uint8_t>(trace::ComputeKind::Forward) ? 'F' : 'B';
    out[c.text().substr(6) + kind + std::to_string(c.microBatch - 1)].push_back(c.beginNs);
  }
  for (auto& [text, begins] : out) std::sort(begins.begin(), begins.end());
  return out;
}

// Where the last of the action's compute pieces that end by `until` ended.
int64_t computeEnds(const trace::RankTimeline& rank, const std::string& forward, int64_t until) {
  int64_t last = 0;
  for (const auto& c : rank.compute) {
    if (c.text().rfind("stage ", 0) != 0 || c.op != static_cast<uint8_t>(trace::ComputeKind::Forward)) continue;
    if (c.text().substr(6) + "F" + std::to_string(c.microBatch - 1) != forward || c.endNs > until) continue;
    last = std::max(last, c.endNs);
  }
  return last;
}

// The jobs' shape: 2 ranks, 4 micro-batches a step, in `schedule`'s order.
void expectTwoRankPipelineOfFour(const trace::LoadedTrace& loaded, config::PipelineSchedule schedule,
                                 int stagesPerRank) {
  EXPECT_EQ(loaded.config.schedule, schedule) << loaded.title;
  EXPECT_EQ(loaded.config.pp, 2);
  EXPECT_EQ(loaded.config.stagesPerRank, stagesPerRank);
  EXPECT_EQ(loaded.config.microbatches, 4);
}

// Each pair reads as its two actions, the forward from the span's start and the backward from
// where autograd began inside it, the forward's compute from its first op to its last (not the
// waits for its input before it and for the backward's gradient after it), and the job as
// DualPipeV's (a V with whole backwards and W).
TEST(ProfilerPipeline, DualPipeVsPairsReadAsAForwardThenItsPartnersBackward) {
  const auto loaded = loadProfilerTraces(kJob);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  expectTwoRankPipelineOfFour(loaded, config::PipelineSchedule::DualPipeV, 2);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto pairs = pairsInFile(r);
    ASSERT_GE(pairs.size(), 4u) << "2 steps of DualPipeV's main phase";
    const auto begins = actionBegins(loaded.recording.rank(r));
    const auto computes = computeBegins(loaded.recording.rank(r));
    double waited = 0;
    std::map<std::string, size_t> seen;  // a text's occurrences so far: one a step
    for (const auto& p : pairs) {
      const size_t k = seen[p.forward]++;
      ASSERT_EQ(seen[p.backward]++, k) << p.forward << ";" << p.backward;
      ASSERT_GT(begins.count(p.forward), 0u) << p.forward;
      ASSERT_GT(begins.count(p.backward), 0u) << p.backward;
      ASSERT_LT(k, begins.at(p.backward).size());
      const int64_t apart = begins.at(p.backward)[k] - begins.at(p.forward)[k];
      EXPECT_GT(p.backwardAfterUs, 0) << "autograd ran inside the pair's span";
      EXPECT_NEAR(apart / 1e3, p.backwardAfterUs, 1.0) << p.forward << ";" << p.backward;
      // A forward's pieces: its first is the one that begins first (a step's F of this stage
      // and micro-batch may be in pieces, but none begins before the first op).
      ASSERT_GT(computes.count(p.forward), 0u) << p.forward;
      const auto& pieces = computes.at(p.forward);
      const auto firstPiece = std::lower_bound(pieces.begin(), pieces.end(), begins.at(p.forward)[k]);
      ASSERT_NE(firstPiece, pieces.end()) << p.forward;
      EXPECT_NEAR((*firstPiece - begins.at(p.forward)[k]) / 1e3, p.computeAfterUs, 1.0) << p.forward;
      // Its last piece ends with its last op: not at the backward's start, after the wait for the
      // backward's gradient between them.
      const auto lastEnd = computeEnds(loaded.recording.rank(r), p.forward, begins.at(p.backward)[k]);
      EXPECT_NEAR((lastEnd - begins.at(p.forward)[k]) / 1e3, p.forwardEndsAfterUs, 1.0) << p.forward;
      waited = std::max(waited, p.computeAfterUs);
    }
    EXPECT_GT(waited, 50) << "some pair waited for its input before its first op (µs)";
    // Every stage the rank holds ran each micro-batch's forward and its backward (whole, or I
    // and W) once a step.
    for (const int stage : {r, 3 - r}) {
      for (int mb = 0; mb < 4; ++mb) {
        const std::string at = std::to_string(stage), of = std::to_string(mb);
        EXPECT_EQ(begins.count(at + "F" + of) ? begins.at(at + "F" + of).size() : 0u, 2u) << at << "F" << of;
        const size_t whole = begins.count(at + "B" + of) ? begins.at(at + "B" + of).size() : 0u;
        const size_t input = begins.count(at + "I" + of) ? begins.at(at + "I" + of).size() : 0u;
        EXPECT_EQ(whole + input, 2u) << at << " B or I " << of;
      }
    }
  }
}

// Schedule1F1B's job: each stage is a Linear and a ReLU, so each micro-batch's forward runs one
// aten::linear and its backward one AddmmBackward0. From the file: those ops' begins on the rank,
// in time order, each with whether it is a forward's (F) or a backward's (B).
std::vector<std::pair<double, char>> linearsAndTheirBackwards(const std::string& file) {
  std::ifstream in(file);
  const auto trace = nlohmann::json::parse(in);
  std::vector<std::pair<double, char>> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    const std::string name = e.value("name", "");
    if (name == "aten::linear") out.emplace_back(e["ts"].get<double>(), 'F');
    if (name == "autograd::engine::evaluate_function: AddmmBackward0") out.emplace_back(e["ts"].get<double>(), 'B');
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The rank's compute spans of its actions, in time order, as "F0", "B3" (micro-batch from 0).
std::vector<const trace::ComputeSpan*> actionSpans(const trace::RankTimeline& rank) {
  std::vector<const trace::ComputeSpan*> out;
  for (const auto& c : rank.compute) {
    if (c.text().rfind("stage ", 0) == 0) out.push_back(&c);
  }
  std::sort(out.begin(), out.end(), [](const auto* a, const auto* b) { return a->beginNs < b->beginNs; });
  return out;
}

// Rank `r` of a Schedule1F1B job in `dir`: each forward's span holds the linear of its micro-batch,
// each backward's the AddmmBackward0 of its, in the order the file ran them, but for the linears
// at `noMicroBatch` (indices into the file's linears and backwards), which lie in no action's span.
void expectEachActionHoldsItsOp(const std::string& dir, const trace::LoadedTrace& loaded, int r,
                                const std::set<size_t>& noMicroBatch) {
  const auto all = linearsAndTheirBackwards(dir + "/rank-" + std::to_string(r) + ".pt.trace.json");
  const auto spans = actionSpans(loaded.recording.rank(r));
  ASSERT_EQ(all.size(), 16 + noMicroBatch.size()) << "2 steps of 4 micro-batches, a forward and a backward each";
  std::vector<std::pair<double, char>> ops, others;
  for (size_t i = 0; i < all.size(); ++i) (noMicroBatch.count(i) ? others : ops).push_back(all[i]);
  ASSERT_EQ(spans.size(), ops.size());
  std::map<char, int> seen;  // per kind, so far: micro-batch = seen % 4
  // The import may shift a rank's clock (to align the ranks'): one shift must put every op inside
  // its span, so the most any span's begin lies after its op is at most the least its end does.
  int64_t mostBeginAfter = INT64_MIN, leastEndAfter = INT64_MAX;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& [at, kind] = ops[i];
    const trace::ComputeSpan& s = *spans[i];
    const bool forward = s.op == static_cast<uint8_t>(trace::ComputeKind::Forward);
    EXPECT_EQ(forward ? 'F' : 'B', kind) << "action " << i << " in the file's order";
    EXPECT_EQ(s.text(), "stage " + std::to_string(r));
    EXPECT_EQ(s.microBatch - 1, seen[kind]++ % 4) << kind << " " << i;
    const auto opNs = static_cast<int64_t>(at * 1e3);
    mostBeginAfter = std::max(mostBeginAfter, s.beginNs - opNs);
    leastEndAfter = std::min(leastEndAfter, s.endNs - opNs);
  }
  EXPECT_LE(mostBeginAfter, leastEndAfter) << "every action's span holds its op";
  // A forward begins at its linear (its first differentiated op), not at the batch's split or the
  // copies before it: every forward's begin lies as far from its linear's as the shift.
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].second != 'F') continue;
    EXPECT_NEAR(static_cast<double>(spans[i]->beginNs - static_cast<int64_t>(ops[i].first * 1e3)),
                static_cast<double>(mostBeginAfter), 2.0)
        << "forward " << i << " begins at its linear";
  }
  for (const auto& [at, kind] : others) {
    const int64_t shifted = static_cast<int64_t>(at * 1e3) + mostBeginAfter;
    for (const auto* s : spans)
      EXPECT_FALSE(s->beginNs <= shifted && shifted < s->endNs) << "its " << kind << " at " << at;
  }
}

// Schedule1F1B records no span for its actions: they are read from the order its operators,
// autograd's functions and its sends and receives ran in, and the job reads as 1F1B's, with the
// note saying its actions were inferred. Not actions: the first step's shape inference (the stage
// run once more, on meta tensors), and in a job that evaluates before a training step with no
// prof.step() between, the evaluation's forwards in that step's optimizer window.
TEST(ProfilerPipeline, Schedule1F1BsActionsAreReadFromTheOrderItRanThemIn) {
  // Index 0: shape inference's linear; 9 to 12: the evaluation's, after the first step's 8.
  for (const auto& [job, noMicroBatch] : {std::pair<std::string, std::set<size_t>>{"1f1b", {0}},
                                          std::pair<std::string, std::set<size_t>>{"1f1b_eval", {0, 9, 10, 11, 12}}}) {
    SCOPED_TRACE(job);
    const std::string dir = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/" + job;
    const auto loaded = loadProfilerTraces(dir);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    expectTwoRankPipelineOfFour(loaded, config::PipelineSchedule::OneFOneB, 1);
    EXPECT_NE(loaded.note.find("rank 0, 1: the pipeline schedule names no action"), std::string::npos) << loaded.note;
    // Traced without record_shapes, its sends name no peer: said so, not that the peer went untraced.
    ASSERT_FALSE(loaded.recording.rank(1).collectives.empty());
    EXPECT_EQ(trace::collectiveUnit(loaded.recording.rank(1).collectives.front()),
              "from a rank the trace does not name");
    for (int r = 0; r < 2; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      expectEachActionHoldsItsOp(dir, loaded, r, noMicroBatch);
    }
  }
}

// A rank whose backwards ran different functions is no stage's micro-batches (a ring attention's
// halves between its transfers, say): nothing is inferred and the job is not read as a pipeline.
TEST(ProfilerPipeline, BackwardsThroughDifferentFunctionsAreNotReadAsMicroBatches) {
  const std::string dir = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/1f1b";
  const std::string out = testing::freshTempDir("pipeline_unlike_backwards");
  for (int r = 0; r < 2; ++r) {
    const std::string name = "/rank-" + std::to_string(r) + ".pt.trace.json";
    std::ifstream in(dir + name);
    auto trace = nlohmann::json::parse(in);
    bool renamed = false;  // one micro-batch's ReLU's backward, as though it were a GELU's
    for (auto& e : trace["traceEvents"]) {
      if (!renamed && e.value("name", "") == "autograd::engine::evaluate_function: ReluBackward0") {
        e["name"] = "autograd::engine::evaluate_function: GeluBackward0";
        renamed = true;
      }
    }
    ASSERT_TRUE(renamed);
    std::ofstream(out + name) << trace.dump();
  }
  const auto loaded = loadProfilerTraces(out);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.title.find("a pipeline of"), std::string::npos) << loaded.title;
  EXPECT_EQ(loaded.note.find("names no action"), std::string::npos) << loaded.note;
  EXPECT_TRUE(actionSpans(loaded.recording.rank(0)).empty());
}

// Where the trace names its pipeline group (a device mesh's "mesh_pp"), a schedule that names no
// stage runs the rank's index in it: on torchtitan's (pp, dp) mesh, ranks 0 and 1 stage 0 and
// ranks 2 and 3 stage 1, a pipeline of 2 stages with 2 ranks a stage. A mesh with pp inside dp
// (stage 0, 1, 0, 1), which the views cannot lay out, is not read as a pipeline.
TEST(ProfilerPipeline, APipelineGroupInTheTraceGivesEachRankItsStage) {
  const auto torchtitan = loadProfilerTraces(
      testing::fourRanksWithPipelineGroups("pipeline_groups_pp_dp", {0, 0, 1, 1}, {{0, 2}, {1, 3}, {0, 2}, {1, 3}}));
  ASSERT_TRUE(torchtitan.error.empty()) << torchtitan.error;
  EXPECT_EQ(torchtitan.config.pp, 2) << torchtitan.title;
  EXPECT_EQ(torchtitan.config.world, 4);
  EXPECT_NE(torchtitan.title.find("a pipeline of 2 stages on 4 ranks, 2 a stage"), std::string::npos)
      << torchtitan.title;
  for (int r = 0; r < 4; ++r) {
    const auto spans = actionSpans(torchtitan.recording.rank(r));
    ASSERT_FALSE(spans.empty()) << "rank " << r;
    for (const auto* s : spans) EXPECT_EQ(s->text(), "stage " + std::to_string(r / 2)) << "rank " << r;
  }
  const auto inner = loadProfilerTraces(
      testing::fourRanksWithPipelineGroups("pipeline_groups_dp_pp", {0, 1, 0, 1}, {{0, 1}, {0, 1}, {2, 3}, {2, 3}}));
  ASSERT_TRUE(inner.error.empty()) << inner.error;
  EXPECT_EQ(inner.title.find("a pipeline of"), std::string::npos) << inner.title;
  EXPECT_EQ(inner.config.pp, 1);
}

// The steps of a rank that ran `order` ("F": a linear, "B": its backward, "T": a send; "S": a
// tensor_split, of slices, and "C": a backward through a slice and a linear; "|": the end of a
// step), each ended by its optimizer's step, written as PyTorch's profiler writes them, to
// DIR/rank-R.pt.trace.json.
void writeRankThatRan(const std::string& dir, int rank, const std::string& order) {
  nlohmann::json events = nlohmann::json::array();
  double at = 1000;
  const auto span = [&](const std::string& name, const char* category, double ts, double dur) {
    events.push_back(
        {{"ph", "X"}, {"cat", category}, {"name", name}, {"pid", 1}, {"tid", 1}, {"ts", ts}, {"dur", dur}});
  };
  for (const char c : order) {
    if (c == 'F') {
      span("aten::linear", "cpu_op", at, 10);
      span("aten::addmm", "cpu_op", at + 1, 8);
    }
    if (c == 'B' || c == 'C') span("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", at, 10);
    if (c == 'C') span("autograd::engine::evaluate_function: SliceBackward0", "cpu_op", at + 11, 5);
    if (c == 'S') {
      span("aten::tensor_split", "cpu_op", at, 10);
      span("aten::slice", "cpu_op", at + 1, 8);
    }
    if (c == 'T') span("c10d::send", "cpu_op", at, 10);
    if (c == '|') span("Optimizer.step#SGD.step", "user_annotation", at, 10);
    at += c == ' ' ? 0 : 20;
  }
  span("Optimizer.step#SGD.step", "user_annotation", at, 10);
  const nlohmann::json trace = {{"schemaVersion", 1},
                                {"distributedInfo", {{"backend", "gloo"}, {"rank", rank}, {"world_size", 2}}},
                                {"traceEvents", events}};
  std::ofstream(dir + "/rank-" + std::to_string(rank) + ".pt.trace.json") << trace.dump();
}

// Only a pipeline's order is read as one: two micro-batches or more, each action beside a send or
// receive. A data-parallel job accumulating two micro-batches before one exchange, and a job of
// one forward and backward a step around its sends, are read as what they are.
TEST(ProfilerPipeline, OnlyAPipelinesOrderIsReadAsOne) {
  struct Case {
    const char* name;
    std::string first, last;  // the two ranks' orders
    bool pipeline;
  };
  for (const Case& c :
       {Case{"1f1b", "F T F T B T B", "T F B T T F B T", true},
        // A graph that slices: the last stage's split of its target, before its first receive, is
        // no forward, in any step.
        Case{"1f1b_slicing", "F T F T C T C | F T F T C T C", "S T F C T T F C T | S T F C T T F C T", true},
        Case{"accumulating", "F B F B T", "F B F B T", false}, Case{"one_micro_batch", "F T B", "T F B T", false}}) {
    SCOPED_TRACE(c.name);
    const std::string dir = testing::freshTempDir(std::string("pipeline_order_") + c.name);
    writeRankThatRan(dir, 0, c.first);
    writeRankThatRan(dir, 1, c.last);
    const auto loaded = loadProfilerTraces(dir);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    EXPECT_EQ(loaded.title.find("a pipeline of 2 stages on 2 ranks") != std::string::npos, c.pipeline) << loaded.title;
    EXPECT_EQ(loaded.config.microbatches, c.pipeline ? 2 : 0);
  }
}

// A rank's trace missing: the world its traces name still lays the pipeline out (its rank 1 is a
// stage, not a data-parallel copy of stage 0).
TEST(ProfilerPipeline, AnUntracedRankIsStillAPipelineRank) {
  const auto loaded = loadProfilerTraceFiles(
      {std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/1f1b/rank-0.pt.trace.json"});
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_NE(loaded.note.find("no trace for rank 1"), std::string::npos) << loaded.note;
  EXPECT_EQ(loaded.config.pp, 2) << loaded.title;
  EXPECT_NE(loaded.title.find("a pipeline of 2 stages on 2 ranks (torch"), std::string::npos) << loaded.title;
}

}  // namespace
}  // namespace shardscope::import
