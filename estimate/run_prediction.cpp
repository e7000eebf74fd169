#include "estimate/run_prediction.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include "estimate/activation_memory.h"
#include "config/model_layout.h"
#include "config/tensor_parallel.h"
#include "trace/ring_schedule.h"

namespace shardscope::estimate {

using trace::CollectiveOp;
using trace::MemoryRole;

int64_t RunPrediction::modelStateBytes() const {
  int64_t total = 0;
  for (const auto& m : memory) total += m.host ? 0 : m.bytes;
  return total;
}

int64_t RunPrediction::hostBytes() const {
  int64_t total = 0;
  for (const auto& m : memory) total += m.host ? m.bytes : 0;
  return total;
}

int64_t RunPrediction::sentBytesPerStep() const {
  int64_t total = 0;
  for (const auto& c : perStep) total += c.sentBytes;
  return total;
}

const PredictedMemory* RunPrediction::find(MemoryRole role, bool host) const {
  for (const auto& m : memory) {
    if (m.role == role && m.host == host) return &m;
  }
  return nullptr;
}

const PredictedCollective* RunPrediction::find(CollectiveOp op) const {
  for (const auto& c : perStep) {
    if (c.op == op && c.group != trace::ProcessGroup::Tensor) return &c;
  }
  return nullptr;
}

const PredictedCollective* RunPrediction::tensorGroup(CollectiveOp op) const {
  for (const auto& c : perStep) {
    if (c.op == op && c.group == trace::ProcessGroup::Tensor) return &c;
  }
  return nullptr;
}

namespace {

// Adam and AdamW keep two moments per parameter (exp_avg, exp_avg_sq); plain SGD keeps nothing.
int optimizerStatesPerParameter(config::OptimizerKind optimizer) {
  return optimizer == config::OptimizerKind::Sgd ? 0 : 2;
}

std::string optimizerFormula(config::OptimizerKind optimizer, const std::string& of) {
  if (optimizer == config::OptimizerKind::Sgd) return "none: plain SGD keeps no state";
  return "2 moments x 4 B x " + of;
}

// What a strategy's formulas need of the model: P, and T of it trained (all, or LoRA's adapters).
struct ParameterCounts {
  int64_t total = 0, trained = 0;
  int64_t frozen() const { return total - trained; }
  bool lora() const { return trained < total; }
};

ParameterCounts countParameters(const config::RunConfig& c) {
  ParameterCounts n;
  for (const auto& spec : config::tensorParallelLayout(c)) {
    n.total += spec.numel();
    n.trained += spec.trainable ? spec.numel() : 0;
  }
  return n;
}

RunPrediction predictDdp(const config::RunConfig& c, const ParameterCounts& n) {
  const bool bf16 = c.precision == config::Precision::Bf16;
  const int k = optimizerStatesPerParameter(c.optimizer);
  const int64_t params = n.total, trained = n.trained;
  const std::string t = n.lora() ? "T (LoRA's adapters; the frozen weights have none)" : "P";
  RunPrediction p;
  p.parameters = params;
  p.paddedParameters = params;
  if (bf16 && n.lora()) {
    // Frozen weights are never stepped: held once, in bf16, with no fp32 master.
    p.memory.push_back(
        {MemoryRole::ParamShard, When::Peak, 4 * trained + 2 * n.frozen(),
         "4 B x T + 2 B x F: every rank a full replica, fp32 adapters and the frozen F = P - T in bf16"});
    p.memory.push_back(
        {MemoryRole::ParamGathered, When::Peak, 2 * trained,
         "2 B x T: the adapters' bf16 copy the model computes with (the frozen weights are bf16 already)"});
  } else {
    p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * params, "4 B x P: every rank a full fp32 replica"});
    if (bf16) {
      p.memory.push_back(
          {MemoryRole::ParamGathered, When::Peak, 2 * params, "2 B x P: the bf16 copy the model computes with"});
    }
  }
  p.memory.push_back(
      {MemoryRole::GradFull, When::Peak, 4 * trained, "4 B x " + t + ": fp32 gradients after the all-reduce"});
  p.memory.push_back({MemoryRole::OptimizerState, When::AfterStep, 4 * k * trained, optimizerFormula(c.optimizer, t)});
  if (config::traitsOf(c.strategy).reducesInBuckets) {
    p.perStep.push_back(
        {CollectiveOp::AllReduce, -1, 4 * trained, "every fp32 gradient once, in --bucket-cap-mb buckets"});
    return p;
  }
  // no_shard: FSDP1's NO_SHARD all-reduces each unit's gradient (unpadded: nothing is divided).
  int64_t trainedUnits = 0;
  for (const auto& u : config::flatUnits(config::tensorParallelLayout(c), c.layers))
    trainedUnits += u.trainable ? 1 : 0;
  p.perStep.push_back({CollectiveOp::AllReduce, trainedUnits, 4 * trained,
                       n.lora() ? "every trained (LoRA) unit's fp32 gradients once, a unit at a time"
                                : "every fp32 gradient once, a unit at a time"});
  return p;
}

