// GradientBuckets on a real one-rank Gloo process group: what a bucket hands over after micro-batches.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include "engine/comm/backend_factories.h"
#include "engine/strategies/gradient_buckets.h"

namespace shardscope::engine {
namespace {

std::unique_ptr<Communicator> oneRankGloo() {
  RendezvousInfo info;  // rank 0 of 1 on 127.0.0.1
  return makeGlooCommunicator(c10::make_intrusive<c10d::HashStore>(), info);
}

// Runs one backward per entry of `scales`, with reduction only in the last (no_sync before it),
// of loss = sum(scale * w) for a one-element w of `dtype` (its gradient is `scale`), and returns
// the averaged gradient the buckets hand over.
float accumulatedGradient(at::ScalarType dtype, const std::vector<double>& scales) {
  auto comm = oneRankGloo();
  at::Tensor w = torch::ones({1}, torch::dtype(dtype)).set_requires_grad(true);
  GradientBuckets buckets({w}, /*bucketCapMb=*/25.0, *comm);
  for (size_t k = 0; k < scales.size(); ++k) {
    buckets.setEnabled(k + 1 == scales.size());
    (w * scales[k]).sum().backward();
  }
  float averaged = 0;
  buckets.finish([&](int, const at::Tensor& g) { averaged = g.item<float>(); });
  return averaged;
}

// bf16 has 8 significant bits: 1 + 1/512 rounds back to 1 in bf16, but not in fp32. PyTorch DDP
// under autocast adds micro-batch gradients in its fp32 .grad, so the sum must keep the 1/512.
TEST(GradientBuckets, Bf16MicroBatchGradientsAddUpInFp32) {
  const double small = 1.0 / 512;
  ASSERT_EQ(torch::tensor({1.0 + small}).to(at::kBFloat16).item<float>(), 1.0f) << "the premise";
  EXPECT_EQ(accumulatedGradient(at::kBFloat16, {1.0, small}), static_cast<float>(1.0 + small));
  EXPECT_EQ(accumulatedGradient(at::kBFloat16, {1.0, small, small, small}), static_cast<float>(1.0 + 3 * small));
  // fp32 gradients add up in .grad as before: the same sums.
  EXPECT_EQ(accumulatedGradient(at::kFloat, {1.0, small, small, small}), static_cast<float>(1.0 + 3 * small));
}

// The slot's partial sum belongs to one step: the next step starts from its own first micro-batch.
TEST(GradientBuckets, EachStepStartsItsSumAfresh) {
  auto comm = oneRankGloo();
  at::Tensor w = torch::ones({3}, torch::dtype(at::kBFloat16)).set_requires_grad(true);
  GradientBuckets buckets({w}, 25.0, *comm);
  for (const double scale : {2.0, 5.0}) {
    for (int k = 0; k < 2; ++k) {
      buckets.setEnabled(k == 1);
      (w * scale).sum().backward();
    }
    at::Tensor handed;
    buckets.finish([&](int, const at::Tensor& g) { handed = g.clone(); });
    EXPECT_TRUE(handed.equal(torch::full({3}, 2 * scale))) << "step with scale " << scale << ": " << handed;
    w.mutable_grad() = at::Tensor();  // the strategy releases the bf16 gradient after the step
  }
}

}  // namespace
}  // namespace shardscope::engine
