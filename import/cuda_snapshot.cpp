#include "import/cuda_snapshot.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "files/file_text.h"
#include "import/python_pickle.h"
#include "trace/events.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace {

using pickle::Value;

// A snapshot is read whole into a tree (import/python_pickle.h) before what is used is taken from
// it: past this, refused with what to do rather than run out of memory. python/shardscope_record's
// history of 100000 entries pickles to some tens of MiB.
constexpr size_t kMaxSnapshotBytes = size_t{256} << 20;

const char* kHowToWrite =
    "record it with torch.cuda.memory._record_memory_history() on before the steps and "
    "torch.cuda.memory._dump_snapshot(path) after them, as python/shardscope_record does";

bool isActive(std::string_view state) { return state.substr(0, 6) == "active"; }

// Past these a number is not one a snapshot holds (and sums and clocks of it would overflow): 1 TiB
// for a block, 4 million entries or blocks (any sum of sizes then fits 63 bits twice over), the
// year 2116 for a time (kMaxTimeNs, as the traces' times: in ns, a time less another fits).
constexpr int64_t kMaxBlockBytes = int64_t{1} << 40;
constexpr size_t kMaxSnapshotEntries = 4'000'000;
constexpr int64_t kMaxTimeUs = kMaxTimeNs / 1000;
// An entry, segment or block is a dict of a few keys (about 6 to 12): one of many more is not
// one, and looking keys up in it for every entry sharing it would take forever.
constexpr size_t kMaxKeys = 64;

bool isRecord(const Value& v) { return v.kind() == pickle::Kind::Dict && v.size() <= 2 * kMaxKeys; }

std::string outOfRange(const char* what, int64_t value) {
  return "has " + std::string(what) + " " + std::to_string(value) + ", which no memory snapshot holds: a damaged file";
}

// The bytes still allocated on `device` when the snapshot was written: its segments' blocks in use
// or awaiting a free on another stream.
int64_t heldOnDevice(const Value& root, int device, std::string& error) {
  const Value segments = root.get("segments");
  int64_t held = 0;
  size_t blocksSeen = 0;
  for (size_t s = 0; segments.isList() && s < segments.size(); ++s) {
    const Value segment = segments[s];
    if (!isRecord(segment) || segment.get("device").intOr(device) != device) continue;
    const Value blocks = segment.get("blocks");
    for (size_t b = 0; blocks.isList() && b < blocks.size(); ++b) {
      const Value block = blocks[b];
      if (++blocksSeen > kMaxSnapshotEntries) {
        error = "has more than " + std::to_string(kMaxSnapshotEntries) +
                " blocks, more than any allocator holds: a damaged file";
        return 0;
      }
      if (!isRecord(block)) continue;
      // The size the tensor asked for, as the history's entries give it (the block's own size is
      // rounded up to the allocator's granularity).
      const int64_t size = block.get("requested_size").intOr(block.get("size").intOr(0));
      if (isActive(block.get("state").text()) && size > 0 && size <= kMaxBlockBytes) held += size;
    }
  }
  return held;
}

// The device whose history to read: `wanted`, or the one with the longest history; -1 for none.
int pickDevice(const Value& traces, int wanted) {
  if (wanted >= 0) {
    const bool has = static_cast<size_t>(wanted) < traces.size() && traces[static_cast<size_t>(wanted)].isList() &&
                     traces[static_cast<size_t>(wanted)].size() > 0;
    return has ? wanted : -1;
  }
  int best = -1;
  size_t longest = 0;
  for (size_t d = 0; d < traces.size(); ++d) {
    const Value t = traces[d];
    if (t.isList() && t.size() > longest) {
      longest = t.size();
      best = static_cast<int>(d);
    }
  }
  return best;
}

// Interns the stacks of a history's entries into a SnapshotStacks as they are read.
class StackInterner {
 public:
  explicit StackInterner(SnapshotStacks& out) : out_(out) {}

  // The id of the stack `frames` holds (a list of {"name", "filename", "line"}, innermost first),
  // or kNone for a value that is not a list.
  uint32_t add(const Value& frames) {
    if (!frames.isList()) return SnapshotStacks::kNone;
    // Equal lists are one node in the pickle's tree: most entries' stacks are found here.
    const auto [known, fresh] = byNode_.try_emplace(frames.node(), 0);
    if (!fresh) return known->second;
    const size_t begin = out_.stackFrames.size();
    for (size_t i = 0; i < frames.size() && out_.stackFrames.size() - begin < kMaxStackFrames; ++i) {
      if (isRecord(frames[i])) out_.stackFrames.push_back(frameOf(frames[i]));
    }
    // Stacks that differ only in their lines are one here.
    const std::string_view key(reinterpret_cast<const char*>(out_.stackFrames.data() + begin),
                               (out_.stackFrames.size() - begin) * sizeof(uint32_t));
    const auto [same, isNew] = byFrames_.try_emplace(std::string(key), static_cast<uint32_t>(out_.stackEnds.size()));
    if (isNew)
      out_.stackEnds.push_back(static_cast<uint32_t>(out_.stackFrames.size()));
    else
      out_.stackFrames.resize(begin);
    return known->second = same->second;
  }

