#include "engine/strategies/pipeline_rank.h"

#include "config/pipeline_batches.h"

#include <stdexcept>

#include "config/model_layout.h"
#include "config/pipeline_config.h"
#include "config/pipeline_transfers.h"
#include "engine/launch/step_gate.h"
#include "engine/recording/recorder.h"

namespace shardscope::engine {

using config::PipeAction;
using config::PipeActionKind;

namespace {

using Key = std::pair<int, int>;  // (pipeline stage, micro-batch)

// Gloo matches a send with its receive by peer and tag: one tag per sending stage, micro-batch and
// direction, so transfers between two ranks can be received in another order than sent.
int transferTag(const PipeAction& a, int microBatches) {
  return (config::sendingStage(a) * microBatches + a.microBatch) * 2 + (config::carriesGradient(a) ? 1 : 0);
}

// What `map` holds for `key`, taken out of it. A schedule whose action finds nothing there (a
// transfer or a handover missing) is a bug in the schedule: said, not undefined behaviour.
template <typename Map>
typename Map::mapped_type take(Map& map, const Key& key, const PipeAction& a, const char* what) {
  auto node = map.extract(key);
  if (node.empty()) {
    throw std::logic_error("pipeline action " + config::actionText(a) + " finds no " + what + " for stage " +
                           std::to_string(key.first) + ", micro-batch " + std::to_string(key.second));
  }
  return std::move(node.mapped());
}

}  // namespace

struct PipelineRank::StepState {
  std::vector<Batch> microBatches;
  std::map<Key, StageActivations> kept;  // a forward's activations until its backward
  std::map<Key, at::Tensor> inputs;      // a stage's input, received or handed over on this rank
  std::map<Key, at::Tensor> gradients;   // the gradient of a stage's output, likewise
  std::map<Key, at::Tensor> outgoing;    // a stage's output or input gradient until sent
  std::vector<std::pair<at::Tensor, std::unique_ptr<PendingCollective>>> sends;
  // A receive posted and not yet waited for: its buffer and its wait, by what it brings.
  std::map<Key, std::pair<at::Tensor, std::unique_ptr<PendingCollective>>> receivingInputs, receivingGradients;
  // Per stage, the micro-batches whose weights' gradients are done (a B, or a W): at M the stage's
  // gradients are whole and its data ranks may reduce them. In every schedule here that is micro-batch
  // M - 1's, but counting holds for any list (a W left waiting behind a later B would break the other).
  std::map<int, int> gradientsDone;
  at::Tensor lossSum;
};

PipelineRank::PipelineRank(const config::RunConfig& config, const StagedModel& whole, const ProcessMesh& mesh,
                           const at::Device& device, StepGate& gate)
    : config_(config), shape_(config::pipelineShapeOf(config)), pipe_(*mesh.pipe()), gate_(gate), device_(device) {
  const int rank = pipe_.rank();
  stages_ = config::stagesOfRank(shape_, rank);
  auto slices = sliceForPipeline(whole, stages_, shape_.stages());
  for (size_t i = 0; i < stages_.size(); ++i) {
    Stage stage;
    stage.index = stages_[i];
    stage.model = std::move(slices[i]);
    stage.strategy = makeStrategy(config, *stage.model, mesh, device, gate);
    held_.push_back(std::move(stage));
  }
  actions_ = config::rankActions(shape_, rank);
  batchedWithNext_ = config::batchedTransfers(shape_)[static_cast<size_t>(rank)];
}

PipelineRank::~PipelineRank() = default;

PipelineRank::Stage& PipelineRank::stageAt(int pipelineStage) {
  for (Stage& s : held_) {
    if (s.index == pipelineStage) return s;
  }
  throw std::logic_error("pipeline stage " + std::to_string(pipelineStage) + " is not on this rank");
}

bool PipelineRank::holdsLoss() const { return stages_.back() == shape_.stages() - 1; }

at::Tensor PipelineRank::boundaryBuffer(const Stage& stage, int64_t rows) const {
  const auto dtype = stage.strategy->liveParameters().front().scalar_type();
  const auto shape = config::boundaryShape(config_, rows);
  return at::empty(shape, at::TensorOptions().dtype(dtype).device(device_));
}

int PipelineRank::peerOf(const PipeAction& transfer) const {
  const int sending = config::sendingStage(transfer);
  const bool receiving =
      transfer.kind == PipeActionKind::RecvActivation || transfer.kind == PipeActionKind::RecvGradient;
  if (receiving) return config::rankOfStage(shape_, sending);
  return config::rankOfStage(shape_, config::carriesGradient(transfer) ? transfer.stage - 1 : transfer.stage + 1);
}

at::Tensor PipelineRank::receiveBuffer(const PipeAction& a, StepState& state) {
  RoleScope role(trace::MemoryRole::Activation);
  return boundaryBuffer(stageAt(a.stage), state.microBatches[a.microBatch].x.size(0));
}

void PipelineRank::keepReceived(const PipeAction& a, at::Tensor buffer, StepState& state) {
  if (config::carriesGradient(a)) {
    state.gradients[{a.stage, a.microBatch}] = std::move(buffer);
  } else {
    state.inputs[{a.stage, a.microBatch}] = buffer.requires_grad_(true);
  }
}

void PipelineRank::receive(const PipeAction& a, StepState& state) {
  at::Tensor buffer = receiveBuffer(a, state);
  auto pending = pipe_.recvAsync(buffer, peerOf(a), transferTag(a, shape_.microBatches), config::transferLabel(a));
  auto& posted = config::carriesGradient(a) ? state.receivingGradients : state.receivingInputs;
  posted[{a.stage, a.microBatch}] = {std::move(buffer), std::move(pending)};
}

void PipelineRank::awaitReceived(const PipeAction& a, StepState& state) {
  const bool forward = a.kind == PipeActionKind::Forward;
  if (!forward && a.kind != PipeActionKind::Backward && a.kind != PipeActionKind::BackwardInput) return;
  auto node = (forward ? state.receivingInputs : state.receivingGradients).extract({a.stage, a.microBatch});
  if (node.empty()) return;  // handed over on this rank, or received in a batch
  node.mapped().second->wait();
  const auto received = forward ? PipeActionKind::RecvActivation : PipeActionKind::RecvGradient;
  keepReceived({received, a.stage, a.microBatch}, std::move(node.mapped().first), state);
}

void PipelineRank::send(const PipeAction& a, StepState& state) {
  at::Tensor tensor = take(state.outgoing, {a.stage, a.microBatch}, a, "tensor to send").contiguous();
  auto pending = pipe_.sendAsync(tensor, peerOf(a), transferTag(a, shape_.microBatches), config::transferLabel(a));
  state.sends.emplace_back(std::move(tensor), std::move(pending));
}

// A send and the receive after it, as one batch (config::batchedTransfers; the communicator batches
// point-to-point). Each opens its own event group, as when they go one by one.
void PipelineRank::sendAndReceive(const PipeAction& sent, const PipeAction& received, StepState& state) {
  RankRecorder& recorder = gate_.recorder();
  recorder.setMicroBatch(sent.microBatch + 1);
  gate_.enter(trace::GroupKind::Collective, config::actionText(sent));
  at::Tensor tensor = take(state.outgoing, {sent.stage, sent.microBatch}, sent, "tensor to send").contiguous();
  recorder.setMicroBatch(received.microBatch + 1);
  gate_.enter(trace::GroupKind::Collective, config::actionText(received));
  PhaseScope phase(config::carriesGradient(received) ? trace::Phase::Backward : trace::Phase::Forward);
  at::Tensor buffer = receiveBuffer(received, state);
  Communicator::Transfer out{&tensor, peerOf(sent), transferTag(sent, shape_.microBatches),
                             config::transferLabel(sent)};
  out.microBatch = sent.microBatch + 1;  // recorded as its own, not the receive's it goes with
  out.phase = static_cast<int>(config::carriesGradient(sent) ? trace::Phase::Backward : trace::Phase::Forward);
  const Communicator::Transfer in{&buffer, peerOf(received), transferTag(received, shape_.microBatches),
                                  config::transferLabel(received)};
  auto pending = pipe_.sendRecvAsync(out, in);
  if (pending.both) {
    pending.both->wait();  // the send with it: its tensor may go
  } else {
    pending.recv->wait();
    state.sends.emplace_back(std::move(tensor), std::move(pending.send));
  }
  keepReceived(received, std::move(buffer), state);
}

void PipelineRank::forward(const PipeAction& a, StepState& state) {
  Stage& stage = stageAt(a.stage);
  const Key key{a.stage, a.microBatch};
  at::Tensor input;  // undefined on the first stage: the micro-batch's own input
  if (!stage.model->holdsInput()) input = take(state.inputs, key, a, "input");
  const bool checkpoint = config_.activationCheckpointing == config::Checkpointing::Blocks;
  at::Tensor output = forwardStages(*stage.model, *stage.strategy, state.microBatches[a.microBatch], input, checkpoint,
                                    state.kept[key]);
  if (stage.model->holdsLoss()) {
    state.lossSum = state.lossSum.defined() ? state.lossSum + output.detach() : output.detach();
    return;
  }
  at::Tensor handed = output.detach();
  // The next stage on this rank (zbv's turn at the V's point) takes it as its input directly.
  if (config::rankOfStage(shape_, a.stage + 1) == pipe_.rank()) {
    state.inputs[{a.stage + 1, a.microBatch}] = handed.requires_grad_(true);
  } else {
    state.outgoing[key] = handed;
  }
}

void PipelineRank::backward(const PipeAction& a, StepState& state) {
  Stage& stage = stageAt(a.stage);
  const Key key{a.stage, a.microBatch};
  const bool inputOnly = a.kind == PipeActionKind::BackwardInput;  // zero bubble's I: W comes later
  StageActivations kept = inputOnly ? StageActivations() : take(state.kept, key, a, "forward's activations");
  StageActivations& activations = inputOnly ? state.kept.at(key) : kept;
  // The last stage seeds its loss's gradient with 1/M, as `(loss / M).backward()`.
  at::Tensor gradOutput = stage.model->holdsLoss()
                              ? at::full_like(activations.outputs.back(), 1.0 / shape_.microBatches)
                              : take(state.gradients, key, a, "output gradient");
  const bool last =
      inputOnly ? a.microBatch == shape_.microBatches - 1 : ++state.gradientsDone[a.stage] == shape_.microBatches;
  stage.strategy->setGradientSync(last);
  const bool checkpoint = config_.activationCheckpointing == config::Checkpointing::Blocks;
  const Batch& batch = state.microBatches[a.microBatch];
  at::Tensor inputGradient =
      inputOnly ? backwardInputStages(*stage.model, *stage.strategy, batch, gradOutput, checkpoint, activations)
                : backwardStages(*stage.model, *stage.strategy, batch, gradOutput, checkpoint, activations, last);
  if (stage.model->holdsInput()) return;
  // A stage whose input needs no gradient still answers, with zeros: the stage before waits for it.
  if (!inputGradient.defined()) {
    inputGradient = at::zeros(config::boundaryShape(config_, batch.x.size(0)), gradOutput.options());
  }
  if (config::rankOfStage(shape_, a.stage - 1) == pipe_.rank()) {
    state.gradients[{a.stage - 1, a.microBatch}] = inputGradient;
  } else {
    state.outgoing[key] = inputGradient;
  }
}

void PipelineRank::backwardWeights(const PipeAction& a, StepState& state) {
  Stage& stage = stageAt(a.stage);
  StageActivations kept = take(state.kept, {a.stage, a.microBatch}, a, "forward's activations");
  const bool last = ++state.gradientsDone[a.stage] == shape_.microBatches;
  stage.strategy->setGradientSync(last);
  backwardWeightStages(*stage.model, *stage.strategy, kept, last);
}

void PipelineRank::run(const PipeAction& a, StepState& state) {
  RankRecorder& recorder = gate_.recorder();
  recorder.setMicroBatch(a.microBatch + 1);
  // Each action opens an event group named as the schedule names it ("1F3", "0SEND_F2"): where
  // --step-gate group stops, and where a view finds the schedule's actions among the units' groups.
  const bool compute = config::isComputeAction(a.kind);
  const auto group = !compute                            ? trace::GroupKind::Collective
                     : a.kind == PipeActionKind::Forward ? trace::GroupKind::Forward
                                                         : trace::GroupKind::Backward;
  gate_.enter(group, config::actionText(a));
  awaitReceived(a, state);
  switch (a.kind) {
    case PipeActionKind::Forward: {
      PhaseScope phase(trace::Phase::Forward);
      forward(a, state);
      break;
    }
    case PipeActionKind::Backward:
    case PipeActionKind::BackwardInput: {
      PhaseScope phase(trace::Phase::Backward);
      backward(a, state);
      break;
    }
    case PipeActionKind::BackwardWeight: {
      PhaseScope phase(trace::Phase::Backward);
      backwardWeights(a, state);
      break;
    }
    case PipeActionKind::RecvActivation:
    case PipeActionKind::RecvGradient: {
      PhaseScope phase(a.kind == PipeActionKind::RecvActivation ? trace::Phase::Forward : trace::Phase::Backward);
      receive(a, state);
      break;
    }
    case PipeActionKind::SendActivation:
    case PipeActionKind::SendGradient: {
      PhaseScope phase(a.kind == PipeActionKind::SendActivation ? trace::Phase::Forward : trace::Phase::Backward);
      send(a, state);
      break;
    }
  }
}

at::Tensor PipelineRank::step(const Batch& local) {
  StepGate::Armed gateArmed(gate_);
  gate_.enter(trace::GroupKind::StepStart, "step start");
  ComputeSpan stepSpan(gate_.recorder(), trace::ComputeKind::Step, "");
  StepState state;
  const int64_t rows = local.x.size(0) / shape_.microBatches;
  for (int m = 0; m < shape_.microBatches; ++m) {
    state.microBatches.push_back({local.x.narrow(0, m * rows, rows), local.y.narrow(0, m * rows, rows)});
  }
  for (size_t i = 0; i < actions_.size(); ++i) {
    if (pipe_.batchesPointToPoint() && batchedWithNext_[i]) {
      sendAndReceive(actions_[i], actions_[i + 1], state);
      ++i;
    } else {
      run(actions_[i], state);
    }
  }
  if (!state.receivingInputs.empty() || !state.receivingGradients.empty()) {
    throw std::logic_error("pipeline schedule: a receive posted that no action of the step waited for");
  }
  for (auto& sent : state.sends) sent.second->wait();
  gate_.recorder().setMicroBatch(0);  // each stage's optimizer steps once, after every micro-batch
  {
    PhaseScope phase(trace::Phase::Optimizer);
    gate_.enter(trace::GroupKind::Optimizer, "optimizer step");
    RoleScope role(trace::MemoryRole::OptimizerState);
    ComputeSpan span(gate_.recorder(), trace::ComputeKind::Optimizer, "");
    for (Stage& stage : held_) stage.strategy->step();
  }
  return state.lossSum.defined() ? state.lossSum / shape_.microBatches : at::Tensor();
}

std::vector<HeldTensor> PipelineRank::heldTensors() const {
  std::vector<HeldTensor> out;
  for (const Stage& stage : held_) append(out, stage.strategy->heldTensors());
  return out;
}

std::map<std::string, at::Tensor> PipelineRank::fullParameters() {
  std::map<std::string, at::Tensor> out;
  for (Stage& stage : held_) out.merge(stage.strategy->fullParameters());
  return out;
}

std::map<std::string, at::Tensor> PipelineRank::wholeParameters(const StagedModel& whole,
                                                                std::map<std::string, at::Tensor> mine,
                                                                Communicator& world) {
  // Who holds each parameter: the first rank of its stage's block of world / P ranks.
  const auto stageOf = config::stageOfEachParameter(whole.params(), whole.numUnits(), shape_.stages());
  const int block = world.worldSize() / shape_.ranks;
  std::map<std::string, int> holder;
  for (size_t i = 0; i < whole.params().size(); ++i) {
    holder[whole.params()[i].name] = config::rankOfStage(shape_, stageOf[i]) * block;
  }
  std::map<std::string, at::Tensor> out;
  const auto fp32 = at::TensorOptions().dtype(at::kFloat).device(device_);
  for (const auto& spec : config::modelLayout(config_)) {
    const auto it = mine.find(spec.name);
    at::Tensor value = it != mine.end() ? it->second.to(fp32).contiguous() : at::empty(spec.shape, fp32);
    world.broadcast(value, holder.at(spec.name), "final parameters");
    out[spec.name] = value.to(at::kCPU);
  }
  return out;
}

}  // namespace shardscope::engine
