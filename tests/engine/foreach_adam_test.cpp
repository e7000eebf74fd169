// The multi-tensor Adam/AdamW (engine/foreach_adam.h) against torch::optim's one-tensor-at-a-time
// versions, on CPU, where the _foreach_ kernels run their per-tensor fallback: same math, same
// state, so the two must agree to rounding after several steps. Whether it is faster is a GPU
// question (bench/gpu_strategies.py), not asked here.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/foreach_adam.h"
#include "engine/optimizer_factory.h"

namespace shardscope {
namespace {

// Parameters of a few shapes and sizes (a matrix, a vector, a scalar-sized one), with gradients
// that change from step to step.
std::vector<at::Tensor> makeParams() {
  at::manual_seed(7);
  return {at::randn({16, 8}).set_requires_grad(true), at::randn({8}).set_requires_grad(true),
          at::randn({1}).set_requires_grad(true), at::randn({3, 5, 2}).set_requires_grad(true)};
}

void setGradients(std::vector<at::Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    at::manual_seed(100 * step + static_cast<int64_t>(i));
    params[i].mutable_grad() = at::randn_like(params[i]) * (1.0 + static_cast<double>(i));
  }
}

double maxRelDiff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs() / b.abs().clamp_min(1e-6)).max().item<double>();
}

template <typename Reference, typename Foreach, typename Options>
void expectSameTrajectory(const Options& options) {
  auto refParams = makeParams();
  auto ourParams = makeParams();
  Reference reference(refParams, options);
  Foreach ours(ourParams, options);
  for (int step = 0; step < 6; ++step) {
    setGradients(refParams, step);
    setGradients(ourParams, step);
    reference.step();
    ours.step();
  }
  for (size_t i = 0; i < refParams.size(); ++i) {
    EXPECT_FALSE(at::equal(refParams[i], makeParams()[i])) << "parameter " << i << " did not move";
    EXPECT_LT(maxRelDiff(ourParams[i], refParams[i]), 1e-5) << "parameter " << i;
  }
  // Same state, in torch::optim's own state type: what the memory listing reads.
  auto refState = optimizerStateTensors(reference);
  auto ourState = optimizerStateTensors(ours);
  ASSERT_EQ(ourState.size(), refState.size());
  ASSERT_EQ(ourState.size(), 2 * refParams.size());  // exp_avg and exp_avg_sq per parameter
  int64_t refBytes = 0, ourBytes = 0;
  for (size_t i = 0; i < refState.size(); ++i) {
    refBytes += refState[i].bytes;
    ourBytes += ourState[i].bytes;
  }
  EXPECT_EQ(ourBytes, refBytes);
}

TEST(ForeachAdam, FollowsTorchOptimAdam) {
  expectSameTrajectory<torch::optim::Adam, ForeachAdam>(torch::optim::AdamOptions(1e-2));
}

TEST(ForeachAdam, FollowsTorchOptimAdamWithCoupledWeightDecay) {
  expectSameTrajectory<torch::optim::Adam, ForeachAdam>(
      torch::optim::AdamOptions(1e-2).weight_decay(0.1));
}

TEST(ForeachAdam, FollowsTorchOptimAdamW) {
  expectSameTrajectory<torch::optim::AdamW, ForeachAdamW>(
      torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
}

TEST(ForeachAdam, ParametersWithoutGradientsAreLeftAlone) {
  auto params = makeParams();
  const auto before = params[1].clone();
  ForeachAdam adam(params, torch::optim::AdamOptions(1e-2));
  setGradients(params, 0);
  params[1].mutable_grad() = at::Tensor();
  adam.step();
  EXPECT_TRUE(at::equal(params[1], before));
  EXPECT_EQ(optimizerStateTensors(adam).size(), 2u * (params.size() - 1));
}

// torch.optim's default implementation choice: multi-tensor on CUDA, one tensor at a time on CPU.
TEST(ForeachAdam, FactoryPicksItForCudaRunsOnly) {
  RunConfig config;
  for (const std::string optimizer : {"adam", "adamw"}) {
    config.optimizer = optimizer;
    config.device = "cpu";
    auto cpu = makeOptimizer(config, makeParams());
    config.device = "cuda";
    auto cuda = makeOptimizer(config, makeParams());
    const bool cpuForeach = dynamic_cast<ForeachAdam*>(cpu.get()) || dynamic_cast<ForeachAdamW*>(cpu.get());
    const bool cudaForeach = dynamic_cast<ForeachAdam*>(cuda.get()) || dynamic_cast<ForeachAdamW*>(cuda.get());
    EXPECT_FALSE(cpuForeach) << optimizer;
    EXPECT_TRUE(cudaForeach) << optimizer;
  }
}

}  // namespace
}  // namespace shardscope
