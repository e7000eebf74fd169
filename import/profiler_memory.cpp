#include "import/profiler_memory.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "import/profiler_roles.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

using profiler::RankTrace;
using profiler::Span;

namespace {

Event memoryEvent(int rank, int64_t t, int64_t bytes, MemoryRole role, int step) {
  Event e;
  e.kind = EventKind::Memory;
  e.rank = rank;
  e.beginNs = t;
  e.bytes = bytes;
  e.role = static_cast<uint8_t>(role);
  e.step = step;
  return e;
}

bool anyNamed(const std::vector<const Span*>& spans, const char* prefix) {
  return std::any_of(spans.begin(), spans.end(), [&](const Span* s) { return s->name.rfind(prefix, 0) == 0; });
}

// A block's whole life, for the roles spans and stacks alone cannot tell: a gradient is allocated
// by the backward op that computes it (AccumulateGrad then takes the buffer over), so it is known
// by where it dies or lives on.
struct BlockLife {
  bool inBackward = false;       // allocated under autograd's evaluate_function
  bool inReduce = false;         // allocated in FSDP2's post-backward reduce
  bool freedInZeroGrad = false;  // freed by the optimizer's zero_grad: a .grad
  bool freedInReduce = false;    // freed in FSDP2's post-backward reduce: consumed by the reduce-scatter
};

// A gradient, by its life: FSDP2's sharded gradient is made in post_backward_reduce and freed by
// zero_grad; its unsharded one is made in backward and consumed by the reduce-scatter; DDP's is
// made in backward and freed by zero_grad. (A block the record never frees is not taken for one:
// the last step's reduce-scatter buffers outlive the record too. So gradients zero_grad keeps,
// set_to_none=False, keep their allocation's role.)
std::optional<MemoryRole> gradientRoleOf(const BlockLife& b) {
  if (b.inReduce && b.freedInZeroGrad) return MemoryRole::GradShard;
  if (b.inBackward && (b.freedInReduce || b.freedInZeroGrad)) return MemoryRole::GradFull;
  return std::nullopt;
}

// The role a free of `bytes` from before the record comes out of: inside zero_grad, the counted
// gradients (full, then sharded) while enough of them is left; else other.
MemoryRole takeFromCounted(std::array<int64_t, kTensorRoleCount>& heldBefore, int64_t bytes, bool inZeroGrad) {
  if (!inZeroGrad) return MemoryRole::Other;
  for (const MemoryRole role : {MemoryRole::GradFull, MemoryRole::GradShard}) {
    int64_t& left = heldBefore[static_cast<int>(role)];
    if (left >= bytes) {
      left -= bytes;
      return role;
    }
  }
  return MemoryRole::Other;
}

// What the device held before the record began, `held` bytes named by no record of its own: as
// the roles the recorder counted (no more than `held`), the rest as other (on a GPU, where the
// allocator's count says how much there was). Returns what is left of each counted role.
std::array<int64_t, kTensorRoleCount> heldBeforeRecord(int rank, int64_t t, int step, int64_t held, bool restAsOther,
                                                       const std::optional<HeldAtStart>& counted,
                                                       std::vector<Event>& out) {
  std::array<int64_t, kTensorRoleCount> heldBefore{};
  int64_t room = held;
  for (int r = 0; counted && r < kTensorRoleCount; ++r) {
    heldBefore[r] = std::min(counted->bytes[r], std::max<int64_t>(room, 0));
    room -= heldBefore[r];
    if (heldBefore[r] > 0) out.push_back(memoryEvent(rank, t, heldBefore[r], static_cast<MemoryRole>(r), step));
  }
  if (restAsOther && room > 0) out.push_back(memoryEvent(rank, t, room, MemoryRole::Other, step));
  return heldBefore;
}

// `named`: a stack frame named its role (other too: cuBLAS's workspace), so it is not unnamed.
void countAllocation(const Event& e, MemoryNotes& notes, bool named = false) {
  notes.allocatedBytes += e.bytes;
  if (e.role == static_cast<uint8_t>(MemoryRole::Other) && !named) notes.unnamedBytes += e.bytes;
}

}  // namespace

std::string describeUnnamedBytes(const MemoryNotes& notes) {
  if (notes.unnamedBytes <= 0) return "";
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%",
                100.0 * static_cast<double>(notes.unnamedBytes) /
                    static_cast<double>(std::max<int64_t>(notes.allocatedBytes, 1)));
  return "rank 0: " + std::to_string(notes.unnamedBytes) + " bytes allocated where no " +
         (notes.fromSnapshot ? "stack frame" : "span") + " names a role (" + share +
         " of what it allocated while recorded): shown as other\n";
}

