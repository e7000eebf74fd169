#include "trace/rank_event_files.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "trace/rank_placements.h"
#include "trace/wire.h"

namespace shardscope::trace {

namespace fs = std::filesystem;

namespace {

// rank-R.events (and what a rank wrote after losing its collector) in `dir`, by rank.
std::map<int, std::vector<fs::path>> rankFiles(const std::string& dir, std::error_code& error) {
  static const std::regex name(R"(rank-([0-9]{1,4})(\.after-collector)?\.events)");
  std::map<int, std::vector<fs::path>> out;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    std::smatch match;
    const std::string file = it->path().filename().string();
    if (!std::regex_match(file, match, name)) continue;
    const int rank = std::stoi(match[1].str());
    if (rank < kMaxRanks) out[rank].push_back(it->path());
  }
  return out;
}

}  // namespace

bool isRecordedEvent(const Event& e) {
  switch (e.kind) {
    case EventKind::Memory:
    case EventKind::Collective:
    case EventKind::Compute:
    case EventKind::Dropped:
    case EventKind::RunDone:
    case EventKind::StepEnd: return true;
    case EventKind::Group: return e.endNs != 0;
    default: return false;
  }
}

int64_t clockShiftToRank0(const Event& clock) {
  if (clock.count < 0) return 0;
  const int64_t offset = clock.endNs - clock.beginNs;
  return std::llabs(offset) > clock.count ? offset : 0;
}

void shiftEventTimes(Event& e, int64_t shift) {
  e.beginNs += shift;
  if (e.endNs != 0) e.endNs += shift;
  if (e.issueNs != 0) e.issueNs += shift;
}

namespace {

struct RankFile {
  std::vector<Event> events;  // recorded ones, in file order
  std::optional<Event> clock; // its ClockOffset: its clock against rank 0's
  std::string placement;      // its RunInfo's device and backend
  std::string error;          // the RankError it reported, if any
  bool done = false;          // it reported RunDone: every step ran
  int steps = 0;              // StepEnd events
  int64_t unreadLines = 0;    // lines that were not events (a torn last line)
};

// A rank's files, read as one stream (its order restored below).
RankFile readRankFile(const std::vector<fs::path>& paths, int rank) {
  RankFile out;
  std::string line;
  for (const auto& path : paths) {
    std::ifstream in(path);
    while (std::getline(in, line)) {
      if (line.empty()) continue;  // a heartbeat
      auto event = decodeEventLine(line);
      if (!event || event->rank != rank) {
        ++out.unreadLines;
        continue;
      }
      if (event->kind == EventKind::RunInfo) out.placement = event->text;
      if (event->kind == EventKind::RankError) out.error = event->text;
      if (event->kind == EventKind::ClockOffset) out.clock = *event;
      if (event->kind == EventKind::RunDone) out.done = true;
      if (event->kind == EventKind::StepEnd) ++out.steps;
      if (isRecordedEvent(*event)) out.events.push_back(std::move(*event));
    }
  }
  // Ordered as a controller's merge orders them: by their (begin) time, file order among equals.
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return out;
}

std::string describeShift(int rank, const Event& clock, int64_t shift) {
  char text[160];
  std::snprintf(text, sizeof text, "rank %d (host %s) shifted by %+.6f s onto rank 0's clock, measured to within %.0f us\n",
                rank, clock.text.c_str(), static_cast<double>(shift) / 1e9, static_cast<double>(clock.count) / 1e3);
  return text;
}

}  // namespace

std::string rankEventFileName(const std::string& dir, int rank, const std::string& part) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + part + ".events")).string();
}

std::string rankEventConfigName(const std::string& dir) { return (fs::path(dir) / "config.json").string(); }

bool isDirectory(const std::string& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

bool isRankEventDirectory(const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return false;
  return !rankFiles(dir, error).empty();
}

LoadedTrace loadRankEventFiles(const std::string& dir) {
  LoadedTrace out;
  std::error_code error;
  const auto files = rankFiles(dir, error);
  if (error) {
    out.error = "cannot read the directory '" + dir + "': " + error.message() + ".";
    return out;
  }
  if (files.empty()) {
    out.error = "'" + dir + "' is a directory without rank-R.events files: name a trace or summary file in "
                "it, or record a job into it with 'shardscope worker --trace-dir " + dir + "' under torchrun.";
    return out;
  }
  uintmax_t bytes = 0;
  for (const auto& [rank, paths] : files) {
    for (const auto& path : paths) bytes += fs::file_size(path, error);
  }
  if (bytes > files::kMaxTraceBytes) {
    out.error = "the rank files in '" + dir + "' hold " + std::to_string(bytes >> 20) + " MiB, more than the " +
                std::to_string(files::kMaxTraceBytes >> 20) + " MiB shardscope reads; view fewer steps of the job.";
    return out;
  }
  std::string configError;
  if (auto text = files::readFileText(rankEventConfigName(dir), configError, files::kMaxConfigBytes)) {
    auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (json.is_object()) (void)applyConfigJson(json, out.config);
  }
  // config.json's world, unless out of reason (a file can say anything): the files' ranks then.
  const int configured = out.config.world > 0 && out.config.world <= kMaxRanks ? out.config.world : 0;
  const int ranks = std::max(configured, files.rbegin()->first + 1);
  out.config.world = ranks;
  out.recording.reset(ranks);
  std::vector<std::string> placements(static_cast<size_t>(ranks));
  out.rankClocks.assign(static_cast<size_t>(ranks), {});
  std::string missing, torn, failed;
  for (int r = 0; r < ranks; ++r) {
    const auto file = files.find(r);
    if (file == files.end()) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      continue;
    }
    RankFile read = readRankFile(file->second, r);
    const int64_t shift = read.clock ? clockShiftToRank0(*read.clock) : 0;
    if (read.clock) {
      out.rankClocks[static_cast<size_t>(r)] = {shift, read.clock->endNs - read.clock->beginNs, read.clock->count,
                                                read.clock->text};
    }
    if (shift != 0) out.clocks += describeShift(r, *read.clock, shift);
    if (read.clock && read.clock->count < 0) out.clocks += "rank " + std::to_string(r) + "'s clock could not be measured\n";
    for (Event& e : read.events) {
      shiftEventTimes(e, shift);
      out.recording.add(e);
    }
    placements[static_cast<size_t>(r)] = read.placement;
    if (read.unreadLines > 0) torn += (torn.empty() ? "" : ", ") + std::to_string(r);
    if (!read.error.empty()) failed += "rank " + std::to_string(r) + " failed: " + read.error + "\n";
    if (read.error.empty() && !read.done) {
      failed += "rank " + std::to_string(r) + " stopped without finishing or an error after " +
                std::to_string(read.steps) + " steps (killed, or its host lost)\n";
    }
  }
  out.device = describeRankPlacements(placements);
  if (!missing.empty()) out.note += "no file for rank " + missing + " (it recorded nothing here)\n";
  if (!torn.empty()) out.note += "lines that are not events skipped in rank " + torn + " (a rank that died mid-line)\n";
  out.note += failed;
  out.ranksFailed = !failed.empty();
  return out;
}

}  // namespace shardscope::trace
