#include "engine/strategies/split_backward.h"

#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

namespace shardscope::engine {

namespace ag = torch::autograd;

// One node where weights' gradients leave the path to the input: the gradients that arrived there
// during I, and the weights W carries them to.
struct WeightBranch {
  std::shared_ptr<ag::Node> node;
  ag::variable_list arrived;  // the node's incoming gradients, as I's backward passed it
  ag::edge_list weights;
};

struct DeferredWeightGradients {
  std::vector<WeightBranch> branches;
};

namespace {

// Keeps a copy of the gradients a node receives, leaving them unchanged.
struct RememberArrivingGradients : ag::FunctionPreHook {
  explicit RememberArrivingGradients(ag::variable_list& into) : into_(into) {}
  ag::variable_list operator()(const ag::variable_list& grads) override {
    into_ = grads;
    return grads;
  }
  ag::variable_list& into_;
};

struct Graph {
  std::unordered_map<ag::Node*, std::vector<ag::Node*>> consumers;  // who passes each node its gradient
  std::unordered_map<ag::Node*, std::shared_ptr<ag::Node>> owned;
};

// Every node the backward from `root` can reach, with the nodes that feed it.
Graph graphFrom(const std::shared_ptr<ag::Node>& root) {
  Graph g;
  std::vector<std::shared_ptr<ag::Node>> todo{root};
  g.owned[root.get()] = root;
  while (!todo.empty()) {
    auto node = std::move(todo.back());
    todo.pop_back();
    for (const ag::Edge& edge : node->next_edges()) {
      if (!edge.function) continue;
      g.consumers[edge.function.get()].push_back(node.get());
      if (g.owned.emplace(edge.function.get(), edge.function).second) todo.push_back(edge.function);
    }
  }
  return g;
}

// The nodes from `start` towards the output, stopping at (and collecting in `met`) any of `stopAt`.
std::unordered_set<ag::Node*> towardsOutput(ag::Node* start, const Graph& g,
                                            const std::unordered_set<ag::Node*>& stopAt,
                                            std::unordered_set<ag::Node*>& met) {
  std::unordered_set<ag::Node*> seen{start};
  std::vector<ag::Node*> todo{start};
  while (!todo.empty()) {
    ag::Node* node = todo.back();
    todo.pop_back();
    const auto it = g.consumers.find(node);
    if (it == g.consumers.end()) continue;
    for (ag::Node* consumer : it->second) {
      if (stopAt.count(consumer)) {
        met.insert(consumer);
      } else if (seen.insert(consumer).second) {
        todo.push_back(consumer);
      }
    }
  }
  return seen;
}

// Each weight's branch: the one node of the input's path its gradient leaves from. Empty where a
// weight meets that path at no node or at several (a weight used twice): W could not then start
// from those nodes without counting part of the input's path twice.
std::vector<WeightBranch> branchesOf(const at::Tensor& output, const at::Tensor& input,
                                     const std::vector<at::Tensor>& weights) {
  const Graph g = graphFrom(output.grad_fn());
  std::unordered_set<ag::Node*> none, unused;
  const auto inputPath = towardsOutput(ag::impl::gradient_edge(input).function.get(), g, none, unused);
  std::vector<WeightBranch> branches;
  std::unordered_map<ag::Node*, size_t> branchOf;
  for (const at::Tensor& w : weights) {
    const ag::Edge edge = ag::impl::gradient_edge(w);
    if (!g.owned.count(edge.function.get())) continue;  // unused here: no gradient either way
    std::unordered_set<ag::Node*> met;
    towardsOutput(edge.function.get(), g, inputPath, met);
    if (met.size() != 1) return {};
    ag::Node* node = *met.begin();
    const auto [it, added] = branchOf.emplace(node, branches.size());
    if (added) branches.push_back({g.owned.at(node), {}, {}});
    branches[it->second].weights.push_back(edge);
  }
  return branches;
}

void removeHook(ag::Node& node, const ag::FunctionPreHook* hook) {
  auto& hooks = node.pre_hooks();
  for (auto it = hooks.begin(); it != hooks.end(); ++it) {
    if (it->get() == hook) {
      hooks.erase(it);
      return;
    }
  }
}

}  // namespace

at::Tensor backwardInputOnly(const at::Tensor& output, const at::Tensor& gradOutput, const at::Tensor& input,
                             const std::vector<at::Tensor>& weights,
                             std::shared_ptr<DeferredWeightGradients>& deferred) {
  auto kept = std::make_shared<DeferredWeightGradients>();
  kept->branches = branchesOf(output, input, weights);
  const bool splits = !kept->branches.empty();
  std::vector<const ag::FunctionPreHook*> hooks;
  for (WeightBranch& branch : kept->branches) {
    auto hook = std::make_unique<RememberArrivingGradients>(branch.arrived);
    hooks.push_back(hook.get());
    branch.node->add_pre_hook(std::move(hook));
  }
  // The hooks point into `kept`: off the nodes again however the backward ends (it may throw).
  struct RemoveHooks {
    DeferredWeightGradients& kept;
    const std::vector<const ag::FunctionPreHook*>& hooks;
    ~RemoveHooks() {
      for (size_t i = 0; i < hooks.size(); ++i) removeHook(*kept.branches[i].node, hooks[i]);
    }
  } removeHooks{*kept, hooks};
  at::Tensor inputGradient = ag::grad({output}, {input}, {gradOutput}, /*retain_graph=*/true)[0];
  deferred = splits ? std::move(kept) : nullptr;
  return inputGradient;
}

void backwardWeightsOnly(DeferredWeightGradients& deferred) {
  for (WeightBranch& branch : deferred.branches) {
    ag::edge_list roots;
    ag::variable_list gradients;
    for (size_t slot = 0; slot < branch.arrived.size(); ++slot) {
      if (!branch.arrived[slot].defined()) continue;
      roots.emplace_back(branch.node, slot);
      gradients.push_back(std::move(branch.arrived[slot]));
    }
    if (roots.empty()) continue;  // I's backward never reached this node: these weights get no gradient
    ag::Engine::get_default_engine().execute(roots, gradients, /*keep_graph=*/false, /*create_graph=*/false,
                                             /*accumulate_grad=*/true, branch.weights);
  }
  deferred.branches.clear();  // the nodes, and the activations they saved, go
}

}  // namespace shardscope::engine
