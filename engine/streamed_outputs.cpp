#include "engine/streamed_outputs.h"

namespace shardscope {

StreamedOutputs::StreamedOutputs(const RunConfig& config) {
  if (!config.tracePath.empty()) {
    trace_.emplace(config.tracePath);
    traceWriter_.emplace(trace_->out(), config.toJson(), config.world);
  }
  if (!config.memoryCsvPath.empty()) {
    csv_.emplace(config.memoryCsvPath);
    trace::writeMemoryCsvHeader(csv_->out());
  }
}

StreamedOutputs::~StreamedOutputs() {
  if (recording_) recording_->keepLastSteps(0, {});
}

void StreamedOutputs::attach(trace::RunRecording& recording) {
  recording_ = &recording;
  recording.keepLastSteps(kStreamedDetailSteps,
                          [this](int rank, const trace::RankTimeline& older) { spill(rank, older); });
}

int64_t StreamedOutputs::originOf(const trace::RunRecording& recording) {
  if (!originNs_) originNs_ = recording.originNs() == INT64_MAX ? 0 : recording.originNs();
  return *originNs_;
}

void StreamedOutputs::spill(int rank, const trace::RankTimeline& older) {
  const int64_t origin = originOf(*recording_);
  if (traceWriter_) traceWriter_->write(rank, older, origin);
  if (csv_) trace::writeMemoryCsvRows(csv_->out(), rank, older, origin);
}

void StreamedOutputs::finish(const trace::RunRecording& recording, std::vector<std::string>& errors) {
  const int64_t origin = originOf(recording);
  if (traceWriter_) {
    for (int r = 0; r < recording.ranks(); ++r) traceWriter_->write(r, recording.rank(r), origin);
    traceWriter_->finish();
    if (auto error = trace_->finish()) errors.push_back(*error);
  }
  if (csv_) {
    for (int r = 0; r < recording.ranks(); ++r) trace::writeMemoryCsvRows(csv_->out(), r, recording.rank(r), origin);
    if (auto error = csv_->finish()) errors.push_back(*error);
  }
}

}  // namespace shardscope
