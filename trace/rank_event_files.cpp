#include "trace/rank_event_files.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "files/host_memory.h"
#include "trace/issued_collectives.h"
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
    case EventKind::CollectiveFailed:
    case EventKind::Compute:
    case EventKind::Dropped:
    case EventKind::RunDone:
    case EventKind::StepEnd:
      return true;
    case EventKind::Group:
      return e.endNs != 0;
    default:
      return false;
  }
}

void shiftEventTimes(Event& e, int64_t shift) {
  e.beginNs += shift;
  if (e.endNs != 0) e.endNs += shift;
  if (e.issueNs != 0) e.issueNs += shift;
}

void shiftOntoRank0(Event& e, const RankClock& clock) {
  if (clock.shifted()) shiftEventTimes(e, clock.shiftAt(e.beginNs));
}

namespace {

struct RankFile {
  std::vector<Event> events;      // recorded ones, in file order
  RankClock clock;                // its ClockOffset readings: its clock against rank 0's
  bool clockUnmeasured = false;   // a reading said no reply was read
  std::string placement;          // its RunInfo's device and backend
  int64_t parameterCount = 0;     // its RunInfo's count
  int64_t deviceMemoryBytes = 0;  // its RunInfo's GPU memory and measured peak (0 on CPU)
  double measuredPeakFlops = 0;
  std::string error;              // the RankError it reported, if any
  bool done = false;              // it reported RunDone: every step ran
  int steps = 0;                  // StepEnd events
  int64_t unreadLines = 0;        // items that were not events (a torn last one)
  int64_t items = 0;              // items that were this rank's events, of any kind
  std::deque<Event> collectives;  // the last CollectiveIssued, Collective and CollectiveFailed events
                                  // (kLastCollectiveEvents)
};

// Enough of a rank's last issued collectives and their ends for IssuedCollectives' 64 per rank.
constexpr size_t kLastCollectiveEvents = 1024;

// One item of a rank's stream, read into what the merge needs.
void takeItem(RankFile& out, std::string_view item, int rank) {
  if (item.empty()) return;  // a heartbeat
  auto event = decodeStreamItem(item);
  if (!event || event->rank != rank) {
    ++out.unreadLines;
    return;
  }
  ++out.items;
  if (event->kind == EventKind::RunInfo) {
    out.placement = event->text;
    out.parameterCount = event->parameterCount;
    out.deviceMemoryBytes = std::max<int64_t>(event->deviceMemoryBytes, 0);
    out.measuredPeakFlops = static_cast<double>(std::max<int64_t>(event->peakFlopsPerSecond, 0));
  }
  if (event->kind == EventKind::RankError) out.error = event->text;
  if (event->kind == EventKind::ClockOffset) {
    out.clock.add(*event);
    out.clockUnmeasured = out.clockUnmeasured || event->uncertaintyNs < 0;
  }
  if (event->kind == EventKind::RunDone) out.done = true;
  if (event->kind == EventKind::StepEnd) ++out.steps;
  if (event->kind == EventKind::CollectiveIssued || event->kind == EventKind::Collective ||
      event->kind == EventKind::CollectiveFailed) {
    out.collectives.push_back(*event);
    if (out.collectives.size() > kLastCollectiveEvents) out.collectives.pop_front();
  }
  if (isRecordedEvent(*event)) out.events.push_back(std::move(*event));
}

// Where the rank's own file takes over from the collector's: its replay header, if it has one.
std::optional<uint64_t> replayOffset(const fs::path& ownFile) {
  std::ifstream in(ownFile);
  std::string first;
  return std::getline(in, first) ? decodeReplayHeader(first) : std::nullopt;
}

// A rank's files, read as one stream: what the collector wrote, up to where the rank wrote the
// rest itself once it lost it (replayHeaderLine); its order restored below.
RankFile readRankFile(std::vector<fs::path> paths, int rank) {
  RankFile out;
  // rank-R.events before rank-R.after-collector.events.
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string().size() < b.filename().string().size();
  });
  const std::optional<uint64_t> cut = paths.size() > 1 ? replayOffset(paths[1]) : std::nullopt;
  for (size_t f = 0; f < paths.size(); ++f) {
    std::ifstream in(paths[f], std::ios::binary);
    StreamSplitter items;
    bool first = true, past = false;
    char chunk[1 << 16];
    while (!past && (in.read(chunk, sizeof chunk) || in.gcount() > 0)) {
      items.feed(chunk, static_cast<size_t>(in.gcount()), [&](std::string_view item) {
        past = past || (f == 0 && cut && items.itemEnd() > *cut);  // the rank wrote this again itself
        const bool header = f > 0 && first && decodeReplayHeader(std::string(item));
        first = false;
        if (!past && !header) takeItem(out, item, rank);
      });
    }
    if (!past && items.pendingBytes() > 0) ++out.unreadLines;  // a torn last item
  }
  // Ordered as a controller's merge orders them: by their (begin) time, file order among equals.
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const Event& a, const Event& b) { return a.beginNs < b.beginNs; });
  return out;
}

