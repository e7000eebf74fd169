// GPU ranks (--device cuda, NCCL), run as a user would: the real binary, real processes. Skipped,
// with the reason printed, where no CUDA device is visible (CI); scripts/device_gpu.sh runs them on
// the GPU machine, where they must pass.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/launch/rank_device.h"
#include "engine/recording/tensor_files.h"
#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

using testing::freshTempDir;
using testing::runShardscope;

#define REQUIRE_GPU()                                             \
  if (visibleCudaDevices() == 0)                                  \
  GTEST_SKIP() << "no CUDA device visible (GPU tests run on the " \
                  "device machine: scripts/device_gpu.sh)"

const std::vector<std::string> kGpt = {"--model", "gpt", "--layers", "3",  "--hidden", "64",
                                       "--heads", "4",   "--seq",    "16", "--vocab",  "97"};

std::vector<std::string> runArgs(const std::string& strategy, int world, const std::string& device,
                                 const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"run"};
  a.insert(a.end(), kGpt.begin(), kGpt.end());
  // A --layers in `extra` stands instead of kGpt's (an option is given once).
  if (std::find(extra.begin(), extra.end(), "--layers") != extra.end()) {
    a.erase(std::find(a.begin(), a.end(), "--layers"), std::find(a.begin(), a.end(), "--layers") + 2);
  }
  std::vector<std::string> rest = {"--strategy",   strategy,
                                   "--world",      std::to_string(world),
                                   "--batch",      std::to_string(4 * world),
                                   "--steps",      "4",
                                   "--seed",       "5",
                                   "--device",     device,
                                   "--export",     dir,
                                   "--summary",    dir + "/summary.json",
                                   "--memory-csv", dir + "/memory.csv"};
  a.insert(a.end(), rest.begin(), rest.end());
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Runs `strategy` on two GPU ranks as it is and with `extra`: the two export directories, and
// whether both runs succeeded (a failed one is reported here).
struct RunPair {
  std::string without, with;
  bool ok = false;
};

RunPair runWithAndWithout(const std::string& strategy, const std::string& name, const std::vector<std::string>& extra) {
  RunPair pair{freshTempDir(name + "_without_" + strategy), freshTempDir(name + "_with_" + strategy)};
  auto a = runShardscope(runArgs(strategy, 2, "cuda", pair.without));
  auto b = runShardscope(runArgs(strategy, 2, "cuda", pair.with, extra));
  EXPECT_EQ(a.exitCode, 0) << a.output;
  EXPECT_EQ(b.exitCode, 0) << b.output;
  pair.ok = a.exitCode == 0 && b.exitCode == 0;
  return pair;
}

nlohmann::json readJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

double maxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  const double scale = std::max(b.abs().max().item<double>(), 1e-12);
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() / scale;
}