bool tracesDeviceMemory(const RankTrace& trace) {
  return std::any_of(trace.memory.begin(), trace.memory.end(),
                     [](const profiler::MemoryRecord& m) { return m.deviceType == 1; });
}

int traceMemoryDevice(const RankTrace& trace) {
  for (const auto& m : trace.memory) {
    if (m.deviceType == 1) return m.deviceId;
  }
  return -1;
}

void readProfilerMemory(const RankTrace& trace, const std::optional<HeldAtStart>& counted, std::vector<Event>& out,
                        MemoryNotes& notes) {
  const bool device = tracesDeviceMemory(trace);
  if (trace.rank == 0) {
    notes.hostMemory = !device && !trace.memory.empty();
    notes.counted = counted;
  }
  struct Block {
    size_t allocation = 0;  // its events' indexes in `out`
    size_t free = SIZE_MAX;
    BlockLife life;
  };
  std::unordered_map<int64_t, size_t> live;  // address -> block
  std::vector<Block> blocks;
  std::array<int64_t, kTensorRoleCount> heldBefore{};  // what is left of the counted roles
  bool first = true;
  for (const auto& m : trace.memory) {
    if ((m.deviceType == 1) != device) continue;
    const int64_t t = m.at;
    const int64_t bytes = m.bytes;
    const int64_t addr = m.addr;
    const int step = profiler::recordedStepAt(trace, t);
    if (first) {
      // On a GPU the allocator's count says what was held before the profiler started; on CPU the
      // profiler counts only from its start, and only the recorder's count is known.
      const int64_t allocatorHeld = device ? m.totalAllocated - bytes : INT64_MAX;
      heldBefore = heldBeforeRecord(trace.rank, t - 1, step, allocatorHeld, device, counted, out);
      if (trace.rank == 0) notes.heldAtStart = device ? allocatorHeld : (counted ? counted->total() : 0);
    }
    first = false;
    const int64_t thread = m.thread;
    const auto spans = profiler::spansAt(trace, thread, t);
    if (bytes >= 0) {
      // A send's backend span completing after its op returned is not what allocates meanwhile
      // (the next micro-batch's forward, whose activations would read as comm buffers).
      std::vector<const std::string*> names;
      for (const Span* s : spans) {
        if (!(profiler::isBackendSpanName(s->name) && profiler::outlivedItsOp(trace, *s, t))) names.push_back(&s->name);
      }
      const MemoryRole role = profilerAllocationRole(names, profiler::inForwardOrBackward(trace, thread, t));
      live[addr] = blocks.size();
      blocks.push_back(
          {out.size(),
           SIZE_MAX,
           {anyNamed(spans, "autograd::engine::evaluate_function"), anyNamed(spans, "FSDP::post_backward_reduce")}});
      out.push_back(memoryEvent(trace.rank, t, bytes, role, step));
      continue;
    }
    const auto found = live.find(addr);
    if (found == live.end()) {
      // A block from before the profiler: freed by zero_grad, one of the gradients the recorder
      // counted (while they last); else other's.
      const MemoryRole from = takeFromCounted(heldBefore, -bytes, anyNamed(spans, "Optimizer.zero_grad#"));
      if (trace.rank == 0 && from == MemoryRole::Other) ++notes.unknownFrees;
      out.push_back(memoryEvent(trace.rank, t, bytes, from, step));
      continue;
    }
    Block& b = blocks[found->second];
    b.free = out.size();
    b.life.freedInZeroGrad = anyNamed(spans, "Optimizer.zero_grad#");
    b.life.freedInReduce = anyNamed(spans, "FSDP::post_backward_reduce");
    out.push_back(memoryEvent(trace.rank, t, bytes, static_cast<MemoryRole>(out[b.allocation].role), step));
    live.erase(found);
  }
  for (const Block& b : blocks) {
    if (auto role = gradientRoleOf(b.life)) {
      out[b.allocation].role = static_cast<uint8_t>(*role);
      if (b.free != SIZE_MAX) out[b.free].role = static_cast<uint8_t>(*role);
    }
    if (trace.rank == 0) countAllocation(out[b.allocation], notes);
  }
}

