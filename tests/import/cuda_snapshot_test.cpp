// CUDA memory snapshots as torch.cuda.memory._dump_snapshot writes them (the schema of PyTorch
// 2.11's torch.cuda.memory._snapshot, pickled here by Python's own pickle module): the history of
// one device read in order, the blocks still held from its segments; each allocation's role from
// its stack; and beside a rank's torch.profiler trace, the rank's GPU memory drawn from it on the
// profiler's clock. A GPU run of a real job is not part of this suite (docs/gpu.md).
#include "import/cuda_snapshot.h"

#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/run_cli.h"
#include "import/profiler_trace.h"

namespace shardscope::import {
using namespace trace;
namespace {

using nlohmann::json;

// A profiler trace's base time (ns since the epoch): its times count from it, the snapshot's from
// the epoch.
constexpr int64_t kBaseNs = 1'790'000'000'000'000'000;
int64_t epochUs(double traceUs) { return kBaseNs / 1000 + static_cast<int64_t>(traceUs); }

json frame(const std::string& name, const std::string& file = "??") {
  return {{"name", name}, {"filename", file}, {"line", 0}};
}

const std::string kFsdp = "/venv/lib/python3.11/site-packages/torch/distributed/fsdp/_fully_shard/";
const std::string kOptim = "/venv/lib/python3.11/site-packages/torch/optim/";
const std::string kModule = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py";

// The innermost frames every CUDA allocation's stack starts with.
json stack(std::initializer_list<json> outer) {
  json s = json::array(
      {frame(
           "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, unsigned long, CUstream_st*)",
           "CUDACachingAllocator.cpp"),
       frame("at::native::empty_cuda(c10::ArrayRef<long>, ...)")});
  for (const auto& f : outer) s.push_back(f);
  s.push_back(frame("train_step", "/home/me/train.py"));
  return s;
}

json entry(const std::string& action, int64_t addr, int64_t size, double traceUs, json frames = json::array()) {
  return {{"action", action}, {"addr", addr}, {"size", size}, {"stream", 0}, {"time_us", epochUs(traceUs)},
          {"frames", frames}};
}

void pickleJson(const json& value, const std::string& path) {
  const std::string source = path + ".json";
  std::ofstream(source) << value.dump();
  const auto result = testing::runCommand(
      {SHARDSCOPE_TEST_PYTHON, "-c",
       "import json, pickle, sys; pickle.dump(json.load(open(sys.argv[1])), open(sys.argv[2], 'wb'))", source, path});
  ASSERT_EQ(result.exitCode, 0) << result.output;
}

struct Block {
  int64_t requested;  // what the tensor asked for, as the history's entries give it
  std::string state;
};

// A segment's blocks, each rounded up to 512 bytes as the allocator rounds them.
json segment(int device, std::vector<Block> blocks) {
  json out = {{"device", device},        {"address", 0},        {"total_size", 0},  {"stream", 0},
              {"segment_type", "large"}, {"allocated_size", 0}, {"active_size", 0}, {"frames", json::array()},
              {"blocks", json::array()}};
  for (const auto& b : blocks) {
    out["blocks"].push_back({{"size", (b.requested + 511) / 512 * 512},
                             {"requested_size", b.requested},
                             {"state", b.state},
                             {"frames", json::array()}});
  }
  return out;
}

// Rank 0's job, as the allocator saw it on device 0 (the trace's times: its step runs 1000..1900):
//   before the history   0xa0 50000 B (held to the end), 0xa1 20000 B (freed by zero_grad at 1805)
//   before the step      0xb0 4096 B of Adam's state
//   in the step          unit 2's all-gather output 0xc0 (1020, its free completed at 1150),
//                        its unsharded parameters 0xc1 (1095..1700), a forward activation 0xc2
//                        (1200..1400), a gradient made in backward 0xc3 (1310, freed by zero_grad
//                        at 1810), NCCL's 0xc4 (1320, held), Adam's temporary 0xc5 (1600..1650)
//   after the step       0xd0 300 B (1950, held): not drawn
json rankZeroSnapshot() {
  json t = json::array();
  t.push_back(entry("segment_alloc", 0x1000, 2 << 20, 400));
  t.push_back(entry("alloc", 0xb0, 4096, 500,
                    stack({frame("_multi_tensor_adam", kOptim + "adam.py"), frame("step", kOptim + "optimizer.py")})));
  t.push_back(entry("alloc", 0xc0, 8192, 1020,
                    stack({frame("foreach_all_gather", kFsdp + "_fsdp_collectives.py"),
                           frame("unshard", kFsdp + "_fsdp_param_group.py"), frame("_call_impl", kModule)})));
  t.push_back(entry(
      "alloc", 0xc1, 8192, 1095,
      stack({frame("foreach_all_gather_copy_out", kFsdp + "_fsdp_collectives.py"), frame("_call_impl", kModule)})));
  t.push_back(
      entry("free_requested", 0xc0, 8192, 1100, stack({frame("wait_for_unshard", kFsdp + "_fsdp_param_group.py")})));
  t.push_back(entry("free_completed", 0xc0, 8192, 1150));
  t.push_back(entry("alloc", 0xc2, 4096, 1200, stack({frame("forward", "/home/me/model.py")})));
  const json backward =
      stack({frame("torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"),
             frame("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, ...)")});
  t.push_back(entry("alloc", 0xc3, 2048, 1310, backward));
  t.push_back(entry("alloc", 0xc4, 1000, 1320,
                    stack({frame("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&, ...)")})));
  t.push_back(entry("free_requested", 0xc2, 4096, 1400, backward));
  t.push_back(entry("free_completed", 0xc2, 4096, 1400, backward));
  t.push_back(entry("alloc", 0xc5, 512, 1600, stack({frame("_multi_tensor_adam", kOptim + "adam.py")})));
  t.push_back(entry("free_requested", 0xc5, 512, 1650));
  t.push_back(entry("free_completed", 0xc5, 512, 1650));
  t.push_back(entry("free_requested", 0xc1, 8192, 1700, stack({frame("reshard", kFsdp + "_fsdp_param_group.py")})));
  t.push_back(entry("free_completed", 0xc1, 8192, 1700));
  const json zeroGrad = stack({frame("zero_grad", kOptim + "optimizer.py")});
  t.push_back(entry("free_requested", 0xa1, 20000, 1805, zeroGrad));
  t.push_back(entry("free_completed", 0xa1, 20000, 1805, zeroGrad));
  t.push_back(entry("free_requested", 0xc3, 2048, 1810, zeroGrad));
  t.push_back(entry("free_completed", 0xc3, 2048, 1810, zeroGrad));
  t.push_back(entry("alloc", 0xd0, 300, 1950, stack({})));
  t.push_back(entry("snapshot", 0, 0, 1960));
  return {{"segments", json::array({segment(0, {{50000, "active_allocated"},
                                                {4096, "active_allocated"},
                                                {1000, "active_allocated"},
                                                {300, "active_allocated"},
                                                {9999, "inactive"}}),
                                    segment(1, {{777, "active_allocated"}})})},
          {"device_traces", json::array({t, json::array()})},
          {"allocator_settings", {{"PYTORCH_CUDA_ALLOC_CONF", ""}, {"expandable_segments", false}}}};
}

TEST(CudaSnapshot, ReadsOneDevicesHistoryInOrderAndWhatItStillHeld) {
  const std::string dir = testing::freshTempDir("cuda_snapshot");
  const std::string path = cudaSnapshotFileName(dir, 0);
  pickleJson(rankZeroSnapshot(), path);
  CudaSnapshot s;
  ASSERT_EQ(readCudaSnapshot(path, -1, s), "");
  EXPECT_EQ(s.device, 0) << "the device with a history";
  ASSERT_EQ(s.actions.size(), 20u) << "allocations and frees; the segment and snapshot entries are not read";
  EXPECT_EQ(s.otherActions, 2);
  EXPECT_EQ(s.actions[0].kind, AllocatorAction::Kind::Alloc);
  EXPECT_EQ(s.actions[0].address, 0xb0);
  EXPECT_EQ(s.actions[0].timeUs, epochUs(500));
  EXPECT_EQ(s.actions[3].kind, AllocatorAction::Kind::FreeRequested);
  EXPECT_EQ(s.actions[4].kind, AllocatorAction::Kind::FreeCompleted);
  const auto frames = s.stacks.framesOf(s.actions[1].stack);
  ASSERT_EQ(frames.size(), 6u);
  EXPECT_EQ(frames[2].name, "foreach_all_gather");
  EXPECT_EQ(frames[5].file, "/home/me/train.py");
  EXPECT_EQ(s.heldWhenWritten, 50000 + 4096 + 1000 + 300)
      << "device 0's active blocks as their tensors asked (the history's sizes, not the rounded ones); not the "
         "inactive one, not device 1's";

  EXPECT_NE(readCudaSnapshot(path, 1, s).find("has no history for device 1"), std::string::npos);
}

// A long history as torch writes it: every entry with its own copies of its stack's frame dicts and
// strings, the same few stacks over and over (here with lines that differ entry to entry, which no
// rule reads). The snapshot keeps each stack, frame and string once; what grows with the history is
// its actions, 32 bytes each.
TEST(CudaSnapshot, KeepsEachStackFrameAndStringOnce) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_stacks");
  const std::string path = cudaSnapshotFileName(dir, 0);
  const auto written = testing::runCommand({SHARDSCOPE_TEST_PYTHON, "-c", R"(
import pickle, sys
def copy(text):  # a str object of its own, which pickle's memo does not share
    return "".join(list(text))
def frames(kind, entry):
    inner = [("c10::cuda::CUDACachingAllocator::malloc#%d" % k, "??") for k in range(8)]
    outer = [("%s_%d" % (kind, k), "/home/me/%s.py" % kind) for k in range(4)]
    return [{"name": copy(n), "filename": copy(f), "line": entry % 7} for n, f in inner + outer]
trace, t = [], 1790000000000000
for i in range(4000):
    kind = ["gather", "forward", "backward", "adam"][i % 4]
    action = "alloc" if i % 2 == 0 else "free_requested"
    trace.append({"action": action, "addr": 4096 * (i // 2), "size": 512, "stream": 0, "time_us": t + i,
                  "frames": frames(kind, i)})
pickle.dump({"segments": [], "device_traces": [trace]}, open(sys.argv[1], "wb"))
)",
                                            path});
  ASSERT_EQ(written.exitCode, 0) << written.output;
  CudaSnapshot s;
  ASSERT_EQ(readCudaSnapshot(path, -1, s), "");
  ASSERT_EQ(s.actions.size(), 4000u);
  EXPECT_EQ(s.stacks.size(), 4u) << "one per kind: the lines are not kept";
  EXPECT_EQ(s.stacks.frames.size(), 8u + 4 * 4);
  EXPECT_EQ(s.stacks.strings.size(), 8u + 4 * 4 + 1 + 4) << "the names, ?? and the four files";
  EXPECT_EQ(s.actions[0].stack, s.actions[3996].stack);
  EXPECT_NE(s.actions[0].stack, s.actions[1].stack);
  const auto frames = s.stacks.framesOf(s.actions[3999].stack);
  ASSERT_EQ(frames.size(), 12u);
  EXPECT_EQ(frames[0].name, "c10::cuda::CUDACachingAllocator::malloc#0");
  EXPECT_EQ(frames[11].name, "adam_3");
  EXPECT_EQ(frames[11].file, "/home/me/adam.py");
  EXPECT_TRUE(s.stacks.framesOf(SnapshotStacks::kNone).empty());
  // The actions, and a few KiB of stacks: nothing per entry's frames (as a tree of the pickle, 12
  // frames of 3 values each, some hundreds of bytes each).
  EXPECT_EQ(sizeof(AllocatorAction), 32u);
  EXPECT_LT(s.retainedBytes(), 4000 * sizeof(AllocatorAction) + 8 * 1024);
}

TEST(CudaSnapshot, FilesThatAreNotSnapshotsWithAHistoryAreRefusedSayingWhy) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_refused");
  auto why = [&](const json& value) {
    pickleJson(value, dir + "/s.pickle");
    CudaSnapshot s;
    return readCudaSnapshot(dir + "/s.pickle", -1, s);
  };
  EXPECT_NE(
      why({{"segments", json::array()}}).find("is a pickle but not a CUDA memory snapshot (it has no device_traces)"),
      std::string::npos);
  EXPECT_NE(why({{"segments", json::array()}, {"device_traces", json::array({json::array()})}})
                .find("has no allocation history (dumped while _record_memory_history was off)"),
            std::string::npos);
  json untimed = entry("alloc", 1, 2, 3);
  untimed.erase("time_us");
  EXPECT_NE(why({{"device_traces", json::array({json::array({untimed})})}}).find("without a time (time_us)"),
            std::string::npos);
  json late = entry("alloc", 1, 2, 3);
  late["time_us"] = int64_t{1} << 60;
  EXPECT_NE(why({{"device_traces", json::array({json::array({late})})}}).find("which no memory snapshot holds"),
            std::string::npos);
  json huge = entry("alloc", 1, int64_t{1} << 50, 3);
  EXPECT_NE(why({{"device_traces", json::array({json::array({huge})})}}).find("has a block of"), std::string::npos);
  std::ofstream(dir + "/text.pickle") << "{\"device_traces\": []}";
  CudaSnapshot s;
  const std::string notPickle = readCudaSnapshot(dir + "/text.pickle", -1, s);
  EXPECT_NE(notPickle.find("is not a readable pickle"), std::string::npos) << notPickle;
  EXPECT_EQ(readCudaSnapshot(dir + "/missing.pickle", -1, s), "does not exist: check the path");
}