RunPrediction predictZero1(const config::RunConfig& c, const ParameterCounts& n) {
  const bool bf16 = c.precision == config::Precision::Bf16;
  const int64_t computeBytes = bf16 ? 2 : 4;
  const int k = optimizerStatesPerParameter(c.optimizer);
  // One flat buffer of the trained parameters is partitioned among the data ranks (the world
  // without --tp); frozen ones are held whole.
  const int64_t ranks = c.world / std::max(1, c.tp);
  const int64_t padded = (n.trained + ranks - 1) / ranks * ranks;
  const int64_t owned = padded / ranks;
  const int64_t frozen = n.frozen();
  const std::string t = n.lora() ? "T" : "P";
  const std::string plusFrozen = n.lora() ? " + the frozen F = P - T whole" : "";
  RunPrediction p;
  p.parameters = n.total;
  p.paddedParameters = padded + frozen;
  if (bf16) {
    // Frozen weights are never stepped: held once, in bf16, with no fp32 master.
    p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * owned + 2 * frozen,
                        "4 B x " + t + "''/N: fp32 master weights of this rank's slice" +
                            (n.lora() ? " + 2 B x F: the frozen F = P - T whole, in bf16" : "")});
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, 2 * padded,
                        "2 B x " + t + "'': the bf16 parameters, refilled by all-gather"});
  } else {
    p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * padded + 4 * frozen,
                        "4 B x " + t + "'': every rank a full fp32 replica (one flat buffer)" + plusFrozen});
  }
  p.memory.push_back(
      {MemoryRole::GradFull, When::Peak, computeBytes * n.trained,
       std::string(bf16 ? "2 B" : "4 B") + " x " + t + ": every gradient, until the all-reduce has averaged it"});
  p.memory.push_back({MemoryRole::GradShard, When::Peak, 4 * owned,
                      "4 B x " + t + "''/N: the averaged gradient of this rank's slice"});
  p.memory.push_back(
      {MemoryRole::OptimizerState, When::AfterStep, 4 * k * owned, optimizerFormula(c.optimizer, t + "''/N")});
  p.perStep.push_back(
      {CollectiveOp::AllReduce, -1, 4 * n.trained, "every fp32 gradient once, in --bucket-cap-mb buckets"});
  p.perStep.push_back({CollectiveOp::AllGather, 1, computeBytes * padded, "the updated slices, once after the step"});
  return p;
}

// The most any `window` consecutive blocks hold. They are all the same size, but under --tp an
// mlp's column-parallel blocks keep 1/t of their bias and the row-parallel ones all of it.
int64_t mostOfConsecutive(const std::vector<int64_t>& blocks, int window) {
  int64_t most = 0;
  for (size_t first = 0; first + static_cast<size_t>(window) <= blocks.size(); ++first) {
    most = std::max(most, std::accumulate(blocks.begin() + static_cast<std::ptrdiff_t>(first),
                                          blocks.begin() + static_cast<std::ptrdiff_t>(first) + window, int64_t{0}));
  }
  return most;
}

// A sharded strategy's units, each padded to a multiple of the shard group so that it divides
// evenly: what its memory lines and collectives are computed from. Sizes in elements.
struct ShardedSizes {
  int64_t shardRanks = 1;  // what each unit is divided among
  int64_t paddedTotal = 0, paddedTrained = 0, paddedRoot = 0, paddedBlocks = 0;
  int64_t rootUnits = 0, blockUnits = 0, trainedUnits = 0;
  std::vector<int64_t> paddedBlock;  // per block
};