std::string describeShift(int rank, const RankClock& clock) {
  const int64_t first = clock.shiftAt(clock.readings().front().localNs);
  char text[256];
  std::snprintf(
      text, sizeof text, "rank %d (host %s) shifted by %+.6f s onto rank 0's clock, measured to within %.0f us", rank,
      clock.host().c_str(), static_cast<double>(first) / 1e9, static_cast<double>(clock.worstUncertaintyNs()) / 1e3);
  std::string out = text;
  if (clock.drifted()) {
    std::snprintf(text, sizeof text, " (%zu readings, drifting %+.2f ppm, followed between them)",
                  clock.readings().size(), clock.driftPpm());
    out += text;
  } else if (clock.readings().size() > 1) {
    out += " (" + std::to_string(clock.readings().size()) + " readings, steady within their bounds)";
  }
  return out + "\n";
}

// Why a directory whose rank files hold not one event is no job's recording, naming the first
// file that holds bytes (else the first file): random bytes named rank-0.events are not a job.
std::string noEventsReason(const std::string& dir, const std::map<int, std::vector<fs::path>>& files) {
  fs::path named = files.begin()->second.front();
  uintmax_t bytes = 0;
  size_t count = 0;
  for (const auto& [rank, paths] : files) {
    for (const auto& path : paths) {
      std::error_code error;
      const uintmax_t size = fs::file_size(path, error);
      if (!error && size > 0 && bytes == 0) {
        named = path;
        bytes = size;
      }
      ++count;
    }
  }
  const std::string others = count > 1 ? ", nor does any other rank file here" : "";
  const std::string what = bytes > 0 ? "holds " + std::to_string(bytes) +
                                           " bytes and not one event of a rank's stream (the frames and lines "
                                           "'shardscope worker --trace-dir' writes)"
                                     : "is empty";
  return "'" + named.string() + "' " + what + others + ": '" + dir +
         "' holds no job's recording. Name a job's --trace-dir, or record a job into it with "
         "'shardscope worker --trace-dir " +
         dir + "' under torchrun.";
}

// Why the rank files listed in `dir` (`listing`: the listing's error) cannot be loaded: the
// directory cannot be read, holds none, or they hold more than this machine's memory allows;
// "" when they can.
std::string rankFilesRefusal(const std::string& dir, const std::map<int, std::vector<fs::path>>& files,
                             const std::error_code& listing) {
  if (listing) return "cannot read the directory '" + dir + "': " + listing.message() + ".";
  if (files.empty()) {
    return "'" + dir +
           "' is a directory without rank-R.events files: name a trace or summary file in "
           "it, or record a job into it with 'shardscope worker --trace-dir " +
           dir + "' under torchrun.";
  }
  uintmax_t bytes = 0;
  std::error_code error;
  for (const auto& [rank, paths] : files) {
    for (const auto& path : paths) bytes += fs::file_size(path, error);
  }
  // An event's frame is about 19 bytes and its place in the recording 30 to 40: twice the files.
  const auto limit = files::traceLimit(2.0);
  if (bytes > limit.maxBytes) {
    return "the rank files in '" + dir + "' hold " + std::to_string(bytes >> 20) + " MiB, more than " +
           std::to_string(limit.maxBytes >> 20) + " MiB, " + limit.why + " (view fewer steps of the job).";
  }
  return "";
}

// The job's options from the config.json it wrote in `dir`, where there is a readable one.
void readJobConfig(const std::string& dir, config::RunConfig& config) {
  std::string configError;
  if (auto text = files::readFileText(rankEventConfigName(dir), configError, files::kMaxConfigBytes)) {
    auto json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (json.is_object()) (void)config::applyConfigJson(json, config);
  }
}

