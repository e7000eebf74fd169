#include "engine/recording/recorder.h"

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <utility>

#include "engine/recording/catch_up_turns.h"
#include "engine/recording/device_clock.h"
#include "trace/rank_event_files.h"
#include "trace/wire.h"

namespace shardscope::engine {

namespace {
// The role and phase are set by the training thread. Other threads that allocate on its behalf
// (autograd's device thread runs a CUDA backward) have no scope of their own and take the training
// thread's, which is why the process-wide value backs the thread-local one.
constexpr uint8_t kUnset = 255;
thread_local uint8_t tRole = kUnset;
thread_local uint8_t tPhase = kUnset;
std::atomic<uint8_t> gRole{static_cast<uint8_t>(trace::MemoryRole::Other)};
// The model unit allocations belong to; like the role, a helper thread follows the training thread.
constexpr int32_t kUnitUnset = INT32_MAX;
thread_local int32_t tUnit = kUnitUnset;
std::atomic<int32_t> gUnit{trace::kNoUnit};
// The compute span open on this thread (innermost), which a pause at the step gate splits.
thread_local ComputeSpan* tOpenSpan = nullptr;
std::atomic<uint8_t> gPhase{static_cast<uint8_t>(trace::Phase::None)};
DeviceClock* gDeviceClock = nullptr;
double gComputeSlowdown = 1;  // --slow-rank's factor on this rank; set before training, read after
constexpr auto kDrainInterval = std::chrono::milliseconds(5);
constexpr auto kHeartbeatInterval = std::chrono::seconds(1);
constexpr size_t kWriteChunkBytes = size_t{1} << 20;

// How long a collector may leave bytes unconfirmed before it is taken as gone: 10 s, or
// SHARDSCOPE_COLLECTOR_CONFIRM_S (it confirms every 100 ms; a test shortens the wait).
std::chrono::steady_clock::duration confirmationLimit() {
  static const auto limit = [] {
    const char* text = std::getenv("SHARDSCOPE_COLLECTOR_CONFIRM_S");
    const double seconds = text ? std::atof(text) : 0;
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(seconds > 0 && seconds < 86400 ? seconds : 10.0));
  }();
  return limit;
}

// Whether this is one of c10d's Gloo worker threads ("pt_gloo_runloop"), whose allocations are
// staging buffers: see Note [staging buffers] in recorder.h. The thread names itself before it
// runs anything, so asking once per thread is enough.
bool onGlooWorkerThread() {
  thread_local const bool gloo = [] {
    char name[16] = {};
    return pthread_getname_np(pthread_self(), name, sizeof name) == 0 && std::strncmp(name, "pt_gloo", 7) == 0;
  }();
  return gloo;
}
}  // namespace

void RankRecorder::divertOnLoss(int fallbackFd, std::string notice) {
  fallbackFd_ = fallbackFd;
  fallbackNotice_ = std::move(notice);
}

void RankRecorder::start(int rank, int fd, size_t capacity, bool socket) {
  rank_ = rank;
  fd_ = fd;
  socket_ = socket;
  queue_ = std::make_unique<trace::BoundedEventQueue<trace::Event>>(capacity);
  running_.store(true);
  enabled_.store(true);
  writer_ = std::thread([this] { writerLoop(); });
}

void RankRecorder::stop() {
  if (!running_.exchange(false)) return;
  enabled_.store(false);
  if (writer_.joinable()) writer_.join();
}

void RankRecorder::push(trace::Event&& event) {
  event.rank = rank_;
  if (!queue_->tryPush(std::move(event))) dropped_.fetch_add(1, std::memory_order_relaxed);
}

void RankRecorder::record(trace::Event&& event) {
  if (enabled() && queue_) push(std::move(event));
}

void RankRecorder::recordLate(trace::Event&& event) {
  if (running_.load(std::memory_order_relaxed) && queue_) push(std::move(event));
}

void RankRecorder::control(trace::Event event) {
  event.rank = rank_;
  std::lock_guard<std::mutex> lock(controlMutex_);
  controlEvents_.push_back(std::move(event));
}