ShardedSizes shardedSizes(const config::RunConfig& c) {
  ShardedSizes s;
  // Units are divided among the shard group: the world, or under HSDP its --shard-group-size.
  s.shardRanks = shardGroupSize(c);
  s.paddedBlock.assign(static_cast<size_t>(c.layers), 0);
  for (const auto& u : config::flatUnits(config::tensorParallelLayout(c), c.layers)) {
    const int64_t padded = (u.numel + s.shardRanks - 1) / s.shardRanks * s.shardRanks;
    const bool root = u.unit == config::kRootUnit;
    s.paddedTotal += padded;
    s.paddedTrained += u.trainable ? padded : 0;
    s.trainedUnits += u.trainable ? 1 : 0;
    (root ? s.paddedRoot : s.paddedBlocks) += padded;
    (root ? s.rootUnits : s.blockUnits) += 1;
    if (!root) s.paddedBlock[static_cast<size_t>(u.unit)] += padded;
  }
  return s;
}

void predictShardedMemory(const config::RunConfig& c, const ParameterCounts& n, const ShardedSizes& s,
                          RunPrediction& p) {
  const bool bf16 = c.precision == config::Precision::Bf16;
  const int64_t computeBytes = bf16 ? 2 : 4;
  const int k = optimizerStatesPerParameter(c.optimizer);
  const std::string N = config::traitsOf(c.strategy).replicatesShardGroups ? "S" : "N";  // what a unit is divided by
  const int layers = c.layers;
  const int64_t owned = s.paddedTotal / s.shardRanks;
  const int64_t ownedTrained = s.paddedTrained / s.shardRanks;
  const int64_t ownedFrozen = owned - ownedTrained;
  const std::string dtype = bf16 ? "2 B (bf16)" : "4 B";
  const std::string t =
      (n.lora() ? "T'/" + N + ": this rank's slice of the trained (LoRA) units" : "P'/" + N + ": this rank's slice");
  if (n.lora() && bf16) {
    // A frozen unit is never stepped: its shard is held in bf16, with no fp32 master.
    p.memory.push_back({MemoryRole::ParamShard, When::Peak, 4 * ownedTrained + 2 * ownedFrozen,
                        "4 B x T'/" + N + " + 2 B x F'/" + N +
                            ": this rank's slice of every unit, fp32 adapters, the frozen units in bf16"});
  } else {
    p.memory.push_back(
        {MemoryRole::ParamShard, When::Peak, 4 * owned, "4 B x P'/" + N + ": this rank's fp32 slice of every unit"});
  }
  if (config::traitsOf(c.strategy).reshardsAfterForward) {
    // The root stays gathered from forward start to the end of its backward; blocks come and go,
    // the one computing plus --prefetch ahead of it (all blocks are the same size).
    const int window = std::min(layers, 1 + c.prefetch);
    const int64_t gatheredBlocks = mostOfConsecutive(s.paddedBlock, window);
    const std::string blocks = std::to_string(window) + " block" + (window == 1 ? "" : "s");
    const std::string why =
        window < 1 + c.prefetch
            ? "): every block, as --prefetch " + std::to_string(c.prefetch) + " reaches past the last"
            : "): the unit computing and --prefetch " + std::to_string(c.prefetch) + " ahead";
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, computeBytes * (s.paddedRoot + gatheredBlocks),
                        dtype + " x (root + " + blocks + why});
  } else {
    p.memory.push_back({MemoryRole::ParamGathered, When::Peak, computeBytes * s.paddedTotal,
                        dtype + " x P': every unit stays gathered from its forward to its backward"});
  }
  if (c.accumulate > 1 && !bf16) {
    // no_sync's price: nothing is reduce-scattered before the last micro-batch, so every trained
    // parameter's unsharded gradient is held at once, as much as DDP holds. (Under bf16 the fp32
    // accumulators come with the bf16 gradients in flight, which depend on backward's order: not
    // predicted.)
    p.memory.push_back({MemoryRole::GradFull, When::Peak, 4 * n.trained,
                        "4 B x " + std::string(n.lora() ? "T" : "P") +
                            ": every unsharded gradient, kept from the first micro-batch to the last"});
  }
  p.memory.push_back({MemoryRole::GradShard, When::Peak, 4 * ownedTrained, "4 B x " + t + " of the reduced gradients"});
  p.memory.push_back({MemoryRole::OptimizerState, When::AfterStep, 4 * k * ownedTrained,
                      optimizerFormula(c.optimizer, (n.lora() ? "T'/" : "P'/") + N)});
}

