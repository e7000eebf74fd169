#include "import/cuda_snapshot.h"

#include <algorithm>
#include <filesystem>

#include "files/file_text.h"

namespace shardscope::trace {

namespace {

using pickle::Value;

// A snapshot is read whole into a tree of up to about 100 bytes per opcode: past this, refused
// with what to do rather than run out of memory. python/shardscope_record's history of 100000
// entries pickles to some tens of MiB.
constexpr size_t kMaxSnapshotBytes = size_t{256} << 20;

const char* kHowToWrite =
    "record it with torch.cuda.memory._record_memory_history() on before the steps and "
    "torch.cuda.memory._dump_snapshot(path) after them, as python/shardscope_record does";

bool isActive(std::string_view state) { return state.substr(0, 6) == "active"; }

// Past these a number is not one a snapshot holds (and sums and clocks of it would overflow): 1 TiB
// for a block, 4 million entries or blocks (any sum of sizes then fits 63 bits twice over), the
// year 2255 for a time (2^53 us; in ns still within 63 bits).
constexpr int64_t kMaxBlockBytes = int64_t{1} << 40;
constexpr size_t kMaxSnapshotEntries = 4'000'000;
constexpr int64_t kMaxTimeUs = int64_t{1} << 53;
// An entry, segment or block is a dict of a few keys (about 6 to 12): one of many more is not
// one, and looking keys up in it for every entry sharing it would take forever.
constexpr size_t kMaxKeys = 64;

bool isRecord(const Value& v) { return v.kind == Value::Kind::Dict && v.items.size() <= 2 * kMaxKeys; }

std::string outOfRange(const char* what, int64_t value) {
  return "has " + std::string(what) + " " + std::to_string(value) + ", which no memory snapshot holds: a damaged file";
}

// The bytes still allocated on `device` when the snapshot was written: its segments' blocks in use
// or awaiting a free on another stream.
int64_t heldOnDevice(const Value& root, int device, std::string& error) {
  const Value* segments = root.get("segments");
  int64_t held = 0;
  size_t blocksSeen = 0;
  for (size_t s = 0; segments && segments->isList() && s < segments->items.size(); ++s) {
    const Value& segment = *segments->items[s];
    if (!isRecord(segment) || Value::intOr(segment.get("device"), device) != device) continue;
    const Value* blocks = segment.get("blocks");
    for (size_t b = 0; blocks && blocks->isList() && b < blocks->items.size(); ++b) {
      const Value& block = *blocks->items[b];
      if (++blocksSeen > kMaxSnapshotEntries) {
        error = "has more than " + std::to_string(kMaxSnapshotEntries) +
                " blocks, more than any allocator holds: a damaged file";
        return 0;
      }
      if (!isRecord(block)) continue;
      // The size the tensor asked for, as the history's entries give it (the block's own size is
      // rounded up to the allocator's granularity).
      const int64_t size = Value::intOr(block.get("requested_size"), Value::intOr(block.get("size"), 0));
      if (isActive(Value::textOf(block.get("state"))) && size > 0 && size <= kMaxBlockBytes) held += size;
    }
  }
  return held;
}

// The device whose history to read: `wanted`, or the one with the longest history; -1 for none.
int pickDevice(const Value& traces, int wanted) {
  if (wanted >= 0) {
    const bool has = static_cast<size_t>(wanted) < traces.items.size() &&
                     traces.items[static_cast<size_t>(wanted)]->isList() &&
                     !traces.items[static_cast<size_t>(wanted)]->items.empty();
    return has ? wanted : -1;
  }
  int best = -1;
  size_t longest = 0;
  for (size_t d = 0; d < traces.items.size(); ++d) {
    const Value& t = *traces.items[d];
    if (t.isList() && t.items.size() > longest) {
      longest = t.items.size();
      best = static_cast<int>(d);
    }
  }
  return best;
}

std::string readActions(const Value& trace, CudaSnapshot& out) {
  if (trace.items.size() > kMaxSnapshotEntries) {
    return "has a history of " + std::to_string(trace.items.size()) + " entries; shardscope reads up to " +
           std::to_string(kMaxSnapshotEntries) + ": record with _record_memory_history(max_entries=...) below that";
  }
  for (const auto& item : trace.items) {
    const Value& entry = *item;
    if (!isRecord(entry)) {
      ++out.otherActions;
      continue;
    }
    const std::string_view action = Value::textOf(entry.get("action"));
    AllocatorAction a;
    if (action == "alloc")
      a.kind = AllocatorAction::Kind::Alloc;
    else if (action == "free_requested")
      a.kind = AllocatorAction::Kind::FreeRequested;
    else if (action == "free_completed")
      a.kind = AllocatorAction::Kind::FreeCompleted;
    else {
      ++out.otherActions;
      continue;
    }
    const Value* time = entry.get("time_us");
    if (!time || time->kind != Value::Kind::Int) {
      return "has history entries without a time (time_us), which older PyTorch versions did not write: shardscope "
             "places a "
             "snapshot on the profiler's clock by those times; record it under a later PyTorch 2.x";
    }
    a.timeUs = time->integer;
    a.address = Value::intOr(entry.get("addr"), -1);
    a.bytes = Value::intOr(entry.get("size"), -1);
    if (a.address < 0 || a.bytes < 0) return "has a history entry without its address or size: not a memory snapshot";
    if (a.bytes > kMaxBlockBytes) return outOfRange("a block of", a.bytes);
    if (a.timeUs < 0 || a.timeUs > kMaxTimeUs) return outOfRange("a time (time_us) of", a.timeUs);
    const Value* frames = entry.get("frames");
    a.frames = frames && frames->isList() ? frames : nullptr;
    out.actions.push_back(a);
  }
  return "";
}

}  // namespace

std::vector<StackFrame> stackOf(const Value* frames) {
  std::vector<StackFrame> out;
  if (!frames || !frames->isList()) return out;
  const size_t n = std::min(frames->items.size(), kMaxStackFrames);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Value& f = *frames->items[i];
    if (isRecord(f)) out.push_back({Value::textOf(f.get("name")), Value::textOf(f.get("filename"))});
  }
  return out;
}