// Rank r's file taken into the trace: its clock (and its events, shifted onto rank 0's), its
// collectives for the last-collectives log, and its figures (the device's are rank 0's).
void takeRankFile(RankFile& read, int r, LoadedTrace& out, IssuedCollectives& issued) {
  out.rankClocks[static_cast<size_t>(r)] = read.clock;
  if (read.clock.shifted()) out.clocks += describeShift(r, read.clock);
  if (read.clockUnmeasured) out.clocks += "rank " + std::to_string(r) + "'s clock could not be measured\n";
  for (Event& e : read.events) {
    shiftOntoRank0(e, read.clock);
    out.recording.add(e);
  }
  for (const Event& e : read.collectives) issued.add(e);
  if (read.parameterCount > 0) out.parameterCount = read.parameterCount;
  if (r == 0) {  // the capacity line and MFU are rank 0's device's, as in a live run
    out.deviceMemoryBytes = read.deviceMemoryBytes;
    out.measuredPeakFlops = read.measuredPeakFlops;
  }
}

// What the trace's notes say of rank r's file: the rank in `torn` if an item was not an event, and
// in `failed` how it ended if it did not finish.
void noteRankEnd(const RankFile& read, int r, std::string& torn, std::string& failed) {
  if (read.unreadLines > 0) torn += (torn.empty() ? "" : ", ") + std::to_string(r);
  // Named with its host where its clock reading says it: on several hosts, where to look.
  const std::string who =
      "rank " + std::to_string(r) + (read.clock.host().empty() ? "" : " (host " + read.clock.host() + ")");
  if (!read.error.empty()) failed += who + " failed: " + read.error + "\n";
  if (read.error.empty() && !read.done) {
    failed += who + " stopped without finishing or an error after " + std::to_string(read.steps) +
              " steps (killed, or its host lost)\n";
  }
}

}  // namespace

std::string replayHeaderLine(uint64_t streamOffset) { return "{\"replay_from\":" + std::to_string(streamOffset) + "}"; }

std::optional<uint64_t> decodeReplayHeader(const std::string& line) {
  static const std::string prefix = "{\"replay_from\":";
  if (line.rfind(prefix, 0) != 0 || line.size() < prefix.size() + 2 || line.back() != '}') return std::nullopt;
  const std::string digits = line.substr(prefix.size(), line.size() - prefix.size() - 1);
  if (digits.empty() || digits.size() > 19 || digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(digits);
}

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
  out.error = rankFilesRefusal(dir, files, error);
  if (!out.error.empty()) return out;
  readJobConfig(dir, out.config);
  // config.json's world, unless out of reason (a file can say anything): the files' ranks then.
  const int configured = out.config.world > 0 && out.config.world <= kMaxRanks ? out.config.world : 0;
  const int ranks = std::max(configured, files.rbegin()->first + 1);
  out.config.world = ranks;
  out.recording.reset(ranks);
  std::vector<std::string> placements(static_cast<size_t>(ranks));
  out.rankClocks.assign(static_cast<size_t>(ranks), {});
  std::string missing, torn, failed;
  bool anyEvent = false;
  IssuedCollectives issued(ranks);
  for (int r = 0; r < ranks; ++r) {
    const auto file = files.find(r);
    if (file == files.end()) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      continue;
    }
    RankFile read = readRankFile(file->second, r);
    anyEvent = anyEvent || read.items > 0;
    takeRankFile(read, r, out, issued);
    placements[static_cast<size_t>(r)] = read.placement;
    noteRankEnd(read, r, torn, failed);
  }
  if (!anyEvent) {
    LoadedTrace refused;
    refused.error = noEventsReason(dir, files);
    return refused;
  }
  out.device = describeRankPlacements(placements);
  out.rankPlacements = placements;
  if (!missing.empty()) out.note += "no file for rank " + missing + " (it recorded nothing here)\n";
  if (!torn.empty())
    out.note += "items that are not events skipped in rank " + torn + " (a rank that died mid-event)\n";
  out.note += failed;
  out.ranksFailed = !failed.empty();
  if (out.ranksFailed && !issued.empty()) out.lastCollectives = std::make_shared<const CollectiveLogs>(issued.logs());
  return out;
}

}  // namespace shardscope::trace
