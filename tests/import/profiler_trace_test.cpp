// torch.profiler traces read as shardscope reads its own runs: a small trace written by hand in
// the profiler's format (its fields as PyTorch 2.11 writes them) gives the steps, the collective
// with its sizes, unit and backend, and allocations with the roles their spans name; files that
// are not such traces are refused, naming the file and why.
#include "import/profiler_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "config/pipeline_schedule.h"
#include "tests/support/run_cli.h"
#include "trace/format.h"
#include "import/profiler_roles.h"

namespace shardscope::import {
using namespace trace;
namespace {

nlohmann::json span(const std::string& name, double ts, double dur, int tid,
                    nlohmann::json args = nlohmann::json::object()) {
  return {{"ph", "X"},   {"cat", "user_annotation"}, {"name", name}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur},
          {"args", args}};
}

// Any complete event of the profiler's, on a process and thread.
nlohmann::json event(const std::string& cat, const std::string& name, double ts, double dur, int pid, int tid,
                     nlohmann::json args) {
  return {{"ph", "X"},  {"cat", cat}, {"name", name}, {"pid", pid},
          {"tid", tid}, {"ts", ts},   {"dur", dur},   {"args", args}};
}

// A GPU rank's device memory (Device Type 1): its "Total Allocated" counts what was held before.
nlohmann::json memory(double ts, int64_t bytes, int64_t addr, int tid, int64_t total) {
  return {{"ph", "i"},
          {"cat", "cpu_instant_event"},
          {"name", "[memory]"},
          {"pid", 1},
          {"tid", tid},
          {"ts", ts},
          {"args", {{"Bytes", bytes}, {"Addr", addr}, {"Total Allocated", total}, {"Device Type", 1}}}};
}

void writeTrace(const std::string& path, int rank, const nlohmann::json& events, int world = 2,
                const char* backend = "gloo") {
  std::ofstream(path) << nlohmann::json{
      {"schemaVersion", 1},
      {"distributedInfo", {{"backend", backend}, {"rank", rank}, {"world_size", world}}},
      {"traceEvents",
       events}}.dump();
}

// A job's traces of `ranks` (of `world`), each `events(rank)`, in a fresh directory: its path.
std::string writeJob(const std::string& name, const std::vector<int>& ranks,
                     const std::function<nlohmann::json(int)>& events, int world = 2, const char* backend = "gloo") {
  const std::string dir = testing::freshTempDir(name);
  for (int r : ranks) writeTrace(profilerTraceFileName(dir, r), r, events(r), world, backend);
  return dir;
}

// One rank's step 7 (the job's; the first recorded): unit 2's all-gather (4 KiB in, 8 KiB out,
// run by gloo on its own thread) and copy-out, an allocation in forward, a gradient made by a
// backward op and freed by zero_grad, the optimizer's, a free of a block allocated before the
// profiler started. The same annotation repeated on a GPU stream's row must not count.
nlohmann::json rankEvents() {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(span("ProfilerStep#7", 1000, 900, 10));
  ev.push_back(span("FSDP::all_gather (2)", 1010, 100, 10));
  auto op = span("c10d::_allgather_base_", 1020, 10, 10,
                 {{"Input Dims", {{2048}, {1024}}}, {"Input type", {"float", "float"}}});
  op["cat"] = "cpu_op";
  ev.push_back(op);
  ev.push_back(span("gloo:all_gather", 1025, 60, 11, {{"Input type", {"float"}}}));
  ev.push_back(span("FSDP::all_gather_copy_out (2)", 1090, 15, 10));
  auto backwardOp = span("autograd::engine::evaluate_function: AddmmBackward0", 1300, 50, 10);
  backwardOp["cat"] = "cpu_op";
  ev.push_back(backwardOp);
  ev.push_back(span("Optimizer.step#Adam.step", 1500, 200, 10));
  ev.push_back(span("Optimizer.zero_grad#Adam.zero_grad", 1800, 20, 10));
  auto onStream = span("ProfilerStep#7", 1000, 900, 7);
  onStream["cat"] = "gpu_user_annotation";
  ev.push_back(onStream);
  ev.push_back(memory(1030, 8192, 0xa, 11, 108192));      // gloo's staging buffer
  ev.push_back(memory(1095, 8192, 0xb, 10, 116384));      // unit 2's unsharded parameters
  ev.push_back(memory(1200, 4096, 0xc, 10, 120480));      // forward, no span of its own
  ev.push_back(memory(1600, 512, 0xd, 10, 120992));       // the optimizer's
  ev.push_back(memory(1700, -8192, 0xb, 10, 112800));     // unit 2 resharded
  ev.push_back(memory(1310, 2048, 0xf, 10, 113800));      // a .grad, made by the backward op
  ev.push_back(memory(1750, -1000, 0xeeee, 10, 112800));  // allocated before the profiler
  ev.push_back(memory(1810, -2048, 0xf, 10, 110752));     // zero_grad frees it
  return ev;
}

TEST(ProfilerTrace, StepsCollectivesAndRolesComeFromTheSpansAround) {
  const std::string dir = testing::freshTempDir("profiler_trace");
  writeTrace(profilerTraceFileName(dir, 0), 0, rankEvents());
  writeTrace(profilerTraceFileName(dir, 1), 1, rankEvents());
  ASSERT_TRUE(isProfilerTraceDirectory(dir));
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.recording.ranks(), 2);
  EXPECT_EQ(loaded.config.strategy, config::StrategyKind::ShardGradOp)
      << "each unit gathered once a step: SHARD_GRAD_OP-like";
  EXPECT_EQ(loaded.config.batch, 0) << "the job's batch is not in its trace";
  const auto& rank = loaded.recording.rank(0);
  ASSERT_EQ(rank.steps.size(), 1u) << "the GPU row's copy of ProfilerStep#7 is not a step";
  EXPECT_EQ(rank.steps[0].step, 0) << "the job's step 7, the first recorded";
  EXPECT_NE(loaded.note.find("the profiler recorded the job's steps 7 to 7 (ProfilerStep#N), shown as steps 0 to 0"),
            std::string::npos)
      << loaded.note;