std::vector<StackFrame> frames(const json& j) {
  static std::deque<std::string> keep;  // the views' strings, never moved
  std::vector<StackFrame> out;
  for (const auto& f : j) {
    keep.push_back(f["name"]);
    const std::string& name = keep.back();
    keep.push_back(f["filename"]);
    out.push_back({name, keep.back()});
  }
  return out;
}

TEST(CudaSnapshot, AnAllocationsRoleIsTheFirstFrameThatNamesOne) {
  auto role = [](const json& s, bool inStep = false) { return snapshotAllocationRole(frames(s), inStep); };
  EXPECT_EQ(role(stack({frame("foreach_all_gather_copy_out", kFsdp + "_fsdp_collectives.py"),
                        frame("foreach_all_gather", kFsdp + "_fsdp_collectives.py")})),
            MemoryRole::ParamGathered)
      << "the innermost frame that names a role decides";
  EXPECT_EQ(role(stack({frame("unshard", kFsdp + "_fsdp_param_group.py"), frame("_call_impl", kModule)})),
            MemoryRole::CommBuffer);
  EXPECT_EQ(role(stack({frame("unshard", "/home/me/mine.py")}), false), MemoryRole::Other) << "an unshard not FSDP's";
  EXPECT_EQ(role(stack({frame("foreach_reduce", kFsdp + "_fsdp_collectives.py")})), MemoryRole::CommBuffer);
  EXPECT_EQ(role(stack({frame("torch::autograd::AccumulateGrad::apply(...)"),
                        frame("torch::autograd::Engine::evaluate_function(...)")})),
            MemoryRole::GradFull);
  EXPECT_EQ(role(stack({frame("torch::autograd::Engine::evaluate_function(...)")})), MemoryRole::Activation);
  EXPECT_EQ(role(stack({frame("c10d::Reducer::initialize_buckets(...)")})), MemoryRole::CommBuffer) << "DDP's buckets";
  EXPECT_EQ(role(stack({frame("_single_tensor_adam", kOptim + "adam.py")})), MemoryRole::OptimizerState);
  EXPECT_EQ(role(stack({frame("zero_grad", kOptim + "optimizer.py")})), MemoryRole::GradFull);
  EXPECT_EQ(role(stack({frame("forward", "/site-packages/torch/nn/parallel/distributed.py")})), MemoryRole::Activation);
  EXPECT_EQ(role(stack({frame("forward", "/home/me/model.py")}), true), MemoryRole::Activation)
      << "named by none, inside a step before its optimizer step";
  EXPECT_EQ(role(stack({frame("forward", "/home/me/model.py")}), false), MemoryRole::Other);
  // cuBLAS's workspace, made by a rank's first matmul on a thread (inside forward, or backward on
  // the autograd thread) and kept: other, not an activation held for good (seen in an FSDP2 job on
  // an H200: two of 32 MiB, one per thread, drawn as 65 MiB of activation until this rule).
  EXPECT_EQ(role(stack({frame("at::cuda::setWorkspaceForHandle(cublasContext*, c10::cuda::CUDAStream)"),
                        frame("at::cuda::getCurrentCUDABlasHandle()"),
                        frame("torch::autograd::Engine::evaluate_function(...)")}),
                 true),
            MemoryRole::Other);
  EXPECT_EQ(role(stack({frame("at::cuda::getCUDABlasLtWorkspace()"), frame("forward", "/x/torch/nn/modules/linear.py"),
                        frame("_call_impl", kModule)}),
                 true),
            MemoryRole::Other);
}

