#include "trace/profiler_roles.h"

#include <optional>
#include <utility>

namespace shardscope::trace {

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

}  // namespace

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

}  // namespace shardscope::trace
