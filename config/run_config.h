// What one training run is: model, sizes, strategy, optimizer, data, outputs. Lives below the
// engine so the UI can edit and validate a configuration without LibTorch. The CLI, a config
// file, a lesson and the app all fill this one struct; validate() is the single gate every run
// passes through before any rank process starts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/modes.h"
#include "config/strategies.h"

namespace shardscope::config {

// The most ranks one host runs; every rank is a full process with its own LibTorch.
constexpr int kMaxWorldSize = 8;
constexpr int kMaxPrefetch = 4;  // units gathered ahead; more only holds more memory

struct RunConfig {
  ModelKind model = ModelKind::Mlp;
  int layers = 2;                 // blocks (each block is one FSDP unit)
  int hidden = 64;                // hidden width
  int heads = 4;                  // gpt: attention heads (must divide hidden)
  int seq = 32;                   // gpt: tokens per sample
  int vocab = 256;                // gpt: vocabulary size
  int features = 32;              // mlp: input features
  int classes = 10;               // mlp: output classes
  int batch = 16;                 // global batch (samples), split evenly over ranks
  int steps = 5;                  // training steps
  int world = 2;                  // ranks (OS processes)
  int tp = 1;                     // tensor-parallel degree: groups of tp consecutive ranks split
                                  // the large matrices (config/tensor_parallel.h); 1: none
  bool sequenceParallel = false;  // with tp > 1 (gpt): the norms' regions split along the
                                  // sequence, all-gather and reduce-scatter for all-reduce
  int pp = 1;                     // pipeline stages' ranks: the world is pp x dp x tp, each block of
                                  // world / pp consecutive ranks one stage (config/pipeline_config.h)
  int stagesPerRank = 0;          // --pp: stages on each rank (V); 0: 1, or 2 for the looped schedules
  int microbatches = 0;           // --pp: micro-batches per step (M); 0: P, or 2P for the looped ones
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;  // --pp: config/pipeline_schedule.h
  StrategyKind strategy = StrategyKind::Ddp;  // what each means: config/strategies.h
  OptimizerKind optimizer = OptimizerKind::Adam;
  double lr = 1e-3;
  int64_t seed = 0;
  DeviceKind device = DeviceKind::Cpu;
  BindCores bindCores = BindCores::Off;   // rank: each rank process pinned to its own slice of the
                                          // cores the run may use (engine/launch/core_binding.h)
  double bucketCapMb = 25.0;              // ddp: bucket size in MiB (the first bucket is 1 MiB)
  int prefetch = 1;                       // full_shard/shard_grad_op: units all-gathered ahead (0..4)
  int shardGroupSize = 0;                 // hybrid strategies: ranks that split the parameters among them
                                          // (FSDP2's shard mesh dimension); 0: shardGroupSize(config) picks
  Precision precision = Precision::Fp32;  // bf16: bf16 params and compute; fp32 reduction and
                                          // master weights, as FSDP2's MixedPrecisionPolicy
  int accumulate = 1;                     // micro-batches per optimizer step (gradient accumulation): each
                                          // rank's batch is split in this many; gradients are reduced only
                                          // after the last (DDP's no_sync, FSDP2's
                                          // set_requires_gradient_sync(False) for the others)
  Checkpointing activationCheckpointing = Checkpointing::Off;  // blocks: each block keeps only its
                                                               // input in forward and recomputes the rest in backward
                                                               // (checkpoint_wrapper on the blocks)
  Offload offload = Offload::Off;               // cpu: a GPU rank keeps its shards, their gradients and the
                                                // optimizer state in host memory and steps on the CPU
                                                // (FSDP2's CPUOffloadPolicy); sharded strategies, GPU only
  int loraRank = 0;                             // 0: full fine-tuning; r > 0: LoRA, the base weights frozen and
                                                // rank-r adapters on the blocks' matrices trained (model_layout.h)
  std::string exportDir;                        // --export DIR: init.pt, data.pt, losses.pt, final.pt
  std::string summaryPath;                      // --summary FILE: JSON summary
  std::string tracePath;                        // --trace FILE: Chrome trace JSON (Perfetto)
  std::string memoryCsvPath;                    // --memory-csv FILE: memory samples per rank and role
  RecordingMode recording = RecordingMode::On;  // alternate: even steps only (for benchmarks)
  StepGateMode stepGate = StepGateMode::Off;    // group, step: the ranks wait before each event
                                                // group (or step) until released (engine/launch/step_gate.h)
  double gpuMemoryGB = 0;                       // one device's memory, GB (10^9 B), for the capacity line in the
                                                // memory lanes and the headroom in the tables; 0: none
  double peakTflops = 0;                        // one device's peak, TFLOP/s, stated by the user (e.g. a matmul
                                                // benchmark's): MFU = model FLOP/s / peak; 0: no MFU
  MemoryCheck memoryCheck = MemoryCheck::On;    // on: refuse a CPU run whose predicted memory exceeds
                                                // what the host has free (estimate/memory_preflight.h)
  double stallTimeoutS = 30;                    // a rank silent this long (not even its recorder's heartbeat) is
                                                // stalled: the run is stopped and the rank named; 0: never
  std::string slowRank;                         // --slow-rank R:FACTOR: rank R's compute FACTOR times as long (a
                                                // measured sleep after each span; slowRankOf); "": none
  std::string hangRank;                         // --hang-rank R:STEP: rank R stops before step STEP (from 1) and
                                                // never reaches its collectives (hangRankOf); "": none
  double collectiveTimeoutS = 300;              // how long a rank waits in one collective before it fails