namespace {

// One block of the snapshot's history: its allocation and free (indexes into its actions), and
// the role its stack and life give it.
struct SnapshotBlock {
  size_t allocation = 0;
  size_t freed = SIZE_MAX;  // its free_completed, when the history has it
  BlockLife life;
  MemoryRole role = MemoryRole::Other;
  bool named = false;  // its role from a stack frame that names one
};

// The whole history's blocks, and the frees of blocks allocated before it began.
struct SnapshotLives {
  std::vector<SnapshotBlock> blocks;
  std::vector<size_t> blockOf;       // per action: its block, or SIZE_MAX
  std::vector<size_t> unknownFrees;  // free_completed actions of blocks from before the history
  std::vector<size_t> requestOf;     // per free_completed: its free_requested action, or itself
};

// The snapshot's times are microseconds since the epoch; the profiler's count from its base time.
int64_t onProfilerClock(const RankTrace& trace, int64_t timeUs) { return timeUs * 1000 - trace.baseTimeNs; }

// What a stack says, read once per stack: a snapshot's entries share their stacks (each is kept
// once: SnapshotStacks), so the same stack is asked about again and again.
struct StackFacts {
  std::optional<MemoryRole> named;  // the role a frame names
  bool autogradEngine = false;      // made in backward, by autograd's engine
  bool foreachReduce = false;       // inside FSDP2's foreach_reduce
  bool zeroGrad = false;            // inside an optimizer's zero_grad
};

class StackFactsCache {
 public:
  explicit StackFactsCache(const SnapshotStacks& stacks) : stacks_(stacks), facts_(stacks.size()) {}

  const StackFacts& of(uint32_t stackId) {
    if (stackId >= facts_.size()) return none_;  // no stack: no frame says anything
    auto& facts = facts_[stackId];
    if (!facts) {
      const auto stack = stacks_.framesOf(stackId);
      facts = StackFacts{stackNamedRole(stack), stackRuns(stack, "torch::autograd::Engine::evaluate_function"),
                         stackRuns(stack, "foreach_reduce"), stackRuns(stack, "zero_grad", "torch/optim/")};
    }
    return *facts;
  }

 private:
  const SnapshotStacks& stacks_;
  std::vector<std::optional<StackFacts>> facts_;  // per stack, once asked
  const StackFacts none_{};
};

SnapshotLives snapshotLives(const RankTrace& trace, const CudaSnapshot& snapshot, StackFactsCache& stacks) {
  SnapshotLives out;
  const auto& actions = snapshot.actions;
  out.blockOf.assign(actions.size(), SIZE_MAX);
  out.requestOf.assign(actions.size(), SIZE_MAX);
  std::unordered_map<int64_t, size_t> live, requested;  // address -> block; address -> its free_requested
  for (size_t i = 0; i < actions.size(); ++i) {
    const AllocatorAction& a = actions[i];
    if (a.kind == AllocatorAction::Kind::Alloc) {
      live[a.address] = out.blocks.size();
      out.blockOf[i] = out.blocks.size();
      const StackFacts& stack = stacks.of(a.stack);
      const int64_t t = onProfilerClock(trace, a.timeUs);
      SnapshotBlock b;
      b.allocation = i;
      b.role = stack.named.value_or(profiler::inForwardOrBackward(trace, trace.mainThread, t) ? MemoryRole::Activation
                                                                                              : MemoryRole::Other);
      b.named = stack.named.has_value();
      // Autograd's engine is C++: a snapshot of Python stacks only (stacks="python") has no frame
      // of it, and then the profiler's own span of it, on any thread, says so.
      b.life.inBackward =
          stack.autogradEngine || profiler::anyThreadInside(trace, t, "autograd::engine::evaluate_function");
      b.life.inReduce = stack.foreachReduce;
      out.blocks.push_back(b);
      continue;
    }
    if (a.kind == AllocatorAction::Kind::FreeRequested) {
      requested[a.address] = i;
      continue;
    }
    const auto request = requested.find(a.address);
    out.requestOf[i] = request != requested.end() ? request->second : i;
    if (request != requested.end()) requested.erase(request);
    const auto found = live.find(a.address);
    if (found == live.end()) {
      out.unknownFrees.push_back(i);
      continue;
    }
    SnapshotBlock& b = out.blocks[found->second];
    b.freed = i;
    out.blockOf[i] = found->second;
    // The stack of the free itself is its request's (free_completed comes when the streams that
    // used the block are done with it).
    const StackFacts& stack = stacks.of(actions[out.requestOf[i]].stack);
    b.life.freedInZeroGrad = stack.zeroGrad;
    // foreach_reduce drops the unsharded gradients once copied into the reduce-scatter's input
    // (unsharded_grads.clear()); the reshard and the input's own release run outside it.
    b.life.freedInReduce = stack.foreachReduce;
    live.erase(found);
  }
  for (auto& b : out.blocks) {
    if (auto role = gradientRoleOf(b.life)) b.role = *role;
  }
  return out;
}

}  // namespace

