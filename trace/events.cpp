#include "trace/events.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace shardscope::trace {

const char* eventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::StepEnd:
      return "step_end";
    case EventKind::RunInfo:
      return "run_info";
    case EventKind::RankError:
      return "rank_error";
    case EventKind::RunDone:
      return "run_done";
    case EventKind::Memory:
      return "memory";
    case EventKind::Collective:
      return "collective";
    case EventKind::Compute:
      return "compute";
    case EventKind::Dropped:
      return "dropped";
    case EventKind::Group:
      return "group";
    case EventKind::ClockOffset:
      return "clock_offset";
    case EventKind::CollectiveIssued:
      return "collective_issued";
    case EventKind::CollectiveFailed:
      return "collective_failed";
  }
  return "unknown";
}

std::optional<EventKind> eventKindFromName(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(EventKind::CollectiveFailed); ++k) {
    if (name == eventKindName(static_cast<EventKind>(k))) return static_cast<EventKind>(k);
  }
  return std::nullopt;
}

const char* memoryRoleName(MemoryRole role) {
  switch (role) {
    case MemoryRole::ParamShard:
      return "param_shard";
    case MemoryRole::ParamGathered:
      return "param_gathered";
    case MemoryRole::GradShard:
      return "grad_shard";
    case MemoryRole::GradFull:
      return "grad_full";
    case MemoryRole::OptimizerState:
      return "optimizer_state";
    case MemoryRole::Activation:
      return "activation";
    case MemoryRole::CommBuffer:
      return "comm_buffer";
    case MemoryRole::Other:
      return "other";
    case MemoryRole::AllocatorCache:
      return "allocator_cache";
    case MemoryRole::DeviceRuntime:
      return "device_runtime";
  }
  return "unknown";
}

const char* phaseName(Phase phase) {
  switch (phase) {
    case Phase::None:
      return "none";
    case Phase::Forward:
      return "forward";
    case Phase::Backward:
      return "backward";
    case Phase::Optimizer:
      return "optimizer";
  }
  return "unknown";
}

const char* collectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllGather:
      return "all_gather";
    case CollectiveOp::ReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::AllReduce:
      return "all_reduce";
    case CollectiveOp::Broadcast:
      return "broadcast";
    case CollectiveOp::Barrier:
      return "barrier";
    case CollectiveOp::AllToAll:
      return "all_to_all";
    case CollectiveOp::Send:
      return "send";
    case CollectiveOp::Recv:
      return "recv";
  }
  return "unknown";
}

const char* computeKindName(ComputeKind kind) {
  switch (kind) {
    case ComputeKind::Step:
      return "step";
    case ComputeKind::Forward:
      return "forward";
    case ComputeKind::Backward:
      return "backward";
    case ComputeKind::Optimizer:
      return "optimizer";
    case ComputeKind::CopyToDevice:
      return "copy_to_device";
    case ComputeKind::CopyToHost:
      return "copy_to_host";
    case ComputeKind::PinHostMemory:
      return "pin_host_memory";
  }
  return "unknown";
}

const char* groupKindName(GroupKind kind) {
  switch (kind) {
    case GroupKind::StepStart:
      return "step_start";
    case GroupKind::Collective:
      return "collective";
    case GroupKind::Forward:
      return "forward";
    case GroupKind::Backward:
      return "backward";
    case GroupKind::Reshard:
      return "reshard";
    case GroupKind::Optimizer:
      return "optimizer";
  }
  return "unknown";
}

const char* processGroupName(ProcessGroup group) {
  switch (group) {
    case ProcessGroup::World:
      return "world";
    case ProcessGroup::Shard:
      return "shard";
    case ProcessGroup::Replicate:
      return "replicate";
    case ProcessGroup::Tensor:
      return "tensor";
    case ProcessGroup::Data:
      return "data";
    case ProcessGroup::Pipe:
      return "pipe";
  }
  return "unknown";
}

std::vector<int> processGroupMembers(ProcessGroup group, int rank, int groupSize, int worldRanks, int tensorRanks,
                                     int pipeRanks) {
  const bool inAStage = group != ProcessGroup::World && group != ProcessGroup::Pipe;
  if (pipeRanks > 1 && inAStage && worldRanks % pipeRanks == 0) {
    const int block = worldRanks / pipeRanks;
    const int start = rank / block * block;
    auto members = processGroupMembers(group, rank - start, groupSize, block, tensorRanks);
    for (int& m : members) m += start;
    return members;
  }
  const bool amongDataRanks = group == ProcessGroup::Shard || group == ProcessGroup::Replicate;
  if (tensorRanks > 1 && amongDataRanks && worldRanks % tensorRanks == 0) {
    auto members = processGroupMembers(group, rank / tensorRanks, groupSize, worldRanks / tensorRanks);
    for (int& m : members) m = m * tensorRanks + rank % tensorRanks;
    return members;
  }
  std::vector<int> members;
  const int size = std::max(1, groupSize);
  for (int i = 0; i < size; ++i) {
    switch (group) {
      case ProcessGroup::World:
        members.push_back(i);
        break;
      case ProcessGroup::Shard:
      case ProcessGroup::Tensor:
        members.push_back(rank / size * size + i);
        break;
      case ProcessGroup::Replicate:
      case ProcessGroup::Data:
      case ProcessGroup::Pipe: {
        const int shardRanks = std::max(1, worldRanks / size);
        members.push_back(rank % shardRanks + i * shardRanks);
        break;
      }
    }
  }
  return members;
}

int tensorRanksOf(const Event& collective, int seenSoFar) {
  const bool tensor = collective.kind == EventKind::Collective || collective.kind == EventKind::CollectiveIssued;
  if (!tensor || collective.processGroup != static_cast<uint8_t>(ProcessGroup::Tensor)) return seenSoFar;
  return std::max(seenSoFar, collective.worldSize);
}

