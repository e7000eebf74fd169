#include "trace/run_config.h"

#include "trace/file_text.h"
#include "trace/user_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace shardscope {


nlohmann::json RunConfig::toJson() const {
  return {{"model", model},         {"layers", layers},       {"hidden", hidden},
          {"heads", heads},         {"seq", seq},             {"vocab", vocab},
          {"features", features},   {"classes", classes},     {"batch", batch},
          {"steps", steps},         {"world", world},         {"strategy", strategy},
          {"optimizer", optimizer}, {"lr", lr},               {"seed", seed},
          {"device", device},       {"bind-cores", bindCores}, {"bucket-cap-mb", bucketCapMb},
          {"prefetch", prefetch},   {"precision", precision}, {"lora-rank", loraRank},
          {"accumulate", accumulate}, {"activation-checkpointing", activationCheckpointing},
          {"recording", recording}, {"step-gate", stepGate}, {"gpu-memory", gpuMemoryGB},
          {"peak-tflops", peakTflops}, {"stall-timeout", stallTimeoutS},
          {"memory-check", memoryCheck}};
}

namespace {

std::string normalizeKey(std::string key) {
  for (char& c : key) {
    if (c == '_') c = '-';
  }
  return key;
}


// Strict: a whole number only from a JSON number with no fraction, within T's range (no wrapping
// of 1e12, no 2.7 read as 2, no true read as 1); a number only from a finite JSON number; a string
// only from a string.
template <typename T>
std::optional<std::string> readValue(const nlohmann::json& value, const std::string& key, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) return "config key '" + key + "' has value " + trace::shownValue(value) + "; it must be a string.";
    out = value.get<std::string>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      return "config key '" + key + "' has value " + trace::shownValue(value) + "; it must be a finite number, e.g. \"" + key + "\": 1.5.";
    }
    out = value.get<T>();
  } else {
    const bool whole = value.is_number_integer() || value.is_number_unsigned() ||
                       (value.is_number_float() && std::isfinite(value.get<double>()) &&
                        std::trunc(value.get<double>()) == value.get<double>());
    if (!whole) {
      return "config key '" + key + "' has value " + trace::shownValue(value) + "; it must be a whole number, e.g. \"" + key + "\": 4.";
    }
    const long double v = value.is_number_unsigned() ? static_cast<long double>(value.get<uint64_t>())
                          : value.is_number_integer() ? static_cast<long double>(value.get<int64_t>())
                                                      : static_cast<long double>(value.get<double>());
    if (v < static_cast<long double>(std::numeric_limits<T>::min()) || v > static_cast<long double>(std::numeric_limits<T>::max())) {
      return "config key '" + key + "' has value " + trace::shownValue(value) + ", out of range: it must be a whole number from " +
             std::to_string(std::numeric_limits<T>::min()) + " to " + std::to_string(std::numeric_limits<T>::max()) + ".";
    }
    out = static_cast<T>(v);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> applyConfigJson(const nlohmann::json& json, RunConfig& c) {
  if (!json.is_object()) {
    return std::string("the config must be a JSON object of option names to values, e.g. "
                       "{\"model\": \"gpt\", \"world\": 4}.");
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string key = normalizeKey(it.key());
    const auto& v = it.value();
    std::optional<std::string> err;
    if (key == "model") err = readValue(v, key, c.model);
    else if (key == "layers") err = readValue(v, key, c.layers);
    else if (key == "hidden") err = readValue(v, key, c.hidden);
    else if (key == "heads") err = readValue(v, key, c.heads);
    else if (key == "seq") err = readValue(v, key, c.seq);
    else if (key == "vocab") err = readValue(v, key, c.vocab);
    else if (key == "features") err = readValue(v, key, c.features);
    else if (key == "classes") err = readValue(v, key, c.classes);
    else if (key == "batch") err = readValue(v, key, c.batch);
    else if (key == "steps") err = readValue(v, key, c.steps);
    else if (key == "world") err = readValue(v, key, c.world);
    else if (key == "strategy") err = readValue(v, key, c.strategy);
    else if (key == "optimizer") err = readValue(v, key, c.optimizer);
    else if (key == "lr") err = readValue(v, key, c.lr);
    else if (key == "seed") err = readValue(v, key, c.seed);
    else if (key == "device") err = readValue(v, key, c.device);
    else if (key == "bind-cores") err = readValue(v, key, c.bindCores);
    else if (key == "bucket-cap-mb") err = readValue(v, key, c.bucketCapMb);
    else if (key == "gpu-memory") err = readValue(v, key, c.gpuMemoryGB);
    else if (key == "peak-tflops") err = readValue(v, key, c.peakTflops);
    else if (key == "stall-timeout") err = readValue(v, key, c.stallTimeoutS);
    else if (key == "memory-check") err = readValue(v, key, c.memoryCheck);
    else if (key == "prefetch") err = readValue(v, key, c.prefetch);
    else if (key == "precision") err = readValue(v, key, c.precision);
    else if (key == "lora-rank") err = readValue(v, key, c.loraRank);
    else if (key == "accumulate") err = readValue(v, key, c.accumulate);
    else if (key == "activation-checkpointing") err = readValue(v, key, c.activationCheckpointing);
    else if (key == "export") err = readValue(v, key, c.exportDir);
    else if (key == "summary") err = readValue(v, key, c.summaryPath);
    else if (key == "trace") err = readValue(v, key, c.tracePath);
    else if (key == "memory-csv") err = readValue(v, key, c.memoryCsvPath);
    else if (key == "recording") err = readValue(v, key, c.recording);
    else if (key == "step-gate") err = readValue(v, key, c.stepGate);
    else {
      return "unknown config key '" + it.key() +
             "'. Allowed keys are the option names of 'shardscope run --help' without dashes, "
             "e.g. model, layers, hidden, world, strategy, bucket-cap-mb.";
    }
    if (err) return err;
  }
  return std::nullopt;
}

std::optional<std::string> loadConfigFile(const std::string& path, RunConfig& config) {
  std::string error;
  const auto text = trace::readFileText(path, error, trace::kMaxConfigBytes);
  if (!text) return "cannot read config file: " + error;
  // A syntax error, a number beyond a double (1e400), or nesting past any config's.
  const auto parsed = trace::parseUserJson(*text, /*allowComments=*/true);
  if (!parsed.error.empty()) {
    return "config file '" + path + "' is not valid JSON (" + parsed.error +
           "). Write one JSON object, e.g. {\"model\": \"gpt\", \"world\": 4}.";
  }
  const auto& json = parsed.value;
  if (auto err = applyConfigJson(json, config)) return "config file '" + path + "': " + *err;
  return std::nullopt;
}

const char* zeroName(const std::string& strategy) {
  if (strategy == "ddp") return "NO_SHARD, ZeRO-0";
  if (strategy == "zero1") return "DDP + ZeroRedundancyOptimizer, ZeRO-1";
  if (strategy == "full_shard") return "FULL_SHARD, ZeRO-3";
  if (strategy == "shard_grad_op") return "SHARD_GRAD_OP, ZeRO-2";
  return "?";
}

namespace {

std::optional<std::string> positive(const char* option, long long value) {
  if (value > 0) return std::nullopt;
  return std::string("--") + option + " is " + std::to_string(value) +
         "; it must be a positive integer. Pass --" + option + " 1 or more.";
}

std::optional<std::string> oneOf(const char* option, const std::string& value,
                                 std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return std::nullopt;
    list += list.empty() ? a : std::string(", ") + a;
  }
  return std::string("--") + option + " '" + trace::clipped(value) + "' is not known; choose one of: " + list + ".";
}

// stat and mkdir rather than std::filesystem: the binaries link libtorch.so, which exports its
// own copies of several std::filesystem functions, built against an older libstdc++ (its
// remove_all crashes on a non-empty directory); the C library has one definition of each.
bool isDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// mkdir -p: 0, or the errno of the step that failed.
int makeDirectories(const std::string& dir) {
  for (size_t end = dir.find('/', 1);; end = dir.find('/', end + 1)) {
    const std::string prefix = dir.substr(0, end);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) return errno;
    if (end == std::string::npos) return 0;
  }
}