void predictShardedCollectives(const config::RunConfig& c, const ParameterCounts& n, const ShardedSizes& s,
                               RunPrediction& p) {
  const int64_t computeBytes = c.precision == config::Precision::Bf16 ? 2 : 4;
  const std::string perBlock = n.lora() ? " (a block is two units under LoRA: frozen weights and adapters)" : "";
  // Every micro-batch gathers again; gradients are reduced once per step, after the last.
  const int64_t micro = c.accumulate;
  const std::string perMicro = micro > 1 ? ", per micro-batch (x " + std::to_string(micro) + ")" : "";
  if (config::traitsOf(c.strategy).reshardsAfterForward) {
    p.perStep.push_back({CollectiveOp::AllGather, micro * (s.rootUnits + 2 * s.blockUnits),
                         micro * computeBytes * (s.paddedRoot + 2 * s.paddedBlocks),
                         "root once, every block twice (forward and backward)" + perMicro + perBlock});
  } else {
    p.perStep.push_back({CollectiveOp::AllGather, micro * (s.rootUnits + s.blockUnits),
                         micro * computeBytes * s.paddedTotal,
                         "every unit once: kept from forward to backward" + perMicro + perBlock});
  }
  p.perStep.push_back({CollectiveOp::ReduceScatter, s.trainedUnits, 4 * s.paddedTrained,
                       n.lora() ? "every trained (LoRA) unit's fp32 gradients once; frozen units have none"
                                : "every unit's fp32 gradients once"});
  const bool hybrid = config::traitsOf(c.strategy).replicatesShardGroups;
  if (hybrid && config::replicaCount(c) > 1) {  // one replica is a 1-D mesh: the world, no all-reduce
    for (auto& collective : p.perStep) {
      collective.group = trace::ProcessGroup::Shard;
      collective.formula += ", within the shard group of S = " + std::to_string(s.shardRanks);
    }
    // FSDP2's all_reduce_group: each rank's reduced shard is summed with the other replicas'.
    PredictedCollective allReduce{CollectiveOp::AllReduce, s.trainedUnits, 4 * (s.paddedTrained / s.shardRanks),
                                  "every unit's fp32 gradient shard once, across the " +
                                      std::to_string(config::replicaCount(c)) + " replicas (the replicate group)"};
    allReduce.group = trace::ProcessGroup::Replicate;
    p.perStep.push_back(allReduce);
  }
}

RunPrediction predictSharded(const config::RunConfig& c, const ParameterCounts& n) {
  const ShardedSizes sizes = shardedSizes(c);
  RunPrediction p;
  p.parameters = n.total;
  p.paddedParameters = sizes.paddedTotal;
  predictShardedMemory(c, n, sizes, p);
  predictShardedCollectives(c, n, sizes, p);
  return p;
}

// --offload cpu (FSDP2's CPUOffloadPolicy): the shards, their reduced gradients and the optimizer's
// state live in the host's memory; the device keeps the gathered units and, briefly, a unit's shard
// copied in for its all-gather and its gradient shard on the way out (offloadDeviceCopies).
void moveStateToHost(RunPrediction& p) {
  for (auto& m : p.memory) {
    if (std::find(std::begin(trace::kOffloadedRoles), std::end(trace::kOffloadedRoles), m.role) !=
        std::end(trace::kOffloadedRoles)) {
      m.host = true;
      m.formula = "in host memory (--offload cpu): " + m.formula;
    }
  }
}