// The rules name FSDP2's and the optimizers' functions as PyTorch defines them: a PyTorch that
// renames one fails here, not silently in a user's view.
TEST(CudaSnapshot, TheFunctionsTheRulesNameAreTorchsOwn) {
  if (!SHARDSCOPE_TEST_TORCH) GTEST_SKIP() << "no Python with torch configured (SHARDSCOPE_PYTHON)";
  const auto result = testing::runCommand({SHARDSCOPE_TEST_PYTHON, "-c", R"(
import inspect, torch
from torch.distributed.fsdp._fully_shard import _fsdp_collectives as c
from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup as G
for f in (c.foreach_all_gather, c.foreach_all_gather_copy_out, c.foreach_reduce, G.unshard, G.pre_forward,
          G.post_forward, torch.optim.Optimizer.zero_grad, torch.optim.Adam.step,
          torch.nn.parallel.DistributedDataParallel.forward, torch.nn.Module._call_impl):
    f = inspect.unwrap(f)
    print(f.__name__, inspect.getsourcefile(f))
)"});
  ASSERT_EQ(result.exitCode, 0) << result.output;
  std::istringstream lines(result.output);
  std::string name, file;
  int checked = 0;
  while (lines >> name >> file) {
    // Each as a Python frame of its own file, as the allocator records it.
    const std::vector<StackFrame> stack = {{name, file}};
    const MemoryRole r = snapshotAllocationRole(stack, false);
    EXPECT_NE(r, MemoryRole::Other) << name << " in " << file << " names no role";
    ++checked;
  }
  EXPECT_EQ(checked, 10) << result.output;
}

void writeTrace(const std::string& path, int rank, json extra = json::array()) {
  auto span = [](const std::string& name, double ts, double dur) {
    return json{{"ph", "X"}, {"cat", "user_annotation"}, {"name", name}, {"pid", 1}, {"tid", 10}, {"ts", ts},
                {"dur", dur}};
  };
  json events = json::array({span("ProfilerStep#3", 1000, 900), span("Optimizer.step#Adam.step", 1500, 200),
                             span("Optimizer.zero_grad#Adam.zero_grad", 1800, 20)});
  for (auto& e : extra) events.push_back(e);
  // The profiler's own [memory] event of the device: 100000 B held before it, all "other".
  events.push_back(
      {{"ph", "i"},
       {"cat", "cpu_instant_event"},
       {"name", "[memory]"},
       {"pid", 1},
       {"tid", 10},
       {"ts", 1030},
       {"args", {{"Bytes", 512}, {"Addr", 0xe0}, {"Total Allocated", 100512}, {"Device Type", 1}, {"Device Id", 0}}}});
  std::ofstream(path) << json{
      {"schemaVersion", 1},
      {"baseTimeNanoseconds", kBaseNs},
      {"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", 2}}},
      {"traceEvents",
       events}}.dump();
}

