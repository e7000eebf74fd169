// What a rank records about itself, and how it gets to the controller without slowing training.
//
// Producers (the training thread, autograd, Gloo's threads, the allocator hook) push events into a
// bounded lock-free queue and never wait: when the queue is full the event is dropped and counted.
// One streaming thread, at the lowest priority, drains the queue every few milliseconds (a helper
// at the rank's priority does it while the queue is more than half full: catch_up_turns.h) and
// writes event frames to the pipe named by SHARDSCOPE_EVENT_FD, so the controller sees the run while it happens and
// keeps what a rank sent before dying. Control events (step ends, errors) are rare and must not be dropped; they take a
// short mutex instead and go out through the same writer, so frames never interleave.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "engine/recording/nvtx_ranges.h"
#include "engine/recording/unconfirmed_bytes.h"
#include "trace/event_queue.h"
#include "trace/events.h"

namespace shardscope::engine {

// One per rank process, made by the rank worker and handed to what records (the communicators, the
// step gate, the compute spans, the allocator hook) from there. It is never destroyed: LibTorch's
// allocator hook and the SIGTERM thread may still reach it while the process exits.
class RankRecorder {
 public:
  RankRecorder() = default;
  RankRecorder(const RankRecorder&) = delete;
  RankRecorder& operator=(const RankRecorder&) = delete;

  // Starts streaming to `fd` (-1: no controller; events are discarded after counting); a socket
  // (a collector's) is written without SIGPIPE.
  void start(int rank, int fd, size_t capacity, bool socket = false);
  // Where to go on when `fd` fails (a collector lost mid-run): this file, after `notice` on stderr,
  // starting with what the collector had not confirmed keeping (engine/recording/unconfirmed_bytes.h).
  // Call before start.
  void divertOnLoss(int fallbackFd, std::string notice);
  // Drains everything, reports the drop count, stops the writer. Safe to call twice.
  void stop();
  // Blocks until everything recorded so far has been written (for tests that kill a rank).
  void flushNow();
  // From now on nothing is written (events queue up, no heartbeat): fault injection's stand-in for
  // a writer thread starved of CPU when its rank is killed.
  void holdOutputForTest() { holding_.store(true); }

  // Whether data events (memory, collectives, compute) are recorded right now; control events
  // always are. Toggling is how the overhead benchmark compares on and off within one run.
  void setEnabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  void record(trace::Event&& event);  // data event: never blocks, may drop
  // A data event whose recording was decided when it began (recording was on) and whose times
  // arrive later (a GPU span, a collective's completion): recorded even if recording has been
  // switched off since, e.g. for the last collectives of the last step.
  void recordLate(trace::Event&& event);
  void control(trace::Event event);  // control event: never dropped

  int rank() const { return rank_; }
  int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  // The step every event is tagged with (set by the training loop, read on any thread).
  void setStep(int step) { step_.store(step, std::memory_order_relaxed); }
  int step() const { return step_.load(std::memory_order_relaxed); }
  // Under gradient accumulation, the micro-batch (1..K) the step is in; 0 otherwise. Collectives
  // and compute spans carry it, so the K all-gathers of one unit in one step stay apart.
  void setMicroBatch(int microBatch) { microBatch_.store(microBatch, std::memory_order_relaxed); }
  int microBatch() const { return microBatch_.load(std::memory_order_relaxed); }

 private:
  void push(trace::Event&& event);
  void writerLoop();
  void drainOnce(std::string& buffer);
  void drainAndCount(std::string& buffer);  // one pass of the writer: a drain, counted for flushNow
  void writeAll(const std::string& bytes);
  // The collector is lost (`why`): what it had not confirmed, then everything after, to the file
  // divertOnLoss named.
  void divertToFallback(const std::string& why);
  // At the end: waits a moment for the collector to confirm the stream's end, else diverts.
  void settleCollector();