// What --offload cpu still puts on the device of full_shard and shard_grad_op, from their schedule
// (engine/strategies/sharded_strategy.cpp): a unit's fp32 shard copied in for its all-gather, and its reduced
// gradient shard until it is copied out. One reduce-scatter is in flight at a time, and its shard
// is copied out before the next is made: one gradient shard. Under bf16 the shard's copy is cast
// into the gathered buffer and freed at once: one at a time. Under fp32 it is the all-gather's
// input, held until the gather completes: the root's alone first, then --prefetch blocks' at once.
// Checked against two H200 runs (bf16: the root's shard, both roles). Not predicted for the hybrid
// strategies (the replicate all-reduce holds a second gradient shard at times) or under LoRA
// (frozen and trained units of two sizes).
std::vector<PredictedMemory> offloadDeviceCopies(const config::RunConfig& c) {
  if (config::traitsOf(c.strategy).replicatesShardGroups || c.loraRank > 0) return {};
  const int64_t ranks = shardGroupSize(c);
  int64_t root = 0, block = 0;
  for (const auto& u : config::flatUnits(config::tensorParallelLayout(c), c.layers)) {
    int64_t& largestOfKind = u.unit == config::kRootUnit ? root : block;
    largestOfKind = std::max(largestOfKind, (u.numel + ranks - 1) / ranks);
  }
  const int64_t largest = std::max(root, block);
  const bool bf16 = c.precision == config::Precision::Bf16;
  const int window = std::max(1, std::min(c.prefetch, c.layers));
  const int64_t inFlight = bf16 ? largest : std::max(root, window * block);
  const std::string unitShard = "the largest unit's P'/N";
  return {
      {MemoryRole::ParamShard, When::Peak, 4 * inFlight,
       bf16 ? "4 B x " + unitShard +
                  ": a unit's fp32 shard copied in for its all-gather, cast to bf16 and freed, one at a time"
            : "4 B x max(root, " + std::to_string(window) +
                  " block(s)) of P'/N: each fp32 shard copied in is its all-gather's input until the gather completes "
                  "(" +
                  std::to_string(window) + " block(s) at once under --prefetch " + std::to_string(c.prefetch) + ")"},
      {MemoryRole::GradShard, When::Peak, 4 * largest,
       "4 B x " + unitShard +
           ": a unit's reduced gradient shard, on the device until it is copied out (one at a time)"}};
}

// The compute dtype's bytes per element; the samples of a data rank's micro-batch (under --tp a
// tensor group shares them).
int64_t computeBytes(const config::RunConfig& c) { return c.precision == config::Precision::Bf16 ? 2 : 4; }
int64_t microBatchRows(const config::RunConfig& c) { return c.batch / (c.world / std::max(1, c.tp)) / c.accumulate; }

// A tensor group's all-reduces per step (--tp, config/tensor_parallel.h), in the compute dtype:
// gpt, each block's attention and MLP output in forward and the gradients of their inputs in
// backward (the first block's too: the embedding trains), and the attention's again when a
// checkpointed block is recomputed (its MLP projection is left uncomputed then); mlp, each pair's
// row-parallel output in forward and its column-parallel input's gradient in backward (none for the
// first linear's input, the data).
PredictedCollective tensorParallelAllReduces(const config::RunConfig& c) {
  const int64_t e = computeBytes(c), rows = microBatchRows(c), micro = c.accumulate;
  PredictedCollective out{CollectiveOp::AllReduce, 0, 0, ""};
  out.group = trace::ProcessGroup::Tensor;
  if (c.model == config::ModelKind::Gpt) {
    const bool recomputed = c.activationCheckpointing == config::Checkpointing::Blocks;
    const int64_t perBlock = recomputed ? 5 : 4;
    out.count = micro * perBlock * c.layers;
    out.bytes = out.count * e * rows * c.seq * c.hidden;
    out.formula = std::to_string(perBlock) +
                  " per block (attention and MLP: output in forward, input gradient in "
                  "backward" +
                  std::string(recomputed ? ", the attention's output again when recomputed" : "") + ") of " +
                  std::to_string(e) + " B x b s h, per micro-batch";
    return out;
  }
  const int64_t linears = c.layers + 2, pairs = linears / 2;
  for (int64_t k = 0; k < 2 * pairs; k += 2) {
    const int64_t outFeatures = k + 1 == linears - 1 ? c.classes : c.hidden;
    out.count += micro * (k == 0 ? 1 : 2);
    out.bytes += micro * e * rows * (outFeatures + (k == 0 ? 0 : c.hidden));
  }
  out.formula =
      "per column-then-row pair, its output in forward and (but the first's, on data) its input's "
      "gradient in backward, " +
      std::to_string(e) + " B x b x features, per micro-batch";
  return out;
}