  nlohmann::json toJson() const;
};

// The ranks among which a run's parameters, gradients and optimizer state are divided: the whole
// world (under --tp N its world / N data ranks), or for a hybrid strategy its --shard-group-size; 0 there means the
// world (the data ranks) split into the fewest replicas, world / (its smallest prime factor): 4 -> 2, 6 -> 3, 8 -> 4,
// 2 -> 1.
int shardGroupSize(const RunConfig& config);
// How many replicas of each shard there are: (data) world / shardGroupSize (1 unless hybrid).
int replicaCount(const RunConfig& config);
// Why --shard-group-size does not fit the strategy and world, or nothing (part of validate()).
std::optional<std::string> shardGroupProblem(const RunConfig& config);

// Why --tp does not fit the model, strategy and world, or nothing (part of validate()): it must
// divide the world, gpt's heads and mlp's width; not yet with LoRA.
std::optional<std::string> tensorParallelProblem(const RunConfig& config);

// Why the pipeline options (--pp, --schedule, --stages-per-rank, --microbatches) do not fit the rest,
// or nothing (part of validate(); config/pipeline_config.cpp): P must divide the world with --tp;
// the stages need as many blocks; M must divide a data rank's batch and suit the schedule; options
// for pipelines without --pp are refused.
std::optional<std::string> pipelineProblem(const RunConfig& config);
// The ranks a run's batch is divided over: the world over --tp and --pp.
int dataRankCount(const RunConfig& config);

// Why --offload does not fit the strategy and device, or nothing (part of validate()).
std::optional<std::string> offloadProblem(const RunConfig& config);

// Where a field of RunConfig lives, whatever its type.
using ConfigMember =
    std::variant<int RunConfig::*, int64_t RunConfig::*, bool RunConfig::*, double RunConfig::*,
                 std::string RunConfig::*, ModelKind RunConfig::*, StrategyKind RunConfig::*,
                 OptimizerKind RunConfig::*, DeviceKind RunConfig::*, BindCores RunConfig::*, Precision RunConfig::*,
                 Checkpointing RunConfig::*, RecordingMode RunConfig::*, StepGateMode RunConfig::*,
                 MemoryCheck RunConfig::*, Offload RunConfig::*, PipelineSchedule RunConfig::*>;

// Training options shape the run (every command that runs or predicts one takes them); the others
// only matter to a run that happens (run, compare, worker): how it is watched and judged, and the
// files it writes. A run's description (toJson) leaves out where its files went.
enum class FieldGroup : uint8_t {
  Training,    // the model, data, strategy, optimizer, ...
  RunControl,  // recording, stall timeout, memory check, the device's stated memory and peak
  OutputPath,  // --export, --summary, --trace, --memory-csv
};

// One field of RunConfig: the config file's key (with "--", the option), where it lives, and its
// help. The one list of fields: toJson, applyConfigJson and the CLI's options all walk it.
// What a number option allows, which validate() checks as it walks the fields: a finite number
// from `min` to `max` (`min` itself excluded when minExclusive), or 0 besides when zeroAlso (0
// turns the option off). A value outside is refused as "--KEY is VALUE; " + rule, then " Pass e.g.
// --KEY " + example + "." where there is an example.
struct NumberRange {
  double min = 0;
  double max = 1e300;
  bool minExclusive = false;
  bool zeroAlso = false;
  std::string rule;               // what is allowed, and what its ends mean
  const char* example = nullptr;  // a value to pass instead
};

struct ConfigField {
  const char* key;  // e.g. "bucket-cap-mb"
  ConfigMember member;
  FieldGroup group;
  std::string help;  // --help adds the default, unless it is empty (the paths)
  std::optional<NumberRange> range = std::nullopt;  // a number option's alone; checks across options are
                                                    // validate()'s own rules
};

// "--KEY is VALUE; RULE Pass e.g. --KEY EXAMPLE." when `config`'s value of `field` is outside its
// range; nothing when it is within, or the field has no range.
std::optional<std::string> outOfRange(const RunConfig& config, const ConfigField& field);
const std::vector<ConfigField>& configFields();

// A field's value as text ("full_shard", "25", "0.001"), for --help's defaults.
std::string fieldText(const RunConfig& config, const ConfigField& field);

// Applies the keys of a JSON object (the option names, '-' or '_' alike, each once) onto `config`.
// Returns an error message naming the key or value, or nothing on success. `spellings`, when
// given: the keys applied, each as the object spells it, by its dashed name ("bucket-cap-mb").
std::optional<std::string> applyConfigJson(const nlohmann::json& json, RunConfig& config,
                                           std::map<std::string, std::string>* spellings = nullptr);

// Reads a JSON config file onto `config`; errors say which file, what is wrong and how to fix it.
// `spellings`: as applyConfigJson's.
std::optional<std::string> loadConfigFile(const std::string& path, RunConfig& config,
                                          std::map<std::string, std::string>* spellings = nullptr);

// --slow-rank R:FACTOR read: the rank whose compute is FACTOR times as long, for teaching and for
// testing straggler detection. Nothing for "".
struct SlowRank {
  int rank = -1;
  double factor = 1;
};
// The rank and factor, or nothing when `text` is empty; an error names the value and the form.
std::optional<SlowRank> slowRankOf(const std::string& text, std::string* error = nullptr);

// --hang-rank R:STEP read: the rank that stops before step STEP (from 1), alive but never reaching
// its collectives. Nothing for "".
struct HangRank {
  int rank = -1;
  int step = 0;  // from 1
};
std::optional<HangRank> hangRankOf(const std::string& text, std::string* error = nullptr);

// Checks every value: one message, naming the value, what is allowed and the fix; nothing on
// success. Pure: it reads no file and creates nothing (the app calls it every frame, as the user
// types). Whether the outputs can be written is outputsProblem's, once, when a run starts.
std::optional<std::string> validate(const RunConfig& config);

// Why an output (--export, --summary, --trace, --memory-csv) cannot be written: a directory that
// is not one or not writable, or a --trace named with no format's ending. Only looks at the file
// system; creates nothing.
std::optional<std::string> outputsProblem(const RunConfig& config);

// When a run starts: checks the outputs (outputsProblem), then makes --export's directory
// (mkdir -p); an error naming what cannot be written otherwise.
std::optional<std::string> makeOutputDirectories(const RunConfig& config);

// "1,2,4,8" into `out` (compare --worlds: world sizes on one host, each 1..kMaxWorldSize, in the
// order given); an error naming the bad entry otherwise.
std::optional<std::string> parseWorldList(const std::string& text, std::vector<int>& out);

// The runs of a comparison: each strategy under each pipeline schedule (just `base.schedule` when
// `schedules` is empty) at each world size (just `base.world` when `worlds` is empty),
// strategy-major, with the same global batch and everything else from `base`. Across schedules
// every run gets the same micro-batches (the largest default among them where --microbatches is
// not given), and --stages-per-rank goes to the schedules that loop over stages alone.
std::vector<RunConfig> comparisonRuns(const RunConfig& base, const std::vector<StrategyKind>& strategies,
                                      const std::vector<int>& worlds,
                                      const std::vector<PipelineSchedule>& schedules = {});

// `base` once per schedule, all on the same micro-batches (config/pipeline_config.cpp; see
// comparisonRuns); just `base` when `schedules` is empty.
std::vector<RunConfig> underEachSchedule(const RunConfig& base, const std::vector<PipelineSchedule>& schedules);

// Why those runs cannot start: the first one validate() refuses, naming its world size.
std::optional<std::string> comparisonProblem(const std::vector<RunConfig>& runs);

}  // namespace shardscope::config