TEST(CudaSnapshot, BesideARanksTraceItsGpuMemoryComesFromTheSnapshot) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_view");
  for (int r = 0; r < 2; ++r) writeTrace(profilerTraceFileName(dir, r), r);
  // The recorder also counted Adam's state, which the history holds already (made at 500).
  std::ofstream(dir + "/rank-0.shardscope.json")
      << R"({"rank": 0, "held_when_recording_began": {"cuda": {"param_shard": 40000, "optimizer_state": 4096}}})";
  pickleJson(rankZeroSnapshot(), cudaSnapshotFileName(dir, 0));
  std::ofstream(cudaSnapshotFileName(dir, 1)) << "not a pickle";
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;

  const auto& rank = loaded.recording.rank(0);
  auto peak = [&](MemoryRole role) { return rank.peakByRole[static_cast<int>(role)]; };
  EXPECT_EQ(peak(MemoryRole::ParamShard), 40000) << "what the recorder counted, of what was held before the history";
  EXPECT_EQ(peak(MemoryRole::Other), 30000) << "the rest of that (50000 held to the end, 20000 freed in the step)";
  EXPECT_EQ(peak(MemoryRole::OptimizerState), 4096 + 512) << "Adam's state from before the step (once: the history's, "
                                                             "not again from the recorder's count), then its temporary";
  EXPECT_EQ(peak(MemoryRole::CommBuffer), 8192) << "the all-gather's output, freed when its free completed";
  EXPECT_EQ(peak(MemoryRole::ParamGathered), 8192);
  EXPECT_EQ(peak(MemoryRole::Activation), 4096) << "no frame names it; in the step before its optimizer step";
  EXPECT_EQ(peak(MemoryRole::GradFull), 2048) << "made in backward, freed by zero_grad: a gradient, by its life";
  EXPECT_EQ(rank.peakTotal, 40000 + 30000 + 4096 + 8192 + 8192)
      << "at 1095, the gathered parameters beside their buffer";

  // Where the snapshot says, on the profiler's clock (its base time taken off): 0xc0's free was
  // requested at 1100 and completed at 1150; the memory is held until then.
  const int comm = static_cast<int>(MemoryRole::CommBuffer);
  EXPECT_EQ(rank.memory.bytesAt(1'019'000)[comm], 0);
  EXPECT_EQ(rank.memory.bytesAt(1'120'000)[comm], 8192);
  EXPECT_EQ(rank.memory.bytesAt(1'151'000)[comm], 0);

  const auto& other = loaded.recording.rank(1);
  EXPECT_EQ(other.peakByRole[static_cast<int>(MemoryRole::Other)], 100000)
      << "rank 1's snapshot cannot be read: its memory is the profiler's";
  EXPECT_NE(loaded.note.find("GPU memory of rank 0 from the CUDA allocator's snapshot"), std::string::npos)
      << loaded.note;
  EXPECT_NE(loaded.note.find("rank-1.memory.pickle' is not a readable pickle"), std::string::npos) << loaded.note;
  EXPECT_NE(loaded.note.find("rank 1's memory is the profiler's [memory] events instead"), std::string::npos)
      << loaded.note;
  EXPECT_NE(loaded.note.find("rank 0 held 30000 bytes allocated before the snapshot's history began"),
            std::string::npos)
      << loaded.note;
}