  ASSERT_EQ(rank.collectives.size(), 1u);
  const auto& c = rank.collectives[0];
  EXPECT_EQ(static_cast<CollectiveOp>(c.op), CollectiveOp::AllGather);
  EXPECT_EQ(c.bytes, 4096) << "the input (1024 floats)";
  EXPECT_EQ(c.bytesOut, 8192) << "the output (2048 floats)";
  EXPECT_EQ(collectiveUnit(c), "2") << "FSDP2's annotation names the unit";
  EXPECT_EQ(static_cast<Phase>(c.phase), Phase::Forward);
  EXPECT_EQ(c.endNs - c.beginNs, 65'000) << "from its issue to the end of gloo's span";
  EXPECT_EQ(c.worldSize, 2);

  auto peak = [&](MemoryRole role) { return rank.peakByRole[static_cast<int>(role)]; };
  EXPECT_EQ(peak(MemoryRole::CommBuffer), 8192) << "on gloo's thread";
  EXPECT_EQ(peak(MemoryRole::ParamGathered), 8192) << "inside all_gather_copy_out";
  EXPECT_EQ(peak(MemoryRole::Activation), 4096) << "in the step before the optimizer, no span of its own";
  EXPECT_EQ(peak(MemoryRole::GradFull), 2048) << "made in backward, freed by zero_grad: a gradient, by its life";
  EXPECT_EQ(peak(MemoryRole::OptimizerState), 512);
  EXPECT_EQ(peak(MemoryRole::Other), 100000)
      << "held before the profiler started: the first event's total less its bytes";
  EXPECT_EQ(rank.peakTotal, 100000 + 8192 + 8192 + 4096 + 2048 + 512)
      << "the lane's total is the allocator's (GPU: it counts what was held before)";
  EXPECT_NE(loaded.note.find("rank 0: 1 frees of blocks allocated before the profiler started"), std::string::npos)
      << loaded.note;
  EXPECT_TRUE(loaded.clocks.empty()) << "ranks of one host are not moved: " << loaded.clocks;
}

// A job that never called the profiler's step() writes no ProfilerStep#N: its steps are its
// optimizer steps, each from the end of the one before, and the note says so. An optimizer's step
// inside another's (ZeroRedundancyOptimizer's local Adam) is not a step of its own.
TEST(ProfilerTrace, WithoutProfilerStepsTheOptimizerStepsMarkTheSteps) {
  nlohmann::json ev = nlohmann::json::array();
  for (const auto& e : rankEvents()) {
    if (e["name"].get<std::string>().rfind("ProfilerStep#", 0) != 0) ev.push_back(e);
  }
  // A second step: its all-gather in forward, then a wrapping optimizer step with one inside.
  ev.push_back(span("FSDP::all_gather (3)", 2000, 100, 10));
  auto op = span("c10d::_allgather_base_", 2010, 10, 10,
                 {{"Input Dims", {{2048}, {1024}}}, {"Input type", {"float", "float"}}});
  op["cat"] = "cpu_op";
  ev.push_back(op);
  ev.push_back(span("Optimizer.step#ZeroRedundancyOptimizer.step", 2500, 300, 10));
  ev.push_back(span("Optimizer.step#Adam.step", 2550, 200, 10));
  const auto loaded = loadProfilerTraces(writeJob("profiler_trace_no_steps", {0, 1}, [&](int) { return ev; }));
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.config.steps, 2);
  const auto& rank = loaded.recording.rank(0);
  ASSERT_EQ(rank.steps.size(), 2u) << "two optimizer steps at the top, one nested inside the second";
  EXPECT_EQ(rank.steps[0].step, 0);
  EXPECT_EQ(rank.steps[1].step, 1);
  EXPECT_EQ(rank.steps[0].endNs - rank.steps[0].beginNs, 690'000)
      << "from the thread's first span (1010 us) to the end of its optimizer step (1700 us)";
  EXPECT_EQ(rank.steps[1].beginNs, rank.steps[0].endNs + 1) << "the next from there";
  EXPECT_EQ(rank.steps[1].endNs - rank.steps[0].endNs, 1'100'000) << "to the end of the outer optimizer step (2800 us)";
  ASSERT_EQ(rank.collectives.size(), 2u);
  EXPECT_EQ(rank.collectives[0].step, 0);
  EXPECT_EQ(rank.collectives[1].step, 1);
  EXPECT_EQ(static_cast<Phase>(rank.collectives[1].phase), Phase::Forward) << "before its optimizer step";
  EXPECT_NE(loaded.note.find("its 2 steps are taken from its optimizer's"), std::string::npos) << loaded.note;
}

// A c10d op as the profiler records it with shapes: its tensors' dims and types, and the values of
// its other arguments ("Concrete Inputs").
nlohmann::json c10dOp(const std::string& name, double ts, nlohmann::json dims, nlohmann::json types,
                      nlohmann::json concrete) {
  auto op = span(name, ts, 10, 10, {{"Input Dims", dims}, {"Input type", types}, {"Concrete Inputs", concrete}});
  op["cat"] = "cpu_op";
  return op;
}

// c10d::alltoall_base_(output, input, group, output_splits, input_splits, async, timeout) of rows
// of 16 floats, output first; "[]" splits are even.
nlohmann::json allToAll(double ts, int rowsOut, int rowsIn, const std::string& outSplits, const std::string& inSplits) {
  return c10dOp("c10d::alltoall_base_", ts, {{rowsOut, 16}, {rowsIn, 16}, {}, {}, {}, {}, {}},
                {"float", "float", "", "ScalarList", "ScalarList", "Scalar", "Scalar"},
                {"", "", "", outSplits, inSplits, "False", "-1"});
}

// A job's all-to-all, send and recv (an MoE's expert exchange, a pipeline's stages) are drawn as
// collectives of their own, with what each rank sends and receives: an all-to-all its input and its
// output less its own part where the splits are recorded (else (N-1)/N of each), a send its message
// out, a recv its message in, with the peer named. The arguments are as PyTorch 2.11 records them
// under gloo (send(tensors, group, peer, tag), recv_any_source_(tensors, group, tag)).
TEST(ProfilerTrace, AllToAllSendAndRecvAreDrawnWithWhatEachRankMoves) {
  auto events = [&](int rank) {
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back(span("ProfilerStep#0", 1000, 900, 10));
    // Uneven, as an MoE's tokens per expert: rank 0 keeps 5 rows and sends 3; rank 1 keeps 2 and
    // sends 6. Then an even one: 8 rows each way.
    ev.push_back(rank == 0 ? allToAll(1010, 11, 8, "[5, 6]", "[5, 3]") : allToAll(1010, 5, 8, "[3, 2]", "[6, 2]"));
    ev.push_back(span("gloo:all_to_all", 1015, 60, 11, {{"Input type", {"float"}}}));
    ev.push_back(allToAll(1080, 8, 8, "[]", "[]"));
    ev.push_back(span("gloo:all_to_all", 1082, 10, 11, {{"Input type", {"float"}}}));
    // A TensorList names no element type: gloo's span does.
    const bool sender = rank == 0;
    const nlohmann::json tensorList = {"TensorList", "", "Scalar", "Scalar"};
    ev.push_back(c10dOp(sender ? "c10d::send" : "c10d::recv_", 1100, {{{32}}, {}, {}, {}}, tensorList,
                        {"", "", sender ? "1" : "0", "0"}));
    ev.push_back(span(sender ? "gloo:send" : "gloo:recv", 1105, 30, 10, {{"Input type", {"float"}}}));
    ev.push_back(
        sender ? c10dOp("c10d::send", 1200, {{{8}}, {}, {}, {}}, tensorList, {"", "", "1", "7"})
               : c10dOp("c10d::recv_any_source_", 1200, {{{8}}, {}, {}}, {"TensorList", "", "Scalar"}, {"", "", "7"}));
    ev.push_back(span(sender ? "gloo:send" : "gloo:recv", 1205, 30, 10, {{"Input type", {"float"}}}));
    return ev;
  };
  const auto loaded = loadProfilerTraces(writeJob("profiler_trace_p2p", {0, 1}, events));
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_NE(loaded.title.find("not data-parallel: all_to_all, send"), std::string::npos) << loaded.title;
  EXPECT_EQ(loaded.note.find("are not drawn"), std::string::npos) << loaded.note;
  const int64_t row = 16 * 4;
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const auto& rank = loaded.recording.rank(r);
    ASSERT_EQ(rank.collectives.size(), 4u);
    const auto& a2a = rank.collectives[0];
    EXPECT_EQ(static_cast<CollectiveOp>(a2a.op), CollectiveOp::AllToAll);
    EXPECT_EQ(a2a.bytes, 8 * row) << "its input";
    EXPECT_EQ(a2a.ownPartBytes, (r == 0 ? 5 : 2) * row) << "the rows it sends itself";
    EXPECT_EQ(a2a.endNs - a2a.beginNs, 65'000) << "to the end of gloo's span on its own thread";
    EXPECT_EQ(rank.collectives[1].ownPartBytes, -1) << "even splits: no own part recorded";
    const auto& p2p = rank.collectives[2];
    EXPECT_EQ(static_cast<CollectiveOp>(p2p.op), r == 0 ? CollectiveOp::Send : CollectiveOp::Recv);
    EXPECT_EQ(p2p.bytes, 128) << "32 floats, the type from gloo's span";
    EXPECT_EQ(collectiveUnit(p2p), r == 0 ? "to rank 1" : "from rank 0");
    EXPECT_EQ(collectiveUnit(rank.collectives[3]), r == 0 ? "to rank 1" : "from any rank") << "not its tag, 7";
    const auto totals = loaded.recording.collectiveTotals(r);
    const auto& exchanged = totals[static_cast<int>(CollectiveOp::AllToAll)];
    // The uneven one's rows that cross (3 from rank 0, 6 from rank 1), and half of the even one's.
    EXPECT_EQ(exchanged.sentBytes, (r == 0 ? 3 : 6) * row + 4 * row);
    EXPECT_EQ(exchanged.receivedBytes, (r == 0 ? 6 : 3) * row + 4 * row);
    const auto& sent = totals[static_cast<int>(CollectiveOp::Send)];
    const auto& received = totals[static_cast<int>(CollectiveOp::Recv)];
    EXPECT_EQ(sent.sentBytes, r == 0 ? 160 : 0);
    EXPECT_EQ(received.receivedBytes, r == 0 ? 0 : 160);
    EXPECT_EQ(sent.receivedBytes + received.sentBytes, 0) << "one way each";
  }
}

// A rank on another host, its clock 3 s ahead, is moved back by the ends of the collectives every
// rank ran, and a pipeline's sends and recvs, which ranks run in different numbers, stay out of it:
// rank 0 sends twice where rank 1 receives once.
TEST(ProfilerTrace, AnotherHostsRankIsAlignedByItsCollectivesNotItsSends) {
  auto events = [&](int rank) {
    const double shift = rank == 1 ? 3e6 : 0;  // us
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back(span("ProfilerStep#0", 1000 + shift, 5000, 10));
    for (int k = 0; k < 3; ++k) {
      auto op =
          c10dOp("c10d::allreduce_", 1100 + 1000 * k + shift, {{{256}}, {}, {}}, {"TensorList", "", ""}, {"", "", ""});
      ev.push_back(op);
      // Ends together on both ranks (to within a few us), on the backend's thread.
      ev.push_back(span("gloo:all_reduce", 1105 + 1000 * k + shift, 200 + rank * 3, 11, {{"Input type", {"float"}}}));
    }
    const int sends = rank == 0 ? 2 : 1;
    for (int k = 0; k < sends; ++k) {
      ev.push_back(c10dOp(rank == 0 ? "c10d::send" : "c10d::recv_", 4500 + 100 * k + shift, {{{8}}, {}, {}, {}},
                          {"TensorList", "", "Scalar", "Scalar"}, {"", "", rank == 0 ? "1" : "0", "0"}));
    }
    return ev;
  };
  const auto loaded = loadProfilerTraces(writeJob("profiler_trace_hosts", {0, 1}, events));
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_FALSE(loaded.clocks.empty()) << "rank 1 is moved";
  const auto& a = loaded.recording.rank(0).steps;
  const auto& b = loaded.recording.rank(1).steps;
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_LT(std::llabs(a[0].beginNs - b[0].beginNs), 10'000) << "within 10 us once moved back 3 s";
}

// A 3-stage pipeline's traces: each step rank 0 sends to rank 1 and rank 1 to rank 2, each recv
// ending `forwardLatencyUs` + the hop after its send began; with `backward`, 1F1B's gradients go
// back too (2 to 1, 1 to 0, `backwardLatencyUs` + the hop). Ranks 1 and 2 read `shiftUs` ahead.
std::string pipelineTraces(double shiftUs, bool backward, double forwardLatencyUs = 11, double backwardLatencyUs = 13) {
  const nlohmann::json tensorList = {"TensorList", "", "Scalar", "Scalar"};
  std::vector<nlohmann::json> ranks(3, nlohmann::json::array());
  auto message = [&](int rank, const char* op, double ts, double dur, int peer) {
    ranks[rank].push_back(c10dOp(op, ts + (rank > 0 ? shiftUs : 0), {{{64}}, {}, {}, {}}, tensorList,
                                 {"", "", std::to_string(peer), "0"}));
    ranks[rank].back()["dur"] = dur;
  };
  for (int r = 0; r < 3; ++r) ranks[r].push_back(span("ProfilerStep#0", 1000 + (r > 0 ? shiftUs : 0), 5000, 10));
  for (int k = 0; k < 2; ++k) {
    const double t = 1100 + 1000 * k;
    for (int hop = 0; hop < 2; ++hop) {  // rank hop sends to hop + 1
      const double sent = t + 300 * hop;
      message(hop, "c10d::send", sent, 5, hop + 1);
      message(hop + 1, "c10d::recv_", sent - 20, 20 + forwardLatencyUs + hop, hop);
    }
    if (!backward) continue;
    for (int hop = 1; hop >= 0; --hop) {  // rank hop + 1 sends its gradients back to hop
      const double sent = t + 700 + 100 * (1 - hop);
      message(hop + 1, "c10d::send", sent, 5, hop);
      message(hop, "c10d::recv_", sent - 20, 20 + backwardLatencyUs + hop, hop + 1);
    }
  }
  return writeJob(
      "profiler_trace_pipeline", {0, 1, 2}, [&](int r) { return ranks[r]; }, 3);
}

// Where rank r's step begins against rank 0's, in ns, once the traces are read.
int64_t stepOffset(const LoadedTrace& loaded, int r) {
  return loaded.recording.rank(r).steps.at(0).beginNs - loaded.recording.rank(0).steps.at(0).beginNs;
}

// A pipeline across hosts has no collective every rank runs: its stages are placed by their
// messages, a recv ending after its send began. Ranks 1 and 2 on a host whose clock reads 3 s
// ahead: rank 1 by its messages with rank 0, then rank 2 by its messages with rank 1. One way, each
// hop's bound is off by its quickest message's latency; with 1F1B's gradients coming back, by half
// the difference of the two ways' latencies, which the reading's uncertainty covers. On one host
// nothing moves.
TEST(ProfilerTrace, APipelinesStagesOnAnotherHostArePlacedByTheirMessages) {
  const auto forward = loadProfilerTraces(pipelineTraces(3e6, /*backward=*/false));
  ASSERT_TRUE(forward.error.empty()) << forward.error;
  EXPECT_NE(forward.clocks.find("rank 1 shifted by -3.000"), std::string::npos) << forward.clocks;
  EXPECT_NE(forward.clocks.find("rank 2 shifted by -3.000"), std::string::npos) << forward.clocks;
  EXPECT_NE(forward.clocks.find("its messages with rank 1"), std::string::npos) << forward.clocks;
  EXPECT_EQ(stepOffset(forward, 1), -11'000) << "the latency from rank 0 to 1";
  EXPECT_EQ(stepOffset(forward, 2), -23'000) << "and from 1 to 2 (12 us)";
  EXPECT_EQ(forward.recording.rank(1).collectives.at(1).peer, 2) << "rank 1's send's peer";
  EXPECT_EQ(forward.recording.rank(2).collectives.at(0).peer, 1) << "rank 2's recv's peer";

  const auto both = loadProfilerTraces(pipelineTraces(3e6, /*backward=*/true));
  ASSERT_TRUE(both.error.empty()) << both.error;
  // Rank 1: at least -11 us (forward), at most +13 us (backward): the middle, +1 us, +-12 us.
  EXPECT_EQ(stepOffset(both, 1), 1'000);
  EXPECT_EQ(stepOffset(both, 2), 2'000) << "rank 1's +1 us and its own hop's (-12 .. +14 us)";
  ASSERT_EQ(both.rankClocks.size(), 3u);
  for (int r = 1; r < 3; ++r) EXPECT_TRUE(both.rankClocks[r].shifted()) << "rank " << r;

  const auto oneHost = loadProfilerTraces(pipelineTraces(0, /*backward=*/false));
  ASSERT_TRUE(oneHost.error.empty()) << oneHost.error;
  EXPECT_TRUE(oneHost.clocks.empty()) << "ranks of one host keep their clock: " << oneHost.clocks;
  EXPECT_EQ(stepOffset(oneHost, 2), 0);
  const auto oneHostBoth = loadProfilerTraces(pipelineTraces(0, /*backward=*/true));
  EXPECT_TRUE(oneHostBoth.clocks.empty()) << oneHostBoth.clocks;
  // A loaded host: its quickest message took 4 ms, one way, which is latency, not another clock.
  const auto loadedHost = loadProfilerTraces(pipelineTraces(0, /*backward=*/false, /*forwardLatencyUs=*/4000));
  EXPECT_TRUE(loadedHost.clocks.empty()) << loadedHost.clocks;
  EXPECT_EQ(stepOffset(loadedHost, 2), 0);
}

// An all-to-all among a sub-group (an MoE's expert group): NCCL's record_param_comms names the
// group's ranks and the input's splits, which place this rank (rank 2 is second in [0, 2]); gloo
// names no group, and splits fewer than the world's ranks leave its own part unknown.
TEST(ProfilerTrace, AnAllToAllOfASubGroupFindsItsOwnPartByTheGroupsRanks) {
  auto events = [&](int rank) {
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back(span("ProfilerStep#0", 1000, 900, 10));
    ev.push_back(allToAll(1010, 8, 8, "[5, 3]", "[5, 3]"));
    if (rank == 2) {
      ev.push_back(event("cpu_op", "record_param_comms", 1012, 5, 1, 10,
                         {{"Collective name", "all_to_allv"},
                          {"In msg nelems", 128},
                          {"Out msg nelems", 128},
                          {"Group size", 2},
                          {"dtype", "Float"},
                          {"In split size", "[6, 2]"},
                          {"Out split size", "[6, 2]"},
                          {"Process Group Ranks", "[0, 2]"}}));
    }
    return ev;
  };
  const auto loaded = loadProfilerTraces(writeJob("profiler_trace_subgroup", {0, 2}, events, 4, "nccl"));
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& named = loaded.recording.rank(2).collectives.at(0);
  EXPECT_EQ(named.worldSize, 2);
  EXPECT_EQ(named.ownPartBytes, 2 * 64) << "its split at its place in the group, not at its rank";
  EXPECT_EQ(loaded.recording.rank(0).collectives.at(0).ownPartBytes, -1) << "2 splits, 4 ranks, no group named";
}

TEST(ProfilerTrace, FilesThatAreNotItsTracesAreRefusedByName) {
  const std::string dir = testing::freshTempDir("profiler_trace_bad");
  std::ofstream(profilerTraceFileName(dir, 0)) << R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", )";
  auto loaded = loadProfilerTraces(dir);
  EXPECT_NE(loaded.error.find("rank-0.pt.trace.json' ends before its JSON does (a truncated file): record it "
                              "again, letting the profiler finish"),
            std::string::npos)
      << loaded.error;
  std::ofstream(profilerTraceFileName(dir, 0)) << R"({"schemaVersion": 1, "traceEvents": [{"ph": "X" "ts": 1}]})";
  loaded = loadProfilerTraces(dir);
  EXPECT_NE(loaded.error.find("rank-0.pt.trace.json' is not JSON at byte 37 (in its event 1: "), std::string::npos)
      << loaded.error;

  std::ofstream(profilerTraceFileName(dir, 0)) << R"({"schemaVersion": 2, "traceEvents": []})";
  std::ofstream(dir + "/rank-0.shardscope.json") << R"({"rank": 0, "torch_version": "2.12.0"})";
  loaded = loadProfilerTraces(dir);
  EXPECT_NE(loaded.error.find("has schemaVersion 2; this shardscope reads torch.profiler's schema 1 (PyTorch 2.x) "
                              "(written by PyTorch 2.12.0)"),
            std::string::npos)
      << loaded.error;

  std::ofstream(profilerTraceFileName(dir, 0)) << R"({"schemaVersion": 1, "traceEvents": []})";
  std::ofstream(dir + "/rank-0.shardscope.json") << R"({"rank": 0, "torch_version": "1.13.1+cu117"})";
  loaded = loadProfilerTraces(dir);
  EXPECT_NE(loaded.error.find("was written by PyTorch 1.13.1+cu117 (rank-0.shardscope.json); this shardscope reads "
                              "torch.profiler traces of PyTorch 2.x (tested with 2.11)"),
            std::string::npos)
      << loaded.error;
  std::ofstream(dir + "/rank-0.shardscope.json") << R"({"rank": 0, "torch_version": "2.11.0"})";

  std::ofstream(profilerTraceFileName(dir, 0)) << R"({"displayTimeUnit": "ms"})";
  loaded = loadProfilerTraces(dir);
  EXPECT_NE(loaded.error.find("is not a torch.profiler trace (no traceEvents array)"), std::string::npos)
      << loaded.error;

  std::ofstream(profilerTraceFileName(dir, 0))
      << R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#x", "ts": 1,)"
         R"( "dur": 2, "tid": 1}]})";
  loaded = loadProfilerTraces(dir);
  EXPECT_NE(loaded.error.find("has a malformed event"), std::string::npos) << loaded.error;

  EXPECT_FALSE(isProfilerTraceDirectory(testing::freshTempDir("profiler_trace_none")));
}

// A time past 2^62 ns either way (a fuzzed -2^63, a begin and duration whose sum passes it) is a
// damaged file's: refused by name before it is converted or summed into a span's end.
TEST(ProfilerTrace, ATimePastTwoToTheSixtyTwoNanosecondsIsRefusedByName) {
  const std::string dir = testing::freshTempDir("profiler_trace_far");
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {span("ProfilerStep#1", -9.3e18, 10, 1), "its \"ts\" is -9.3e+18 us"},
      {span("ProfilerStep#1", 10, 1e300, 1), "its \"dur\" is 1e+300 us"},
      {span("ProfilerStep#1", 4e15, 4e15, 1), "its end (\"ts\" + \"dur\") is 8e+15 us"},
      {memory(-9.3e18, 8, 0xa, 1, 8), "its \"ts\" is -9.3e+18 us"}};
  for (const auto& [event, expected] : cases) {
    writeTrace(profilerTraceFileName(dir, 0), 0, {span("ProfilerStep#0", 0, 5, 1), event}, 1);
    const auto loaded = loadProfilerTraces(dir);
    EXPECT_NE(loaded.error.find("has a malformed event: in its event 2, " + expected +
                                ", past any time a trace holds (2^62 ns, 146 years, either way)"),
              std::string::npos)
        << event << ": " << loaded.error;
  }
}

// What the recorder counted of the job's model and optimizer when the window began is shown in its
// roles from the start; on a GPU the rest of what the allocator held is other. Without the count
// it would all be other (the test above).
TEST(ProfilerTrace, WhatTheRecorderCountedAtTheStartIsShownInItsRoles) {
  const std::string dir = testing::freshTempDir("profiler_trace_counted");
  for (int r = 0; r < 2; ++r) {
    writeTrace(profilerTraceFileName(dir, r), r, rankEvents());
    std::ofstream(dir + "/rank-" + std::to_string(r) + ".shardscope.json")
        << R"({"rank": )" << r
        << R"(, "held_when_recording_began": {"cuda": {"param_shard": 60000, "optimizer_state": 30000}, "cpu": {"param_shard": 7}}})";
  }
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& rank = loaded.recording.rank(1);
  auto peak = [&](MemoryRole role) { return rank.peakByRole[static_cast<int>(role)]; };
  EXPECT_EQ(peak(MemoryRole::ParamShard), 60000) << "the device's count, not the host's";
  EXPECT_EQ(peak(MemoryRole::OptimizerState), 30000 + 512) << "the moments, then the step's own";
  EXPECT_EQ(peak(MemoryRole::Other), 100000 - 90000) << "the rest of what the allocator held";
  EXPECT_EQ(rank.peakTotal, 100000 + 8192 + 8192 + 4096 + 2048 + 512) << "the allocator's total, as before";
  EXPECT_NE(loaded.note.find("as shardscope_record counted the model's and optimizer's tensors (rank 0: param_shard "
                             "60000 B, optimizer_state 30000 B)"),
            std::string::npos)
      << loaded.note;
  EXPECT_NE(loaded.note.find("rank 0 held 10000 bytes when the profiler started that no recorded role names"),
            std::string::npos)
      << loaded.note;
}

// The textbook loop (zero_grad first): the gradients still set when the window began are
// counted, and zero_grad's frees of them come out of the gradients, not out of other.
TEST(ProfilerTrace, ZeroGradFreesTheCountedGradients) {
  const std::string dir = testing::freshTempDir("profiler_trace_zero_grad");
  auto hostMemory = [](double ts, int64_t bytes, int64_t addr) {
    return nlohmann::json{{"ph", "i"},
                          {"cat", "cpu_instant_event"},
                          {"name", "[memory]"},
                          {"pid", 1},
                          {"tid", 10},
                          {"ts", ts},
                          {"args", {{"Bytes", bytes}, {"Addr", addr}, {"Total Allocated", 0}, {"Device Type", 0}}}};
  };
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(span("ProfilerStep#2", 1000, 1000, 10));
  ev.push_back(span("Optimizer.zero_grad#Adam.zero_grad", 1005, 20, 10));
  ev.push_back(hostMemory(1010, -3000, 0x1));  // last step's gradients, allocated before the profiler
  ev.push_back(hostMemory(1015, -1000, 0x2));
  ev.push_back(hostMemory(1500, -700, 0x3));  // something else from before: other's
  for (int r = 0; r < 2; ++r) {
    writeTrace(profilerTraceFileName(dir, r), r, ev);
    std::ofstream(dir + "/rank-" + std::to_string(r) + ".shardscope.json")
        << R"({"held_when_recording_began": {"cpu": {"grad_full": 4000, "param_shard": 100}}})";
  }
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& memory = loaded.recording.rank(0).memory;
  auto at = [&](double t, MemoryRole role) { return memory.bytesAt(t * 1000)[static_cast<int>(role)]; };
  EXPECT_EQ(loaded.recording.rank(0).peakByRole[static_cast<int>(MemoryRole::GradFull)], 4000) << "counted";
  EXPECT_EQ(at(1012, MemoryRole::GradFull), 1000) << "zero_grad's first free";
  EXPECT_EQ(at(1100, MemoryRole::GradFull), 0) << "zero_grad freed them";
  EXPECT_EQ(at(1100, MemoryRole::Other), 0) << "not taken from other";
  EXPECT_EQ(at(1100, MemoryRole::ParamShard), 100);
  EXPECT_EQ(loaded.recording.rank(0).negativeBalance, 700)
      << "only the free no count explains went below zero (other's, as before), not the gradients'";
  EXPECT_NE(loaded.note.find("rank 0: 1 frees of blocks allocated before the profiler started"), std::string::npos)
      << loaded.note;
}

// A GPU rank's trace: the host only launches NCCL's kernel inside c10d's op; the collective ran
// when the kernel ran on the device, matched by the launch's correlation id (Kineto's fields).
// Written by hand in Kineto's format: no GPU trace has been read yet.
TEST(ProfilerTrace, OnAGpuACollectiveRunsWhenItsNcclKernelRuns) {
  const std::string dir = testing::freshTempDir("profiler_trace_nccl");
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(span("ProfilerStep#2", 1000, 2000, 10));
  ev.push_back(event("cpu_op", "c10d::_allgather_base_", 1020, 20, 1, 10,
                     {{"Input Dims", {{2048}, {1024}}}, {"Input type", {"c10::BFloat16", "c10::BFloat16"}}}));
  ev.push_back(event("cuda_runtime", "cudaLaunchKernelExC", 1030, 5, 1, 10, {{"correlation", 77}}));
  ev.push_back(event("cuda_runtime", "cudaLaunchKernel", 1500, 5, 1, 10, {{"correlation", 78}}));  // a matmul's
  ev.push_back(event("kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 1100, 300, 0,
                     7, {{"correlation", 77}, {"device", 0}, {"stream", 7}}));
  ev.push_back(event("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", 1510, 50, 0, 8, {{"correlation", 78}}));
  for (int r = 0; r < 2; ++r) writeTrace(profilerTraceFileName(dir, r), r, ev);
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.recording.rank(0).collectives.size(), 1u);
  const auto& c = loaded.recording.rank(0).collectives[0];
  EXPECT_EQ(c.beginNs, 1'100'001) << "begun when the kernel began (ns; +1 keeps 0 free)";
  EXPECT_EQ(c.issueNs, c.beginNs) << "arrived when the kernel began, not at the host's launch (1'020'001)";
  EXPECT_EQ(c.endNs - c.beginNs, 300'000) << "the kernel's time, not the host op's 20 us";
  EXPECT_EQ(c.bytesOut, 4096) << "2048 bf16";
}

// Files named as torch.profiler's tensorboard_trace_handler names them (HOST_PID.TIME): each is
// the rank its distributedInfo says, whatever order they are given in; two files of one rank, or
// a file that says no rank and is not named for one, are refused naming them.
// A GPU job profiled without shapes (record_shapes=False): the c10d op names no sizes, and NCCL's
// process group's record_param_comms span inside it, or else its kernel, gives them, with the
// element type and the group the collective ran in (a sub-group under HSDP, not the world).
TEST(ProfilerTrace, WithoutShapesNcclsOwnRecordGivesTheSizesAndGroup) {
  const std::string dir = testing::freshTempDir("profiler_trace_comms");
  const nlohmann::json gather = {{"Collective name", "_allgather_base"},
                                 {"In msg nelems", 1024},
                                 {"Out msg nelems", 2048},
                                 {"dtype", "BFloat16"},
                                 {"Group size", 2}};
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back(span("ProfilerStep#2", 1000, 2000, 10));
  // The all-gather: sizes on record_param_comms inside the op.
  ev.push_back(event("cpu_op", "c10d::_allgather_base_", 1020, 40, 1, 10, {{"External id", 1}}));
  ev.push_back(event("cpu_op", "record_param_comms", 1025, 30, 1, 10, gather));
  ev.push_back(event("cuda_runtime", "cudaLaunchKernel", 1030, 5, 1, 10, {{"correlation", 77}}));
  ev.push_back(event("kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 1100, 300, 0,
                     7, {{"correlation", 77}}));
  // An all-reduce: only its kernel says (an older PyTorch's record without the span's arguments).
  ev.push_back(event("cpu_op", "c10d::allreduce_", 1500, 40, 1, 10, {{"External id", 2}}));
  ev.push_back(event("user_annotation", "nccl:all_reduce", 1505, 30, 1, 10, {{"External id", 3}}));
  ev.push_back(event("cuda_runtime", "cudaLaunchKernel", 1510, 5, 1, 10, {{"correlation", 78}}));
  ev.push_back(event(
      "kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 1600, 200, 0, 7,
      {{"correlation", 78}, {"In msg nelems", 500}, {"Out msg nelems", 500}, {"dtype", "Float"}, {"Group size", 4}}));
  // Another: a PyTorch that recorded no shapes for a TensorList, but the backend's span names the tensor.
  ev.push_back(
      event("cpu_op", "c10d::allreduce_", 1900, 40, 1, 10,
            {{"Input Dims", {nlohmann::json::array(), nlohmann::json::array()}}, {"Input type", {"TensorList", ""}}}));
  ev.push_back(event("user_annotation", "nccl:all_reduce", 1905, 30, 1, 10,
                     {{"Input Dims", {{300}}}, {"Input type", {"float"}}}));
  for (int r = 0; r < 4; ++r) {
    std::ofstream(profilerTraceFileName(dir, r)) << nlohmann::json{
        {"schemaVersion", 1},
        {"distributedInfo", {{"backend", "nccl"}, {"rank", r}, {"world_size", 4}}},
        {"traceEvents", ev}}.dump();
  }
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& collectives = loaded.recording.rank(0).collectives;
  ASSERT_EQ(collectives.size(), 3u);
  EXPECT_EQ(collectives[0].bytes, 2048) << "1024 bf16 in";
  EXPECT_EQ(collectives[0].bytesOut, 4096) << "2048 bf16 out";
  EXPECT_EQ(collectives[0].worldSize, 2) << "its group, not the world of 4";
  EXPECT_EQ(collectives[1].bytes, 2000) << "500 floats, from the kernel's arguments";
  EXPECT_EQ(collectives[1].worldSize, 4);
  EXPECT_EQ(collectives[2].bytes, 1200) << "300 floats, from nccl:all_reduce's own dims";
  EXPECT_NE(loaded.note.find("the traces hold no [memory] events (recorded with profile_memory=False): memory is not "
                             "recorded"),
            std::string::npos)
      << loaded.note;
  EXPECT_EQ(loaded.note.find("whose element type the trace does not name"), std::string::npos) << loaded.note;
}

// Ranks listed in a note: runs of three or more as ranges, so a 128-rank job's missing ranks are one line.
TEST(FormatRanks, RunsOfThreeOrMoreBecomeRanges) {
  EXPECT_EQ(formatRanks({}), "");
  EXPECT_EQ(formatRanks({3}), "3");
  EXPECT_EQ(formatRanks({0, 1}), "0, 1");
  EXPECT_EQ(formatRanks({0, 1, 2}), "0 to 2");
  EXPECT_EQ(formatRanks({0, 2, 5, 6, 7, 8, 10, 11}), "0, 2, 5 to 8, 10, 11");
}

TEST(ProfilerTrace, FilesNamedAnyWayAreTheRanksTheySayTheyAre) {
  const std::string dir = testing::freshTempDir("profiler_trace_files");
  const std::string first = dir + "/node7_4242.1700000000.pt.trace.json",
                    second = dir + "/node7_4243.1700000001.pt.trace.json";
  auto rank1 = rankEvents();
  rank1.push_back(memory(1400, 333, 0x1234, 10, 200000));  // only rank 1 allocates this
  writeTrace(first, 1, rank1);
  writeTrace(second, 0, rankEvents());
  EXPECT_TRUE(isProfilerTraceFileName(first));
  EXPECT_FALSE(isProfilerTraceFileName(dir + "/summary.json"));
  auto loaded = loadProfilerTraceFiles({first, second});
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  ASSERT_EQ(loaded.recording.ranks(), 2);
  EXPECT_EQ(loaded.recording.rank(1).peakTotal, loaded.recording.rank(0).peakTotal + 333)
      << "the first file named is rank 1, as its distributedInfo says";
  EXPECT_EQ(loaded.note.find("no trace for rank"), std::string::npos) << loaded.note;

  loaded = loadProfilerTraceFiles({second});
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_EQ(loaded.recording.ranks(), 2) << "the world its rank says";
  EXPECT_NE(loaded.note.find("no trace for rank 1"), std::string::npos) << loaded.note;

  loaded = loadProfilerTraceFiles({second, second});
  EXPECT_NE(loaded.error.find("are both rank 0: name one trace per rank"), std::string::npos) << loaded.error;

  const std::string anonymous = dir + "/job.pt.trace.json";
  std::ofstream(anonymous) << nlohmann::json{{"schemaVersion", 1}, {"traceEvents", rankEvents()}}.dump();
  loaded = loadProfilerTraceFiles({anonymous});
  ASSERT_TRUE(loaded.error.empty()) << "one process's trace is read, not refused: " << loaded.error;
  EXPECT_EQ(loaded.recording.ranks(), 1);
  EXPECT_NE(loaded.note.find("job.pt.trace.json names no rank (no distributedInfo, no rank-R in its name): read as one "
                             "process, rank 0 of a world of 1"),
            std::string::npos)
      << loaded.note;
  const std::string another = dir + "/other.pt.trace.json";
  std::ofstream(another) << nlohmann::json{{"schemaVersion", 1}, {"traceEvents", rankEvents()}}.dump();
  loaded = loadProfilerTraceFiles({anonymous, another});
  EXPECT_NE(loaded.error.find("job.pt.trace.json' and '" + another + "' are both rank 0 (a file that names no rank"),
            std::string::npos)
      << "two files of one rank are refused, naming both: " << loaded.error;
  const std::string renamed = dir + "/rank-1.pt.trace.json";
  std::ofstream(renamed) << nlohmann::json{{"schemaVersion", 1}, {"traceEvents", rankEvents()}}.dump();
  loaded = loadProfilerTraceFiles({renamed});
  ASSERT_TRUE(loaded.error.empty()) << "its name says its rank: " << loaded.error;
  EXPECT_EQ(loaded.recording.ranks(), 2);
}

// A trace is told by its content, not its name: prof.export_chrome_trace("trace.json") and
// tensorboard_trace_handler's HOST_PID.TIME.pt.trace.json open alike, in a directory too; the rank
// comes from distributedInfo, else from rank-R, rankR or rank_R in the name. shardscope's own
// --trace (Chrome JSON too) and its config.json are not taken for one.
TEST(ProfilerTrace, TracesAreRecognisedByTheirContentWhateverTheirName) {
  const std::string dir = testing::freshTempDir("profiler_trace_content");
  writeTrace(dir + "/trace.json", 1, rankEvents());  // export_chrome_trace's name; distributedInfo says rank 1
  std::ofstream(dir + "/worker_rank0.json")
      << nlohmann::json{{"schemaVersion", 1}, {"traceEvents", rankEvents()}}.dump();
  std::ofstream(dir + "/config.json") << R"({"model": "gpt", "world": 2})";
  std::ofstream(dir + "/ours.json") << R"({"displayTimeUnit":"ms","otherData":{},"traceEvents":[]})";
  EXPECT_TRUE(looksLikeProfilerTrace(dir + "/trace.json"));
  EXPECT_TRUE(looksLikeProfilerTrace(dir + "/worker_rank0.json"));
  EXPECT_FALSE(looksLikeProfilerTrace(dir + "/config.json"));
  EXPECT_FALSE(looksLikeProfilerTrace(dir + "/ours.json"));
  EXPECT_TRUE(isProfilerTraceDirectory(dir));
  const auto job = loadJobDirectory(dir);
  ASSERT_TRUE(job.error.empty()) << job.error;
  EXPECT_EQ(job.recording.ranks(), 2) << "rank 0 by its name, rank 1 by its distributedInfo";
  EXPECT_EQ(job.note.find("no trace for rank"), std::string::npos) << job.note;
  for (const auto& [name, rank] : std::vector<std::pair<std::string, int>>{{"rank-3.pt.trace.json", 3},
                                                                           {"rank3.json", 3},
                                                                           {"trace_rank_2.json.gz", 2},
                                                                           {"RANK-1.json", 1},
                                                                           {"node7_4242.1700000000.pt.trace.json", -1},
                                                                           {"frank3.json", -1},
                                                                           {"rank-99999.json", -1}}) {
    const std::string path = dir + "/named/" + name;
    std::filesystem::create_directories(dir + "/named");
    std::ofstream(path) << nlohmann::json{{"schemaVersion", 1}, {"traceEvents", rankEvents()}}.dump();
    if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") continue;  // not gzipped here: its name alone
    const auto loaded = loadProfilerTraceFiles({path});
    ASSERT_TRUE(loaded.error.empty()) << name << ": " << loaded.error;
    EXPECT_EQ(loaded.recording.ranks(), std::max(rank, 0) + 1) << name;
  }
}

TEST(ProfilerTrace, RolesFollowTheInnermostSpanThatNamesOne) {
  const std::string gloo = "gloo:all_gather", copyOut = "FSDP::all_gather_copy_out (1)", step = "ProfilerStep#3",
                    optim = "Optimizer.step#AdamW.step", add = "aten::add";
  EXPECT_EQ(profilerAllocationRole({&add, &copyOut, &step}, true), MemoryRole::ParamGathered);
  EXPECT_EQ(profilerAllocationRole({&gloo}, false), MemoryRole::CommBuffer);
  EXPECT_EQ(profilerAllocationRole({&add, &optim, &step}, false), MemoryRole::OptimizerState);
  EXPECT_EQ(profilerAllocationRole({&add, &step}, true), MemoryRole::Activation);
  EXPECT_EQ(profilerAllocationRole({&add, &step}, false), MemoryRole::Other);
  EXPECT_EQ(fsdpUnitOf("FSDP::post_backward_reduce (layers.3)"), "layers.3");
  EXPECT_EQ(fsdpUnitOf("Optimizer.step#Adam.step"), "");
}

// A job that only ran forwards (an inference job under FSDP2's hooks), one all-gather and a few
// all-reduces: its title says inference and counts what it ran, and names no training strategy.
TEST(ProfilerTrace, AJobWithNoBackwardIsCalledInferenceAndNamesNoStrategy) {
  const auto loaded = loadProfilerTraces(writeJob("profiler_trace_inference", {0, 1}, [](int) {
    nlohmann::json ev = nlohmann::json::array();
    ev.push_back(span("ProfilerStep#0", 1000, 900, 10));
    ev.push_back(span("FSDP::pre_forward (0)", 1010, 5, 10));
    auto gather = span("c10d::_allgather_base_", 1020, 10, 10,
                       {{"Input Dims", {{2048}, {1024}}}, {"Input type", {"float", "float"}}});
    gather["cat"] = "cpu_op";
    ev.push_back(gather);
    ev.push_back(span("gloo:all_gather", 1025, 60, 11, {{"Input type", {"float"}}}));
    for (double ts : {1200.0, 1300.0, 1400.0}) {
      ev.push_back(c10dOp("c10d::allreduce_", ts, {{{64}}}, {"TensorList"}, {""}));
      ev.push_back(span("gloo:all_reduce", ts + 5, 20, 11, {{"Input type", {"float"}}}));
    }
    ev.push_back(span("FSDP::post_forward (0)", 1600, 5, 10));
    return ev;
  }));
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  EXPECT_NE(loaded.title.find("inference"), std::string::npos) << loaded.title;
  EXPECT_NE(loaded.title.find("1 all_gather"), std::string::npos) << loaded.title;
  EXPECT_NE(loaded.title.find("3 all_reduce"), std::string::npos) << loaded.title;
  EXPECT_EQ(loaded.title.find("-like"), std::string::npos) << "no training strategy: " << loaded.title;
}

// Collectives outside c10d (tests/data/profiler_layouts/collectives_outside_c10d.json): drawn by
// their own op's name, and said in the notes; the framework's op around one is not another.
TEST(ProfilerTrace, CollectivesOutsideC10dAreCountedByTheirOwnOps) {
  const auto loaded =
      loadProfilerTraceFiles({std::string(SHARDSCOPE_TEST_DATA) + "/profiler_layouts/collectives_outside_c10d.json"});
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  int symmMem = 0, wrappers = 0;
  for (const auto& c : loaded.recording.rank(0).collectives) {
    const std::string impl = collectiveImplementation(c);
    symmMem += impl == "symm_mem::multimem_all_reduce_";
    wrappers += impl.find("vllm::") != std::string::npos || impl.find("sglang::") != std::string::npos;
  }
  EXPECT_EQ(symmMem, 3);
  EXPECT_EQ(wrappers, 0) << "an op around another collective's record only wraps it";
  EXPECT_NE(loaded.note.find("outside c10d"), std::string::npos) << loaded.note;
  EXPECT_NE(loaded.note.find("symm_mem::multimem_all_reduce_ (3)"), std::string::npos) << loaded.note;
  EXPECT_EQ(loaded.title.find("-like"), std::string::npos) << loaded.title;
}

// Every title of every job in tests/data (the recorded jobs' directories and the hand-written
// layouts) against that job's own counts, as the summary counts them (collectives in recorded
// steps): a strategy's name only where its collectives are there, inference only without a
// backward, and each count outside c10d as many as were run so.
TEST(ProfilerTrace, EveryTitleInTheCorpusAgreesWithItsCounts) {
  namespace fs = std::filesystem;
  const std::string data = SHARDSCOPE_TEST_DATA;
  std::vector<fs::path> jobs;
  for (const char* corpus : {"pytorch_cuda_h200", "pytorch_nccl_h200", "pytorch_pipelining_gloo"}) {
    for (const auto& entry : fs::directory_iterator(data + "/" + corpus)) {
      if (entry.is_directory()) jobs.push_back(entry.path());
    }
  }
  for (const auto& entry : fs::directory_iterator(data + "/profiler_layouts")) {
    if (entry.path().extension() == ".json" && entry.path().filename() != "expected.json") jobs.push_back(entry.path());
  }
  for (const auto& job : jobs) {
    SCOPED_TRACE(job.string());
    const auto loaded =
        fs::is_directory(job) ? loadProfilerTraces(job.string()) : loadProfilerTraceFiles({job.string()});
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    std::map<CollectiveOp, int> ran, outside;
    bool backward = false;
    for (int r = 0; r < loaded.recording.ranks(); ++r) {
      for (const auto& c : loaded.recording.rank(r).collectives) {
        if (c.step < 0) continue;
        const bool ownOp = collectiveImplementation(c).find("::") != std::string::npos;
        if (r == 0) ++(ownOp ? outside : ran)[static_cast<CollectiveOp>(c.op)];
      }
      for (const auto& c : loaded.recording.rank(r).compute) {
        backward |= c.op == static_cast<uint8_t>(ComputeKind::Backward);
      }
    }
    const std::string& title = loaded.title;
    if (title.find("FULL_SHARD-like") != std::string::npos || title.find("SHARD_GRAD_OP-like") != std::string::npos) {
      EXPECT_GT(ran[CollectiveOp::AllGather], 0) << title;
      EXPECT_GT(ran[CollectiveOp::ReduceScatter], 0) << title;
    }
    if (title.find("ddp-like") != std::string::npos) {
      EXPECT_GT(ran[CollectiveOp::AllReduce], 0) << title;
      EXPECT_EQ(ran[CollectiveOp::AllGather], 0) << title;
    }
    if (title.find("inference") != std::string::npos) EXPECT_FALSE(backward) << title;
    if (title.find("no collectives") != std::string::npos) EXPECT_TRUE(ran.empty() && outside.empty()) << title;
    if (title.find("a pipeline of") != std::string::npos) EXPECT_GT(loaded.config.pp, 1) << title;
    for (const auto& [op, n] : outside) {
      EXPECT_NE(title.find(std::to_string(n) + " " + collectiveOpName(op) + " outside c10d"), std::string::npos)
          << title;
    }
    if (outside.empty()) EXPECT_EQ(title.find("outside c10d"), std::string::npos) << title;
  }
  EXPECT_GE(jobs.size(), 15u) << "the corpus's jobs";
}

// A GPU trace whose steps have GPU-side copies (tests/data/profiler_layouts/gpu_side_steps.json):
// each step is where the device ran it, 300 ms after the host's span, from its copy's begin to the
// next one's; without the copies, the host's, and the note says which.
TEST(ProfilerTrace, StepsAreTimedWhereTheGpuRanThem) {
  const std::string path = std::string(SHARDSCOPE_TEST_DATA) + "/profiler_layouts/gpu_side_steps.json";
  const auto loaded = loadProfilerTraceFiles({path});
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  const auto& steps = loaded.recording.rank(0).steps;
  ASSERT_EQ(steps.size(), 2u);
  const int64_t host0 = 1'000'000'000 + 1;  // ns (+1: never 0)
  EXPECT_EQ(steps[0].beginNs, host0 + 300'000'000) << "the device's begin, 300 ms after the host's";
  EXPECT_EQ(steps[0].endNs, host0 + 312'000'000) << "to the next step's begin on the device";
  EXPECT_EQ(steps[1].beginNs, host0 + 312'000'000);
  EXPECT_EQ(steps[1].endNs, host0 + 316'000'000) << "the last: its own end on the device";
  EXPECT_NE(loaded.note.find("steps timed where the GPU ran them"), std::string::npos) << loaded.note;
  // The same trace without its GPU-side copies: the host's spans, said so.
  auto trace = nlohmann::json::parse(std::ifstream(path));
  auto& events = trace["traceEvents"];
  events.erase(std::remove_if(events.begin(), events.end(),
                              [](const nlohmann::json& e) { return e["cat"] == "gpu_user_annotation"; }),
               events.end());
  const std::string hostOnly = testing::freshTempDir("gpu_side_steps") + "/host_only.json";
  std::ofstream(hostOnly) << trace.dump();
  const auto host = loadProfilerTraceFiles({hostOnly});
  ASSERT_TRUE(host.error.empty()) << host.error;
  EXPECT_EQ(host.recording.rank(0).steps[0].beginNs, host0);
  EXPECT_NE(host.note.find("steps timed by the host's ProfilerStep#N spans"), std::string::npos) << host.note;
}

// Two real torch.distributed.pipelining jobs (tests/data/pytorch_pipelining_gloo): GPipe's
// "Forward i" and "Backward i" and the runtime's "PP:1F3" read as a pipeline's actions, each a
// compute span of its stage and micro-batch (less the sends and receives it waited in) and an
// event group named as shardscope names its own actions.
TEST(ProfilerPipeline, PyTorchsPipeliningJobsOpenWithTheirStagesAndActions) {
  struct Case {
    const char* dir;
    config::PipelineSchedule schedule;
    int stagesPerRank;
  };
  for (const Case& c : {Case{"gpipe", config::PipelineSchedule::GPipe, 1},
                        Case{"interleaved_1f1b", config::PipelineSchedule::Interleaved1F1B, 2}}) {
    SCOPED_TRACE(c.dir);
    const auto loaded = loadProfilerTraces(std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_pipelining_gloo/" + c.dir);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    EXPECT_EQ(loaded.config.pp, 2);
    EXPECT_EQ(loaded.config.schedule, c.schedule);
    EXPECT_EQ(loaded.config.stagesPerRank, c.stagesPerRank);
    EXPECT_EQ(loaded.config.microbatches, 4);
    EXPECT_NE(loaded.title.find("a pipeline of " + std::to_string(2 * c.stagesPerRank) + " stages on 2 ranks"),
              std::string::npos)
        << loaded.title;
    for (int r = 0; r < 2; ++r) {
      const auto& t = loaded.recording.rank(r);
      std::map<std::string, int> actions;  // "1F3" -> how many times
      for (const auto& g : t.groups) {
        if (const auto a = config::parseActionText(g.text())) {
          ++actions[g.text()];
          EXPECT_EQ(a->stage % 2, r) << "rank r holds stages r and r + 2: " << g.text();
        }
      }
      // 2 steps of 4 micro-batches, F and B of each on each stage the rank holds.
      EXPECT_EQ(actions.size(), static_cast<size_t>(2 * 4 * c.stagesPerRank)) << "distinct actions";
      for (const auto& [text, n] : actions) EXPECT_EQ(n, 2) << text << ": once a step";
      std::set<int> microBatches;
      for (const auto& s : t.compute) {
        if (s.op == static_cast<uint8_t>(ComputeKind::Forward)) {
          microBatches.insert(s.microBatch);
          EXPECT_EQ(s.text().rfind("stage ", 0), 0u) << s.text();
        }
      }
      EXPECT_EQ(microBatches, (std::set<int>{1, 2, 3, 4})) << "counted from 1, as the engine records them";
    }
  }
}

}  // namespace
}  // namespace shardscope::import

namespace shardscope::import {
using namespace trace;
namespace {

// tests/data/profiler_layouts: collectives in each layout PyTorch's profiler has written, each
// counted once, with its bytes (the README says which version each file follows).
TEST(ProfilerLayouts, EveryCollectiveOfEveryLayoutIsCountedOnce) {
  const std::string dir = std::string(SHARDSCOPE_TEST_DATA) + "/profiler_layouts/";
  std::ifstream in(dir + "expected.json");
  const auto expected = nlohmann::json::parse(in);
  ASSERT_GE(expected.size(), 4u);
  for (const auto& [file, want] : expected.items()) {
    SCOPED_TRACE(file);
    const auto loaded = loadProfilerTraceFiles({dir + file});
    ASSERT_EQ(loaded.error, "");
    const int rank = want["rank"].get<int>();
    ASSERT_EQ(loaded.recording.ranks(), want["world"].get<int>());
    const auto& got = loaded.recording.rank(rank).collectives;
    ASSERT_EQ(got.size(), want["collectives"].size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(collectiveOpName(static_cast<CollectiveOp>(got[i].op)), want["collectives"][i][0].get<std::string>())
          << "collective " << i;
      EXPECT_EQ(got[i].bytes, want["collectives"][i][1].get<int64_t>()) << "collective " << i;
    }
    // The title names what the rank ran, never "no collectives recorded" beside them.
    EXPECT_EQ(loaded.title.find("no collectives"), std::string::npos) << loaded.title;
  }
}

}  // namespace
}  // namespace shardscope::import

namespace shardscope::import {
using namespace trace;
namespace {

// A real job of DTensor's tensor parallelism inside FSDP2 (tests/data/pytorch_nccl_h200/tp_fsdp_w4,
// 4 blocks, 3 recorded steps): no FSDP2 annotation is around the tensor groups' all-reduces, so each
// takes the unit and phase of the block's forward or backward it ran in (between FSDP2's pre- and
// post- hooks), as a kernel does. Per step and rank: 8 in forward (attention's and the mlp's
// row-wise linear in each block), 16 in backward (the column-wise linears' input gradients).
TEST(ProfilerTrace, TensorParallelAllReducesTakeTheBlockAndPhaseTheyRanIn) {
  const auto loaded = loadJobDirectory(std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_nccl_h200/tp_fsdp_w4");
  ASSERT_EQ(loaded.error, "");
  for (int r = 0; r < loaded.recording.ranks(); ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    int forward = 0, backward = 0;
    for (const auto& c : loaded.recording.rank(r).collectives) {
      if (c.processGroup != static_cast<uint8_t>(ProcessGroup::Tensor)) continue;
      ASSERT_EQ(static_cast<CollectiveOp>(c.op), CollectiveOp::AllReduce);
      EXPECT_EQ(collectiveUnit(c).rfind("blocks.", 0), 0u) << collectiveUnit(c);
      forward += c.phase == static_cast<uint8_t>(Phase::Forward);
      backward += c.phase == static_cast<uint8_t>(Phase::Backward);
    }
    EXPECT_EQ(forward, 3 * 8);
    EXPECT_EQ(backward, 3 * 16);
  }
}

}  // namespace
}  // namespace shardscope::import