std::string cudaSnapshotFileName(const std::string& dir, int rank) {
  const auto plain = std::filesystem::path(dir) / ("rank-" + std::to_string(rank) + ".memory.pickle");
  auto gzipped = plain;
  gzipped += ".gz";
  std::error_code error;
  return (!std::filesystem::exists(plain, error) && std::filesystem::exists(gzipped, error) ? gzipped : plain).string();
}

std::string readCudaSnapshot(const std::string& path, int device, CudaSnapshot& out) {
  out = CudaSnapshot{};
  std::string error;
  auto bytes = files::readFileText(path, error, kMaxSnapshotBytes);
  if (!bytes) {
    return files::unreadableReason(
        path, error, kMaxSnapshotBytes, "memory snapshots",
        "record fewer steps, or a shorter history with _record_memory_history(max_entries=...)");
  }
  out.root = pickle::readPickle(*bytes, error);
  bytes.reset();
  if (!out.root) return "is not a readable pickle: it " + error;
  const Value* traces = out.root->get("device_traces");
  if (!traces || !traces->isList()) {
    return "is a pickle but not a CUDA memory snapshot (it has no device_traces): " + std::string(kHowToWrite);
  }
  out.device = pickDevice(*traces, device);
  if (out.device < 0) {
    return device >= 0
               ? "has no history for device " + std::to_string(device) + ", the one the profiler saw this rank use"
               : "has no allocation history (dumped while _record_memory_history was off): " + std::string(kHowToWrite);
  }
  if (auto problem = readActions(*traces->items[static_cast<size_t>(out.device)], out); !problem.empty())
    return problem;
  out.heldWhenWritten = heldOnDevice(*out.root, out.device, error);
  return error;
}

}  // namespace shardscope::trace
