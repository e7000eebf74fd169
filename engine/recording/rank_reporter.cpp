#include "engine/recording/rank_reporter.h"

#include <cstdio>
#include <cstdlib>

#include "engine/recording/recorder.h"

namespace shardscope::engine {

RankReporter::RankReporter(RankRecorder& recorder, int rank, bool toRecording)
    : recorder_(recorder), rank_(rank), toRecording_(toRecording) {
  if (const char* fd = std::getenv("SHARDSCOPE_EVENT_FD")) fd_ = std::atoi(fd);
}

void RankReporter::send(const trace::Event& event) {
  // Through the recorder's writer, the pipe's (or file's) only writer, so lines never interleave.
  if (fd_ >= 0 || toRecording_) recorder_.control(event);
  if (fd_ < 0) tellTerminal(event);
}

void RankReporter::tellTerminal(const trace::Event& event) const {
  // Under another launcher every rank's failure is its own to tell (torchrun shows each rank's
  // stderr); progress is rank 0's alone.
  if (event.kind == trace::EventKind::RankError) {
    std::fprintf(stderr, "shardscope worker, rank %d: %s\n", event.rank, event.text.c_str());
    return;
  }
  if (rank_ != 0) return;
  if (event.kind == trace::EventKind::StepEnd) {
    std::printf("step %d  loss %.6f  step %.1f ms\n", event.step + 1, event.loss, trace::activeStepNs(event) / 1e6);
  }
  std::fflush(stdout);
}

}  // namespace shardscope::engine
