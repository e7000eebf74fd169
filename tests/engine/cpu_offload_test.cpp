// --offload cpu's data path, run where this machine can run it: two ranks on threads of one
// process, over a real Gloo group, with the CPU as both "device" and host. The copies to the device
// and back are then real copies between CPU tensors, the optimizer steps on the host tensors, and
// every number must come out as without offload (the same kernels on the same values). On a GPU
// the same code copies through pinned memory on the communication stream (gpu_run_test.cpp
// checks it against FSDP2's CPUOffloadPolicy). What each rank says it holds, and where, is
// checked too: shards and optimizer state on the host between steps.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "engine/comm/backend_factories.h"
#include "engine/models/model.h"
#include "engine/launch/step_gate.h"
#include "engine/models/make_model.h"
#include "engine/recording/recorder.h"
#include "engine/comm/process_mesh.h"
#include "engine/strategies/strategy.h"
#include "engine/strategies/train_step.h"
#include "tests/support/run_cli.h"

namespace shardscope::engine {
namespace {

struct RankResult {
  std::map<std::string, at::Tensor> trained;
  std::vector<float> losses;
  std::vector<HeldTensor> heldAfterStep;  // what the rank holds after its last step
};

// `world` ranks on threads, `steps` steps of `config` each; rank 0's result. One intra-op thread,
// as each rank process has its own share of the cores: a BLAS that picks its thread count by the
// machine's load sums in another order from run to run, and the comparisons here are exact.
RankResult trainOnThreads(const config::RunConfig& config, int world) {
  at::set_num_threads(1);
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<RankResult> results(world);
  std::vector<std::string> errors(world);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.emplace_back([&, rank] {
      try {
        RendezvousInfo info;
        info.rank = rank;
        info.worldSize = world;
        ProcessMesh mesh(makeGlooCommunicator(store, info));
        auto model = makeModel(config);
        RankRecorder recorder;  // each rank's own, as each rank process has
        StepGate gate(recorder);
        auto strategy = makeStrategy(config, *model, mesh, at::Device(at::kCPU), gate);
        for (int step = 0; step < config.steps; ++step) {
          const Batch batch = localShard(model->globalBatch(config.seed, step, config.batch), rank, world);
          results[rank].losses.push_back(trainStep(*model, *strategy, batch).item<float>());
          results[rank].heldAfterStep = strategy->heldTensors();
        }
        results[rank].trained = strategy->fullParameters();
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int rank = 0; rank < world; ++rank) EXPECT_EQ(errors[rank], "") << "rank " << rank;
  return results[0];
}

config::RunConfig offloadConfig(config::StrategyKind strategy, config::Precision precision) {
  config::RunConfig c = testing::tinyGptConfig();
  c.strategy = strategy;
  c.precision = precision;
  c.steps = 3;
  c.lr = 1e-2;
  c.seed = 5;
  return c;
}

void expectSameTraining(const config::RunConfig& base, int world) {
  config::RunConfig offloaded = base;
  offloaded.offload = config::Offload::Cpu;
  const RankResult plain = trainOnThreads(base, world);
  const RankResult moved = trainOnThreads(offloaded, world);
  ASSERT_EQ(plain.losses.size(), static_cast<size_t>(base.steps));
  EXPECT_EQ(moved.losses, plain.losses);
  ASSERT_EQ(moved.trained.size(), plain.trained.size());
  for (const auto& [name, value] : plain.trained) {
    ASSERT_TRUE(moved.trained.count(name)) << name;
    EXPECT_TRUE(at::equal(moved.trained.at(name), value)) << name << " differs with --offload cpu";
  }
  // The parameters moved at all: a strategy that never stepped would also match itself.
  auto model = makeModel(base);
  const auto initial = model->initParameters(base.seed);
  EXPECT_FALSE(at::equal(plain.trained.at(model->params().front().name), initial.front()));
}

TEST(CpuOffload, FullShardTrainsAsWithoutOffload) {
  expectSameTraining(offloadConfig(config::StrategyKind::FullShard, config::Precision::Fp32), 2);
}

TEST(CpuOffload, ShardGradOpUnderBf16TrainsAsWithoutOffload) {
  expectSameTraining(offloadConfig(config::StrategyKind::ShardGradOp, config::Precision::Bf16), 2);
}

TEST(CpuOffload, HybridShardCopiesEachGradientAfterItsReplicateAllReduce) {
  config::RunConfig c = offloadConfig(config::StrategyKind::HybridShard, config::Precision::Fp32);
  c.world = 4;
  c.batch = 8;
  c.shardGroupSize = 2;
  expectSameTraining(c, 4);
}

TEST(CpuOffload, ShardsGradientsAndOptimizerStateAreHeldOnTheHost) {
  config::RunConfig c = offloadConfig(config::StrategyKind::FullShard, config::Precision::Fp32);
  c.offload = config::Offload::Cpu;
  const RankResult r = trainOnThreads(c, 2);
  using trace::MemoryRole;
  std::map<MemoryRole, int64_t> hostBytes, deviceBytes;
  for (const auto& t : r.heldAfterStep) (t.host ? hostBytes : deviceBytes)[t.role] += t.bytes;
  EXPECT_GT(hostBytes[MemoryRole::ParamShard], 0);
  EXPECT_GT(hostBytes[MemoryRole::OptimizerState], 0);
  EXPECT_EQ(deviceBytes[MemoryRole::ParamShard], 0);
  EXPECT_EQ(deviceBytes[MemoryRole::OptimizerState], 0);
  // Adam keeps two moments per shard element, fp32 like the shard.
  EXPECT_EQ(hostBytes[MemoryRole::OptimizerState], 2 * hostBytes[MemoryRole::ParamShard]);
}

}  // namespace
}  // namespace shardscope::engine