// FSDP2's backward, as its stacks show it: a gradient autograd made, dropped by foreach_reduce
// once copied in, or kept until zero_grad (seen here through a Python-only stack: the profiler's
// span says it was made in backward); a unit gathered again for backward and resharded in
// post_backward (not a gradient); the reduce-scatter's input (released outside foreach_reduce) and
// its output, the sharded gradient.
TEST(CudaSnapshot, GradientsAreKnownByTheirLivesAndTheRestIsNot) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_backward");
  // Autograd's engine on its own thread (11), its span in the profiler's trace.
  json backwardSpan = {{"ph", "X"}, {"cat", "cpu_op"}, {"name", "autograd::engine::evaluate_function: MmBackward0"},
                       {"pid", 1},  {"tid", 11},       {"ts", 1300},
                       {"dur", 100}};
  writeTrace(profilerTraceFileName(dir, 0), 0, json::array({backwardSpan}));
  const json engine =
      frame("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, ...)");
  const json zeroGrad = stack({frame("zero_grad", kOptim + "optimizer.py")});
  const json reduce = stack({frame("foreach_reduce", kFsdp + "_fsdp_collectives.py"),
                             frame("post_backward", kFsdp + "_fsdp_param_group.py"), engine});
  const json postBackward = stack({frame("post_backward", kFsdp + "_fsdp_param_group.py"), engine});
  json t = json::array();
  t.push_back(entry("alloc", 0xe1, 2048, 1310, json::array()));  // Python stacks only: none on autograd's thread
  t.push_back(entry("alloc", 0xe5, 2048, 1312, stack({frame("at::mm(at::Tensor const&, at::Tensor const&)"), engine})));
  t.push_back(entry("alloc", 0xe2, 8192, 1320,
                    stack({frame("foreach_all_gather_copy_out", kFsdp + "_fsdp_collectives.py"), engine})));
  t.push_back(entry("alloc", 0xe3, 4096, 1330, reduce));
  t.push_back(entry("alloc", 0xe4, 1024, 1335, reduce));
  t.push_back(entry("free_requested", 0xe5, 2048, 1336, reduce));
  t.push_back(entry("free_completed", 0xe5, 2048, 1336));
  t.push_back(entry("free_requested", 0xe2, 8192, 1350,
                    stack({frame("reshard", kFsdp + "_fsdp_param_group.py"),
                           frame("post_backward", kFsdp + "_fsdp_param_group.py"), engine})));
  t.push_back(entry("free_completed", 0xe2, 8192, 1350));
  t.push_back(entry("free_requested", 0xe3, 4096, 1600, postBackward));
  t.push_back(entry("free_completed", 0xe3, 4096, 1600));
  t.push_back(entry("free_requested", 0xe1, 2048, 1810, zeroGrad));
  t.push_back(entry("free_completed", 0xe1, 2048, 1810));
  t.push_back(entry("free_requested", 0xe4, 1024, 1815, zeroGrad));
  t.push_back(entry("free_completed", 0xe4, 1024, 1815));
  pickleJson({{"segments", json::array()}, {"device_traces", json::array({t})}}, cudaSnapshotFileName(dir, 0));
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_EQ(loaded.error, "");
  const auto& rank = loaded.recording.rank(0);
  auto peak = [&](MemoryRole role) { return rank.peakByRole[static_cast<int>(role)]; };
  EXPECT_EQ(peak(MemoryRole::GradFull), 2048 + 2048) << "both gradients autograd made, at once from 1312 to 1336";
  EXPECT_EQ(peak(MemoryRole::ParamGathered), 8192) << "resharded in post_backward: not a gradient";
  EXPECT_EQ(peak(MemoryRole::CommBuffer), 4096) << "the reduce-scatter's input, released outside foreach_reduce";
  EXPECT_EQ(peak(MemoryRole::GradShard), 1024) << "made in foreach_reduce, freed by zero_grad";
  EXPECT_EQ(peak(MemoryRole::Activation), 0);
}

