#include "import/snapshot_job.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "import/cuda_snapshot.h"
#include "trace/format.h"
#include "import/profiler_memory.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace fs = std::filesystem;

namespace {

std::string describe(const MemoryNotes& notes, int ranks) {
  std::string out =
      "CUDA memory snapshots without torch.profiler traces: memory only, over each rank's whole allocator "
      "history (no steps, collectives or compute: record with python/shardscope_record for those); each "
      "allocation's role from the stack that made it\n";
  if (ranks > 1)
    out += "ranks on the allocators' own clocks: those of one host share it, other hosts' are not aligned\n";
  if (notes.heldAtStart > 0) {
    out += "rank 0 held " + std::to_string(notes.heldAtStart) +
           " bytes allocated before its history began (no stack for them): shown as other from the start\n";
  }
  return out + describeUnnamedBytes(notes);
}

LoadedTrace loadRanks(const std::map<int, fs::path>& files) {
  LoadedTrace out;
  const int ranks = files.rbegin()->first + 1;
  out.recording.reset(ranks);
  MemoryNotes notes;
  std::vector<int> missing;
  for (int r = 0; r < ranks; ++r) {
    const auto file = files.find(r);
    if (file == files.end()) {
      missing.push_back(r);
      continue;
    }
    CudaSnapshot snapshot;
    if (auto problem = readCudaSnapshot(file->second.string(), -1, snapshot); !problem.empty()) {
      out.error = "'" + file->second.string() + "' " + problem + ".";
      return out;
    }
    profiler::RankTrace clock;  // no trace: the snapshot's own clock, no steps
    clock.rank = r;
    std::vector<Event> events;
    MemoryNotes rankNotes;
    readSnapshotMemory(clock, snapshot, std::nullopt, events, r == 0 ? notes : rankNotes);
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
    for (const auto& e : events) out.recording.add(e);
  }
  out.config.world = ranks;
  out.config.batch = 0;  // nothing about the job but its memory is in a snapshot
  out.config.steps = 0;
  out.jobLabel = "a PyTorch job's own model (not in the snapshot)";
  out.source = "torch.cuda.memory";
  out.title = "a PyTorch job (CUDA memory snapshots): memory only";
  out.device = "recorded by torch.cuda.memory._dump_snapshot";
  if (!missing.empty()) out.note += "no snapshot for rank " + formatRanks(missing) + "\n";
  out.note += describe(notes, ranks);
  return out;
}

}  // namespace

int snapshotFileRank(const std::string& path) {
  static const std::regex name(R"(rank-([0-9]{1,4})\.memory\.pickle(\.gz)?)");
  std::smatch match;
  const std::string file = fs::path(path).filename().string();
  if (!std::regex_match(file, match, name)) return -1;
  const int rank = std::stoi(match[1].str());
  return rank < kMaxRanks ? rank : -1;
}

bool isCudaSnapshotDirectory(const std::string& dir) {
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (snapshotFileRank(it->path().string()) >= 0) return true;
  }
  return false;
}

LoadedTrace loadCudaSnapshotDirectory(const std::string& dir) {
  std::map<int, fs::path> files;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    // Both rank-R.memory.pickle and its .gz: the plain one, whatever the directory's order.
    if (const int rank = snapshotFileRank(it->path().string()); rank >= 0) {
      auto& kept = files[rank];
      if (kept.empty() || kept.extension() == ".gz") kept = it->path();
    }
  }
  if (files.empty()) {
    LoadedTrace out;
    out.error = "'" + dir + "' holds no rank-R.memory.pickle (CUDA memory snapshots, one per rank)";
    return out;
  }
  return loadRanks(files);
}

LoadedTrace loadCudaSnapshotFiles(const std::vector<std::string>& paths) {
  LoadedTrace out;
  std::map<int, fs::path> files;
  for (const auto& path : paths) {
    int rank = snapshotFileRank(path);
    if (rank < 0 && paths.size() == 1) rank = 0;  // one snapshot, named any way: the only rank
    if (rank < 0) {
      out.error = "'" + path +
                  "' is not named for its rank: name each rank's snapshot rank-R.memory.pickle (R: the "
                  "rank), or open one at a time";
      return out;
    }
    if (files.count(rank)) {
      out.error = "'" + files[rank].string() + "' and '" + path + "' are both rank " + std::to_string(rank) +
                  ": name one snapshot per rank";
      return out;
    }
    files[rank] = path;
  }
  if (files.empty()) {
    out.error = "no CUDA memory snapshots named";
    return out;
  }
  return loadRanks(files);
}

}  // namespace shardscope::import
