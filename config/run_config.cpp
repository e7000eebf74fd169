#include "config/run_config.h"

#include "files/file_text.h"
#include "files/user_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <type_traits>

namespace shardscope::config {

namespace {

// "ddp (NO_SHARD, ZeRO-0) | zero1 (...) | ...", from the strategy table.
std::string strategyChoices() {
  std::string text;
  for (const auto& row : strategyTable()) {
    text += (text.empty() ? "" : " | ") + std::string(row.name) + " (" + zeroName(row.kind) + ")";
  }
  return text;
}

}  // namespace

namespace {

// A pipeline's options (--pp and what it reads), listed after the other training options.
std::vector<ConfigField> pipelineFields() {
  using F = FieldGroup;
  return {
      {"pp", &RunConfig::pp, F::Training,
       "pipeline parallelism: the model split into stages along its blocks (the first stage also holds the "
       "embedding, the last the head and the loss), each stage on world / P consecutive ranks, as torchtitan "
       "lays out its (pp, dp, tp) mesh; --strategy works over each stage's data ranks and --tp inside them; "
       "activations and their gradients cross stages by point-to-point send and recv. 1: none"},
      {"schedule", &RunConfig::schedule, F::Training,
       "--pp: the order of forwards (F) and backwards (B) of micro-batches on each rank, as "
       "torch.distributed.pipelining's schedules: gpipe (every F, then every B) | 1f1b (P-r-1 Fs, then one F "
       "and one B in turn) | interleaved_1f1b (--stages-per-rank V stages on each rank, looped) | zero_bubble "
       "(interleaved, backward split into I and W) | zbv (two stages per rank in a V) | dualpipev (zbv's V, "
       "one chunk's F paired with the other's B, DeepSeek's DualPipe cut in half; M >= 2P); --print-schedule "
       "prints each rank's actions"},
      {"stages-per-rank", &RunConfig::stagesPerRank, F::Training,
       "--pp with interleaved_1f1b, zero_bubble (2 or more), zbv or dualpipev (2): stages on each rank, rank r "
       "holding stages r, r + P, ... (zbv, dualpipev: r and 2P - 1 - r). 0: 1, or 2 for those schedules"},
      {"microbatches", &RunConfig::microbatches, F::Training,
       "--pp: micro-batches each data rank's batch is split into, run through the pipeline and reduced "
       "once after the last. 0: P, or 2P for the looped schedules"},
  };
}

// What a run trains: the model, data, strategy and training options.
std::vector<ConfigField> trainingFields() {
  using F = FieldGroup;
  return {
      {"model", &RunConfig::model, F::Training, "model: " + modeChoices<ModelKind>()},
      {"layers", &RunConfig::layers, F::Training, "blocks; each block is one FSDP unit"},
      {"hidden", &RunConfig::hidden, F::Training, "hidden width"},
      {"heads", &RunConfig::heads, F::Training, "gpt: attention heads, must divide --hidden"},
      {"seq", &RunConfig::seq, F::Training, "gpt: tokens per sample"},
      {"vocab", &RunConfig::vocab, F::Training, "gpt: vocabulary size"},
      {"features", &RunConfig::features, F::Training, "mlp: input features"},
      {"classes", &RunConfig::classes, F::Training, "mlp: output classes"},
      {"batch", &RunConfig::batch, F::Training, "global batch in samples; split evenly, so a multiple of --world"},
      {"steps", &RunConfig::steps, F::Training, "training steps"},
      {"world", &RunConfig::world, F::Training,
       "ranks: one OS process each, 1.." + std::to_string(kMaxWorldSize) + " (estimate: any)"},
      {"tp", &RunConfig::tp, F::Training,
       "tensor parallelism: groups of N consecutive ranks split each block's matrices (gpt: attention's qkv and "
       "the MLP's first linear by output features (column-parallel), their projections by input features "
       "(row-parallel), heads divided by N; mlp: its "
       "linears paired column-then-row, an odd head left whole), with an all-reduce over the group in forward "
       "and in backward, as Megatron-LM and PyTorch's ColwiseParallel/RowwiseParallel; --strategy then works "
       "over the data dimension, world / N ranks. 1: none. estimate --params or --arch: GPUs per tensor-parallel "
       "group, any number"},
      {"sequence-parallel", &RunConfig::sequenceParallel, F::Training,
       "with --tp (gpt): sequence parallelism too, as Megatron-LM and PyTorch's SequenceParallel: the "
       "residual stream, the LayerNorms and the embedding's output split along the sequence over the tensor "
       "group, each all-reduce becoming an all-gather before a column-parallel linear and a reduce-scatter "
       "after a row-parallel one, so activations divide by --tp entirely (--seq a multiple of --tp). "
       "estimate --params or --arch: the tables' activations split so"},
      {"strategy", &RunConfig::strategy, F::Training, strategyChoices()},
      {"optimizer", &RunConfig::optimizer, F::Training,
       modeChoices<OptimizerKind>() + " (torch.optim defaults; adamw weight decay 0.01)"},
      {"lr", &RunConfig::lr, F::Training, "learning rate"},
      {"seed", &RunConfig::seed, F::Training, "seed of the initial parameters and the synthetic data"},
      {"device", &RunConfig::device, F::Training,
       "cpu (Gloo between ranks) | cuda (NCCL between ranks; rank r on GPU r % GPUs, several ranks per GPU "
       "when GPUs are fewer, each with its own NCCL_HOSTID)"},
      {"bind-cores", &RunConfig::bindCores, F::Training,
       "off (the OS places the rank processes, as torchrun does) | rank (each rank process, its threads and "
       "NCCL's, pinned to its own slice of the cores this run may use, as taskset per rank would: "
       "consecutive slices as equal as they divide, shared when there are fewer cores than ranks; the run "
       "output names each slice)"},
      {"bucket-cap-mb", &RunConfig::bucketCapMb, F::Training,
       "ddp, zero1: gradient bucket size in MiB; the first bucket is 1 MiB (no_shard: a bucket per unit)"},
      {"prefetch", &RunConfig::prefetch, F::Training,
       "full_shard/shard_grad_op: units whose all-gather is issued ahead of the one computing, in forward "
       "and in backward (0..4; FSDP2 prefetches 1)"},
      {"shard-group-size", &RunConfig::shardGroupSize, F::Training,
       "hybrid_shard, hybrid_shard_zero2: ranks that split the parameters among them (FSDP2's 2-D mesh "
       "(replicate, shard): rank r is in shard group r / S and replicate group r % S); a divisor of --world. "
       "0: --world over its smallest prime factor (4 -> 2, 6 -> 3, 8 -> 4). Under --tp N the same over the "
       "world / N data ranks"},
      {"precision", &RunConfig::precision, F::Training,
       "fp32 | bf16 (bf16 parameters and compute; fp32 gradient reduction and master weights, like "
       "FSDP2's MixedPrecisionPolicy)"},
      {"accumulate", &RunConfig::accumulate, F::Training,
       "gradient accumulation: micro-batches per optimizer step; each rank splits its batch into this many "
       "and reduces gradients only after the last (DDP's no_sync, FSDP2's "
       "set_requires_gradient_sync(False)), so unreduced gradients are held meanwhile"},
      {"activation-checkpointing", &RunConfig::activationCheckpointing, F::Training,
       "off | blocks (each block keeps only its input in forward and recomputes its activations in "
       "backward, as checkpoint_wrapper on every block: less activation memory for one more forward per "
       "block)"},
      {"offload", &RunConfig::offload, F::Training,
       "off | cpu (full_shard, shard_grad_op and the hybrid strategies on --device cuda: each rank keeps its "
       "parameter shards and their gradients in pinned host memory and the optimizer state in host memory, copies a "
       "unit's "
       "shard to the GPU for its all-gather and its reduced gradient back, and runs the optimizer step on "
       "the CPU, as FSDP2's CPUOffloadPolicy; less GPU memory for host traffic and a CPU step)"},
      {"lora-rank", &RunConfig::loraRank, F::Training,
       "0: full fine-tuning | r (1..--hidden): LoRA fine-tuning, the base weights frozen and rank-r "
       "adapters on every block's linear layers trained (PEFT's LoraConfig(r, lora_alpha=r)); only the "
       "adapters get gradients and optimizer state"},
      {"step-gate", &RunConfig::stepGate, F::Training,
       "off | group (every rank waits before each event group, where FSDP's and DDP's hooks fire: an "
       "all-gather, a unit's forward, a reshard, a backward, a reduce-scatter, a bucket's all-reduce, the "
       "optimizer step, until released) | step (before each training step). In a terminal: Enter "
       "releases one, c + Enter continues, q + Enter stops; the app has Step and Continue. Pauses are "
       "marked and left out of step times"},
  };
}

// Where a run's outputs go, and how it is watched and checked.
std::vector<ConfigField> outputAndControlFields() {
  using F = FieldGroup;
  return {
      {"export", &RunConfig::exportDir, F::OutputPath,
       "write init.pt, data.pt, losses.pt and final.pt (torch.load reads them) into DIR"},
      {"summary", &RunConfig::summaryPath, F::OutputPath,
       "write a JSON summary (per-step loss; per rank: peak memory by role, step times, throughput, "
       "collectives, overlap; docs/outputs.md) to FILE"},
      {"trace", &RunConfig::tracePath, F::OutputPath,
       "write the run's trace to FILE, in the format its name ends in: FILE.pftrace (Perfetto's protobuf: "
       "compact, for runs of any length) or FILE.json (Chrome trace JSON, for short runs); Perfetto "
       "(ui.perfetto.dev) and 'shardscope view' open both"},
      {"memory-csv", &RunConfig::memoryCsvPath, F::OutputPath,
       "write every memory sample (rank, time, bytes per role) as CSV to FILE"},
      {"gpu-memory", &RunConfig::gpuMemoryGB, F::RunControl,
       "one device's memory in GB (10^9 B), e.g. 80 for an H100: a capacity line in the memory lanes and "
       "the headroom per rank in the tables; 0: none on CPU, the GPU's own memory on GPU ranks"},
      {"peak-tflops", &RunConfig::peakTflops, F::RunControl,
       "one device's peak in TFLOP/s, as you state it (a data sheet, or a matmul benchmark on this CPU): "
       "MFU = model FLOP/s / peak, in the summary, the tables and the app's throughput lane; 0: no MFU on "
       "CPU, and on a GPU rank alone on its GPU the peak it measures before training (8192^3 matmuls in "
       "the run's precision)"},
      {"memory-check", &RunConfig::memoryCheck, F::RunControl,
       "on: before any rank starts, refuse a CPU run whose predicted memory (model states and activations "
       "per rank, times the ranks) exceeds what this host has free; off: run anyway"},
      {"stall-timeout", &RunConfig::stallTimeoutS, F::RunControl,
       "seconds a rank may send nothing (its recorder says it is alive every second, even while it waits "
       "at the step gate) before the run is stopped, the rank named with its last event, and what was "
       "recorded kept; 0: never"},
      {"slow-rank", &RunConfig::slowRank, F::Training,
       "R:FACTOR, e.g. 1:3: rank R's compute takes FACTOR times as long: after each of its forward, backward "
       "and optimizer spans it sleeps FACTOR - 1 times the span's measured time (a measured sleep, not extra "
       "arithmetic: the core it frees goes to the others), so it arrives late at every collective, for teaching "
       "and for testing who the straggler is; empty: none"},
      {"hang-rank", &RunConfig::hangRank, F::Training,
       "R:STEP, e.g. 1:2: rank R stops before step STEP (from 1) and never reaches its collectives: it "
       "sleeps, alive (its recorder still says so), as a rank stuck in its data loader would, while the others "
       "wait in that step's first collective until --collective-timeout fails them. For teaching hangs: the "
       "error, the summary and the Last collectives tab then name the rank that never came; empty: none"},
      {"collective-timeout", &RunConfig::collectiveTimeoutS, F::RunControl,
       "seconds a rank waits in one collective before it fails (Gloo's and NCCL's timeout, as "
       "init_process_group's timeout sets it), from 1 to 86400"},
      {"recording", &RunConfig::recording, F::RunControl,
       "on | off (step times only; on a GPU also no CUDA events, polling thread or allocator hook) | "
       "alternate (record even steps only: measures recording overhead)"},
  };
}

}  // namespace

namespace {

// The ranges of the number options that allow less than their type does, by key. A model's sizes
// are positive whatever the model: a size of 0 means nothing for any of them.
std::map<std::string, NumberRange> numberRanges() {
  const NumberRange positive{1, 1e300, false, false, "it must be a positive integer.", "1"};
  std::map<std::string, NumberRange> ranges;
  for (const char* key : {"layers", "hidden", "heads", "seq", "vocab", "features", "classes", "batch", "steps"})
    ranges[key] = positive;
  ranges["world"] = {
      1,
      kMaxWorldSize,
      false,
      false,
      "it must be between 1 and " + std::to_string(kMaxWorldSize) + " (one OS process per rank on this host).",
      "2"};
  ranges["prefetch"] = {0,
                        kMaxPrefetch,
                        false,
                        false,
                        "it must be between 0 (no prefetch: each unit is gathered when it is needed) and " +
                            std::to_string(kMaxPrefetch) + " (units all-gathered ahead of the one computing).",
                        "1"};
  ranges["accumulate"] = {
      1, 1e300, false, false, "it must be 1 (no gradient accumulation) or more micro-batches per step.", "2"};
  ranges["seed"] = {0, 1e300, false, false, "it must be 0 or more.", "0"};
  ranges["pp"] = {1,
                  kMaxWorldSize,
                  false,
                  false,
                  "it must be between 1 (no pipeline) and " + std::to_string(kMaxWorldSize) +
                      " ranks per pipeline, one stage each.",
                  "2"};
  ranges["stages-per-rank"] = {1, 64, false, true, "it must be 0 (the schedule's default) or 1 to 64.", "2"};
  ranges["microbatches"] = {1, 1e6, false, true, "it must be 0 (the schedule's default) or 1 or more.", "4"};
  ranges["lr"] = {0, 1e300, true, false, "it must be a positive finite number (e.g. 1e-3)."};
  ranges["bucket-cap-mb"] = {0, 1e300, true, false, "it must be a positive number of MiB (default 25)."};
  ranges["gpu-memory"] = {0, 1e300, false, false,
                          "give one device's memory in GB (e.g. 80 for an H100) for a capacity line and the "
                          "headroom per rank, or 0 for none."};
  ranges["peak-tflops"] = {0, 1e300, false, false,
                           "give one device's peak in TFLOP/s (e.g. 989 for an H100's dense bf16, or what a "
                           "matmul benchmark measured on this CPU) for MFU, or 0 for none."};
  // A rank says it is alive once a second: a limit under 3 s would catch a rank between two
  // heartbeats; over a day is no limit at all (and would overflow the controller's clock).
  ranges["stall-timeout"] = {3, 86400, false, true,
                             "give the seconds a rank may send nothing before the run is stopped as stalled, "
                             "from 3 to 86400 (default 30; Gloo's own timeout is 300), or 0 never to stop."};
  return ranges;
}

}  // namespace

const std::vector<ConfigField>& configFields() {
  static const std::vector<ConfigField> fields = [] {
    std::vector<ConfigField> all = trainingFields();
    for (auto& field : pipelineFields()) all.push_back(std::move(field));
    for (auto& field : outputAndControlFields()) all.push_back(std::move(field));
    const auto ranges = numberRanges();
    for (auto& field : all) {
      if (auto found = ranges.find(field.key); found != ranges.end()) field.range = found->second;
    }
    return all;
  }();
  return fields;
}

std::optional<std::string> outOfRange(const RunConfig& config, const ConfigField& field) {
  if (!field.range) return std::nullopt;
  const NumberRange& range = *field.range;
  std::optional<std::string> shown;  // the value as the user wrote it, when it is a number
  double value = 0;
  std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(config.*member)>;
        if constexpr (std::is_same_v<T, double>) {
          value = config.*member;
          shown = files::shownNumber(value);
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          value = static_cast<double>(config.*member);
          shown = std::to_string(config.*member);
        }
      },
      field.member);
  if (!shown) return std::nullopt;
  const bool above = range.minExclusive ? value > range.min : value >= range.min;
  const bool within = std::isfinite(value) && above && value <= range.max;
  if (within || (range.zeroAlso && value == 0)) return std::nullopt;
  std::string message = std::string("--") + field.key + " is " + *shown + "; " + range.rule;
  if (range.example) message += std::string(" Pass e.g. --") + field.key + " " + range.example + ".";
  return message;
}

