// The step gate (--step-gate): a rank's work divides into event groups at the hook points of the
// real algorithm (trace::GroupKind), which trainStep and the strategies mark where they happen: a
// collective's group begins where its strategy starts preparing it (FSDP's unshard allocates the
// buffer the all-gather fills; a reduce-scatter's input or a DDP bucket is packed first). Each
// rank records a Group event as it enters one, and, while
// the run is gated, first waits there until the controller releases it. The controller releases
// every rank together, one token each through a pipe (SHARDSCOPE_GATE_FD): 's' lets a rank pass
// one gate, 'c' turns the gate off for the rest of the run. Ranks run the same program, so each
// token moves every rank exactly one group on, and no rank ever waits in a collective for a peer
// held at a gate: a collective is issued at a gate that every rank has passed before any of them
// can wait for it.
//
// A pause is recorded (the Group event's end), split out of any compute span it falls in, and
// summed per step so step times and throughput leave it out.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "config/modes.h"
#include "trace/events.h"

namespace shardscope::engine {

class RankRecorder;

// One per rank process, made by the worker and handed to the strategy (Strategy::gate()) and the
// training step: they mark the hook points.
class StepGate {
 public:
  // Records its groups in `recorder`.
  explicit StepGate(RankRecorder& recorder) : recorder_(recorder) {}
  StepGate(const StepGate&) = delete;
  StepGate& operator=(const StepGate&) = delete;

  // releaseFd: read end of the controller's release pipe; -1 when there is none (then the mode
  // must be Off).
  void start(config::StepGateMode mode, int releaseFd);

  // A hook point: this rank enters the event group `label`. Records it (when recording is on)
  // and, when gated, waits for the controller's release first. Only inside a training step
  // (Armed); elsewhere (exports, the loss all-reduce for logging) it does nothing.
  void enter(trace::GroupKind kind, const std::string& label);

  // Nanoseconds this rank has waited at the gate so far.
  int64_t pausedNs() const { return pausedNs_.load(std::memory_order_relaxed); }

  // The recorder its groups go to (the training step tags micro-batches there).
  RankRecorder& recorder() const { return recorder_; }

  // Arms the hook points for the lifetime of a training step.
  class Armed {
   public:
    explicit Armed(StepGate& gate) : gate_(gate) { gate_.armed_ = true; }
    ~Armed() { gate_.armed_ = false; }
    Armed(const Armed&) = delete;
    Armed& operator=(const Armed&) = delete;

   private:
    StepGate& gate_;
  };

 private:
  bool waitForRelease();  // false: the gate is off from now on

  RankRecorder& recorder_;

  config::StepGateMode mode_ = config::StepGateMode::Off;
  int releaseFd_ = -1;
  bool gating_ = false;  // still waiting at gates (until 'c' or the pipe closes)
  bool armed_ = false;   // inside a training step (training thread only)
  std::atomic<int64_t> pausedNs_{0};
};

}  // namespace shardscope::engine