void RankRecorder::writeAll(const std::string& bytes) {
  if (fd_ < 0) return;
  // A collector that confirms, and a file to go on in (until the collector is lost, below).
  const auto confirmed = [this] { return socket_ && fallbackFd_ >= 0; };
  // Checked before sending too: into a collector that stopped reading, a send would block until
  // its timeout (10 s) once the sockets' buffers are full.
  if (confirmed() && unconfirmed_.oldestWait() > confirmationLimit()) {
    divertToFallback("it confirmed nothing for " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(confirmationLimit()).count()) +
                     " s");
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = socket_ ? ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL)
                        : ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 && fallbackFd_ >= 0) {  // the collector is gone (or stalled): the rest goes to the rank's file
      divertToFallback("a send failed");
      continue;  // the file goes on from where the socket stopped taking this buffer
    }
    if (n <= 0) {
      fd_ = -1;  // the controller is gone; keep training quietly
      return;
    }
    if (confirmed()) unconfirmed_.sent(bytes.data() + done, static_cast<size_t>(n));
    done += static_cast<size_t>(n);
  }
  if (!confirmed()) return;
  // A collector that confirms nothing for long is gone even while sends still fit its socket's
  // buffer (a host or link lost): what it did not confirm goes to the rank's file now.
  if (!unconfirmed_.readConfirmations(fd_)) {
    divertToFallback("it closed the connection");
  } else if (unconfirmed_.oldestWait() > confirmationLimit()) {
    divertToFallback("it confirmed nothing for " +
                     std::to_string(std::chrono::duration_cast<std::chrono::seconds>(confirmationLimit()).count()) +
                     " s");
  }
}

void RankRecorder::divertToFallback(const std::string& why) {
  if (fallbackFd_ < 0) return;                             // diverted already
  if (socket_) (void)unconfirmed_.readConfirmations(fd_);  // the last it said before it went
  const UnconfirmedBytes pending = std::exchange(unconfirmed_, UnconfirmedBytes());
  std::string lost;
  if (pending.givenUp() > 0) {
    lost = "; " + std::to_string(pending.givenUp()) + " bytes it never confirmed were past the " +
           std::to_string(UnconfirmedBytes::kMaxBytes >> 20) + " MiB kept for this and are lost";
  }
  std::fprintf(stderr, "%s (%s; the %zu bytes it had not confirmed written there first%s)\n", fallbackNotice_.c_str(),
               why.c_str(), pending.bytes().size(), lost.c_str());
  if (socket_) ::close(fd_);
  fd_ = std::exchange(fallbackFd_, -1);
  socket_ = false;
  // Where in the stream the file takes over (trace/rank_event_files.h), then from there on.
  writeAll(trace::replayHeaderLine(pending.startOffset()) + "\n");
  writeAll(pending.bytes());
}

void RankRecorder::settleCollector() {
  if (!socket_ || fallbackFd_ < 0 || fd_ < 0) return;
  // The collector confirms within 100 ms of the last bytes; a moment is enough for the end.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!unconfirmed_.bytes().empty() && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, 50);
    if (!unconfirmed_.readConfirmations(fd_)) break;
  }
  if (!unconfirmed_.bytes().empty()) divertToFallback("it did not confirm the end of the stream");
}

