#include "engine/models/model.h"

#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>

#include "trace/events.h"

namespace shardscope::engine {

int StagedModel::stageUnit(int stage) const {
  if (stage <= 0 || stage >= numStages() - 1) return config::kRootUnit;
  return stage - 1;
}

std::string StagedModel::unitName(int unit) {
  return trace::unitName(unit);  // kRootUnit is -1 there too
}

void StagedModel::layOut(const config::RunConfig& config, const TensorParallelPart& part) {
  config::RunConfig whole = config;
  whole.tp = part.ranks;  // a model built without a tensor group is the whole model
  fullParams_ = config::modelLayout(whole);
  params_ = config::tensorParallelLayout(whole);
  splits_ = config::tensorSplits(whole);
  tp_ = part;
}

std::map<std::string, config::TensorSplit> StagedModel::splitsByName() const {
  std::map<std::string, config::TensorSplit> out;
  for (size_t i = 0; i < params_.size(); ++i) out[params_[i].name] = splits_[i];
  return out;
}

void StagedModel::forEachInitialParameter(int64_t seed, const std::function<void(size_t, at::Tensor)>& fn) const {
  forEachFullInitialParameter(
      seed, [&](size_t i, at::Tensor full) { fn(i, tensorSlice(full, splits_[i], tp_.ranks, tp_.index)); });
}

std::map<std::string, at::Tensor> StagedModel::fullInitialParameters(int64_t seed) const {
  std::map<std::string, at::Tensor> out;
  forEachFullInitialParameter(seed, [&](size_t i, at::Tensor full) { out[fullParams_[i].name] = std::move(full); });
  return out;
}

std::vector<at::Tensor> StagedModel::initParameters(int64_t seed) const {
  std::vector<at::Tensor> out;
  forEachInitialParameter(seed, [&](size_t, at::Tensor t) { out.push_back(std::move(t)); });
  return out;
}

int64_t StagedModel::parameterCount() const {
  int64_t total = 0;
  for (const auto& spec : fullParams_) total += spec.numel();
  return total;
}

Batch localShard(const Batch& global, int rank, int worldSize) {
  const int64_t per = global.x.size(0) / worldSize;
  return {global.x.narrow(0, rank * per, per), global.y.narrow(0, rank * per, per)};
}

at::Tensor linearWithAdapter(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                             const at::Tensor& loraA, const at::Tensor& loraB) {
  return at::linear(x, weight, bias) + at::linear(at::linear(x, loraA), loraB);
}

namespace {
bool endsWith(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

bool isLoraB(const std::string& name) { return endsWith(name, ".lora_B"); }
bool isLoraA(const std::string& name) { return endsWith(name, ".lora_A"); }

at::Generator loraGenerator(int64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed) * 1000003ULL + 104729ULL);
}

at::Tensor forwardAll(const StagedModel& model, const Batch& batch, const std::vector<at::Tensor>& p) {
  at::Tensor h = batch.x;
  for (int s = 0; s < model.numStages(); ++s) h = model.forwardStage(s, h, batch, p);
  return h;
}

}  // namespace shardscope::engine
