#include "engine/recording/streamed_outputs.h"

namespace shardscope::engine {

StreamedOutputs::StreamedOutputs(const config::RunConfig& config) {
  if (!config.tracePath.empty()) {
    trace_.emplace(config.tracePath);
    // A device (/dev/null) or pipe named by the user has no ending: Chrome JSON, as before.
    traceWriter_ =
        trace::makeTraceWriter(trace::traceFormatOfName(config.tracePath).value_or(trace::TraceFormat::ChromeJson),
                               trace_->out(), config.toJson(), config.world);
  }
  if (!config.memoryCsvPath.empty()) {
    csv_.emplace(config.memoryCsvPath);
    trace::writeMemoryCsvHeader(csv_->out());
  }
  if (trace_ || csv_) writer_ = std::thread([this] { writeLoop(); });
}

StreamedOutputs::~StreamedOutputs() {
  detach();
  stopWriter();
}

void StreamedOutputs::detach() {
  if (recording_) recording_->keepLastSteps(0, {});
  recording_ = nullptr;
}

void StreamedOutputs::stopWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  ready_.notify_one();
  if (writer_.joinable()) writer_.join();
}

void StreamedOutputs::writeLoop() {
  for (;;) {
    Piece piece;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return closing_ || !pieces_.empty(); });
      if (pieces_.empty()) return;  // closing, and everything handed over is written
      piece = std::move(pieces_.front());
      pieces_.pop_front();
    }
    room_.notify_one();
    write(piece.rank, piece.detail, piece.originNs);
  }
}

void StreamedOutputs::write(int rank, const trace::RankTimeline& detail, int64_t origin) {
  if (traceWriter_) traceWriter_->write(rank, detail, origin);
  if (csv_) trace::writeMemoryCsvRows(csv_->out(), rank, detail, origin);
}

void StreamedOutputs::attach(trace::RunRecording& recording) {
  recording_ = &recording;
  recording.keepLastSteps(kStreamedDetailSteps,
                          [this](int rank, trace::RankTimeline&& older) { spill(rank, std::move(older)); });
}

void StreamedOutputs::attachWithin(trace::RunRecording& recording, size_t events) {
  recording_ = &recording;
  recording.keepDetailWithin(events, [this](int rank, trace::RankTimeline&& older) { spill(rank, std::move(older)); });
}

int64_t StreamedOutputs::originOf(const trace::RunRecording& recording) {
  if (!originNs_) originNs_ = recording.originNs() == INT64_MAX ? 0 : recording.originNs();
  return *originNs_;
}

void StreamedOutputs::spill(int rank, trace::RankTimeline&& older) {
  if (!writer_.joinable()) return;  // no file to stream to: the older steps are only dropped
  Piece piece{rank, std::move(older), originOf(*recording_)};
  {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return pieces_.size() < kMaxWaitingPieces; });
    pieces_.push_back(std::move(piece));
  }
  ready_.notify_one();
}

void StreamedOutputs::finish(const trace::RunRecording& recording, const trace::RunFacts& facts,
                             std::vector<std::string>& errors) {
  stopWriter();  // every piece handed over is written before the rest, which follows them in time
  const int64_t origin = originOf(recording);
  if (traceWriter_) {
    for (int r = 0; r < recording.ranks(); ++r) traceWriter_->write(r, recording.rank(r), origin);
    traceWriter_->finish(facts);
    if (auto error = trace_->finish()) errors.push_back(*error);
  }
  if (csv_) {
    for (int r = 0; r < recording.ranks(); ++r) trace::writeMemoryCsvRows(csv_->out(), r, recording.rank(r), origin);
    if (auto error = csv_->finish()) errors.push_back(*error);
  }
}

}  // namespace shardscope::engine