// Under --sequence-parallel (gpt), per micro-batch. A block, in forward: an all-gather of b s h
// before each column-parallel linear and a reduce-scatter of b s h after each row-parallel one; in
// backward each gathered linear all-gathers its input again and reduce-scatters its input's
// gradient, and each reduce-scatter's gradient is all-gathered: 6 all-gathers and 4 reduce-scatters
// (a checkpointed block, recomputed whole, 2 and 2 more), and one all-reduce of its norms' and
// row-parallel biases' gradients, 6 h. Beside the blocks: the embedding's gradient all-gathered,
// the final norm's gradients all-reduced (2 h) and the LM head's input all-gathered.
std::vector<PredictedCollective> sequenceParallelCollectives(const config::RunConfig& c) {
  const int64_t e = computeBytes(c), rows = microBatchRows(c), micro = c.accumulate;
  const int64_t bsh = e * rows * c.seq * c.hidden,
                again = c.activationCheckpointing == config::Checkpointing::Blocks ? 2 : 0;
  const std::string each = std::to_string(e) + " B x b s h each, per micro-batch";
  const std::string rerun = again ? " (+2 recomputed)" : "";
  PredictedCollective gathers{CollectiveOp::AllGather, micro * (c.layers * (6 + again) + 2), 0,
                              "6" + rerun +
                                  " per block (before qkv and fc in forward; again in backward, with the "
                                  "reduce-scatters' gradients), the embedding's gradient and the LM head's input, " +
                                  each};
  PredictedCollective scatters{CollectiveOp::ReduceScatter, micro * c.layers * (4 + again), 0,
                               "4" + rerun +
                                   " per block (attn.proj and mlp.proj in forward, the gathered inputs' "
                                   "gradients in backward), " +
                                   each};
  PredictedCollective sums{CollectiveOp::AllReduce, micro * (c.layers + 1), micro * e * c.hidden * (6 * c.layers + 2),
                           "a block's norms' and row-parallel biases' gradients (6 h), the final norm's (2 h), " +
                               std::to_string(e) + " B each, per micro-batch"};
  gathers.bytes = gathers.count * bsh;
  scatters.bytes = scatters.count * bsh;
  std::vector<PredictedCollective> out = {sums, gathers, scatters};
  for (auto& collective : out) collective.group = trace::ProcessGroup::Tensor;
  return out;
}

// Under LoRA with --tp (per micro-batch): each split adapter's whole half (a column-parallel layer's
// A, r x in; a row-parallel layer's B, out x r) has its gradient all-reduced, once a block (gpt:
// qkv's and fc's A, the projections' B, 4 r h; mlp: r h per split block); and gpt's first block
// all-reduces no input gradient for its qkv (the frozen embedding and norm need none).
void addLoraTensorAllReduces(PredictedCollective& sums, const config::RunConfig& c) {
  if (c.loraRank <= 0) return;
  const int64_t e = computeBytes(c), micro = c.accumulate, rows = microBatchRows(c), rh = c.loraRank * c.hidden;
  int64_t blocks = c.layers, elements = 4 * rh;
  if (c.model == config::ModelKind::Gpt) {
    sums.count -= micro;
    sums.bytes -= micro * e * rows * c.seq * c.hidden;
  } else {
    const int64_t pairedLinears = (c.layers + 2) / 2 * 2;  // inp, blocks.0 .. blocks.L-1, head
    blocks = std::min<int64_t>(c.layers, pairedLinears - 1);
    elements = rh;
  }
  sums.count += micro * blocks;
  sums.bytes += micro * blocks * e * elements;
  sums.formula += "; LoRA: the adapters' whole halves' gradients, " +
                  std::string(c.model == config::ModelKind::Gpt ? "4 r h a block, less the first block's qkv input"
                                                                : "r h a split block");
}

// Under --tp the strategy's collectives run in the data group, and the tensor group sends its own.
void addTensorParallel(RunPrediction& p, const config::RunConfig& c) {
  if (c.tp <= 1) return;
  for (auto& collective : p.perStep) {
    if (collective.group == trace::ProcessGroup::World) collective.group = trace::ProcessGroup::Data;
  }
  if (c.sequenceParallel) {
    for (auto& collective : sequenceParallelCollectives(c)) p.perStep.push_back(collective);
  } else {
    p.perStep.push_back(tensorParallelAllReduces(c));
    addLoraTensorAllReduces(p.perStep.back(), c);
  }
}