std::string snapshotMissesSteps(const RankTrace& trace, const CudaSnapshot& snapshot) {
  if (trace.steps.empty() || snapshot.actions.empty()) return "";
  const int64_t begin = trace.steps.front().begin, end = trace.steps.back().end;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& a : snapshot.actions) {
    const int64_t t = onProfilerClock(trace, a.timeUs);
    if (t >= begin && t <= end) return "";
    first = std::min(first, t);
    last = std::max(last, t);
  }
  char text[200];
  std::snprintf(text, sizeof text,
                "has no allocation or free during the recorded steps (its history %+.3f s to %+.3f s "
                "from the first step's start): not this recording's snapshot",
                static_cast<double>(first - begin) / 1e9, static_cast<double>(last - begin) / 1e9);
  return text;
}

void readSnapshotMemory(const RankTrace& trace, const CudaSnapshot& snapshot, const std::optional<HeldAtStart>& counted,
                        std::vector<Event>& out, MemoryNotes& notes) {
  if (trace.rank == 0) notes.fromSnapshot = true;
  const auto& actions = snapshot.actions;
  if (actions.empty()) return;
  // The recorded steps, or without a profiler trace the whole history.
  int64_t begin = INT64_MAX, end = INT64_MIN;
  if (!trace.steps.empty()) {
    begin = trace.steps.front().begin;
    end = trace.steps.back().end;
  } else {
    for (const auto& a : actions) {
      begin = std::min(begin, onProfilerClock(trace, a.timeUs));
      end = std::max(end, onProfilerClock(trace, a.timeUs));
    }
  }
  StackFactsCache stacks(snapshot.stacks);
  const SnapshotLives lives = snapshotLives(trace, snapshot, stacks);
  auto at = [&](size_t action) { return onProfilerClock(trace, actions[action].timeUs); };

  // Held when the first recorded step began: the history's blocks alive then, by role; and what
  // was allocated before the history began and still held then (the allocator's count at the end,
  // less the history's blocks alive at the end, plus the older blocks freed since that start).
  const int firstStep = profiler::recordedStepAt(trace, begin);  // 0, or -1 with no steps
  std::array<int64_t, kTensorRoleCount> heldByRole{};
  int64_t aliveAtEnd = 0;
  for (const auto& b : lives.blocks) {
    const int64_t bytes = actions[b.allocation].bytes;
    if (b.freed == SIZE_MAX) aliveAtEnd += bytes;
    if (at(b.allocation) < begin && (b.freed == SIZE_MAX || at(b.freed) >= begin))
      heldByRole[static_cast<int>(b.role)] += bytes;
  }
  int64_t olderThanHistory = std::max<int64_t>(snapshot.heldWhenWritten - aliveAtEnd, 0);
  for (size_t i : lives.unknownFrees) {
    if (at(i) >= begin) olderThanHistory += actions[i].bytes;
  }
  for (int r = 0; r < kTensorRoleCount; ++r) {
    if (heldByRole[r] > 0)
      out.push_back(memoryEvent(trace.rank, begin - 1, heldByRole[r], static_cast<MemoryRole>(r), firstStep));
  }
  // The recorder counted at the first step what the history may already hold (the optimizer's
  // state made in the steps before): only the rest of its count is older than the history.
  std::optional<HeldAtStart> countedBefore = counted;
  for (int r = 0; countedBefore && r < kTensorRoleCount; ++r) {
    countedBefore->bytes[r] = std::max<int64_t>(countedBefore->bytes[r] - heldByRole[r], 0);
  }
  if (trace.rank == 0) notes.counted = countedBefore;
  auto heldBefore = heldBeforeRecord(trace.rank, begin - 1, firstStep, olderThanHistory, true, countedBefore, out);
  if (trace.rank == 0) notes.heldAtStart = olderThanHistory;

  for (size_t i = 0; i < actions.size(); ++i) {
    const int64_t t = at(i);
    if (t < begin || t > end || actions[i].kind == AllocatorAction::Kind::FreeRequested) continue;
    const int step = profiler::recordedStepAt(trace, t);
    const int64_t bytes = actions[i].bytes;
    const size_t block = lives.blockOf[i];
    if (block != SIZE_MAX) {
      const MemoryRole role = lives.blocks[block].role;
      const bool allocation = actions[i].kind == AllocatorAction::Kind::Alloc;
      out.push_back(memoryEvent(trace.rank, t, allocation ? bytes : -bytes, role, step));
      if (allocation && trace.rank == 0) countAllocation(out.back(), notes, lives.blocks[block].named);
      continue;
    }
    // A block from before the history: as the profiler's reader takes such frees.
    const bool zeroGrad = stacks.of(actions[lives.requestOf[i]].stack).zeroGrad;
    const MemoryRole from = takeFromCounted(heldBefore, bytes, zeroGrad);
    if (trace.rank == 0 && from == MemoryRole::Other) ++notes.unknownFrees;
    out.push_back(memoryEvent(trace.rank, t, -bytes, from, step));
  }
}

}  // namespace shardscope::import