TEST(GpuRun, FullShardRecordsAllocatorLanesAndGpuTimedCollectives) {
  REQUIRE_GPU();
  const std::string dir = freshTempDir("gpu_full_shard");
  auto r = runShardscope(runArgs("full_shard", 2, "cuda", dir));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Each rank shut its process group down: ProcessGroupNCCL's destructor warns otherwise.
  EXPECT_EQ(r.output.find("destroy_process_group() was not called"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(measured by the CUDA caching allocator's trace hook)"), std::string::npos) << r.output;
  auto summary = readJson(dir + "/summary.json");
  ASSERT_EQ(summary["status"], "ok");
  const std::string device = summary["device"];
  EXPECT_NE(device.find("nccl"), std::string::npos) << device;
  if (visibleCudaDevices() == 1) {
    EXPECT_NE(device.find("2 ranks on one GPU"), std::string::npos) << device;
  }
  for (const auto& rank : summary["ranks"]) {
    const auto& peak = rank["peak_bytes"];
    EXPECT_GT(peak["param_shard"].get<int64_t>(), 0);
    EXPECT_GT(peak["param_gathered"].get<int64_t>(), 0);
    EXPECT_GT(peak["activation"].get<int64_t>(), 0);
    EXPECT_GT(peak["allocator_cache"].get<int64_t>(), 0) << "segments reserved from the driver";
    EXPECT_GT(peak["device_total"].get<int64_t>(), peak["total"].get<int64_t>());
    const auto& ag = rank["collectives"]["all_gather"];
    const auto& rs = rank["collectives"]["reduce_scatter"];
    EXPECT_GT(ag["count"].get<int64_t>(), 0);
    EXPECT_GT(rs["count"].get<int64_t>(), 0);
    EXPECT_GT(ag["time_s"].get<double>(), 0.0);
  }
  // The memory timeline shows full_shard's cycle: gathered parameters rise and fall to zero many
  // times per step (one expand/discard per unit), from the CUDA allocator's own events.
  std::ifstream csv(dir + "/memory.csv");
  std::string header, line;
  std::getline(csv, header);
  ASSERT_NE(header.find("allocator_cache"), std::string::npos) << header;
  int gatheredColumn = 2 + 1;  // rank,t_ns,param_shard,param_gathered
  int rises = 0;
  int64_t last = 0;
  while (std::getline(csv, line)) {
    std::stringstream s(line);
    std::string cell;
    int rank = 0;
    int64_t gathered = 0;
    for (int c = 0; std::getline(s, cell, ','); ++c) {
      if (c == 0) rank = std::stoi(cell);
      if (c == gatheredColumn) gathered = std::stoll(cell);
    }
    if (rank != 0) continue;
    if (last == 0 && gathered > 0) ++rises;
    last = gathered;
  }
  EXPECT_GE(rises, 4) << "param_gathered should fall to zero and rise again every step";
}

// Runs `strategy` at `world` with `options` (SGD among them) on CPU ranks and on GPU ranks: the
// losses agree within 1e-4 relative, and every parameter's update within 1e-3, as CPU and GPU
// kernels sum in different orders.
void expectGpuTrainsAsCpu(const std::string& strategy, int world, const std::vector<std::string>& options,
                          const std::string& tag) {
  const std::string cpu = freshTempDir(tag + "_cpu_" + strategy + "_w" + std::to_string(world));
  const std::string gpu = freshTempDir(tag + "_gpu_" + strategy + "_w" + std::to_string(world));
  auto a = runShardscope(runArgs(strategy, world, "cpu", cpu, options));
  auto b = runShardscope(runArgs(strategy, world, "cuda", gpu, options));
  ASSERT_EQ(a.exitCode, 0) << a.output;
  ASSERT_EQ(b.exitCode, 0) << b.output;
  EXPECT_LT(maxRelDiff(loadTensor(gpu + "/losses.pt"), loadTensor(cpu + "/losses.pt")), 1e-4) << strategy;
  const auto init = loadTensorDict(cpu + "/init.pt");
  const auto finalCpu = loadTensorDict(cpu + "/final.pt");
  const auto finalGpu = loadTensorDict(gpu + "/final.pt");
  ASSERT_EQ(finalCpu.size(), finalGpu.size());
  for (const auto& [name, value] : finalCpu) {
    // The update moved the parameter, and both engines moved it the same way.
    EXPECT_LT(maxRelDiff(finalGpu.at(name) - init.at(name), value - init.at(name)), 1e-3) << strategy << " " << name;
  }
}

// SGD: Adam divides by the root of tiny second moments, which turns rounding differences of
// near-zero gradients into full-size updates; SGD's update is the gradient itself.
const std::vector<std::string> kSgd = {"--optimizer", "sgd", "--lr", "0.05"};

// With no --gpu-memory and no --peak-tflops, a rank alone on its GPU reports the GPU's memory and
// the matmul peak it measured before training: the capacity line, headroom and MFU use them, and
// the measurement's tensors never show in the memory lanes (the first samples are cuBLAS's
// workspaces, made at setup, then the model's).
TEST(GpuRun, ARankAloneOnItsGpuReportsItsMemoryAndMeasuredPeak) {
  REQUIRE_GPU();
  const std::string dir = freshTempDir("gpu_device_facts");
  auto r = runShardscope(runArgs("ddp", 1, "cuda", dir, {"--precision", "bf16"}));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  const auto summary = readJson(dir + "/summary.json");
  EXPECT_GT(summary["device_memory_bytes"].get<double>(), 10e9) << "an H100 or H200 has 80 GB or more";
  // bf16 dense matmul on an H100/H200: several hundred TFLOP/s, below the 989 of the datasheet.
  EXPECT_GT(summary["measured_peak_flops"].get<double>(), 100e12);
  EXPECT_LT(summary["measured_peak_flops"].get<double>(), 1000e12);
  EXPECT_NE(summary["mfu_peak"].get<std::string>().find("measured"), std::string::npos);
  EXPECT_GT(summary["ranks"][0]["throughput"]["mfu"].get<double>(), 0.0);
  EXPECT_NE(r.output.find("headroom: the device's own"), std::string::npos) << r.output;
  // The measurement's three 8192 x 8192 bf16 matrices (134 MB each) were freed and the cache
  // emptied before the allocator hook: neither the tensor lanes nor the cache lane ever held one.
  EXPECT_LT(summary["ranks"][0]["peak_bytes"]["total"].get<double>(), 134e6);
  EXPECT_LT(summary["ranks"][0]["peak_bytes"]["allocator_cache"].get<double>(), 134e6);
}

// cuBLAS keeps a workspace per thread and stream for the life of the process (32 MiB on a Hopper
// GPU, and cuBLASLt's 1 MiB). Made at a rank's first matmuls they were recorded as activation
// held between steps (33 MiB at world 1, 65 MiB per rank on a shared GPU, on the H200): the rank
// now makes them at setup, as other, and the measured peak's is freed. Between steps a rank holds
// no activation (the last loss scalar's few bytes at most).
TEST(GpuRun, CublasWorkspacesAreOtherNotActivationHeldBetweenSteps) {
  REQUIRE_GPU();
  for (int world : {1, 2}) {  // alone, with its peak measured first; and (on a one-GPU machine) shared
    SCOPED_TRACE("world " + std::to_string(world));
    const std::string dir = freshTempDir("gpu_cublas_workspaces_w" + std::to_string(world));
    auto r = runShardscope(runArgs("full_shard", world, "cuda", dir, {"--precision", "bf16"}));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    const auto summary = readJson(dir + "/summary.json");
    for (const auto& rank : summary["ranks"]) {
      const auto& after = rank["after_step_bytes"];
      EXPECT_LT(after["activation"].get<int64_t>(), 1024) << after.dump();
      // Two threads' cuBLAS workspaces: 32 MiB each on a Hopper GPU, at least 4 MiB on any other.
      EXPECT_GE(after["other"].get<int64_t>(), 8 << 20) << "the workspaces, held as other: " << after.dump();
    }
  }
}

TEST(GpuRun, MatchesTheCpuEngine) {
  REQUIRE_GPU();
  for (const int world : {1, 2, 4}) {
    for (const std::string strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
      SCOPED_TRACE(strategy + " world " + std::to_string(world));
      expectGpuTrainsAsCpu(strategy, world, kSgd, "parity");
    }
  }
}

// --tp 2 on NCCL: the tensor groups' collectives, and the join of the split parameters after the
// last step, run on device tensors, and training is the CPU engine's. On the H200 (2026-11-29)
// such runs trained as on CPU but then failed joining the parameters (host slices handed to NCCL);
// this case was written with the fix, after that session.
TEST(GpuRun, TensorParallelMatchesTheCpuEngine) {
  REQUIRE_GPU();
  auto options = kSgd;
  options.insert(options.end(), {"--tp", "2"});
  for (const int world : {2, 4}) {
    for (const std::string strategy : {"ddp", "full_shard"}) {
      SCOPED_TRACE(strategy + " --tp 2 world " + std::to_string(world));
      expectGpuTrainsAsCpu(strategy, world, options, "tensor_parallel");
    }
  }
}

// --pp 2 on NCCL's point-to-point sends and receives: every schedule (the looped ones at 2 stages
// a rank, 5 blocks so that each of the 4 stages holds one), and 1F1B inside full_shard over dp 2,
// train as on the CPU engine (Gloo). Written after the last GPU session; not yet run on a GPU.
TEST(GpuRun, PipelineSchedulesMatchTheCpuEngine) {
  REQUIRE_GPU();
  struct Case {
    std::string schedule;
    int world;
    std::string strategy;
  };
  const std::vector<Case> cases = {{"gpipe", 2, "ddp"},       {"1f1b", 2, "ddp"}, {"interleaved_1f1b", 2, "ddp"},
                                   {"zero_bubble", 2, "ddp"}, {"zbv", 2, "ddp"},  {"dualpipev", 2, "ddp"},
                                   {"1f1b", 4, "full_shard"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.schedule + " " + c.strategy + " world " + std::to_string(c.world));
    auto options = kSgd;
    options.insert(options.end(), {"--layers", "5", "--pp", "2", "--schedule", c.schedule, "--microbatches", "4"});
    if (c.schedule != "gpipe" && c.schedule != "1f1b") {
      options.insert(options.end(), {"--stages-per-rank", "2"});
    }
    expectGpuTrainsAsCpu(c.strategy, c.world, options, "pipeline_" + c.schedule);
  }
}

// Gradient accumulation on GPU ranks (world 2, 2 micro-batches): every strategy skips its
// reduction in the first micro-batch and trains as the CPU engine does. First checked on an H100
// by hand (losses of ddp and full_shard equal to the CPU engine's); this makes it a test.
TEST(GpuRun, AccumulationMatchesTheCpuEngine) {
  REQUIRE_GPU();
  auto options = kSgd;
  options.insert(options.end(), {"--accumulate", "2"});
  for (const std::string strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
    SCOPED_TRACE(strategy);
    expectGpuTrainsAsCpu(strategy, 2, options, "accumulate");
  }
  // Under bf16 every strategy adds the micro-batches' bf16 gradients up in fp32 (ddp and zero1 in
  // their bucket slots, the sharded ones in fp32 accumulators): on CPU they train bit-identically
  // (Accumulation.Bf16TrainsBitIdenticallyInEveryStrategy); here within rounding of the reductions.
  std::map<std::string, at::Tensor> bf16Losses;
  for (const std::string strategy : {"shard_grad_op", "ddp", "zero1"}) {
    const std::string dir = freshTempDir("accumulate_gpu_bf16_" + strategy);
    auto r = runShardscope(runArgs(strategy, 2, "cuda", dir, {"--accumulate", "2", "--precision", "bf16"}));
    ASSERT_EQ(r.exitCode, 0) << r.output;
    bf16Losses[strategy] = loadTensor(dir + "/losses.pt");
  }
  for (const std::string strategy : {"ddp", "zero1"}) {
    EXPECT_LT(maxRelDiff(bf16Losses.at(strategy), bf16Losses.at("shard_grad_op")), 1e-6) << strategy << " bf16";
  }
}

// SHARDSCOPE_NCCL_KERNEL_STREAM=own runs the NCCL kernels on shardscope's communication stream
// (ProcessGroupNCCL's synchronous mode) instead of ProcessGroupNCCL's own stream: the same
// collectives in the same order, so training is the same, and they are still timed on the GPU.
TEST(GpuRun, NcclKernelsOnTheCommunicationStreamTrainTheSame) {
  REQUIRE_GPU();
  for (const std::string strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
    SCOPED_TRACE(strategy);
    const std::string pg = freshTempDir("kernels_pg_" + strategy);
    const std::string own = freshTempDir("kernels_own_" + strategy);
    auto a = runShardscope(runArgs(strategy, 2, "cuda", pg));
    auto b = runShardscope(runArgs(strategy, 2, "cuda", own), {"SHARDSCOPE_NCCL_KERNEL_STREAM=own"});
    ASSERT_EQ(a.exitCode, 0) << a.output;
    ASSERT_EQ(b.exitCode, 0) << b.output;
    EXPECT_LT(maxRelDiff(loadTensor(own + "/losses.pt"), loadTensor(pg + "/losses.pt")), 1e-6);
    const auto summary = readJson(own + "/summary.json");
    for (const auto& rank : summary["ranks"]) {
      // GPU-timed: the CUDA events around each kernel on the communication stream resolved.
      double seconds = 0;
      for (const auto& [op, stats] : rank["collectives"].items()) seconds += stats["time_s"].get<double>();
      EXPECT_GT(seconds, 0) << "collectives timed on rank " << rank["rank"];
    }
  }
}

// --bind-cores rank on GPU ranks: pinned before CUDA and NCCL start their threads, the two ranks
// sharing the GPU train as unpinned ones, each reporting its own slice of the allowed cores.
TEST(GpuRun, RanksPinnedToCoresTrainTheSame) {
  REQUIRE_GPU();
  const auto [unpinned, pinned, ok] = runWithAndWithout("shard_grad_op", "bind_cores", {"--bind-cores", "rank"});
  ASSERT_TRUE(ok);
  EXPECT_LT(maxRelDiff(loadTensor(pinned + "/losses.pt"), loadTensor(unpinned + "/losses.pt")), 1e-6);
  std::vector<std::string> slices;
  // Held in a variable: a range-for over readJson(...)["ranks"] would iterate a destroyed temporary.
  const auto summary = readJson(pinned + "/summary.json");
  for (const auto& rank : summary["ranks"]) {
    const std::string placement = rank["placement"];
    const auto at = placement.rfind(" / cores ");
    ASSERT_NE(at, std::string::npos) << placement;
    slices.push_back(placement.substr(at));
  }
  ASSERT_EQ(slices.size(), 2u);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  if (CPU_COUNT(&allowed) >= 2) EXPECT_NE(slices[0], slices[1]);
}

// LoRA on GPU ranks: the adapters train as on CPU ranks, and no strategy touches a frozen weight,
// in fp32 or under bf16 (where every strategy holds the frozen weights in bf16 only, so they come
// back as their initial values rounded to bf16).
TEST(GpuRun, LoraTrainsTheAdaptersAsOnCpuAndKeepsTheBaseFrozen) {
  REQUIRE_GPU();
  for (const std::string strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
    SCOPED_TRACE(strategy);
    const std::vector<std::string> lora = {"--lora-rank", "4", "--optimizer", "sgd", "--lr", "0.5"};
    const std::string cpu = freshTempDir("lora_cpu_" + strategy);
    const std::string gpu = freshTempDir("lora_gpu_" + strategy);
    const std::string bf16 = freshTempDir("lora_gpu_bf16_" + strategy);
    auto withBf16 = lora;
    withBf16.insert(withBf16.end(), {"--precision", "bf16"});
    auto a = runShardscope(runArgs(strategy, 2, "cpu", cpu, lora));
    auto b = runShardscope(runArgs(strategy, 2, "cuda", gpu, lora));
    auto c = runShardscope(runArgs(strategy, 2, "cuda", bf16, withBf16));
    ASSERT_EQ(a.exitCode, 0) << a.output;
    ASSERT_EQ(b.exitCode, 0) << b.output;
    ASSERT_EQ(c.exitCode, 0) << c.output;
    EXPECT_LT(maxRelDiff(loadTensor(gpu + "/losses.pt"), loadTensor(cpu + "/losses.pt")), 1e-4);
    const auto init = loadTensorDict(cpu + "/init.pt");
    const auto finalCpu = loadTensorDict(cpu + "/final.pt");
    for (const std::string& dir : {gpu, bf16}) {
      const auto finalGpu = loadTensorDict(dir + "/final.pt");
      ASSERT_EQ(finalGpu.size(), init.size());
      int adapters = 0;
      for (const auto& [name, value] : finalGpu) {
        if (name.find(".lora_") == std::string::npos) {
          const at::Tensor expected = dir == bf16 ? init.at(name).to(at::kBFloat16).to(at::kFloat) : init.at(name);
          EXPECT_TRUE(value.equal(expected)) << dir << ": frozen " << name << " changed";
          continue;
        }
        ++adapters;
        EXPECT_GT(maxRelDiff(value, init.at(name)), 1e-4) << dir << ": " << name << " did not move";
        if (dir == gpu) {
          EXPECT_LT(maxRelDiff(value - init.at(name), finalCpu.at(name) - init.at(name)), 1e-3) << name;
        }
      }
      EXPECT_EQ(adapters, 8 * 3) << "3 blocks, 4 matrices, A and B";
    }
  }
}

// Activation checkpointing on GPU ranks: the recomputed forward gives the losses the plain run gives
// (cuBLAS picks the same kernels for the same shapes), and the activation peak falls.
TEST(GpuRun, ActivationCheckpointingKeepsTheLossesAndLowersTheActivationPeak) {
  REQUIRE_GPU();
  for (const std::string strategy : {"ddp", "full_shard"}) {
    SCOPED_TRACE(strategy);
    const auto [plain, recomputed, ok] =
        runWithAndWithout(strategy, "checkpoint", {"--activation-checkpointing", "blocks"});
    ASSERT_TRUE(ok);
    EXPECT_LT(maxRelDiff(loadTensor(recomputed + "/losses.pt"), loadTensor(plain + "/losses.pt")), 1e-6);
    const auto off = readJson(plain + "/summary.json"), on = readJson(recomputed + "/summary.json");
    for (size_t r = 0; r < off["ranks"].size(); ++r) {
      EXPECT_LT(on["ranks"][r]["peak_bytes"]["activation"].get<int64_t>(),
                off["ranks"][r]["peak_bytes"]["activation"].get<int64_t>())
          << "rank " << r;
    }
  }
}

// --offload cpu on GPU ranks (FSDP2's CPUOffloadPolicy): training as without it (the CPU's Adam
// instead of the GPU's, within rounding), the shards and the optimizer's state in host memory (the
// host lane holds what the device held without offload, the device none of it), the device's peak
// lower, and the copies each way in the trace. Parity with FSDP2 itself: pytorch_parity.py
// --offload (scripts/device_gpu.sh parity).
TEST(GpuRun, CpuOffloadTrainsAsWithoutAndKeepsItsStateInHostMemory) {
  REQUIRE_GPU();
  // hybrid_shard at world 4: 2 shard groups of 2, its gradients copied after the replicate all-reduce.
  const std::pair<std::string, int> runs[] = {{"full_shard", 2}, {"shard_grad_op", 2}, {"hybrid_shard", 4}};
  for (const auto& [strategy, world] : runs) {
    SCOPED_TRACE(strategy);
    const std::string plain = freshTempDir("offload_without_" + strategy);
    const std::string moved = freshTempDir("offload_with_" + strategy);
    auto a = runShardscope(runArgs(strategy, world, "cuda", plain));
    auto b =
        runShardscope(runArgs(strategy, world, "cuda", moved, {"--offload", "cpu", "--trace", moved + "/trace.json"}));
    ASSERT_EQ(a.exitCode, 0) << a.output;
    ASSERT_EQ(b.exitCode, 0) << b.output;
    EXPECT_NE(b.output.find("Peak host memory per rank"), std::string::npos) << b.output;
    EXPECT_EQ(a.output.find("Peak host memory per rank"), std::string::npos) << a.output;
    EXPECT_LT(maxRelDiff(loadTensor(moved + "/losses.pt"), loadTensor(plain + "/losses.pt")), 1e-5);
    const auto off = readJson(plain + "/summary.json"), on = readJson(moved + "/summary.json");
    for (size_t r = 0; r < off["ranks"].size(); ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      const auto& device = on["ranks"][r]["peak_bytes"];
      const auto& host = on["ranks"][r]["peak_host_bytes"];
      const auto& before = off["ranks"][r]["peak_bytes"];
      ASSERT_TRUE(host.is_object()) << on["ranks"][r].dump();
      EXPECT_TRUE(off["ranks"][r]["peak_host_bytes"].is_null());
      // The same shards, counted by two allocators: the CUDA one may round each of the 4 units' up.
      EXPECT_NEAR(host["param_shard"].get<double>(), before["param_shard"].get<double>(), 4 * 512);
      // Adam's two moments, and its step's temporaries, on the host.
      EXPECT_GE(host["optimizer_state"].get<int64_t>(), 2 * host["param_shard"].get<int64_t>());
      EXPECT_EQ(device["optimizer_state"].get<int64_t>(), 0);
      EXPECT_LT(device["param_shard"].get<int64_t>(), before["param_shard"].get<int64_t>());
      EXPECT_LT(device["total"].get<int64_t>(), before["total"].get<int64_t>());
    }
    std::ifstream in(moved + "/trace.json");
    const std::string trace((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // pin_host_memory: the shards pinned at setup and the gradient shards in the first backward.
    for (const char* expected : {"\"copy_to_device\"", "\"copy_to_host\"", "\"pin_host_memory\"", "\"host memory\""}) {
      EXPECT_NE(trace.find(expected), std::string::npos) << expected;
    }
  }
}

// --recording off sets up no device instrumentation (no allocator hook, CUDA events, polling
// thread or NVML samples): training is the same, and the outputs claim no memory or traffic.
TEST(GpuRun, UnrecordedRunTrainsTheSameWithoutInstrumentation) {
  REQUIRE_GPU();
  const std::string on = freshTempDir("gpu_recording_on");
  const std::string off = freshTempDir("gpu_recording_off");
  auto a = runShardscope(runArgs("full_shard", 2, "cuda", on));
  auto b = runShardscope(runArgs("full_shard", 2, "cuda", off, {"--recording", "off"}));
  ASSERT_EQ(a.exitCode, 0) << a.output;
  ASSERT_EQ(b.exitCode, 0) << b.output;
  EXPECT_NE(b.output.find("not recorded (--recording off)"), std::string::npos) << b.output;
  EXPECT_LT(maxRelDiff(loadTensor(off + "/losses.pt"), loadTensor(on + "/losses.pt")), 1e-6);
  const auto summary = readJson(off + "/summary.json");
  for (const auto& rank : summary["ranks"]) {
    EXPECT_TRUE(rank["peak_bytes"].is_null());
    EXPECT_TRUE(rank["collectives"].is_null());
    EXPECT_EQ(rank["step_time_s"].size(), 4u);
  }
}

TEST(GpuRun, Bf16MixedPrecisionTrainsLikeFp32) {
  REQUIRE_GPU();
  for (const std::string strategy : {"ddp", "zero1", "full_shard", "shard_grad_op"}) {
    const auto [fp32, bf16, ok] = runWithAndWithout(strategy, "precision", {"--precision", "bf16"});
    ASSERT_TRUE(ok);
    const auto lossFp32 = loadTensor(fp32 + "/losses.pt");
    const auto lossBf16 = loadTensor(bf16 + "/losses.pt");
    const double diff = maxRelDiff(lossBf16, lossFp32);
    EXPECT_LT(diff, 2e-2) << strategy;  // bf16 rounding, not a different computation
    EXPECT_GT(diff, 0.0) << strategy;   // and it really computed in bf16
    // Master weights and reduction stay fp32: the exported parameters are fp32.
    for (const auto& [name, value] : loadTensorDict(bf16 + "/final.pt")) {
      EXPECT_EQ(value.scalar_type(), at::kFloat) << name;
    }
    // The parameters compute runs on are bf16: half the fp32 bytes at the peak. FSDP gathers them
    // per unit under both precisions; zero1's fp32 replica is its persistent (param_shard) buffer,
    // while under bf16 that full buffer is the all-gathered compute copy.
    auto sa = readJson(fp32 + "/summary.json"), sb = readJson(bf16 + "/summary.json");
    if (strategy != "ddp") {
      const char* fp32Role = strategy == "zero1" ? "param_shard" : "param_gathered";
      const double ratio = sb["ranks"][0]["peak_bytes"]["param_gathered"].get<double>() /
                           sa["ranks"][0]["peak_bytes"][fp32Role].get<double>();
      EXPECT_NEAR(ratio, 0.5, 0.05) << strategy;
    }
  }
}

TEST(GpuRun, PrefetchOverlapsAllGathersWithCompute) {
  REQUIRE_GPU();
  const std::string none = freshTempDir("prefetch0");
  const std::string one = freshTempDir("prefetch1");
  auto a = runShardscope(runArgs("full_shard", 2, "cuda", none, {"--prefetch", "0"}));
  auto b = runShardscope(runArgs("full_shard", 2, "cuda", one, {"--prefetch", "1"}));
  ASSERT_EQ(a.exitCode, 0) << a.output;
  ASSERT_EQ(b.exitCode, 0) << b.output;
  const double overlap0 = readJson(none + "/summary.json")["ranks"][0]["overlap_pct"];
  const double overlap1 = readJson(one + "/summary.json")["ranks"][0]["overlap_pct"];
  EXPECT_GT(overlap1, 0.0);
  EXPECT_GT(overlap1, overlap0) << "prefetch should hide all-gathers behind compute";
  // Same arithmetic either way.
  EXPECT_LT(maxRelDiff(loadTensor(one + "/losses.pt"), loadTensor(none + "/losses.pt")), 1e-6);
}

}  // namespace
}  // namespace shardscope::engine

namespace shardscope::engine {
namespace {

// A GPU rank killed mid-run: the peers blocked in NCCL collectives are stopped, the run ends with
// the dead rank named, and what was recorded up to then is kept.
TEST(GpuRun, KilledRankIsNamedAndTheTraceIsKept) {
  REQUIRE_GPU();
  const std::string dir = freshTempDir("gpu_kill");
  auto args = runArgs("full_shard", 2, "cuda", dir);
  args.insert(args.end(), {"--trace", dir + "/trace.json"});
  auto r = runShardscope(args, {"SHARDSCOPE_FAULT=rank=1,step=2,mode=kill"}, 180);
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("rank 1 died: killed by signal 9"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, 120.0) << "peers waiting in NCCL must be stopped, not left to time out";
  auto summary = readJson(dir + "/summary.json");
  EXPECT_EQ(summary["status"], "failed");
  EXPECT_EQ(summary["steps"].size(), 2u);
  std::ifstream trace(dir + "/trace.json");
  ASSERT_TRUE(trace.good());
  const auto json = nlohmann::json::parse(trace);
  EXPECT_GT(json["traceEvents"].size(), 10u);
}

}  // namespace
}  // namespace shardscope::engine