std::string fieldText(const RunConfig& config, const ConfigField& field) {
  return std::visit(
      [&](auto member) {
        std::ostringstream text;
        text << std::boolalpha << config.*member;
        return text.str();
      },
      field.member);
}

nlohmann::json RunConfig::toJson() const {
  nlohmann::json json = nlohmann::json::object();
  for (const auto& field : configFields()) {
    if (field.group == FieldGroup::OutputPath) continue;
    std::visit([&](auto member) { json[field.key] = this->*member; }, field.member);
  }
  return json;
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
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) {
      return "config key '" + key + "' has value " + files::shownValue(value) + "; it must be true or false, e.g. \"" +
             key + "\": true.";
    }
    out = value.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string())
      return "config key '" + key + "' has value " + files::shownValue(value) + "; it must be a string.";
    out = value.get<std::string>();
  } else if constexpr (kIsMode<T>) {
    if (!value.is_string()) {
      return "config key '" + key + "' has value " + files::shownValue(value) + "; it must be one of " +
             modeChoices<T>(", ") + ", as a string.";
    }
    return readMode(value.get<std::string>(), out);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      return "config key '" + key + "' has value " + files::shownValue(value) +
             "; it must be a finite number, e.g. \"" + key + "\": 1.5.";
    }
    out = value.get<T>();
  } else {
    const bool whole = value.is_number_integer() || value.is_number_unsigned() ||
                       (value.is_number_float() && std::isfinite(value.get<double>()) &&
                        std::trunc(value.get<double>()) == value.get<double>());
    if (!whole) {
      return "config key '" + key + "' has value " + files::shownValue(value) + "; it must be a whole number, e.g. \"" +
             key + "\": 4.";
    }
    const long double v = value.is_number_unsigned()  ? static_cast<long double>(value.get<uint64_t>())
                          : value.is_number_integer() ? static_cast<long double>(value.get<int64_t>())
                                                      : static_cast<long double>(value.get<double>());
    if (v < static_cast<long double>(std::numeric_limits<T>::min()) ||
        v > static_cast<long double>(std::numeric_limits<T>::max())) {
      return "config key '" + key + "' has value " + files::shownValue(value) +
             ", out of range: it must be a whole number from " + std::to_string(std::numeric_limits<T>::min()) +
             " to " + std::to_string(std::numeric_limits<T>::max()) + ".";
    }
    out = static_cast<T>(v);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> applyConfigJson(const nlohmann::json& json, RunConfig& c,
                                           std::map<std::string, std::string>* spellings) {
  if (!json.is_object()) {
    return std::string(
        "the config must be a JSON object of option names to values, e.g. "
        "{\"model\": \"gpt\", \"world\": 4}.");
  }
  std::map<std::string, std::string> spelled;  // each key as given, by its dashed name
  for (auto it = json.begin(); it != json.end(); ++it) {
    const std::string key = normalizeKey(it.key());
    const auto field =
        std::find_if(configFields().begin(), configFields().end(), [&](const ConfigField& f) { return key == f.key; });
    if (field == configFields().end()) {
      return "unknown config key '" + files::clipped(it.key()) +
             "'. Allowed keys are the option names of 'shardscope run --help' without dashes, "
             "e.g. model, layers, hidden, world, strategy, bucket-cap-mb.";
    }
    // Both spellings would otherwise both apply, the later one silently winning.
    if (const auto [first, fresh] = spelled.emplace(key, it.key()); !fresh) {
      return "config keys '" + first->second + "' and '" + it.key() + "' are one key, --" + key +
             ", given twice ('-' and '_' spell it alike): keep one of them.";
    }
    const auto error = std::visit([&](auto member) { return readValue(it.value(), key, c.*member); }, field->member);
    if (error) return error;
  }
  if (spellings) *spellings = std::move(spelled);
  return std::nullopt;
}

std::optional<std::string> loadConfigFile(const std::string& path, RunConfig& config,
                                          std::map<std::string, std::string>* spellings) {
  std::string error;
  const auto text = files::readFileText(path, error, files::kMaxConfigBytes);
  if (!text) return "cannot read config file: " + error;
  // A syntax error, a number beyond a double (1e400), or nesting past any config's.
  const auto parsed = files::parseUserJson(*text, /*allowComments=*/true);
  if (!parsed.error.empty()) {
    return "config file '" + path + "' is not valid JSON (" + parsed.error +
           "). Write one JSON object, e.g. {\"model\": \"gpt\", \"world\": 4}.";
  }
  const auto& json = parsed.value;
  if (auto err = applyConfigJson(json, config, spellings)) return "config file '" + path + "': " + *err;
  return std::nullopt;
}

namespace {

// A model whose parameter count a 64-bit integer cannot hold (--hidden 2147483647 printed
// P = -9223371948807946273). The count is bounded from above in floating point, every term of
// model_layout.h's layouts taken at its largest (a block of the gpt holds 12 h^2 + 13 h, with LoRA's
// adapters at most 4 r (4 h + h) more); a model refused here has over 2e18 parameters, past
// anything a run or a prediction means.
std::optional<std::string> modelSizeProblem(const RunConfig& c) {
  const long double h = c.hidden, layers = c.layers, r = c.loraRank;
  const long double block = 12 * h * h + 13 * h + 4 * r * 5 * h;
  const long double root = c.model == ModelKind::Gpt ? (2.0L * c.vocab + c.seq + 2) * h
                                                     : (1.0L * c.features + c.classes + 1) * h + c.classes;
  if (layers * block + root < 2e18L) return std::nullopt;
  // The sizes that make it, and the largest of them as the one to shrink.
  const bool gpt = c.model == ModelKind::Gpt;
  std::string sizes;
  std::pair<const char*, long long> largest{"hidden", 0};
  for (auto size : {std::pair<const char*, long long>{"layers", c.layers},
                    {"hidden", c.hidden},
                    {gpt ? "vocab" : "features", gpt ? c.vocab : c.features}}) {
    sizes += (sizes.empty() ? "--" : ", --") + std::string(size.first) + " " + std::to_string(size.second);
    if (size.second > largest.second) largest = size;
  }
  return sizes + " make a model of more parameters than a 64-bit count holds (over 2e18): pass a smaller --" +
         largest.first + ".";
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

// The directory itself if it exists, else the nearest ancestor that does: where mkdir -p starts.
std::string nearestExisting(std::string dir) {
  while (!exists(dir)) {
    const std::string parent = parentOf(dir);
    if (parent == dir) break;
    dir = parent;
  }
  return dir;
}

// That `dir` can hold files: it is a writable directory, or mkdir -p could make it. Only looks: a
// run makes the directory when it starts.
std::optional<std::string> checkWritableDir(const char* option, const std::string& dir) {
  const std::string existing = nearestExisting(dir);
  if (!isDirectory(existing)) {
    return std::string("--") + option + " '" + dir + "' cannot be created ('" + existing +
           "' is not a directory). Choose a directory you can write to.";
  }
  if (access(existing.c_str(), W_OK) != 0) {
    return std::string("--") + option + " '" + dir + "' " +
           (existing == dir ? "is not writable" : "cannot be created ('" + existing + "' is not writable)") +
           ". Choose a directory you can write to.";
  }
  return std::nullopt;
}

// --trace's format comes from its name (trace/trace_files.h, which config cannot include: the
// trace library is above it): FILE.json or FILE.pftrace. A device or pipe the user names
// (/dev/null, a FIFO) has no name to choose by and is written as Chrome JSON.
std::optional<std::string> traceNameProblem(const std::string& path) {
  const auto endsWith = [&](const std::string& end) {
    return path.size() >= end.size() && path.compare(path.size() - end.size(), end.size(), end) == 0;
  };
  struct stat st {};
  if (endsWith(".json") || endsWith(".pftrace") || (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))) {
    return std::nullopt;
  }
  return "--trace '" + path +
         "' names no trace format: end it in .pftrace (Perfetto's protobuf trace, compact, for "
         "runs of any length) or .json (Chrome trace JSON, for short runs), e.g. --trace run.pftrace";
}

std::optional<std::string> checkWritableFile(const char* option, const std::string& path) {
  if (isDirectory(path)) {
    return std::string("--") + option + " '" + path + "' is a directory; give a file name.";
  }
  const std::string parent = parentOf(path);
  if (!isDirectory(parent) || access(parent.c_str(), W_OK) != 0 || (exists(path) && access(path.c_str(), W_OK) != 0)) {
    return std::string("--") + option + " '" + path +
           "' cannot be written (its directory is missing or read-only). Choose a writable path.";
  }
  return std::nullopt;
}

}  // namespace

int shardGroupSize(const RunConfig& c) {
  const int dataRanks = dataRankCount(c);  // the world without --tp and --pp
  if (!traitsOf(c.strategy).replicatesShardGroups) return dataRanks;
  if (c.shardGroupSize > 0) return c.shardGroupSize;
  int smallestPrime = dataRanks;
  for (int p = 2; p * p <= dataRanks; ++p) {
    if (dataRanks % p == 0) {
      smallestPrime = p;
      break;
    }
  }
  return std::max(1, dataRanks / std::max(1, smallestPrime));
}

int replicaCount(const RunConfig& c) { return dataRankCount(c) / std::max(1, shardGroupSize(c)); }

std::optional<std::string> shardGroupProblem(const RunConfig& c) {
  const bool hybrid = traitsOf(c.strategy).replicatesShardGroups;
  if (!hybrid && c.shardGroupSize != 0) {
    return "--shard-group-size " + std::to_string(c.shardGroupSize) + " is for the hybrid strategies; " +
           strategyName(c.strategy) + " divides among the whole world. Use --strategy hybrid_shard (or " +
           "hybrid_shard_zero2), or drop --shard-group-size.";
  }
  if (!hybrid) return std::nullopt;
  // Under --tp and --pp the shard groups divide the data ranks (torchtitan's (pp, dp_replicate,
  // dp_shard, tp)).
  const int outside = std::max(1, c.tp) * std::max(1, c.pp);
  const bool underTp = outside > 1 && c.world % outside == 0;
  const int ranks = underTp ? c.world / outside : c.world;
  if (c.shardGroupSize < 0 || c.shardGroupSize > ranks || ranks % std::max(1, c.shardGroupSize) != 0) {
    std::string divisors;
    for (int d = 1; d <= ranks; ++d) {
      if (ranks % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
    }
    const std::string tp = c.tp > 1 ? " / --tp " + std::to_string(c.tp) : "";
    const std::string pp = c.pp > 1 ? " / --pp " + std::to_string(c.pp) : "";
    const std::string among =
        underTp ? "the " + std::to_string(ranks) + " data ranks (--world " + std::to_string(c.world) + tp + pp + ")"
                : "--world " + std::to_string(c.world);
    return "--shard-group-size " + std::to_string(c.shardGroupSize) + " does not divide " + among +
           " into equal shard groups; pass one of " + divisors +
           " (ranks per shard group), or 0 to let shardscope pick.";
  }
  return std::nullopt;
}

namespace {

// --sequence-parallel splits a sequence among a tensor group's ranks: it needs both, and equal parts.
std::optional<std::string> sequenceParallelProblem(const RunConfig& c) {
  if (!c.sequenceParallel) return std::nullopt;
  if (c.tp < 2) {
    return std::string(
        "--sequence-parallel splits what tensor parallelism leaves whole along the sequence; it needs --tp 2 or "
        "more (e.g. --tp 2 --sequence-parallel)");
  }
  if (c.model != ModelKind::Gpt) {
    return std::string(
        "--sequence-parallel with --model mlp: the mlp has no sequence to split. Use --model gpt, or drop "
        "--sequence-parallel.");
  }
  if (c.loraRank > 0) {
    return std::string(
        "--sequence-parallel with --lora-rank: shardscope does not yet add LoRA's adapters to a sequence-parallel "
        "linear. Drop one of them (--tp alone takes --lora-rank).");
  }
  if (c.seq % c.tp != 0) {
    return "--seq " + std::to_string(c.seq) + " is not a multiple of --tp " + std::to_string(c.tp) +
           ": under --sequence-parallel each rank of a tensor group keeps seq/N of the tokens. Pick --seq a multiple "
           "of " +
           std::to_string(c.tp) + " (e.g. --seq " + std::to_string(c.tp * (c.seq / c.tp + 1)) + ").";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> tensorParallelProblem(const RunConfig& c) {
  if (c.world < 1) return std::nullopt;  // no world to divide: validate() says so first
  const std::string tp = "--tp " + std::to_string(c.tp);
  if (c.tp < 1 || c.tp > c.world || c.world % c.tp != 0) {
    std::string divisors;
    for (int d = 1; d <= c.world; ++d) {
      if (c.world % d == 0) divisors += (divisors.empty() ? "" : ", ") + std::to_string(d);
    }
    return tp + " does not divide --world " + std::to_string(c.world) +
           " into tensor groups of equal size; pass one of " + divisors + " (1: no tensor parallelism).";
  }
  if (c.tp == 1) return sequenceParallelProblem(c);
  if (c.model == ModelKind::Gpt && c.heads % c.tp != 0) {
    // The first multiple of N from --heads up that still divides --hidden.
    int suggested = c.tp;
    for (int h = c.tp; h <= c.hidden; h += c.tp) {
      if (h >= c.heads && c.hidden % h == 0) {
        suggested = h;
        break;
      }
    }
    return tp + " does not divide --heads " + std::to_string(c.heads) +
           "; each rank of a tensor group computes heads/N whole heads. Pick --heads a multiple of " +
           std::to_string(c.tp) + " that divides --hidden (e.g. --heads " + std::to_string(suggested) + ").";
  }
  if (c.model == ModelKind::Mlp && c.hidden % c.tp != 0) {
    return tp + " does not divide --hidden " + std::to_string(c.hidden) +
           "; each rank of a tensor group keeps hidden/N of a column-parallel linear's outputs. Pick --hidden a "
           "multiple of " +
           std::to_string(c.tp) + " (e.g. --hidden " + std::to_string(c.tp * (c.hidden / c.tp + 1)) + ").";
  }
  return sequenceParallelProblem(c);
}

std::optional<std::string> offloadProblem(const RunConfig& c) {
  if (c.offload == Offload::Off) return std::nullopt;
  if (!traitsOf(c.strategy).shardsParameters) {
    return std::string(
               "--offload cpu moves the parameter shards, gradients and optimizer state of a sharded "
               "strategy to host memory (FSDP2's CPUOffloadPolicy); --strategy ") +
           strategyName(c.strategy) +
           " does not shard parameters. Use --strategy full_shard (or shard_grad_op, "
           "hybrid_shard, hybrid_shard_zero2), or drop --offload.";
  }
  if (c.device != DeviceKind::Cuda) {
    return std::string("--offload cpu moves a GPU rank's training state to host memory, but --device is ") +
           modeName(c.device) +
           ": a CPU run's state is in host memory already. Pass --device cuda on a "
           "machine with a GPU, or drop --offload.";
  }
  return std::nullopt;
}

std::optional<SlowRank> slowRankOf(const std::string& text, std::string* error) {
  if (text.empty()) return std::nullopt;
  const auto colon = text.find(':');
  SlowRank out;
  char* end = nullptr;
  const std::string rank = text.substr(0, colon);
  const bool rankRead = colon != std::string::npos && !rank.empty() &&
                        rank.find_first_not_of("0123456789") == std::string::npos && rank.size() <= 4;
  if (rankRead) out.rank = std::stoi(rank);
  const std::string factor = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (rankRead && !factor.empty() && factor.find_first_not_of("0123456789.") == std::string::npos) {
    out.factor = std::strtod(factor.c_str(), &end);
  }
  if (!rankRead || end == nullptr || *end != '\0' || !(out.factor >= 1 && out.factor <= 100)) {
    if (error) {
      *error = "--slow-rank '" + files::clipped(text) +
               "' is not R:FACTOR, a rank and how many times as long its "
               "compute takes, from 1 to 100: e.g. --slow-rank 1:3";
    }
    return std::nullopt;
  }
  return out;
}

std::optional<HangRank> hangRankOf(const std::string& text, std::string* error) {
  if (text.empty()) return std::nullopt;
  const auto colon = text.find(':');
  const std::string rank = text.substr(0, colon);
  const std::string step = colon == std::string::npos ? "" : text.substr(colon + 1);
  const auto whole = [](const std::string& s) {
    return !s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!whole(rank) || !whole(step) || std::stoi(step) < 1) {
    if (error) {
      *error = "--hang-rank '" + files::clipped(text) +
               "' is not R:STEP, a rank and the step (from 1) before which it stops: e.g. --hang-rank 1:2";
    }
    return std::nullopt;
  }
  return HangRank{std::stoi(rank), std::stoi(step)};
}

namespace {

// Why `given` (an option and its value) names no rank of a world of `world`, or nothing.
std::optional<std::string> rankOutsideWorld(const std::string& given, int rank, int world) {
  if (rank < world) return std::nullopt;
  return given + " names rank " + std::to_string(rank) + ", but the ranks are 0 to " + std::to_string(world - 1) +
         " (--world " + std::to_string(world) + "): name one of them";
}

// Why --hang-rank names no rank or step of the run, or why --collective-timeout is out of range.
std::optional<std::string> hangProblem(const RunConfig& c) {
  if (!(c.collectiveTimeoutS >= 1 && c.collectiveTimeoutS <= 86400)) {
    return "--collective-timeout is " + files::shownNumber(c.collectiveTimeoutS) +
           "; give the seconds a rank waits in one collective before it fails, from 1 to 86400 (default 300).";
  }
  if (c.hangRank.empty()) return std::nullopt;
  std::string error;
  const auto hang = hangRankOf(c.hangRank, &error);
  if (!hang) return error;
  if (auto e = rankOutsideWorld("--hang-rank " + c.hangRank, hang->rank, c.world)) return e;
  if (hang->step > c.steps) {
    return "--hang-rank " + c.hangRank + " names step " + std::to_string(hang->step) + ", but the run has " +
           std::to_string(c.steps) + " (--steps): name one of 1 to " + std::to_string(c.steps);
  }
  return std::nullopt;
}

// Why --slow-rank names no rank of the run, or nothing.
std::optional<std::string> slowRankProblem(const RunConfig& c) {
  if (c.slowRank.empty()) return std::nullopt;
  std::string error;
  const auto slow = slowRankOf(c.slowRank, &error);
  if (!slow) return error;
  if (auto e = rankOutsideWorld("--slow-rank " + c.slowRank, slow->rank, c.world)) return e;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> outputsProblem(const RunConfig& c) {
  if (!c.exportDir.empty()) {
    if (auto e = checkWritableDir("export", c.exportDir)) return e;
  }
  if (!c.summaryPath.empty()) {
    if (auto e = checkWritableFile("summary", c.summaryPath)) return e;
  }
  if (!c.tracePath.empty()) {
    if (auto e = checkWritableFile("trace", c.tracePath)) return e;
    if (auto e = traceNameProblem(c.tracePath)) return e;
  }
  if (!c.memoryCsvPath.empty()) {
    if (auto e = checkWritableFile("memory-csv", c.memoryCsvPath)) return e;
  }
  return std::nullopt;
}

// The global batch split over the data-parallel ranks, then each rank's over its micro-batches.
std::optional<std::string> batchSplitProblem(const RunConfig& c) {
  // Under --tp the ranks of a tensor group share their slice of the batch, under --pp a pipeline's.
  const int dataRanks = dataRankCount(c);
  const std::string tp = c.tp > 1 ? " / --tp " + std::to_string(c.tp) : "";
  const std::string pp = c.pp > 1 ? " / --pp " + std::to_string(c.pp) : "";
  const std::string over = c.tp > 1 || c.pp > 1
                               ? "the " + std::to_string(dataRanks) + " data-parallel ranks (--world " +
                                     std::to_string(c.world) + tp + pp + ")"
                               : "--world " + std::to_string(c.world);
  if (c.batch % dataRanks != 0) {
    return "--batch " + std::to_string(c.batch) + " is not divisible by " + over +
           "; every rank takes an equal shard of the global batch. Use a " + "batch that is a multiple of " +
           std::to_string(dataRanks) + " (e.g. --batch " + std::to_string((c.batch / dataRanks + 1) * dataRanks) + ").";
  }
  const int local = c.batch / dataRanks;
  if (local % c.accumulate != 0) {
    return "--accumulate " + std::to_string(c.accumulate) + " does not divide a rank's batch of " +
           std::to_string(local) + " (--batch " + std::to_string(c.batch) + " / " + over +
           "); each rank splits its batch into that many equal micro-batches. " + "Pass a divisor of " +
           std::to_string(local) + " (1: no accumulation), or a larger --batch.";
  }
  return std::nullopt;
}

// The rules across options: each number option's own range is its field's (outOfRange), checked
// first, so that these divide and compare values already in range.
std::optional<std::string> validate(const RunConfig& c) {
  if (c.stepGate != StepGateMode::Off && c.recording != RecordingMode::On) {
    return std::string("--step-gate ") + modeName(c.stepGate) +
           " shows each event group as the ranks reach it, which needs " + "--recording on (it is '" +
           modeName(c.recording) + "'). Drop --recording, or use --step-gate off.";
  }
  // The world's range first: other figures may be made from it (estimate's batch from the world).
  const auto& fields = configFields();
  const auto world =
      std::find_if(fields.begin(), fields.end(), [](const auto& f) { return f.key == std::string("world"); });
  if (auto e = outOfRange(c, *world)) return e;
  for (const auto& field : fields) {
    if (auto e = outOfRange(c, field)) return e;
  }
  if (auto e = shardGroupProblem(c)) return e;
  if (auto e = offloadProblem(c)) return e;
  if (auto e = tensorParallelProblem(c)) return e;
  if (c.loraRank < 0 || c.loraRank > c.hidden) {
    return "--lora-rank is " + std::to_string(c.loraRank) +
           "; it must be 0 (full fine-tuning: " + "every parameter trains) or a rank from 1 to --hidden (" +
           std::to_string(c.hidden) + "), the inner width of the adapters. Pass e.g. --lora-rank 8.";
  }
  if (c.model == ModelKind::Gpt && c.hidden % c.heads != 0) {
    return "--heads " + std::to_string(c.heads) + " does not divide --hidden " + std::to_string(c.hidden) +
           "; each head takes hidden/heads channels. Pick heads that " + "divide hidden (e.g. --heads " +
           std::to_string(c.hidden % 4 == 0 ? 4 : 1) + ").";
  }
  if (auto e = modelSizeProblem(c)) return e;
  if (auto e = pipelineProblem(c)) return e;
  if (auto e = batchSplitProblem(c)) return e;
  if (auto e = slowRankProblem(c)) return e;
  return hangProblem(c);
}

std::optional<std::string> makeOutputDirectories(const RunConfig& c) {
  if (auto e = outputsProblem(c)) return e;
  if (c.exportDir.empty()) return std::nullopt;
  if (const int err = makeDirectories(c.exportDir); err != 0 || !isDirectory(c.exportDir)) {
    return "--export '" + c.exportDir + "' cannot be created (" + (err != 0 ? std::strerror(err) : "not a directory") +
           "). Choose a directory you can write to.";
  }
  return std::nullopt;
}

std::optional<std::string> parseWorldList(const std::string& text, std::vector<int>& out) {
  out.clear();
  const std::string allowed =
      "list world sizes from 1 to " + std::to_string(kMaxWorldSize) + " separated by commas, e.g. --worlds 1,2,4,8";
  const std::string emptyEntry = "--worlds '" + text + "' has an empty entry; " + allowed + ".";
  std::stringstream parts(text);
  for (std::string entry; std::getline(parts, entry, ',');) {
    if (entry.empty()) return emptyEntry;
    const bool digits =
        !entry.empty() && entry.size() <= 3 && entry.find_first_not_of("0123456789") == std::string::npos;
    const int world = digits ? std::stoi(entry) : 0;
    if (world < 1 || world > kMaxWorldSize) {
      return "--worlds '" + text + "': '" + entry + "' is not a world size on this host; " + allowed + ".";
    }
    if (std::find(out.begin(), out.end(), world) == out.end()) out.push_back(world);
  }
  if (out.empty() || text.back() == ',') return emptyEntry;
  return std::nullopt;
}

std::vector<RunConfig> comparisonRuns(const RunConfig& base, const std::vector<StrategyKind>& strategies,
                                      const std::vector<int>& worlds, const std::vector<PipelineSchedule>& schedules) {
  std::vector<RunConfig> runs;
  for (StrategyKind strategy : strategies) {
    for (const RunConfig& scheduled : underEachSchedule(base, schedules)) {
      for (int world : worlds.empty() ? std::vector<int>{base.world} : worlds) {
        RunConfig c = scheduled;
        c.strategy = strategy;
        c.world = world;
        if (!traitsOf(strategy).replicatesShardGroups) c.shardGroupSize = 0;  // the hybrid ones' only
        runs.push_back(c);
      }
    }
  }
  return runs;
}

std::optional<std::string> comparisonProblem(const std::vector<RunConfig>& runs) {
  // --offload cpu is the sharded strategies' alone: the fix for a comparison is its strategy list.
  std::string unsharded;
  for (const auto& c : runs) {
    if (c.offload == Offload::Cpu && !traitsOf(c.strategy).shardsParameters &&
        unsharded.find(strategyName(c.strategy)) == std::string::npos) {
      unsharded += (unsharded.empty() ? "" : ", ") + std::string(strategyName(c.strategy));
    }
  }
  if (!unsharded.empty()) {
    return "--offload cpu moves the shards of the sharded strategies to host memory; these shard no parameters: " +
           unsharded + ". Compare the sharded ones alone (--strategies full_shard,shard_grad_op), or drop --offload.";
  }
  for (const auto& c : runs) {
    if (auto e = validate(c)) return "at world " + std::to_string(c.world) + ": " + *e;
  }
  return std::nullopt;
}

}  // namespace shardscope::config
