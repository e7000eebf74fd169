#include "import/profiler_roles.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace {

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The role one span names, if it names one (the header's table, in its order).
std::optional<MemoryRole> roleNamedBy(const std::string& span) {
  if (startsWith(span, "gloo:") || startsWith(span, "nccl:")) return MemoryRole::CommBuffer;
  if (contains(span, "AccumulateGrad")) return MemoryRole::GradFull;
  if (startsWith(span, "FSDP::all_gather_copy_out")) return MemoryRole::ParamGathered;
  if (startsWith(span, "FSDP::all_gather")) return MemoryRole::CommBuffer;
  if (startsWith(span, "FSDP::post_backward_reduce")) return MemoryRole::CommBuffer;
  if (startsWith(span, "FSDP::post_backward_accumulate")) return MemoryRole::GradShard;
  if (startsWith(span, "Optimizer.step#")) return MemoryRole::OptimizerState;
  if (startsWith(span, "Optimizer.zero_grad#")) return MemoryRole::GradFull;
  if (startsWith(span, "autograd::engine::evaluate_function")) return MemoryRole::Activation;
  if (span == "DistributedDataParallel.forward" || startsWith(span, "FSDP::pre_forward") ||
      startsWith(span, "FSDP::post_forward")) {
    return MemoryRole::Activation;
  }
  return std::nullopt;
}

bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool begins(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// The role one stack frame names, if it names one (the header's second table, in its order).
std::optional<MemoryRole> roleNamedBy(const StackFrame& f) {
  const bool fsdp = has(f.file, "/fsdp/");
  if (begins(f.name, "at::cuda::setWorkspaceForHandle") || begins(f.name, "at::cuda::getCUDABlasLtWorkspace")) {
    return MemoryRole::Other;
  }
  if (begins(f.name, "c10d::") || begins(f.name, "gloo::") || begins(f.name, "nccl")) return MemoryRole::CommBuffer;
  if (has(f.name, "AccumulateGrad")) return MemoryRole::GradFull;
  if (f.name == "foreach_all_gather_copy_out") return MemoryRole::ParamGathered;
  if (f.name == "foreach_all_gather" || (fsdp && f.name == "unshard")) return MemoryRole::CommBuffer;
  if (f.name == "foreach_reduce") return MemoryRole::CommBuffer;
  if (has(f.file, "torch/optim/")) return f.name == "zero_grad" ? MemoryRole::GradFull : MemoryRole::OptimizerState;
  if (begins(f.name, "torch::autograd::Engine::evaluate_function")) return MemoryRole::Activation;
  if ((f.name == "forward" && has(f.file, "torch/nn/parallel/distributed.py")) ||
      (fsdp && (f.name == "pre_forward" || f.name == "post_forward")) ||
      (f.name == "_call_impl" && has(f.file, "torch/nn/modules/module.py"))) {
    return MemoryRole::Activation;
  }
  return std::nullopt;
}

}  // namespace

std::optional<MemoryRole> stackNamedRole(const std::vector<StackFrame>& stackInnermostFirst) {
  for (const StackFrame& f : stackInnermostFirst) {
    if (auto role = roleNamedBy(f)) return role;
  }
  return std::nullopt;
}

MemoryRole snapshotAllocationRole(const std::vector<StackFrame>& stackInnermostFirst, bool inForwardOrBackward) {
  return stackNamedRole(stackInnermostFirst).value_or(inForwardOrBackward ? MemoryRole::Activation : MemoryRole::Other);
}

bool stackRuns(const std::vector<StackFrame>& stack, std::string_view function, std::string_view fileHint) {
  return std::any_of(stack.begin(), stack.end(), [&](const StackFrame& f) {
    const bool python = f.file.size() > 3 && f.file.substr(f.file.size() - 3) == ".py";
    const bool named = python ? f.name == function : has(f.name, function);
    return named && (fileHint.empty() || has(f.file, fileHint));
  });
}

MemoryRole profilerAllocationRole(const std::vector<const std::string*>& spansInnermostFirst,
                                  bool inForwardOrBackward) {
  for (const std::string* span : spansInnermostFirst) {
    if (auto role = roleNamedBy(*span)) return *role;
  }
  return inForwardOrBackward ? MemoryRole::Activation : MemoryRole::Other;
}

std::string fsdpUnitOf(const std::string& annotation) {
  if (!startsWith(annotation, "FSDP::")) return "";
  const size_t open = annotation.rfind(" (");
  if (open == std::string::npos || annotation.back() != ')') return "";
  return annotation.substr(open + 2, annotation.size() - open - 3);
}

}  // namespace shardscope::import