void RankRecorder::drainOnce(std::string& buffer) {
  buffer.clear();
  // Control events are taken first, so every data event recorded before them is already queued,
  // and so among the first capacity() popped (the queue never holds more): data first, then
  // control, as a StepEnd must follow the events of its step. (A push still in progress on another
  // thread, e.g. Gloo's, can stop the popping early and let one late event of the step follow its
  // StepEnd; the controller's merge window absorbs that.) Popping is bounded by capacity() too: an
  // unbounded "pop until empty" never ended while training kept pushing faster than this
  // low-priority thread encodes, and the rank fell silent (a stall, to the controller).
  std::deque<trace::Event> control;
  {
    std::lock_guard<std::mutex> lock(controlMutex_);
    control.swap(controlEvents_);
  }
  // A hold (fault injection) set while this drain waited for the core stops it here, unwritten:
  // what it took may have been recorded after the hold began, and a starved writer would not have
  // sent it. Checked again after each take, so no event recorded after the hold is ever written.
  if (holding_.load()) return;
  trace::Event e;
  for (size_t popped = 0; popped < queue_->capacity() && queue_->tryPop(e); ++popped) {
    if (holding_.load()) return;
    trace::appendEventFrame(buffer, e);
    if (buffer.size() >= kWriteChunkBytes) {  // the controller hears from us while we encode on
      writeAll(buffer);
      lastWrite_ = std::chrono::steady_clock::now();
      buffer.clear();
    }
  }
  const int64_t dropped = dropped_.load(std::memory_order_relaxed);
  if (dropped != droppedReported_) {
    trace::Event d;
    d.kind = trace::EventKind::Dropped;
    d.rank = rank_;
    d.beginNs = trace::nowNs();
    d.droppedEvents = dropped - droppedReported_;
    droppedReported_ = dropped;
    trace::appendEventFrame(buffer, d);
  }
  for (auto& c : control) trace::appendEventFrame(buffer, c);
  // A rank with nothing to say (waiting at the step gate, in a long collective) still says it is
  // alive, once a second, with an empty line: the controller tells a stopped or hung rank by its
  // silence (--stall-timeout).
  const auto now = std::chrono::steady_clock::now();
  if (buffer.empty() && now - lastWrite_ < kHeartbeatInterval) return;
  if (buffer.empty()) buffer = "\n";
  lastWrite_ = now;
  writeAll(buffer);
}

void RankRecorder::writerLoop() {
  std::string buffer;
  {
    // The writer yields to training when they compete for a core (nice 19), unless its queue fills
    // past half: then a helper at training's priority drains it (engine/recording/catch_up_turns.h).
    CatchUpTurns turns(
        [this] { return static_cast<double>(queue_->approximateSize()) / static_cast<double>(queue_->capacity()); },
        [this, &buffer] { drainAndCount(buffer); }, [] { std::this_thread::sleep_for(kDrainInterval); },
        [this] { return !running_.load(); });
    turns.run();
  }
  if (!holding_.load()) {
    drainOnce(buffer);
    settleCollector();
  }
}

void RankRecorder::drainAndCount(std::string& buffer) {
  if (!holding_.load()) drainOnce(buffer);
  {
    std::lock_guard<std::mutex> lock(drainMutex_);
    ++drains_;
  }
  drained_.notify_all();
}

void RankRecorder::flushNow() {
  if (!running_.load()) return;
  std::unique_lock<std::mutex> lock(drainMutex_);
  const uint64_t target = drains_ + 2;  // one drain may have started before our events arrived
  drained_.wait_for(lock, std::chrono::seconds(2), [&] { return drains_ >= target; });
}

DeviceClock* deviceClock() { return gDeviceClock; }
void setDeviceClock(DeviceClock* clock) { gDeviceClock = clock; }

trace::MemoryRole currentRole() {
  if (tRole != kUnset) return static_cast<trace::MemoryRole>(tRole);
  if (onGlooWorkerThread()) return trace::MemoryRole::CommBuffer;
  return static_cast<trace::MemoryRole>(gRole.load(std::memory_order_relaxed));
}
int32_t currentUnit() {
  if (tUnit != kUnitUnset) return tUnit;
  if (onGlooWorkerThread()) return trace::kNoUnit;
  return gUnit.load(std::memory_order_relaxed);
}

UnitScope::UnitScope(int32_t unit) : previousThread_(tUnit), previousGlobal_(gUnit.load(std::memory_order_relaxed)) {
  tUnit = unit;
  gUnit.store(unit, std::memory_order_relaxed);
}
UnitScope::~UnitScope() {
  tUnit = previousThread_;
  gUnit.store(previousGlobal_, std::memory_order_relaxed);
}

trace::Phase currentPhase() {
  return static_cast<trace::Phase>(tPhase != kUnset ? tPhase : gPhase.load(std::memory_order_relaxed));
}

RoleScope::RoleScope(trace::MemoryRole role)
    : previousThread_(tRole), previousGlobal_(gRole.load(std::memory_order_relaxed)) {
  tRole = static_cast<uint8_t>(role);
  gRole.store(tRole, std::memory_order_relaxed);
}
RoleScope::~RoleScope() {
  tRole = previousThread_;
  gRole.store(previousGlobal_, std::memory_order_relaxed);
}