// A snapshot of another run left beside the traces (its history an hour later) is not drawn as
// this one's: the note says so and the profiler's memory events are shown.
TEST(CudaSnapshot, ASnapshotOfAnotherRunIsNotTakenForThisOne) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_stale");
  writeTrace(profilerTraceFileName(dir, 0), 0);
  json snapshot = rankZeroSnapshot();
  for (auto& e : snapshot["device_traces"][0]) e["time_us"] = e["time_us"].get<int64_t>() + int64_t{3600} * 1'000'000;
  pickleJson(snapshot, cudaSnapshotFileName(dir, 0));
  const auto loaded = loadProfilerTraces(dir);
  ASSERT_EQ(loaded.error, "");
  EXPECT_NE(loaded.note.find("has no allocation or free during the recorded steps (its history +3599.999 s to "
                             "+3600.001 s from the first step's start): not this recording's snapshot"),
            std::string::npos)
      << loaded.note;
  EXPECT_EQ(loaded.recording.rank(0).peakByRole[static_cast<int>(MemoryRole::Other)], 100000) << "the profiler's";
}

// Named among the files to open: a snapshot beside its rank's trace is read with it; one misnamed
// or elsewhere is refused saying how to place it.
TEST(CudaSnapshot, ASnapshotNamedAmongFilesIsReadBesideItsTraceOnly) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_named");
  writeTrace(profilerTraceFileName(dir, 0), 0);
  pickleJson(rankZeroSnapshot(), cudaSnapshotFileName(dir, 0));
  const std::string trace = profilerTraceFileName(dir, 0), snapshot = cudaSnapshotFileName(dir, 0);
  const auto both = loadProfilerTraceFiles({snapshot, trace});
  ASSERT_EQ(both.error, "");
  EXPECT_NE(both.note.find("GPU memory of rank 0 from the CUDA allocator's snapshot"), std::string::npos) << both.note;

  const std::string elsewhere = testing::freshTempDir("cuda_snapshot_elsewhere") + "/rank-0.memory.pickle";
  std::filesystem::copy_file(snapshot, elsewhere);
  const auto apart = loadProfilerTraceFiles({trace, elsewhere});
  EXPECT_NE(apart.error.find("rename or move it there"), std::string::npos) << apart.error;
}