  int rank_ = 0;
  int fd_ = -1;
  bool socket_ = false;
  int fallbackFd_ = -1;
  std::string fallbackNotice_;
  UnconfirmedBytes unconfirmed_;  // a collector's: what it has not yet said it kept (the writer's turn)
  std::unique_ptr<trace::BoundedEventQueue<trace::Event>> queue_;
  std::atomic<bool> enabled_{false};
  std::atomic<bool> running_{false};
  std::atomic<bool> holding_{false};
  std::atomic<int64_t> dropped_{0};
  int64_t droppedReported_ = 0;
  std::chrono::steady_clock::time_point lastWrite_{};  // whoever holds the writer's turn
  std::atomic<int> step_{-1};
  std::atomic<int> microBatch_{0};
  std::mutex controlMutex_;
  std::deque<trace::Event> controlEvents_;
  std::thread writer_;
  std::mutex drainMutex_;
  std::condition_variable drained_;
  uint64_t drains_ = 0;
};

// Note [staging buffers]
// A backend stages collectives in flat buffers of its own: Gloo copies a collective's tensors
// into buffers of its size, made as it is issued and on c10d's Gloo worker threads
// ("pt_gloo_runloop") while the training thread computes. They are communication memory, whatever
// that thread is doing, so they count as comm_buffer: RecordingCommunicator issues every
// collective inside a RoleScope(CommBuffer), and on a Gloo worker thread currentRole() is
// CommBuffer unless a scope of its own says otherwise. A buffer shardscope makes for a collective
// (a tensor- or sequence-parallel sum or gather) is scoped CommBuffer too, not as an activation.
// The worker drops its reference to a collective's buffers only when it next runs, after wait()
// has returned: on a loaded machine the last step's reduce-scatter buffer can still be held, and
// freed, well into the next step's forward. Its free keeps the role of its allocation
// (recording_allocator.h), so the comm_buffer lane shows it for as long as it is held.

// Thread-local context that events and allocations are attributed to.
trace::MemoryRole currentRole();
trace::Phase currentPhase();

// Both restore, on exit, exactly what they found: this thread's own value (or none, so a helper
// thread goes back to following the training thread) and the process-wide one.
class RoleScope {
 public:
  explicit RoleScope(trace::MemoryRole role);
  ~RoleScope();
  RoleScope(const RoleScope&) = delete;
  RoleScope& operator=(const RoleScope&) = delete;

 private:
  uint8_t previousThread_;
  uint8_t previousGlobal_;
};

class PhaseScope {
 public:
  explicit PhaseScope(trace::Phase phase);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  uint8_t previousThread_;
  uint8_t previousGlobal_;
};

// The model unit this thread's allocations belong to (trace::kNoUnit outside any UnitScope).
int32_t currentUnit();

// Allocations made inside belong to `unit` (a block index, or -1 for the root), so the memory
// events say what each rank holds of each unit ("who holds what"). Restores like RoleScope.
class UnitScope {
 public:
  explicit UnitScope(int32_t unit);
  ~UnitScope();
  UnitScope(const UnitScope&) = delete;
  UnitScope& operator=(const UnitScope&) = delete;

 private:
  int32_t previousThread_;
  int32_t previousGlobal_;
};

// --slow-rank: this rank's forward, backward and optimizer spans each take `factor` times as long,
// by a sleep of (factor - 1) times the span's own measured time before it ends. 1: none.
void setComputeSlowdown(double factor);

// Records a compute span from construction to destruction into `recorder`: on the host clock on CPU
// ranks; on a GPU rank, from where the device reached the span's start to where it reached its end
// (DeviceClock).
class ComputeSpan {
 public:
  ComputeSpan(RankRecorder& recorder, trace::ComputeKind kind, std::string unit);
  ~ComputeSpan();
  ComputeSpan(const ComputeSpan&) = delete;
  ComputeSpan& operator=(const ComputeSpan&) = delete;

  // The innermost span open on this thread (step spans aside), or nullptr.
  static ComputeSpan* openOnThisThread();
  // A pause at the step gate inside the span (a DDP bucket's gate in backward): the part before
  // it is recorded as a span of its own and the rest starts after it, so no span holds a pause.
  void splitForPause(int64_t pauseBeginNs, int64_t pauseEndNs);

 private:
  void recordUpTo(int64_t endNs);

  RankRecorder& recorder_;
  trace::ComputeKind kind_;
  std::string unit_;
  int64_t begin_;
  int unwindingAtStart_;  // std::uncaught_exceptions() when it began
  ComputeSpan* enclosing_ = nullptr;
  void* deviceBegin_ = nullptr;  // DeviceClock::Mark
  NvtxRange nvtx_;               // the same span for nsys, when it listens
};

}  // namespace shardscope::engine
