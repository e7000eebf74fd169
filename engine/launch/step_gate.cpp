#include "engine/launch/step_gate.h"

#include <unistd.h>

#include <cerrno>

#include "engine/recording/recorder.h"

namespace shardscope::engine {

void StepGate::start(config::StepGateMode mode, int releaseFd) {
  mode_ = mode;
  releaseFd_ = releaseFd;
  gating_ = mode != config::StepGateMode::Off && releaseFd >= 0;
}

bool StepGate::waitForRelease() {
  for (;;) {
    char token = 0;
    const ssize_t n = ::read(releaseFd_, &token, 1);
    if (n == 1) return token != 'c';
    if (n < 0 && errno == EINTR) continue;
    return false;  // the controller closed the pipe: nobody will release us, so go on
  }
}

void StepGate::enter(trace::GroupKind kind, const std::string& label) {
  if (!armed_) return;
  auto& recorder = recorder_;
  trace::Event group;
  group.kind = trace::EventKind::Group;
  group.step = recorder.step();
  group.microBatch = recorder.microBatch();
  group.phase = static_cast<uint8_t>(currentPhase());
  group.op = static_cast<uint8_t>(kind);
  group.text = label;
  group.beginNs = trace::nowNs();
  const bool pause = gating_ && (mode_ == config::StepGateMode::Group || kind == trace::GroupKind::StepStart);
  if (!pause) {
    group.endNs = group.beginNs;
    recorder.record(std::move(group));
    return;
  }
  // Control events are never dropped: the controller must learn that this rank waits (endNs 0),
  // and the pause must reach the timeline.
  trace::Event waiting = group;
  waiting.endNs = 0;
  recorder.control(std::move(waiting));
  gating_ = waitForRelease();
  group.endNs = std::max(trace::nowNs(), group.beginNs + 1);
  pausedNs_.fetch_add(group.endNs - group.beginNs, std::memory_order_relaxed);
  if (ComputeSpan* span = ComputeSpan::openOnThisThread()) span->splitForPause(group.beginNs, group.endNs);
  if (recorder.enabled()) recorder.control(std::move(group));
}

}  // namespace shardscope::engine