 private:
  uint32_t stringOf(std::string_view text) {
    const auto found = strings_.find(text);
    if (found != strings_.end()) return found->second;
    out_.strings.emplace_back(text);
    const auto id = static_cast<uint32_t>(out_.strings.size() - 1);
    strings_.emplace(out_.strings.back(), id);
    return id;
  }

  uint32_t frameOf(const Value& frame) {
    const auto [known, fresh] = frameByNode_.try_emplace(frame.node(), 0);
    if (!fresh) return known->second;
    const uint64_t key = uint64_t{stringOf(frame.get("name").text())} << 32 | stringOf(frame.get("filename").text());
    const auto [same, isNew] = frames_.try_emplace(key, static_cast<uint32_t>(out_.frames.size()));
    if (isNew) out_.frames.emplace_back(static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key));
    return known->second = same->second;
  }

  SnapshotStacks& out_;
  std::unordered_map<std::string_view, uint32_t> strings_;  // views into out_.strings
  std::unordered_map<uint64_t, uint32_t> frames_;           // (name << 32 | file) -> frame
  std::unordered_map<std::string, uint32_t> byFrames_;      // a stack's frames' bytes -> stack
  std::unordered_map<const void*, uint32_t> byNode_;        // a frames list's node -> its stack
  std::unordered_map<const void*, uint32_t> frameByNode_;   // a frame dict's node -> its frame
};

std::string readActions(const Value& trace, CudaSnapshot& out) {
  if (trace.size() > kMaxSnapshotEntries) {
    return "has a history of " + std::to_string(trace.size()) + " entries; shardscope reads up to " +
           std::to_string(kMaxSnapshotEntries) + ": record with _record_memory_history(max_entries=...) below that";
  }
  StackInterner stacks(out.stacks);
  out.actions.reserve(trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    const Value entry = trace[i];
    if (!isRecord(entry)) {
      ++out.otherActions;
      continue;
    }
    const std::string_view action = entry.get("action").text();
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
    const Value time = entry.get("time_us");
    if (time.kind() != pickle::Kind::Int) {
      return "has history entries without a time (time_us), which older PyTorch versions did not write: shardscope "
             "places a "
             "snapshot on the profiler's clock by those times; record it under a later PyTorch 2.x";
    }
    a.timeUs = time.integer();
    a.address = entry.get("addr").intOr(-1);
    a.bytes = entry.get("size").intOr(-1);
    if (a.address < 0 || a.bytes < 0) return "has a history entry without its address or size: not a memory snapshot";
    if (a.bytes > kMaxBlockBytes) return outOfRange("a block of", a.bytes);
    if (a.timeUs < 0 || a.timeUs > kMaxTimeUs) return outOfRange("a time (time_us) of", a.timeUs);
    a.stack = stacks.add(entry.get("frames"));
    out.actions.push_back(a);
  }
  return "";
}

}  // namespace

std::vector<StackFrame> SnapshotStacks::framesOf(uint32_t stack) const {
  std::vector<StackFrame> out;
  if (stack >= stackEnds.size()) return out;
  const uint32_t begin = stack > 0 ? stackEnds[stack - 1] : 0;
  out.reserve(stackEnds[stack] - begin);
  for (uint32_t i = begin; i < stackEnds[stack]; ++i) {
    const auto& [name, file] = frames[stackFrames[i]];
    out.push_back({strings[name], strings[file]});
  }
  return out;
}

size_t SnapshotStacks::retainedBytes() const {
  size_t bytes =
      frames.capacity() * sizeof(frames[0]) + (stackFrames.capacity() + stackEnds.capacity()) * sizeof(uint32_t);
  for (const auto& s : strings) bytes += sizeof(std::string) + (s.capacity() > 15 ? s.capacity() + 1 : 0);
  return bytes;
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
  // The tree lives only while what is used is taken from it.
  const pickle::DocumentPtr doc = pickle::readPickle(*bytes, error);
  bytes.reset();
  if (!doc) return "is not a readable pickle: it " + error;
  const Value traces = doc->root().get("device_traces");
  if (!traces.isList()) {
    return "is a pickle but not a CUDA memory snapshot (it has no device_traces): " + std::string(kHowToWrite);
  }
  out.device = pickDevice(traces, device);
  if (out.device < 0) {
    return device >= 0
               ? "has no history for device " + std::to_string(device) + ", the one the profiler saw this rank use"
               : "has no allocation history (dumped while _record_memory_history was off): " + std::string(kHowToWrite);
  }
  if (auto problem = readActions(traces[static_cast<size_t>(out.device)], out); !problem.empty()) return problem;
  out.heldWhenWritten = heldOnDevice(doc->root(), out.device, error);
  return error;
}

}  // namespace shardscope::import