// Snapshots with no trace (as a job records them for memory_viz): each rank's memory over its whole
// history, roles from the stacks alone (no step to place an allocation in), what was held before
// the history as other; nothing else made up.
TEST(CudaSnapshot, SnapshotsOnTheirOwnOpenAsMemoryOnly) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_alone");
  pickleJson(rankZeroSnapshot(), cudaSnapshotFileName(dir, 0));
  pickleJson(rankZeroSnapshot(), cudaSnapshotFileName(dir, 1));
  for (const auto& loaded :
       {loadJobDirectory(dir), loadProfilerTraceFiles({cudaSnapshotFileName(dir, 1), cudaSnapshotFileName(dir, 0)})}) {
    ASSERT_EQ(loaded.error, "");
    ASSERT_EQ(loaded.recording.ranks(), 2);
    EXPECT_EQ(loaded.source, "torch.cuda.memory");
    EXPECT_EQ(loaded.config.batch, 0) << "nothing of the job but its memory";
    EXPECT_TRUE(loaded.recording.rank(0).steps.empty());
    EXPECT_TRUE(loaded.recording.rank(0).collectives.empty());
    const auto& rank = loaded.recording.rank(1);
    auto peak = [&](MemoryRole role) { return rank.peakByRole[static_cast<int>(role)]; };
    EXPECT_EQ(peak(MemoryRole::Other), 70000 + 4096)
        << "what was held before the history, with the forward's allocation that no frame names (1200..1400)";
    EXPECT_EQ(peak(MemoryRole::OptimizerState), 4096 + 512);
    EXPECT_EQ(peak(MemoryRole::ParamGathered), 8192);
    EXPECT_EQ(peak(MemoryRole::GradFull), 2048) << "by its life, from the stacks";
    EXPECT_EQ(peak(MemoryRole::Activation), 0) << "no step says when forward ran";
    EXPECT_NE(loaded.note.find("CUDA memory snapshots without torch.profiler traces: memory only"), std::string::npos)
        << loaded.note;
    EXPECT_NE(loaded.note.find("rank 0 held 70000 bytes allocated before its history began"), std::string::npos)
        << loaded.note;
  }
  const std::string one = testing::freshTempDir("cuda_snapshot_one") + "/dump_snapshot.pickle";
  std::filesystem::copy_file(cudaSnapshotFileName(dir, 0), one);
  EXPECT_EQ(loadProfilerTraceFiles({one}).error, "") << "one snapshot named any way: rank 0";
  EXPECT_NE(loadProfilerTraceFiles({one, cudaSnapshotFileName(dir, 1)}).error.find("is not named for its rank"),
            std::string::npos);
}