std::string parentOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Probes that `dir` can hold files, creating it if needed, without leaving anything behind.
std::optional<std::string> checkWritableDir(const char* option, const std::string& dir) {
  const int err = makeDirectories(dir);
  if (err != 0 || !isDirectory(dir)) {
    return std::string("--") + option + " '" + dir + "' cannot be created (" +
           (err != 0 ? std::strerror(err) : "not a directory") +
           "). Choose a directory you can write to.";
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return std::string("--") + option + " '" + dir +
           "' is not writable. Choose a directory you can write to.";
  }
  return std::nullopt;
}

std::optional<std::string> checkWritableFile(const char* option, const std::string& path) {
  if (isDirectory(path)) {
    return std::string("--") + option + " '" + path + "' is a directory; give a file name.";
  }
  const std::string parent = parentOf(path);
  if (!isDirectory(parent) || access(parent.c_str(), W_OK) != 0 ||
      (exists(path) && access(path.c_str(), W_OK) != 0)) {
    return std::string("--") + option + " '" + path +
           "' cannot be written (its directory is missing or read-only). Choose a writable path.";
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& allStrategies() {
  static const std::vector<std::string> all = {"ddp", "zero1", "shard_grad_op", "full_shard"};
  return all;
}

const std::vector<std::string>& defaultCompareStrategies() {
  static const std::vector<std::string> three = {"ddp", "full_shard", "shard_grad_op"};
  return three;
}

std::optional<std::string> parseStrategyList(const std::string& text, std::vector<std::string>& out) {
  out.clear();
  std::stringstream parts(text);
  const std::string emptyEntry = "--strategies '" + text + "' has an empty entry; list some of ddp, zero1, "
                                 "shard_grad_op, full_shard, separated by single commas.";
  for (std::string name; std::getline(parts, name, ',');) {
    if (name.empty()) return emptyEntry;
    if (std::find(allStrategies().begin(), allStrategies().end(), name) == allStrategies().end()) {
      return "--strategies '" + text + "': '" + name +
             "' is not a strategy; list some of ddp, zero1, shard_grad_op, full_shard, separated by "
             "commas (e.g. --strategies ddp,zero1,shard_grad_op,full_shard).";
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.empty() || text.back() == ',') return emptyEntry;
  return std::nullopt;
}

std::optional<std::string> validate(const RunConfig& c) {
  if (auto e = oneOf("model", c.model, {"mlp", "gpt"})) return e;
  if (auto e = oneOf("strategy", c.strategy, {"ddp", "zero1", "full_shard", "shard_grad_op"})) return e;
  if (auto e = oneOf("optimizer", c.optimizer, {"sgd", "adam", "adamw"})) return e;
  if (auto e = oneOf("device", c.device, {"cpu", "cuda"})) return e;
  if (auto e = oneOf("recording", c.recording, {"on", "off", "alternate"})) return e;
  if (auto e = oneOf("bind-cores", c.bindCores, {"off", "rank"})) return e;
  if (auto e = oneOf("step-gate", c.stepGate, {"off", "group", "step"})) return e;
  if (auto e = oneOf("memory-check", c.memoryCheck, {"on", "off"})) return e;
  if (c.stepGate != "off" && c.recording != "on") {
    return "--step-gate " + c.stepGate + " shows each event group as the ranks reach it, which needs " +
           "--recording on (it is '" + c.recording + "'). Drop --recording, or use --step-gate off.";
  }
  if (auto e = oneOf("precision", c.precision, {"fp32", "bf16"})) return e;
  if (auto e = oneOf("activation-checkpointing", c.activationCheckpointing, {"off", "blocks"})) return e;
  if (c.prefetch < 0 || c.prefetch > kMaxPrefetch) {
    return "--prefetch is " + std::to_string(c.prefetch) + "; it must be between 0 (no prefetch: " +
           "each unit is gathered when it is needed) and " + std::to_string(kMaxPrefetch) +
           " (units all-gathered ahead of the one computing). Pass e.g. --prefetch 1.";
  }
  if (c.world < 1 || c.world > kMaxWorldSize) {
    return "--world is " + std::to_string(c.world) + "; it must be between 1 and " +
           std::to_string(kMaxWorldSize) + " (one OS process per rank on this host). Pass --world 1.." +
           std::to_string(kMaxWorldSize) + ".";
  }
  for (auto [name, value] : {std::pair<const char*, long long>{"layers", c.layers},
                             {"hidden", c.hidden},
                             {"batch", c.batch},
                             {"steps", c.steps}}) {
    if (auto e = positive(name, value)) return e;
  }
  if (c.loraRank < 0 || c.loraRank > c.hidden) {
    return "--lora-rank is " + std::to_string(c.loraRank) + "; it must be 0 (full fine-tuning: " +
           "every parameter trains) or a rank from 1 to --hidden (" + std::to_string(c.hidden) +
           "), the inner width of the adapters. Pass e.g. --lora-rank 8.";
  }
  if (c.model == "mlp") {
    if (auto e = positive("features", c.features)) return e;
    if (auto e = positive("classes", c.classes)) return e;
  } else {
    if (auto e = positive("heads", c.heads)) return e;
    if (auto e = positive("seq", c.seq)) return e;
    if (auto e = positive("vocab", c.vocab)) return e;
    if (c.hidden % c.heads != 0) {
      return "--heads " + std::to_string(c.heads) + " does not divide --hidden " +
             std::to_string(c.hidden) + "; each head takes hidden/heads channels. Pick heads that " +
             "divide hidden (e.g. --heads " + std::to_string(c.hidden % 4 == 0 ? 4 : 1) + ").";
    }
  }
  if (c.batch % c.world != 0) {
    return "--batch " + std::to_string(c.batch) + " is not divisible by --world " +
           std::to_string(c.world) + "; every rank takes an equal shard of the global batch. Use a " +
           "batch that is a multiple of " + std::to_string(c.world) + " (e.g. --batch " +
           std::to_string((c.batch / c.world + 1) * c.world) + ").";
  }
  const int local = c.batch / c.world;
  if (c.accumulate < 1) {
    return "--accumulate is " + std::to_string(c.accumulate) + "; it must be 1 (no gradient accumulation) or " +
           "more micro-batches per step. Pass e.g. --accumulate 2.";
  }
  if (local % c.accumulate != 0) {
    return "--accumulate " + std::to_string(c.accumulate) + " does not divide a rank's batch of " +
           std::to_string(local) + " (--batch " + std::to_string(c.batch) + " / --world " +
           std::to_string(c.world) + "); each rank splits its batch into that many equal micro-batches. " +
           "Pass a divisor of " + std::to_string(local) + " (1: no accumulation), or a larger --batch.";
  }
  if (!(c.lr > 0.0) || !std::isfinite(c.lr)) {
    return "--lr is " + std::to_string(c.lr) + "; it must be a positive finite number (e.g. 1e-3).";
  }
  if (!(c.bucketCapMb > 0.0) || !std::isfinite(c.bucketCapMb)) {
    return "--bucket-cap-mb is " + std::to_string(c.bucketCapMb) +
           "; it must be a positive number of MiB (default 25).";
  }
  if (!(c.gpuMemoryGB >= 0) || !std::isfinite(c.gpuMemoryGB)) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", c.gpuMemoryGB);
    return "--gpu-memory is " + std::string(given) + "; give one device's memory in GB (e.g. 80 for "
           "an H100) for a capacity line and the headroom per rank, or 0 for none.";
  }
  if (!(c.peakTflops >= 0) || !std::isfinite(c.peakTflops)) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", c.peakTflops);
    return "--peak-tflops is " + std::string(given) + "; give one device's peak in TFLOP/s (e.g. 989 for an "
           "H100's dense bf16, or what a matmul benchmark measured on this CPU) for MFU, or 0 for none.";
  }
  // A rank says it is alive once a second: a limit under 3 s would catch a rank between two
  // heartbeats; over a day is no limit at all (and would overflow the controller's clock).
  if (!(c.stallTimeoutS == 0 || (c.stallTimeoutS >= 3 && c.stallTimeoutS <= 86400))) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", c.stallTimeoutS);
    return "--stall-timeout is " + std::string(given) + "; give the seconds a rank may send nothing before "
           "the run is stopped as stalled, from 3 to 86400 (default 30; Gloo's own timeout is 300), or 0 never to stop.";
  }
  if (c.seed < 0) {
    return "--seed is " + std::to_string(c.seed) + "; it must be 0 or more.";
  }
  if (!c.exportDir.empty()) {
    if (auto e = checkWritableDir("export", c.exportDir)) return e;
  }
  if (!c.summaryPath.empty()) {
    if (auto e = checkWritableFile("summary", c.summaryPath)) return e;
  }
  if (!c.tracePath.empty()) {
    if (auto e = checkWritableFile("trace", c.tracePath)) return e;
  }
  if (!c.memoryCsvPath.empty()) {
    if (auto e = checkWritableFile("memory-csv", c.memoryCsvPath)) return e;
  }
  return std::nullopt;
}