PhaseScope::PhaseScope(trace::Phase phase)
    : previousThread_(tPhase), previousGlobal_(gPhase.load(std::memory_order_relaxed)) {
  tPhase = static_cast<uint8_t>(phase);
  gPhase.store(tPhase, std::memory_order_relaxed);
}
PhaseScope::~PhaseScope() {
  tPhase = previousThread_;
  gPhase.store(previousGlobal_, std::memory_order_relaxed);
}

ComputeSpan::ComputeSpan(RankRecorder& recorder, trace::ComputeKind kind, std::string unit)
    : recorder_(recorder),
      kind_(kind),
      unit_(std::move(unit)),
      begin_(trace::nowNs()),
      unwindingAtStart_(std::uncaught_exceptions()) {
  // Pinning host memory is the host's work, not the device's: the host's clock times it.
  if (gDeviceClock && recorder_.enabled() && kind_ != trace::ComputeKind::PinHostMemory) {
    deviceBegin_ = gDeviceClock->mark();
  }
  if (kind_ != trace::ComputeKind::Step) {
    enclosing_ = tOpenSpan;
    tOpenSpan = this;
  }
  if (nvtxListening()) {
    trace::Event named;
    named.kind = trace::EventKind::Compute;
    named.op = static_cast<uint8_t>(kind_);
    named.phase = static_cast<uint8_t>(currentPhase());
    named.step = recorder_.step();
    named.text = unit_;
    nvtx_.push(trace::computeSpanName(named));
  }
}

void setComputeSlowdown(double factor) { gComputeSlowdown = std::max(1.0, factor); }

ComputeSpan::~ComputeSpan() {
  if (kind_ != trace::ComputeKind::Step) tOpenSpan = enclosing_;
  // A step that failed (a peer died in its collective) did not happen: a "step N" span would tell
  // a reader it finished. A shorter span (a forward cut off) is still true, and kept.
  const bool failed = std::uncaught_exceptions() > unwindingAtStart_;
  // --slow-rank: the outermost compute span (a recomputation inside a backward is slowed with it)
  // lasts `factor` times its own time. A sleep, measured on the host.
  const bool slowed = kind_ == trace::ComputeKind::Forward || kind_ == trace::ComputeKind::Backward ||
                      kind_ == trace::ComputeKind::Optimizer;
  if (gComputeSlowdown > 1 && slowed && !enclosing_ && !failed) {
    const auto spent = static_cast<double>(trace::nowNs() - begin_);
    std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>((gComputeSlowdown - 1) * spent)));
  }
  if (kind_ == trace::ComputeKind::Step && failed) {
    if (deviceBegin_) gDeviceClock->whenReached(deviceBegin_, gDeviceClock->mark(), [](int64_t, int64_t) {});
    return;
  }
  recordUpTo(trace::nowNs());
}

ComputeSpan* ComputeSpan::openOnThisThread() { return tOpenSpan; }

void ComputeSpan::splitForPause(int64_t pauseBeginNs, int64_t pauseEndNs) {
  // A GPU span is timed by the device, which a host pause does not stop: it stays whole.
  if (deviceBegin_) return;
  recordUpTo(pauseBeginNs);
  begin_ = pauseEndNs;
}

void ComputeSpan::recordUpTo(int64_t endNs) {
  auto& recorder = recorder_;
  if (!recorder.enabled() && !deviceBegin_) return;  // a started mark must still be handed back
  trace::Event e;
  e.kind = trace::EventKind::Compute;
  e.step = recorder.step();
  e.microBatch = recorder.microBatch();
  e.beginNs = begin_;
  e.endNs = endNs;
  e.op = static_cast<uint8_t>(kind_);
  e.phase = static_cast<uint8_t>(currentPhase());
  e.text = unit_;
  if (deviceBegin_) {
    const bool keep = recorder.enabled();
    gDeviceClock->whenReached(deviceBegin_, gDeviceClock->mark(),
                              [&recorder, e = std::move(e), keep](int64_t beginNs, int64_t endNs) mutable {
                                if (!keep) return;
                                e.beginNs = beginNs;
                                e.endNs = endNs;
                                recorder.recordLate(std::move(e));
                              });
    return;
  }
  recorder.record(std::move(e));
}

}  // namespace shardscope::engine
