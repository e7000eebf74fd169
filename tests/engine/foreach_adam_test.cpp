// The multi-tensor Adam/AdamW (engine/strategies/foreach_adam.h) against torch::optim's one-tensor-at-a-time
// versions, on CPU, where the _foreach_ kernels run their per-tensor fallback: same math, same
// state, so the two must agree to rounding after several steps. Whether it is faster is a GPU
// question (bench/gpu_strategies.py), not asked here.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <torch/cuda.h>

#include "engine/strategies/foreach_adam.h"
#include "engine/strategies/optimizer_factory.h"
#include "tests/support/mode_of.h"

namespace shardscope::engine {
namespace {

// Parameters of a few shapes and sizes (a matrix, a vector, a scalar-sized one), or with `large`
// three of 24 MiB each, more than one 64 MiB slice of the multi-tensor step.
std::vector<at::Tensor> makeParams(const at::Device& device, bool large = false) {
  at::manual_seed(7);
  std::vector<at::Tensor> params;
  if (large) {
    for (int i = 0; i < 3; ++i) params.push_back(at::randn({6 << 20}));
  } else {
    params = {at::randn({16, 8}), at::randn({8}), at::randn({1}), at::randn({3, 5, 2})};
  }
  for (auto& p : params) p = p.to(device).set_requires_grad(true);
  return params;
}

// Gradients that change from step to step and differ in scale between tensors. Tensor 1 gets its
// first gradient only at step 2, so its step count, and with it its bias corrections, trails the
// others': a step that used one count for the whole group would fail.
void setGradients(std::vector<at::Tensor>& params, int step) {
  for (size_t i = 0; i < params.size(); ++i) {
    if (i == 1 && step < 2) {
      params[i].mutable_grad() = at::Tensor();
      continue;
    }
    at::manual_seed(100 * step + static_cast<int64_t>(i));
    params[i].mutable_grad() = at::randn_like(params[i]) * (1.0 + static_cast<double>(i));
  }
}

// Rounding apart (lerp against mul-and-add), elementwise: relative 1e-5, or 1e-6 absolute for
// values near zero. A wrong step is off by about the learning rate, 1e-2.
void expectClose(const at::Tensor& ours, const at::Tensor& reference, size_t index) {
  EXPECT_TRUE(at::allclose(ours, reference, /*rtol=*/1e-5, /*atol=*/1e-6))
      << "parameter " << index << ": max abs difference " << (ours - reference).abs().max().item<double>();
}

template <typename Reference, typename Foreach, typename Options>
void expectSameTrajectory(const Options& options, const at::Device& device = at::kCPU, bool large = false) {
  auto refParams = makeParams(device, large);
  auto ourParams = makeParams(device, large);
  const auto initial = makeParams(device, large);
  Reference reference(refParams, options);
  Foreach ours(ourParams, options);
  for (int step = 0; step < 6; ++step) {
    setGradients(refParams, step);
    setGradients(ourParams, step);
    reference.step();
    ours.step();
  }
  for (size_t i = 0; i < refParams.size(); ++i) {
    EXPECT_FALSE(at::equal(refParams[i], initial[i])) << "parameter " << i << " did not move";
    expectClose(ourParams[i], refParams[i], i);
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

// eps of the order of the denominator: added after the bias correction, not before, or it shows.
TEST(ForeachAdam, FollowsTorchOptimAdamWithLargeEps) {
  expectSameTrajectory<torch::optim::Adam, ForeachAdam>(torch::optim::AdamOptions(1e-2).eps(0.5));
}

TEST(ForeachAdam, FollowsTorchOptimAdamWithCoupledWeightDecay) {
  expectSameTrajectory<torch::optim::Adam, ForeachAdam>(torch::optim::AdamOptions(1e-2).weight_decay(0.1));
}

TEST(ForeachAdam, FollowsTorchOptimAdamW) {
  expectSameTrajectory<torch::optim::AdamW, ForeachAdamW>(torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
}

TEST(ForeachAdam, FollowsTorchOptimAdamAcrossSlices) {
  expectSameTrajectory<torch::optim::Adam, ForeachAdam>(torch::optim::AdamOptions(1e-2), at::kCPU,
                                                        /*large=*/true);
}

// On CUDA the _foreach_ ops run their multi-tensor kernels, which the CPU cases above never reach.
TEST(ForeachAdam, FollowsTorchOptimAdamOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible";
  expectSameTrajectory<torch::optim::Adam, ForeachAdam>(torch::optim::AdamOptions(1e-2).eps(0.5),
                                                        at::Device(at::kCUDA, 0));
  expectSameTrajectory<torch::optim::AdamW, ForeachAdamW>(torch::optim::AdamWOptions(1e-2).weight_decay(0.1),
                                                          at::Device(at::kCUDA, 0), /*large=*/true);
}

TEST(ForeachAdam, ParametersWithoutGradientsAreLeftAlone) {
  auto params = makeParams(at::kCPU);
  const auto before = params[1].clone();
  ForeachAdam adam(params, torch::optim::AdamOptions(1e-2));
  setGradients(params, 0);  // none for tensor 1 at step 0
  ASSERT_FALSE(params[1].grad().defined());
  adam.step();
  EXPECT_TRUE(at::equal(params[1], before));
  EXPECT_EQ(optimizerStateTensors(adam).size(), 2u * (params.size() - 1));
}

// torch.optim's default implementation choice: multi-tensor on CUDA, one tensor at a time on CPU,
// where --offload cpu keeps a GPU rank's shards.
TEST(ForeachAdam, FactoryPicksItForCudaRunsOnly) {
  config::RunConfig config;
  for (const std::string optimizer : {"adam", "adamw"}) {
    config.optimizer = testing::modeOf<config::OptimizerKind>(optimizer);
    config.device = config::DeviceKind::Cpu;
    auto cpu = makeOptimizer(config, makeParams(at::kCPU));
    config.device = config::DeviceKind::Cuda;
    auto cuda = makeOptimizer(config, makeParams(at::kCPU));
    const bool cpuForeach = dynamic_cast<ForeachAdam*>(cpu.get()) || dynamic_cast<ForeachAdamW*>(cpu.get());
    const bool cudaForeach = dynamic_cast<ForeachAdam*>(cuda.get()) || dynamic_cast<ForeachAdamW*>(cuda.get());
    config.offload = config::Offload::Cpu;
    auto offloaded = makeOptimizer(config, makeParams(at::kCPU));
    config.offload = config::Offload::Off;
    const bool offloadForeach =
        dynamic_cast<ForeachAdam*>(offloaded.get()) || dynamic_cast<ForeachAdamW*>(offloaded.get());
    EXPECT_FALSE(cpuForeach) << optimizer;
    EXPECT_TRUE(cudaForeach) << optimizer;
    EXPECT_FALSE(offloadForeach) << optimizer;
  }
}

}  // namespace
}  // namespace shardscope::engine
