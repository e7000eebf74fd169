#include "app/cli_options.h"

namespace shardscope::app {

namespace {
template <typename T>
std::string withDefault(const std::string& help, const T& value) {
  std::ostringstream s;
  s << help << " [default: " << value << "]";
  return s.str();
}
}  // namespace

template <typename T>
CLI::Option* RunOptions::bindOption(CLI::App& cmd, const char* flag, T RunConfig::*field,
                                    const std::string& help) {
  auto* option = cmd.add_option(flag, parsed_.*field, help);
  bindings_.emplace_back(option, [this, field](RunConfig& c) { c.*field = parsed_.*field; });
  return option;
}

void RunOptions::addTo(CLI::App& cmd, bool withOutputs) {
  const RunConfig d;
  auto bind = [&](const char* flag, auto field, const std::string& help) {
    return bindOption(cmd, flag, field, help);
  };
  bind("--model", &RunConfig::model, withDefault("model: mlp | gpt", d.model));
  bind("--layers", &RunConfig::layers, withDefault("blocks; each block is one FSDP unit", d.layers));
  bind("--hidden", &RunConfig::hidden, withDefault("hidden width", d.hidden));
  bind("--heads", &RunConfig::heads, withDefault("gpt: attention heads, must divide --hidden", d.heads));
  bind("--seq", &RunConfig::seq, withDefault("gpt: tokens per sample", d.seq));
  bind("--vocab", &RunConfig::vocab, withDefault("gpt: vocabulary size", d.vocab));
  bind("--features", &RunConfig::features, withDefault("mlp: input features", d.features));
  bind("--classes", &RunConfig::classes, withDefault("mlp: output classes", d.classes));
  bind("--batch", &RunConfig::batch,
       withDefault("global batch in samples; split evenly, so a multiple of --world", d.batch));
  bind("--steps", &RunConfig::steps, withDefault("training steps", d.steps));
  bind("--world", &RunConfig::world,
       withDefault("ranks: one OS process each, 1.." + std::to_string(kMaxWorldSize) + " (estimate: any)", d.world));
  bind("--strategy", &RunConfig::strategy,
       withDefault("ddp (NO_SHARD, ZeRO-0) | zero1 (DDP + ZeroRedundancyOptimizer, ZeRO-1) | "
                   "full_shard (FULL_SHARD, ZeRO-3) | shard_grad_op (SHARD_GRAD_OP, ZeRO-2)",
                   d.strategy));
  bind("--optimizer", &RunConfig::optimizer,
       withDefault("sgd | adam | adamw (torch.optim defaults; adamw weight decay 0.01)", d.optimizer));
  bind("--lr", &RunConfig::lr, withDefault("learning rate", d.lr));
  bind("--seed", &RunConfig::seed, withDefault("seed of the initial parameters and the synthetic data", d.seed));
  bind("--device", &RunConfig::device,
       withDefault("cpu (Gloo between ranks) | cuda (NCCL between ranks; rank r on GPU r % GPUs, "
                   "several ranks per GPU when GPUs are fewer, each with its own NCCL_HOSTID)",
                   d.device));
  bind("--bind-cores", &RunConfig::bindCores,
       withDefault("off (the OS places the rank processes, as torchrun does) | rank (each rank "
                   "process, its threads and NCCL's, pinned to its own slice of the cores this run "
                   "may use, as taskset per rank would: consecutive slices as equal as they divide, "
                   "shared when there are fewer cores than ranks; the run output names each slice)",
                   d.bindCores));
  bind("--bucket-cap-mb", &RunConfig::bucketCapMb,
       withDefault("ddp, zero1: gradient bucket size in MiB; the first bucket is 1 MiB", d.bucketCapMb));
  bind("--prefetch", &RunConfig::prefetch,
       withDefault("full_shard/shard_grad_op: units whose all-gather is issued ahead of the one "
                   "computing, in forward and in backward (0..4; FSDP2 prefetches 1)",
                   d.prefetch));
  bind("--precision", &RunConfig::precision,
       withDefault("fp32 | bf16 (bf16 parameters and compute; fp32 gradient reduction and master "
                   "weights, like FSDP2's MixedPrecisionPolicy)",
                   d.precision));
  bind("--accumulate", &RunConfig::accumulate,
       withDefault("gradient accumulation: micro-batches per optimizer step; each rank splits its "
                   "batch into this many and reduces gradients only after the last (DDP's no_sync, "
                   "FSDP2's set_requires_gradient_sync(False)), so unreduced gradients are held meanwhile",
                   d.accumulate));
  bind("--activation-checkpointing", &RunConfig::activationCheckpointing,
       withDefault("off | blocks (each block keeps only its input in forward and recomputes its "
                   "activations in backward, as checkpoint_wrapper on every block: less activation "
                   "memory for one more forward per block)",
                   d.activationCheckpointing));
  bind("--lora-rank", &RunConfig::loraRank,
       withDefault("0: full fine-tuning | r (1..--hidden): LoRA fine-tuning, the base weights frozen "
                   "and rank-r adapters on every block's linear layers trained (PEFT's "
                   "LoraConfig(r, lora_alpha=r)); only the adapters get gradients and optimizer state",
                   d.loraRank));
  bind("--step-gate", &RunConfig::stepGate,
       withDefault("off | group (every rank waits before each event group, where FSDP's and DDP's "
                   "hooks fire: an all-gather, a unit's forward, a reshard, a backward, a "
                   "reduce-scatter, a bucket's all-reduce, the optimizer step, until released) | step "
                   "(before each training step). In a terminal: Enter releases one, c + Enter "
                   "continues, q + Enter stops; the app has Step and Continue. Pauses are marked "
                   "and left out of step times",
                   d.stepGate));
  if (withOutputs) addOutputs(cmd);
  cmd.add_option("--config", configPath_,
                 "JSON file with the same keys as these options (e.g. {\"model\": \"gpt\"}); "
                 "options on the command line override it");
}

void RunOptions::addOutputs(CLI::App& cmd) {
  const RunConfig d;
  auto bind = [&](const char* flag, auto field, const std::string& help) {
    return bindOption(cmd, flag, field, help);
  };
  bind("--export", &RunConfig::exportDir,
       "write init.pt, data.pt, losses.pt and final.pt (torch.load reads them) into DIR");
  bind("--summary", &RunConfig::summaryPath,
       "write a JSON summary (per-step loss; per rank: peak memory by role, step times, "
       "throughput, collectives, overlap; docs/outputs.md) to FILE");
  bind("--trace", &RunConfig::tracePath,
       "write a Chrome trace JSON (open it in Perfetto: ui.perfetto.dev) to FILE");
  bind("--memory-csv", &RunConfig::memoryCsvPath,
       "write every memory sample (rank, time, bytes per role) as CSV to FILE");
  bind("--gpu-memory", &RunConfig::gpuMemoryGB,
       withDefault("one device's memory in GB (10^9 B), e.g. 80 for an H100: a capacity line in the memory "
                   "lanes and the headroom per rank in the tables; 0: none on CPU, the GPU's own memory on "
                   "GPU ranks",
                   d.gpuMemoryGB));
  bind("--peak-tflops", &RunConfig::peakTflops,
       withDefault("one device's peak in TFLOP/s, as you state it (a data sheet, or a matmul benchmark on "
                   "this CPU): MFU = model FLOP/s / peak, in the summary, the tables and the app's "
                   "throughput lane; 0: no MFU on CPU, and on a GPU rank alone on its GPU the peak it "
                   "measures before training (8192^3 matmuls in the run's precision)",
                   d.peakTflops));
  bind("--memory-check", &RunConfig::memoryCheck,
       withDefault("on: before any rank starts, refuse a CPU run whose predicted memory (model states and "
                   "activations per rank, times the ranks) exceeds what this host has free; off: run anyway",
                   d.memoryCheck));
  bind("--stall-timeout", &RunConfig::stallTimeoutS,
       withDefault("seconds a rank may send nothing (its recorder says it is alive every second, even "
                   "while it waits at the step gate) before the run is stopped, the rank named with its "
                   "last event, and what was recorded kept; 0: never",
                   d.stallTimeoutS));
  bind("--recording", &RunConfig::recording,
       withDefault("on | off (step times only; on a GPU also no CUDA events, polling thread or allocator hook) | alternate (record even steps only: measures recording overhead)",
                   d.recording));
}

std::optional<std::string> RunOptions::resolve(RunConfig& out) const {
  out = RunConfig();
  if (!configPath_.empty()) {
    if (auto err = loadConfigFile(configPath_, out)) return err;
  }
  for (const auto& [option, apply] : bindings_) {
    if (option->count() > 0) apply(out);
  }
  return std::nullopt;
}

}  // namespace shardscope::app
