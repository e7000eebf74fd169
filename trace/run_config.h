// What one training run is: model, sizes, strategy, optimizer, data, outputs. Lives in the shared
// library so the UI can edit and validate a configuration without LibTorch.
// The CLI, the config file and (later) the GUI all fill this one struct; validate() is the single
// gate every run passes through before any rank process starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardscope {

// The most ranks one host runs; every rank is a full process with its own LibTorch.
constexpr int kMaxWorldSize = 8;
constexpr int kMaxPrefetch = 4;  // units gathered ahead; more only holds more memory

struct RunConfig {
  std::string model = "mlp";       // mlp | gpt
  int layers = 2;                  // blocks (each block is one FSDP unit)
  int hidden = 64;                 // hidden width
  int heads = 4;                   // gpt: attention heads (must divide hidden)
  int seq = 32;                    // gpt: tokens per sample
  int vocab = 256;                 // gpt: vocabulary size
  int features = 32;               // mlp: input features
  int classes = 10;                // mlp: output classes
  int batch = 16;                  // global batch (samples), split evenly over ranks
  int steps = 5;                   // training steps
  int world = 2;                   // ranks (OS processes)
  std::string strategy = "ddp";    // ddp | zero1 | full_shard | shard_grad_op
  std::string optimizer = "adam";  // sgd | adam | adamw
  double lr = 1e-3;
  int64_t seed = 0;
  std::string device = "cpu";      // cpu | cuda
  std::string bindCores = "off";   // off | rank: each rank process pinned to its own slice of the
                                   // cores the run may use (engine/core_binding.h)
  double bucketCapMb = 25.0;       // ddp: bucket size in MiB (the first bucket is 1 MiB)
  int prefetch = 1;                // full_shard/shard_grad_op: units all-gathered ahead (0..4)
  std::string precision = "fp32";  // fp32 | bf16 (bf16 params and compute; fp32 reduction and
                                   // master weights, as FSDP2's MixedPrecisionPolicy)
  int accumulate = 1;              // micro-batches per optimizer step (gradient accumulation): each
                                   // rank's batch is split in this many; gradients are reduced only
                                   // after the last (DDP's no_sync, FSDP2's
                                   // set_requires_gradient_sync(False) for the others)
  std::string activationCheckpointing = "off";  // off | blocks: each block keeps only its input
                                                // in forward and recomputes the rest in
                                                // backward (checkpoint_wrapper on the blocks)
  int loraRank = 0;                // 0: full fine-tuning; r > 0: LoRA, the base weights frozen and
                                   // rank-r adapters on the blocks' matrices trained (model_layout.h)
  std::string exportDir;           // --export DIR: init.pt, data.pt, losses.pt, final.pt
  std::string summaryPath;         // --summary FILE: JSON summary
  std::string tracePath;           // --trace FILE: Chrome trace JSON (Perfetto)
  std::string memoryCsvPath;       // --memory-csv FILE: memory samples per rank and role
  std::string recording = "on";    // on | off | alternate (even steps only; for benchmarks)
  std::string stepGate = "off";    // off | group | step: the ranks wait before each event group
                                   // (or each step) until released (engine/step_gate.h)
  double gpuMemoryGB = 0;          // one device's memory, GB (10^9 B), for the capacity line in the
                                   // memory lanes and the headroom in the tables; 0: none
  double peakTflops = 0;           // one device's peak, TFLOP/s, stated by the user (e.g. a matmul
                                   // benchmark's): MFU = model FLOP/s / peak; 0: no MFU
  std::string memoryCheck = "on";  // on: refuse a CPU run whose predicted memory exceeds what the
                                   // host has free (estimate/memory_preflight.h); off: run anyway
  double stallTimeoutS = 30;       // a rank silent this long (not even its recorder's heartbeat) is
                                   // stalled: the run is stopped and the rank named; 0: never

  nlohmann::json toJson() const;
};

// Applies the keys of a JSON object (the option names, '-' or '_' alike) onto `config`.
// Returns an error message naming the key or value, or nothing on success.
std::optional<std::string> applyConfigJson(const nlohmann::json& json, RunConfig& config);

// Reads a JSON config file onto `config`; errors say which file, what is wrong and how to fix it.
std::optional<std::string> loadConfigFile(const std::string& path, RunConfig& config);

// Checks every value and the writability of output paths. One message, naming the value, what is
// allowed and the fix; nothing on success.
std::optional<std::string> validate(const RunConfig& config);

// Strategy names with their ZeRO stage, for help texts and tables.
const char* zeroName(const std::string& strategy);

// Every strategy, in ZeRO-stage order of what they shard: ddp, zero1, shard_grad_op, full_shard.
const std::vector<std::string>& allStrategies();

// What `compare` runs unless told otherwise: ddp, full_shard, shard_grad_op.
const std::vector<std::string>& defaultCompareStrategies();

// "ddp,zero1,full_shard" into `out`; an error naming the bad entry and the choices otherwise.
std::optional<std::string> parseStrategyList(const std::string& text, std::vector<std::string>& out);

// "1,2,4,8" into `out` (compare --worlds: world sizes on one host, each 1..kMaxWorldSize, in the
// order given); an error naming the bad entry otherwise.
std::optional<std::string> parseWorldList(const std::string& text, std::vector<int>& out);

// The runs of a comparison: each strategy at each world size (just `base.world` when `worlds` is
// empty), strategy-major, with the same global batch and everything else from `base`.
std::vector<RunConfig> comparisonRuns(const RunConfig& base, const std::vector<std::string>& strategies,
                                      const std::vector<int>& worlds);

// Why those runs cannot start: the first one validate() refuses, naming its world size.
std::optional<std::string> comparisonProblem(const std::vector<RunConfig>& runs);

}  // namespace shardscope