int groupSizeOf(trace::ProcessGroup group, const config::RunConfig& c) {
  switch (group) {
    case trace::ProcessGroup::World:
      return c.world;
    case trace::ProcessGroup::Shard:
      return shardGroupSize(c);
    case trace::ProcessGroup::Replicate:
      return config::replicaCount(c);
    case trace::ProcessGroup::Tensor:
      return c.tp;
    case trace::ProcessGroup::Data:
      return config::dataRankCount(c);
    case trace::ProcessGroup::Pipe:
      return c.pp;
  }
  return c.world;
}

}  // namespace

RunPrediction predictRun(const config::RunConfig& config) {
  const auto counts = countParameters(config);
  RunPrediction p;
  switch (config.strategy) {
    case config::StrategyKind::Ddp:
    case config::StrategyKind::NoShard:
      p = predictDdp(config, counts);
      break;
    case config::StrategyKind::Zero1:
      p = predictZero1(config, counts);
      break;
    case config::StrategyKind::ShardGradOp:
    case config::StrategyKind::FullShard:
    case config::StrategyKind::HybridShardZero2:
    case config::StrategyKind::HybridShard:
      p = predictSharded(config, counts);
      break;
  }
  if (config.offload == config::Offload::Cpu && config::traitsOf(config.strategy).shardsParameters) {
    moveStateToHost(p);
    for (auto& copy : offloadDeviceCopies(config)) p.memory.push_back(std::move(copy));
  }
  addTensorParallel(p, config);
  for (auto& c : p.perStep) {
    c.groupSize = groupSizeOf(c.group, config);
    c.sentBytes = trace::ringTrafficPerRank(c.op, c.groupSize, c.bytes).sentBytes;
  }
  if (config.model == config::ModelKind::Gpt) {
    const auto activations = gptSavedActivations(config);
    p.activationSavedBytes = activations.bytes;
    p.activationFormula = activations.formula;
  }
  return p;
}

std::optional<std::string> predictionProblem(const config::RunConfig& config) {
  if (auto e = config::shardGroupProblem(config)) return e;  // against the world predicted, not the capped one
  if (auto e = config::tensorParallelProblem(config)) return e;
  config::RunConfig check = config;
  check.shardGroupSize = 0;
  // Nothing is started: any world size can be predicted (validate() caps what one host runs).
  check.world = std::min(check.world, config::kMaxWorldSize);
  // ... and tensor groups of --tp ranks in it, however few of them one host has room for.
  check.tp = std::min(check.tp, check.world);
  check.world -= check.world % std::max(1, check.tp);
  // One sample per micro-batch and rank; under --pp the run's own batch, which sizes what crosses
  // between stages.
  if (check.pp < 2) check.batch = check.world * std::max(1, check.accumulate);
  check.exportDir = check.summaryPath = check.tracePath = check.memoryCsvPath = "";
  return config::validate(check);
}

namespace {

// A hybrid run measures the prediction of its own shard group, whatever the other's raw option.
bool sameShardGroup(const config::RunConfig& predicted, const config::RunConfig& measured) {
  if (!config::traitsOf(measured.strategy).replicatesShardGroups) return true;
  config::RunConfig asMeasured = predicted;
  asMeasured.strategy = measured.strategy;
  return shardGroupSize(asMeasured) == shardGroupSize(measured);
}

}  // namespace

bool samePrediction(const config::RunConfig& a, const config::RunConfig& b) {
  return a.model == b.model && a.layers == b.layers && a.hidden == b.hidden && a.world == b.world && a.tp == b.tp &&
         sameShardGroup(a, b) && a.precision == b.precision && a.prefetch == b.prefetch && a.optimizer == b.optimizer &&
         a.loraRank == b.loraRank && a.accumulate == b.accumulate && a.offload == b.offload &&
         (a.model == config::ModelKind::Gpt ? a.seq == b.seq && a.vocab == b.vocab
                                            : a.features == b.features && a.classes == b.classes);
}

}  // namespace shardscope::estimate