std::optional<std::string> parseWorldList(const std::string& text, std::vector<int>& out) {
  out.clear();
  const std::string allowed = "list world sizes from 1 to " + std::to_string(kMaxWorldSize) +
                              " separated by commas, e.g. --worlds 1,2,4,8";
  const std::string emptyEntry = "--worlds '" + text + "' has an empty entry; " + allowed + ".";
  std::stringstream parts(text);
  for (std::string entry; std::getline(parts, entry, ',');) {
    if (entry.empty()) return emptyEntry;
    const bool digits = !entry.empty() && entry.size() <= 3 && entry.find_first_not_of("0123456789") == std::string::npos;
    const int world = digits ? std::stoi(entry) : 0;
    if (world < 1 || world > kMaxWorldSize) {
      return "--worlds '" + text + "': '" + entry + "' is not a world size on this host; " + allowed + ".";
    }
    if (std::find(out.begin(), out.end(), world) == out.end()) out.push_back(world);
  }
  if (out.empty() || text.back() == ',') return emptyEntry;
  return std::nullopt;
}

std::vector<RunConfig> comparisonRuns(const RunConfig& base, const std::vector<std::string>& strategies,
                                      const std::vector<int>& worlds) {
  std::vector<RunConfig> runs;
  for (const auto& strategy : strategies) {
    for (int world : worlds.empty() ? std::vector<int>{base.world} : worlds) {
      RunConfig c = base;
      c.strategy = strategy;
      c.world = world;
      runs.push_back(c);
    }
  }
  return runs;
}

std::optional<std::string> comparisonProblem(const std::vector<RunConfig>& runs) {
  for (const auto& c : runs) {
    if (auto e = validate(c)) return "at world " + std::to_string(c.world) + ": " + *e;
  }
  return std::nullopt;
}

}  // namespace shardscope