// A real FSDP2 job recorded on an H200 (tests/data/pytorch_cuda_h200), its traces and snapshots
// gzipped as they are kept: opened as written, each rank's memory from its snapshot. Its 64 MiB of
// cuBLAS workspaces (one per thread that ran a matmul) are other, so the activations are the
// job's own, under a MiB for this small model; its parameters are what the recorder counted.
TEST(CudaSnapshot, ARealGpuJobOpensGzippedWithItsMemoryFromTheSnapshots) {
  const auto loaded = loadJobDirectory(std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/fsdp_w2");
  ASSERT_EQ(loaded.error, "");
  ASSERT_EQ(loaded.recording.ranks(), 2);
  EXPECT_NE(loaded.note.find("GPU memory of rank 0, 1 from the CUDA allocator's snapshot"), std::string::npos)
      << loaded.note;
  for (int r = 0; r < 2; ++r) {
    const auto& rank = loaded.recording.rank(r);
    auto peak = [&](MemoryRole role) { return rank.peakByRole[static_cast<int>(role)]; };
    EXPECT_EQ(peak(MemoryRole::ParamShard), 34452) << "rank-" << r << ".shardscope.json's count";
    EXPECT_GE(peak(MemoryRole::Other), 2 * (32 << 20)) << "the two cuBLAS workspaces";
    EXPECT_GT(peak(MemoryRole::Activation), 0);
    EXPECT_LT(peak(MemoryRole::Activation), 1 << 20) << "no workspace among the activations";
  }
  // Opened alone (memory only), the workspaces are other by their stacks, not counted among the
  // bytes no frame names.
  const std::string data = std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/fsdp_w2/";
  const auto alone = loadProfilerTraceFiles({data + "rank-0.memory.pickle.gz", data + "rank-1.memory.pickle.gz"});
  ASSERT_EQ(alone.error, "");
  const auto at = alone.note.find(" bytes allocated where no stack frame names a role");
  ASSERT_NE(at, std::string::npos) << alone.note;
  const auto begin = alone.note.rfind("rank 0: ", at) + 8;
  EXPECT_LT(std::stoll(alone.note.substr(begin, at - begin)), 1 << 20) << alone.note;
  // Beside a plain copy, the gzipped one is not read twice: the plain one is.
  const std::string dir = testing::freshTempDir("cuda_snapshot_both");
  pickleJson(rankZeroSnapshot(), cudaSnapshotFileName(dir, 0));
  std::filesystem::copy_file(std::string(SHARDSCOPE_TEST_DATA) + "/pytorch_cuda_h200/fsdp_w2/rank-0.memory.pickle.gz",
                             dir + "/rank-0.memory.pickle.gz");
  EXPECT_EQ(cudaSnapshotFileName(dir, 0), dir + "/rank-0.memory.pickle");
  const auto both = loadJobDirectory(dir);
  ASSERT_EQ(both.error, "");
  EXPECT_EQ(both.recording.ranks(), 1);
  EXPECT_EQ(both.recording.rank(0).peakByRole[static_cast<int>(MemoryRole::GradFull)], 2048) << "the plain one's";
}

// A damaged snapshot beside a trace: the job still opens (its memory then the profiler's, the note
// saying why), whatever the damage; never a crash.
TEST(CudaSnapshot, NoDamagedSnapshotCrashesTheJobsView) {
  const std::string dir = testing::freshTempDir("cuda_snapshot_damaged");
  writeTrace(profilerTraceFileName(dir, 0), 0);
  const std::string path = cudaSnapshotFileName(dir, 0);
  pickleJson(rankZeroSnapshot(), path);
  const std::string whole = testing::fileContents(path);
  std::mt19937 random(1127);
  int read = 0, refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string damaged = whole;
    for (int f = 0; f < 1 + i % 4; ++f) damaged[random() % damaged.size()] ^= static_cast<char>(1 + random() % 255);
    if (i % 5 == 0) damaged.resize(random() % damaged.size());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    const auto loaded = loadProfilerTraces(dir);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    (loaded.note.find("memory is the profiler's [memory] events instead") != std::string::npos ? refused : read) += 1;
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(read, 0) << "flips inside strings and numbers still read";
}

}  // namespace
}  // namespace shardscope::import
