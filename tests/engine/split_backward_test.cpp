// Zero bubble's split backward: I gives the input's gradient alone, W the weights' alone, together
// exactly one backward's numbers, and W does not run the input's path again.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "engine/strategies/split_backward.h"

namespace shardscope::engine {
namespace {

// An op on the input's path, before any weight, that counts its backward runs.
struct CountedIdentity : torch::autograd::Function<CountedIdentity> {
  static inline int backwards = 0;
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& x) { return x.clone(); }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    ++backwards;
    return grads;
  }
};

struct Block {
  at::Tensor w1 = torch::randn({8, 8}).requires_grad_(true);
  at::Tensor b1 = torch::randn({8}).requires_grad_(true);
  at::Tensor gamma = torch::ones({8}).requires_grad_(true);
  at::Tensor w2 = torch::randn({8, 8}).requires_grad_(true);

  std::vector<at::Tensor> weights() const { return {w1, b1, gamma, w2}; }

  // A transformer block's shapes of use: a linear with bias, a norm, gelu, a residual add.
  at::Tensor forward(const at::Tensor& x) const {
    const at::Tensor h = CountedIdentity::apply(x);
    at::Tensor y = torch::linear(h, w1, b1);
    y = torch::layer_norm(y, {8}, gamma);
    y = torch::gelu(y);
    return h + torch::linear(y, w2);
  }
};

TEST(SplitBackward, InputThenWeightsEqualsOneBackwardWithoutRunningTheInputPathTwice) {
  torch::manual_seed(0);
  Block block;
  const at::Tensor x = torch::randn({4, 3, 8});
  const at::Tensor gradOut = torch::randn({4, 3, 8});

  at::Tensor whole = x.clone().requires_grad_(true);
  block.forward(whole).backward(gradOut);
  std::vector<at::Tensor> expected;
  for (auto& w : block.weights()) {
    expected.push_back(w.grad().clone());
    w.mutable_grad() = at::Tensor();
  }

  at::Tensor input = x.clone().requires_grad_(true);
  at::Tensor output = block.forward(input);
  CountedIdentity::backwards = 0;
  std::shared_ptr<DeferredWeightGradients> deferred;
  const at::Tensor inputGrad = backwardInputOnly(output, gradOut, input, block.weights(), deferred);
  ASSERT_NE(deferred, nullptr) << "a block like this must split";
  EXPECT_TRUE(torch::allclose(inputGrad, whole.grad(), 1e-6, 1e-6));
  for (const auto& w : block.weights()) EXPECT_FALSE(w.grad().defined()) << "I computed a weight's gradient";
  EXPECT_EQ(CountedIdentity::backwards, 1);

  output = at::Tensor();  // as the pipeline does: W needs only what I kept
  backwardWeightsOnly(*deferred);
  EXPECT_EQ(CountedIdentity::backwards, 1) << "W ran the input's path again";
  const auto weights = block.weights();
  for (size_t i = 0; i < weights.size(); ++i) {
    ASSERT_TRUE(weights[i].grad().defined()) << "weight " << i;
    EXPECT_TRUE(torch::allclose(weights[i].grad(), expected[i], 1e-5, 1e-6)) << "weight " << i;
  }
}

TEST(SplitBackward, AWeightUsedTwiceOnThePathIsNotSplit) {
  torch::manual_seed(0);
  const at::Tensor w = torch::randn({8, 8}).requires_grad_(true);
  at::Tensor input = torch::randn({2, 8}).requires_grad_(true);
  const at::Tensor output = torch::linear(torch::tanh(torch::linear(input, w)), w);
  std::shared_ptr<DeferredWeightGradients> deferred;
  backwardInputOnly(output, torch::ones_like(output), input, {w}, deferred);
  EXPECT_EQ(deferred, nullptr) << "starting W from both uses would count the path between them twice";
}

}  // namespace
}  // namespace shardscope::engine