int pipeRanksOf(const Event& collective, int seenSoFar) {
  const bool issued = collective.kind == EventKind::Collective || collective.kind == EventKind::CollectiveIssued;
  if (!issued || collective.processGroup != static_cast<uint8_t>(ProcessGroup::Pipe)) return seenSoFar;
  return std::max(seenSoFar, collective.worldSize);
}

std::optional<ProcessGroup> processGroupOf(const std::vector<int>& members, int worldRanks,
                                           std::optional<ProcessGroup> preferred) {
  const int size = static_cast<int>(members.size());
  if (size == 0 || worldRanks % size != 0) return std::nullopt;
  if (size == worldRanks) {
    if (members != processGroupMembers(ProcessGroup::World, 0, size, worldRanks)) return std::nullopt;
    return ProcessGroup::World;
  }
  std::vector<ProcessGroup> candidates = {ProcessGroup::Shard, ProcessGroup::Replicate};
  if (preferred) candidates.insert(candidates.begin(), *preferred);
  for (ProcessGroup group : candidates) {
    if (group != ProcessGroup::World && processGroupMembers(group, members.front(), size, worldRanks) == members) {
      return group;
    }
  }
  return std::nullopt;
}

namespace {

// SHARDSCOPE_TEST_CLOCK_SHIFT_NS, for tests only: moves this process's clock as if it ran on another
// host, so a test on one machine can check that a job's clocks are measured and aligned.
int64_t testClockShift() {
  const char* shift = std::getenv("SHARDSCOPE_TEST_CLOCK_SHIFT_NS");
  return shift ? std::strtoll(shift, nullptr, 10) : 0;
}

}  // namespace

int64_t nowNs() {
  static const int64_t shift = testClockShift();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
             .count() +
         shift;
}

double algbwBytesPerSecond(int64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0.0;
}

bool isRecomputation(ComputeKind kind, Phase phase) { return kind == ComputeKind::Forward && phase == Phase::Backward; }

bool isOffloadKind(ComputeKind kind) {
  return kind == ComputeKind::CopyToDevice || kind == ComputeKind::CopyToHost || kind == ComputeKind::PinHostMemory;
}

bool isRecomputation(const Event& compute) {
  return compute.kind == EventKind::Compute &&
         isRecomputation(static_cast<ComputeKind>(compute.op), static_cast<Phase>(compute.phase));
}

bool isOffloadSpan(const Event& compute) {
  return compute.kind == EventKind::Compute && isOffloadKind(static_cast<ComputeKind>(compute.op));
}

std::string computeSpanName(ComputeKind kind, Phase phase, int step, const std::string& unit) {
  if (kind == ComputeKind::Step) return "step " + std::to_string(step);
  if (kind == ComputeKind::Optimizer) return "optimizer.step";
  if (isRecomputation(kind, phase)) return "recompute " + unit;
  return std::string(computeKindName(kind)) + " " + unit;
}

std::string computeSpanName(const Event& e) {
  return computeSpanName(static_cast<ComputeKind>(e.op), static_cast<Phase>(e.phase), e.step, e.text);
}

std::string collectiveSpanName(CollectiveOp op, ProcessGroup group, const std::string& text) {
  const std::string inGroup = group == ProcessGroup::World ? "" : std::string(" [") + processGroupName(group) + "]";
  return std::string(collectiveOpName(op)) + " " + collectiveUnit(text) + inGroup;
}

std::string collectiveSpanName(const Event& e) {
  return collectiveSpanName(static_cast<CollectiveOp>(e.op), static_cast<ProcessGroup>(e.processGroup), e.text);
}

int64_t collectiveSizeBytes(const Event& e) {
  return static_cast<CollectiveOp>(e.op) == CollectiveOp::AllGather ? e.bytesOut : e.bytes;
}

std::string collectiveText(const std::string& unit, const std::string& implementation, CollectiveOp op) {
  if (implementation.empty() || implementation == collectiveOpName(op)) return unit;
  return unit + "|" + implementation;
}

std::string collectiveUnit(const std::string& text) { return text.substr(0, text.find('|')); }

std::string collectiveUnit(const Event& e) { return collectiveUnit(e.text); }

std::string collectiveImplementation(CollectiveOp op, const std::string& text) {
  const auto bar = text.find('|');
  return bar == std::string::npos ? collectiveOpName(op) : text.substr(bar + 1);
}

std::string collectiveImplementation(const Event& e) {
  return collectiveImplementation(static_cast<CollectiveOp>(e.op), e.text);
}

double busbwFactor(CollectiveOp op, int ranks) {
  // A send or recv has one peer whatever its group (nccl-tests' sendrecv: the bus carries it once).
  if (ranks <= 1 && !isPointToPoint(op)) return op == CollectiveOp::Broadcast ? 1.0 : 0.0;
  const double n = ranks;
  switch (op) {
    case CollectiveOp::AllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllToAll:
      return (n - 1) / n;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Send:
    case CollectiveOp::Recv:
      return 1.0;
    case CollectiveOp::Barrier:
      return 0.0;
  }
  return 0.0;
}

int64_t activeStepNs(const Event& e) { return std::max<int64_t>(0, e.endNs - e.beginNs - e.pausedNs); }

std::string unitName(int32_t unit) {
  if (unit == kNoUnit) return "";
  return unit < 0 ? "root" : "blocks." + std::to_string(unit);
}

int32_t unitFromName(const std::string& name) {
  if (name == "root") return -1;
  const std::string prefix = "blocks.";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 6) return kNoUnit;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return kNoUnit;
  }
  return std::stoi(name.substr(prefix.size()));
}

}  // namespace shardscope::trace
