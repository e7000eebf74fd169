#include "import/flight_recorder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "files/file_text.h"
#include "import/python_pickle.h"

namespace shardscope::import {

// import/ reads other tools' files into trace's vocabulary, which its code names as its own.
using namespace trace;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kSniffBytes = 4096;

// A pickled dump as the JSON one (_dump_fr_trace_json writes the same keys): one reading for both.
json fromPickle(const pickle::Value& v) {
  using Kind = pickle::Kind;
  switch (v.kind()) {
    case Kind::None:
      return nullptr;
    case Kind::Bool:
      return v.boolean();
    case Kind::Int:
      return v.integer();
    case Kind::Float:
      return v.real();
    case Kind::String:
    case Kind::Bytes:
      return std::string(v.text());
    case Kind::List:
    case Kind::Tuple: {
      json out = json::array();
      for (size_t i = 0; i < v.size(); ++i) out.push_back(fromPickle(v[i]));
      return out;
    }
    case Kind::Dict: {
      json out = json::object();
      for (size_t i = 0; i + 1 < v.size(); i += 2) {
        const pickle::Value key = v[i];
        const std::string name = key.kind() == Kind::Int ? std::to_string(key.integer()) : std::string(key.text());
        out[name] = fromPickle(v[i + 1]);
      }
      return out;
    }
  }
  return nullptr;
}

json readDump(const std::string& path, std::string& error) {
  auto text = files::readFileText(path, error, kMaxFlightRecorderBytes);
  if (!text) {
    error = files::unreadableReason(path, error, kMaxFlightRecorderBytes, "Flight Recorder dumps",
                                    "dump a smaller buffer (TORCH_FR_BUFFER_SIZE)");
    return nullptr;
  }
  if (!text->empty() && static_cast<unsigned char>((*text)[0]) == 0x80) {
    auto root = pickle::readPickle(*text, error);
    if (!root) error = "'" + path + "' is not a readable pickle: it " + error;
    return root ? fromPickle(root->root()) : json();
  }
  json dump = json::parse(*text, nullptr, false);
  if (dump.is_discarded()) error = "'" + path + "' is neither a pickle nor JSON that can be read to its end";
  return dump;
}

std::string textOr(const json& j, const char* key, const std::string& fallback = "") {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool boolOr(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

int64_t intOr(const json& j, const char* key, int64_t fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

std::vector<std::vector<int64_t>> shapesOf(const json& j, const char* key) {
  std::vector<std::vector<int64_t>> out;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& shape : *it) {
    auto& dims = out.emplace_back();
    if (!shape.is_array()) continue;
    for (const auto& d : shape) dims.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
  }
  return out;
}

std::vector<std::string> textsOf(const json& j, const char* key) {
  std::vector<std::string> out;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& t : *it) out.push_back(t.is_string() ? t.get<std::string>() : "?");
  return out;
}

// The innermost frame of the job's own code: not torch's, not Python's multiprocessing.
std::string callerOf(const json& entry) {
  const auto frames = entry.find("frames");
  if (frames == entry.end() || !frames->is_array()) return "";
  for (const auto& f : *frames) {
    const std::string file = textOr(f, "filename");
    if (file.empty() || file.find("/torch/") != std::string::npos ||
        file.find("multiprocessing/") != std::string::npos) {
      continue;
    }
    return fs::path(file).filename().string() + ":" + std::to_string(intOr(f, "line", 0)) + " in " + textOr(f, "name");
  }
  return "";
}

// The backend's prefix off ("gloo:all_reduce", "nccl:all_reduce" -> "all_reduce").
std::string opOf(const std::string& profilingName) {
  const size_t colon = profilingName.find(':');
  return colon == std::string::npos ? profilingName : profilingName.substr(colon + 1);
}

std::string entryOf(const json& e, LoggedCollective& out) {
  if (!e.is_object()) return "is not an object";
  out.seq = intOr(e, "collective_seq_id", intOr(e, "seq_id", -1));
  out.op = opOf(textOr(e, "profiling_name"));
  if (out.seq < 0 || out.op.empty()) return "has no collective_seq_id or profiling_name (a version 1 dump?)";
  const auto group = e.find("process_group");
  if (group != e.end() && group->is_array() && !group->empty() && (*group)[0].is_string()) {
    out.group = (*group)[0].get<std::string>();
  }
  out.inputSizes = shapesOf(e, "input_sizes");
  out.outputSizes = shapesOf(e, "output_sizes");
  out.inputDtypes = textsOf(e, "input_dtypes");
  out.outputDtypes = textsOf(e, "output_dtypes");
  out.state = textOr(e, "state");
  out.finished = out.state == "completed" || boolOr(e, "retired", false);
  out.createdNs = intOr(e, "time_created_ns", 0);
  out.where = callerOf(e);
  return "";
}

std::vector<int> ranksIn(const json& config) {
  std::vector<int> ranks;
  const auto it = config.find("ranks");
  if (it == config.end()) return ranks;
  if (it->is_array()) {
    for (const auto& r : *it) {
      if (r.is_number_integer()) ranks.push_back(r.get<int>());
    }
    return ranks;
  }
  // Written as the text of a Python list: "[0, 1, 2]".
  const std::string text = it->is_string() ? it->get<std::string>() : "";
  for (size_t i = 0; i < text.size();) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    ranks.push_back(std::stoi(text.substr(i, std::min<size_t>(end - i, 9))));
    i = end;
  }
  return ranks;
}

// pg_config: each group's members. gloo's default group is written under an empty name (torch
// 2.11): with only one group in the entries, that is the one it describes.
void readGroups(const json& dump, const std::vector<std::string>& groupsUsed, CollectiveLogs& logs) {
  const auto config = dump.find("pg_config");
  if (config == dump.end() || !config->is_object()) return;
  for (const auto& [key, group] : config->items()) {
    std::string name = textOr(group, "name", key);
    if (name.empty() && config->size() == 1 && groupsUsed.size() == 1) name = groupsUsed.front();
    if (name.empty()) continue;
    logs.groupRanks[name] = ranksIn(group);
    logs.groupDescriptions[name] = textOr(group, "desc");
  }
}

std::string readOneDump(const std::string& path, int rank, CollectiveLogs& logs) {
  std::string error;
  const json dump = readDump(path, error);
  if (!error.empty()) return error;
  const auto entries = dump.is_object() ? dump.find("entries") : dump.end();
  if (entries == dump.end() || !entries->is_array()) {
    return "'" + path + "' has no entries: it is not a Flight Recorder dump (written by _dump_fr_trace)";
  }
  RankCollectiveLog log{rank, path, {}};
  std::vector<std::string> groupsUsed;
  for (size_t i = 0; i < entries->size(); ++i) {
    LoggedCollective c;
    if (auto problem = entryOf((*entries)[i], c); !problem.empty()) {
      return "'" + path + "': its entry " + std::to_string(i) + " " + problem;
    }
    if (boolOr((*entries)[i], "is_p2p", false)) continue;  // sends and receives pair by peer, not by this count
    if (std::find(groupsUsed.begin(), groupsUsed.end(), c.group) == groupsUsed.end()) groupsUsed.push_back(c.group);
    log.entries.push_back(std::move(c));
  }
  readGroups(dump, groupsUsed, logs);
  if (logs.source.empty()) logs.source = "Flight Recorder dumps (version " + textOr(dump, "version", "?") + ")";
  logs.ranks.push_back(std::move(log));
  return "";
}

std::vector<std::string> dumpsIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    if (entry.is_regular_file(error) && looksLikeFlightRecorderDump(entry.path().string())) {
      out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string missingDumpsNote(const CollectiveLogs& logs) {
  std::string missing;
  for (int r = 0; r < logs.worldSize; ++r) {
    const bool dumped =
        std::any_of(logs.ranks.begin(), logs.ranks.end(), [r](const RankCollectiveLog& log) { return log.rank == r; });
    if (!dumped) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  if (missing.empty()) return "";
  return "no dump of rank " + missing + " (a rank that died or was never dumped: look at it first): it has no " +
         "column, and a rank is called missing from a collective only where its dump shows it never entered\n";
}

}  // namespace

int rankFromDumpName(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".json", ".pkl", ".pickle"}) {
    const std::string e = ext;
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      name.resize(name.size() - e.size());
  }
  size_t begin = name.size();
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  if (begin == name.size() || name.size() - begin > 6) return -1;
  return std::stoi(name.substr(begin));
}

bool looksLikeFlightRecorderDump(const std::string& path) {
  std::string error;
  const auto head = files::readFileText(path, error, kMaxFlightRecorderBytes, kSniffBytes);
  if (!head || head->empty()) return false;
  const auto has = [&](const char* key) { return head->find(key) != std::string::npos; };
  // A pickle (binary: no JSON trace starts with 0x80) of Flight Recorder's keys.
  if (static_cast<unsigned char>((*head)[0]) == 0x80) return has("pg_config") || has("collective_seq_id");
  const size_t first = head->find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (*head)[first] != '{') return false;
  // Kineto's distributedInfo names pg_config too: only Flight Recorder's own keys tell its JSON.
  if (has("\"traceEvents\"") || has("\"schemaVersion\"")) return false;
  return has("\"comm_lib_version\"") || has("\"collective_seq_id\"");
}

bool isFlightRecorderDirectory(const std::string& dir) { return !dumpsIn(dir).empty(); }

LoadedFlightRecord loadFlightRecorderDumps(const std::vector<std::string>& paths) {
  LoadedFlightRecord out;
  std::vector<std::string> files = paths;
  if (paths.size() == 1 && fs::is_directory(paths.front())) files = dumpsIn(paths.front());
  if (files.empty()) {
    out.error = "'" + paths.front() + "' holds no Flight Recorder dump (a pickle or JSON with pg_config and entries)";
    return out;
  }
  std::map<int, std::string> fileOfRank;
  for (const auto& path : files) {
    const int rank = rankFromDumpName(path);
    if (rank < 0) {
      out.error = "'" + path +
                  "' is a Flight Recorder dump, whose rank its name must end with (fr-0, fr-1, ... as "
                  "TORCH_FR_DUMP_TEMP_FILE=DIR/fr- writes them): rename it, e.g. to fr-0";
      return out;
    }
    if (auto [it, added] = fileOfRank.emplace(rank, path); !added) {
      out.error = "'" + it->second + "' and '" + path + "' are both rank " + std::to_string(rank) +
                  "'s dump: keep one of them (a pickle and its JSON hold the same entries)";
      return out;
    }
  }
  for (const auto& [rank, path] : fileOfRank) {
    if (out.error = readOneDump(path, rank, out.logs); !out.error.empty()) return out;
  }
  out.logs.worldSize = static_cast<int>(out.logs.ranks.size());
  for (const auto& [name, members] : out.logs.groupRanks) {
    out.logs.worldSize = std::max(out.logs.worldSize, static_cast<int>(members.size()));
  }
  out.notes = missingDumpsNote(out.logs);
  return out;
}

}  // namespace shardscope::import
